// /selfskills eval under the REAL pi CLI of the active line: the person's pi (print mode, the faux
// model of test/fixtures/eval-faux-ext.ts) runs each arm as its own sandboxed `pi -p`, whose faux
// model answers from the skills it is sent. Runs are kept cheap (one or two per arm).
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../src/base/fs-ops.ts";
import { sha256 } from "../../src/base/hash.ts";
import { EVAL_FOLDER_PREFIX } from "../../src/eval/workspace.ts";
import { fileProposal, readProposal, type Proposal } from "../../src/store/proposals.ts";
import { runPiCli, type PiCliResult } from "../support/pi-cli.ts";
import { getPiLine, getPiLineInfo, REPO_ROOT } from "../support/pi-line.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { writeSkill } from "../support/fixtures.ts";

const EVAL_EXTENSION = join(REPO_ROOT, "test", "fixtures", "eval-faux-ext.ts");
const SESSION_ARGS = ["-p", "--no-session", "-e", EVAL_EXTENSION, "--provider", "faux", "--model", "faux-1"];

const skillText = (name: string, description: string) =>
	`---\nname: ${name}\ndescription: ${JSON.stringify(description)}\n---\n# ${name}\n\nSteps.\n`;

/** The package installed from this checkout, the person's real temp folder inside the test's folder. */
function setUp(env: TempEnv): string {
	writeFileSync(join(env.agentDir, "settings.json"), JSON.stringify({ packages: [REPO_ROOT] }));
	writeFileSync(join(env.projectDir, "readme.txt"), "the person's project\n");
	const tmp = join(env.root, "tmp");
	mkdirSync(tmp);
	return tmp;
}

/** A digest of every entry below `dir`: paths, kinds, modes, bytes and link targets. */
function treeDigest(dir: string): string {
	const hash = createHash("sha256");
	const walk = (path: string, rel: string) => {
		const stat = lstatSync(path);
		hash.update(`${rel}\0${stat.mode}\0`);
		if (stat.isSymbolicLink()) hash.update(readlinkSync(path));
		else if (stat.isFile()) hash.update(readFileSync(path));
		else if (stat.isDirectory())
			for (const name of readdirSync(path).sort()) walk(join(path, name), `${rel}/${name}`);
	};
	if (existsSync(dir)) walk(dir, "");
	return hash.digest("hex");
}

/** The person's project, skills and settings (the agent folder minus the package's store, which gains the record). */
function personDigest(env: TempEnv): string[] {
	return [
		treeDigest(env.projectDir),
		treeDigest(join(env.agentDir, "skills")),
		readFileSync(join(env.agentDir, "settings.json"), "utf8"),
	];
}

function leftovers(tmp: string): string[] {
	return readdirSync(tmp).filter((name) => name.startsWith(EVAL_FOLDER_PREFIX));
}

async function piPrint(env: TempEnv, tmp: string, messages: string[], extraEnv = {}): Promise<PiCliResult> {
	return runPiCli([...SESSION_ARGS, ...messages], {
		env,
		extraEnv: { TMPDIR: tmp, ...extraEnv },
		timeoutMs: 150_000,
	});
}

const evalOf = (target: string, rest: string, runs = 1) =>
	`/selfskills eval ${target} ${rest} --extension ${EVAL_EXTENSION} --runs ${runs} --yes`;

/** A pending proposal patching SKILL.md of `skill` (in the agent's skills) from `oldText` to `newText`. */
function proposePatch(env: TempEnv, skill: string, oldText: string, newText: string): Proposal {
	const path = join(env.agentDir, "skills", skill, "SKILL.md");
	const before = readFileSync(path, "utf8");
	const after = before.replace(oldText, newText);
	return fileProposal(realFs, env.agentDir, {
		cwd: env.projectDir,
		action: "patch",
		skills: [skill],
		args: { action: "patch", skill, old_string: oldText, new_string: newText },
		reason: "the task showed it",
		targets: [{ path, skill, file: "SKILL.md", before: sha256(before), after: sha256(after) }],
		diff: `-${oldText}\n+${newText}\n`,
		added: 1,
		removed: 1,
		mode: "propose",
	}).proposal;
}

describe(`/selfskills eval under the real pi CLI (pi ${getPiLine()})`, function () {
	this.timeout(180_000);
	const getEnv = useTempEnv({ prefix: "selfskills-evaltest-" });

	it("scores a proposal that makes the task pass as helped, keeps it with it; changes nothing", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "ship-it", skillText("ship-it", "How to ship."));
		const proposal = proposePatch(env, "ship-it", "How to ship.", "How to ship. eval-say: SHIPPED");
		const before = personDigest(env);
		const result = await piPrint(env, tmp, [
			evalOf(proposal.id, "--task 'ship the release' --expect SHIPPED"),
			"/selfskills pending",
			`/selfskills show ${proposal.id}`,
			`/selfskills approve ${proposal.id}`,
		]);
		const out = result.stderr;
		expect(out, out).to.include("verdict: helped in 1 of 1 runs against 0 of 1");
		expect(out).to.match(/without the proposal: passed 0 of 1; median turns 1; tokens in \d+, out \d+; cost \$/);
		expect(out).to.match(/with the proposal, run 1 of 1: passed; 1 turn\(s\)/);
		expect(out).to.include(`${proposal.id}`).and.to.include("eval: helped in 1 of 1 runs against 0 of 1");
		// show and print mode's approve preview print the kept report above the change.
		expect(out.match(/with the proposal: passed 1 of 1; median turns 1/g) ?? []).to.have.length(3);
		expect(out).not.to.include("evidence: no eval");
		expect(readProposal(realFs, env.agentDir, proposal.id)?.eval?.verdict).to.equal(
			"helped in 1 of 1 runs against 0 of 1",
		);
		expect(personDigest(env)).to.deep.equal(before);
		expect(leftovers(tmp)).to.deep.equal([]);
	});

	it("swapping the arms swaps the verdict: a proposal that drops what the task needs is worse", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "ship-it", skillText("ship-it", "How to ship. eval-say: SHIPPED"));
		const proposal = proposePatch(env, "ship-it", " eval-say: SHIPPED", "");
		const result = await piPrint(env, tmp, [evalOf(proposal.id, "--task 'ship the release' --expect SHIPPED")]);
		expect(result.stderr, result.stderr).to.include("verdict: worse: passed in 0 of 1 runs against 1 of 1");
		expect(leftovers(tmp)).to.deep.equal([]);
	});

	it("reports no difference for a skill that changes nothing, and history shows the eval", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "idle-notes", skillText("idle-notes", "Notes that change nothing."));
		const before = personDigest(env);
		const result = await piPrint(env, tmp, [
			`/selfskills eval idle-notes --task 'do it' --expect done --runs 2 --extension ${EVAL_EXTENSION} --yes`,
			"/selfskills history idle-notes",
		]);
		const out = result.stderr;
		expect(out, out).to.include("verdict: no difference seen in 2 runs (0 passed in each arm)");
		expect(out).to.include("without idle-notes, run 2 of 2").and.to.include("with idle-notes, run 2 of 2");
		expect(out).to.include("1 eval(s) of this skill");
		expect(readFileSync(join(env.agentDir, "selfskills", "evals", "idle-notes.jsonl"), "utf8")).to.include(
			"no difference seen in 2 runs",
		);
		expect(personDigest(env)).to.deep.equal(before);
		expect(leftovers(tmp)).to.deep.equal([]);
	});

	it("runs the check command in the run's copy: a skill whose step makes the check pass helped", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "make-out", skillText("make-out", "eval-bash: echo made > out.txt"));
		const before = personDigest(env);
		const result = await piPrint(env, tmp, [
			evalOf("make-out", "--task 'make the output' --check 'test -f out.txt'"),
		]);
		expect(result.stderr, result.stderr).to.include("verdict: helped in 1 of 1 runs against 0 of 1");
		expect(existsSync(join(env.projectDir, "out.txt"))).to.equal(false);
		expect(personDigest(env)).to.deep.equal(before);
		expect(leftovers(tmp)).to.deep.equal([]);
	});

	it("a run cannot read a file planted in the person's home nor write outside its copy", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeFileSync(join(env.home, "secret.txt"), "TOPSECRET\n");
		const escapes = [
			join(env.projectDir, "escaped.txt"),
			join(env.agentDir, "escaped.txt"),
			join(tmp, "escaped.txt"),
		];
		const step =
			`cat ${join(env.home, "secret.txt")} > leaked.txt; echo ran > ran.txt; ` +
			escapes.map((path) => `echo x > ${path}`).join("; ");
		writeSkill(join(env.agentDir, "skills"), "nosy", skillText("nosy", `eval-bash: ${step}`));
		const check = "--check 'test -f ran.txt && ! grep -q TOPSECRET leaked.txt'";
		const sandboxed = await piPrint(env, tmp, [evalOf("nosy", `--task 'look around' ${check}`)]);
		// The step ran (ran.txt) and read nothing of the home folder: the check passes only in the arm with it.
		expect(sandboxed.stderr, sandboxed.stderr).to.include("verdict: helped in 1 of 1 runs against 0 of 1");
		for (const path of escapes) expect(existsSync(path), path).to.equal(false);
		// The same eval unsandboxed does read it and write there: the check above can fail.
		const open = await piPrint(env, tmp, [evalOf("nosy", `--task 'look around' ${check} --no-sandbox`)]);
		expect(open.stderr, open.stderr).to.include("NOT sandboxed").and.to.include("no difference seen in 1 runs");
		for (const path of escapes) expect(existsSync(path), path).to.equal(true);
		expect(leftovers(tmp)).to.deep.equal([]);
	});

	it("a run over its time limit fails as timed out, and its folders go", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "slow", skillText("slow", "eval-bash: sleep 60"));
		const result = await piPrint(env, tmp, [evalOf("slow", "--task 'wait' --expect done --timeout 4")]);
		expect(result.stderr, result.stderr).to.match(/with slow, run 1 of 1: timed out \(over its 4 s limit\)/);
		expect(result.stderr).to.include("verdict: no difference seen in 1 runs");
		expect(leftovers(tmp)).to.deep.equal([]);
	});

	it("Ctrl-C stops the eval in print mode, says so, keeps nothing, and removes its folders", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "slow", skillText("slow", "eval-bash: sleep 60"));
		const child = startPi(env, tmp, evalOf("slow", "--task 'wait' --expect done", 2));
		await child.waitFor(/with slow, run 1 of 2 started/);
		await new Promise((resolve) => setTimeout(resolve, 1500));
		expect(leftovers(tmp)).to.have.length(1);
		child.process.kill("SIGINT");
		const code = await child.exit;
		expect(code).to.equal(0);
		expect(child.stderr()).to.include("eval stopped before any pair of runs finished; nothing kept.");
		expect(leftovers(tmp)).to.deep.equal([]);
		expect(existsSync(join(env.agentDir, "selfskills", "evals", "slow.jsonl"))).to.equal(false);
	});

	it("folders left by a killed pi are swept at the next start, and only those of dead owners", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "slow", skillText("slow", "eval-bash: sleep 60"));
		mkdirSync(join(tmp, `${EVAL_FOLDER_PREFIX}${process.pid}-alive`));
		const child = startPi(env, tmp, evalOf("slow", "--task 'wait' --expect done"));
		await child.waitFor(/with slow, run 1 of 1 started/);
		child.process.kill("SIGKILL");
		await child.exit;
		const left = leftovers(tmp).filter((name) => !name.endsWith("-alive"));
		expect(left).to.have.length(1);
		expect(left[0].startsWith(`${EVAL_FOLDER_PREFIX}${child.process.pid}-`)).to.equal(true);
		await piPrint(env, tmp, ["/selfskills pending"]);
		expect(leftovers(tmp)).to.deep.equal([`${EVAL_FOLDER_PREFIX}${process.pid}-alive`]);
	});

	it("refuses bad input with its code, the value and the next step, and changes nothing", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "ship-it", skillText("ship-it", "How to ship."));
		const stale = proposePatch(env, "ship-it", "How to ship.", "How to ship. eval-say: SHIPPED");
		const skillFile = join(env.agentDir, "skills", "ship-it", "SKILL.md");
		writeFileSync(skillFile, skillText("ship-it", "Shipping, rewritten by hand."));
		const broken = join(env.root, "broken-ext.ts");
		writeFileSync(broken, 'export default function () { throw new Error("broken on purpose"); }\n');
		const before = [...personDigest(env), treeDigest(join(env.agentDir, "selfskills"))];
		const ext = `--extension ${EVAL_EXTENSION}`;
		const cases: Array<[string, RegExp]> = [
			["p-0000beef --task x --expect y --yes", /unknown_proposal: there is no proposal "p-0000beef"/],
			["ship-ti --task x --expect y --yes", /unknown_skill: no skill is named "ship-ti". Did you mean/],
			["ship-it --task x --yes", /eval_refused: say how a run passes: --check <command>.*Usage: \/selfskills eval/],
			["ship-it --task x --check true --expect y", /eval_refused: --check and --expect both given/],
			[`ship-it --task x --check 'no-such-tool --all' ${ext}`, /"no-such-tool" is not on PATH.*--check 'npm test'/],
			[
				`ship-it --task @missing-task.md --expect y ${ext}`,
				/the task file \S+missing-task.md cannot be read \(ENOENT\)/,
			],
			[`${stale.id} --task x --expect y ${ext}`, new RegExp(`stale: proposal ${stale.id} no longer applies`)],
			["ship-it --task x --expect y --runs 0", /--runs "0" is not a whole number from 1 to 20/],
			["ship-it --task x --expect y --runs 21", /--runs "21" is not a whole number from 1 to 20/],
			["ship-it --task x --expect y --extension ./nowhere.ts", /the extension path \S+nowhere.ts does not exist/],
			[`ship-it --task x --expect y --extension ${broken}`, /the extension \S+broken-ext.ts does not load in a run/],
		];
		const result = await piPrint(
			env,
			tmp,
			cases.map(([args]) => `/selfskills eval ${args}`),
		);
		for (const [args, pattern] of cases) expect(result.stderr, args).to.match(pattern);
		expect(result.stderr.match(/nothing ran and nothing changed/g) ?? []).to.have.length(8);
		const noModel = await runPiCli(["-p", "--no-session", `/selfskills eval ship-it --task x --expect y --yes`], {
			env,
			extraEnv: { TMPDIR: tmp },
		});
		expect(noModel.stderr).to.match(/eval_refused: no model is configured in this session/);
		const inHome = await runPiCli([...SESSION_ARGS, `/selfskills eval ship-it --task x --expect y ${ext}`], {
			env: { ...env, projectDir: env.home },
			extraEnv: { TMPDIR: tmp },
		});
		expect(inHome.stderr).to.match(
			/the project to copy into each run would be \S+home, your home folder or above it/,
		);
		const noBwrap = await piPrint(env, tmp, [`/selfskills eval ship-it --task x --expect y ${ext}`], {
			PATH: "/nonexistent",
		});
		expect(noBwrap.stderr).to.match(
			/the runs cannot be sandboxed here: bwrap was not found.*To sandbox them: apt-get install bubblewrap/,
		);
		expect(noBwrap.stderr).to.match(/To sandbox them: .*--no-sandbox to run without it/);
		expect([...personDigest(env), treeDigest(join(env.agentDir, "selfskills"))]).to.deep.equal(before);
		expect(leftovers(tmp)).to.deep.equal([]);
	});

	it("hands the model's key to a run from pi's auth store or its env var; refuses without one", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "ship-it", skillText("ship-it", "How to ship."));
		const openai = ["-p", "--no-session", "--provider", "openai", "--model", "gpt-4o-mini"];
		const message = "/selfskills eval ship-it --task x --expect y --runs 1";
		const run = (extraEnv: Record<string, string>) =>
			runPiCli([...openai, message], { env, extraEnv: { TMPDIR: tmp, ...extraEnv } });
		// The preflight lists the model as available in the run only when its key reached it.
		const ready = /eval: 2 runs \(1 per arm: without ship-it \/ with ship-it\) on openai\/gpt-4o-mini/;
		const none = await run({});
		expect(none.stderr).to.match(/eval_refused: a run cannot use the model openai\/gpt-4o-mini/);
		expect((await run({ OPENAI_API_KEY: "sk-from-env" })).stderr).to.match(ready);
		writeFileSync(join(env.agentDir, "auth.json"), JSON.stringify({ openai: { type: "api_key", key: "sk-stored" } }));
		const stored = await run({});
		expect(stored.stderr, stored.stderr).to.match(ready);
		expect(leftovers(tmp)).to.deep.equal([]);
	});

	it("asks before it spends: without --yes in print mode it says what it would run; runs nothing", async function () {
		const env = getEnv();
		const tmp = setUp(env);
		writeSkill(join(env.agentDir, "skills"), "ship-it", skillText("ship-it", "How to ship."));
		const result = await piPrint(env, tmp, [
			`/selfskills eval ship-it --task x --expect y --runs 4 --extension ${EVAL_EXTENSION}`,
		]);
		expect(result.stderr).to.match(/eval: 8 runs \(4 per arm: without ship-it \/ with ship-it\) on faux\/faux-1/);
		expect(result.stderr).to.match(/Nothing changed: without a UI nobody can be asked\. To run it, add --yes/);
		expect(result.stderr).not.to.include("run 1 of 4");
		expect(leftovers(tmp)).to.deep.equal([]);
	});
});

interface StartedPi {
	readonly process: ReturnType<typeof spawn>;
	readonly exit: Promise<number | null>;
	stderr(): string;
	waitFor(pattern: RegExp): Promise<void>;
}

/** The person's pi in print mode running one message, for tests that signal it mid-eval. */
function startPi(env: TempEnv, tmp: string, message: string): StartedPi {
	const { cliPath, nodeBinary } = getPiLineInfo();
	const { NODE_OPTIONS: _dropped, ...inherited } = process.env;
	const child = spawn(nodeBinary, [cliPath, ...SESSION_ARGS, message], {
		cwd: env.projectDir,
		env: { ...inherited, HOME: env.home, PI_CODING_AGENT_DIR: env.agentDir, PI_OFFLINE: "1", TMPDIR: tmp },
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stderr = "";
	const waiters: Array<() => void> = [];
	child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
		stderr += chunk;
		for (const wake of waiters.splice(0)) wake();
	});
	child.stdout?.resume();
	const exit = new Promise<number | null>((resolve) => child.on("close", resolve));
	return {
		process: child,
		exit,
		stderr: () => stderr,
		async waitFor(pattern) {
			const deadline = Date.now() + 60_000;
			while (!pattern.test(stderr)) {
				if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}:\n${stderr}`);
				await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), exit]);
				if (child.exitCode !== null && !pattern.test(stderr))
					throw new Error(`pi exited before ${pattern}:\n${stderr}`);
			}
		},
	};
}
