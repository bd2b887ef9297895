// The parts of /selfskills eval that need no pi: its arguments, the verdict, the arms laid out on
// disk, the project copy, the sandbox's hidden and kept places, and the sweep of dead owners' folders.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { parseEvalArguments, splitWords } from "../../../src/eval/arguments.ts";
import { materializeArm, proposalArms, skillArms } from "../../../src/eval/arms.ts";
import { summarizeArm, verdictOf } from "../../../src/eval/report.ts";
import { EventTally, type RunResult } from "../../../src/eval/run.ts";
import { hiddenPlaces, keptPlaces, sandboxedArgv } from "../../../src/eval/sandbox.ts";
import { UNSET_ENV } from "../../../src/guard/bwrap-args.ts";
import { probeSandbox } from "../../../src/guard/sandbox.ts";
import { copyProject, EVAL_FOLDER_PREFIX, sweepWorkspaces } from "../../../src/eval/workspace.ts";
import { isRefusal } from "../../../src/base/errors.ts";
import { useTempEnv } from "../../support/temp-env.ts";

const run = (outcome: RunResult["outcome"], turns = 1): RunResult => ({
	outcome,
	turns,
	inputTokens: 100,
	outputTokens: 10,
	cost: 0.01,
	wallMs: 1000,
});

describe("eval arguments", function () {
	it("splits words like a shell: quotes keep spaces, backslashes escape", function () {
		expect(splitWords(`a "b c" 'd "e"' f\\ g "h\\"i"`)).to.deep.equal(["a", "b c", 'd "e"', "f g", 'h"i']);
		expect(splitWords(`--task "open`)).to.equal(undefined);
	});

	it("takes a target, the task, one way to pass, and defaults for runs, timeout and sandbox", function () {
		const args = parseEvalArguments(`p-1234abcd --task "fix the build" --check 'npm test' --yes`);
		expect(args).to.deep.equal({
			target: "p-1234abcd",
			task: "fix the build",
			check: "npm test",
			runs: 3,
			timeoutSeconds: 600,
			sandbox: true,
			yes: true,
		});
		const other = parseEvalArguments(
			"deploy --task=@task.md --expect=DONE --runs=20 --no-sandbox --extension ./p.ts",
		);
		expect(other).to.include({ runs: 20, expect: "DONE", task: "@task.md", sandbox: false, extension: "./p.ts" });
	});

	it("refuses each bad shape with eval_refused naming the value and the usage", function () {
		const cases: Array<[string, RegExp]> = [
			["skill --task x", /say how a run passes/],
			["skill --task x --check a --expect b", /both given/],
			["--task x --expect y", /name the proposal id or the skill/],
			["a b --task x --expect y", /one proposal id or skill, not "a" "b"/],
			["skill --expect y", /--task is missing or empty/],
			["skill --task '' --expect y", /--task is missing or empty/],
			["skill --task x --expect y --runs 0", /--runs "0" is not a whole number from 1 to 20/],
			["skill --task x --expect y --runs 2.5", /--runs "2.5" is not a whole number/],
			["skill --task x --expect y --timeout 0", /--timeout "0" is not a number of seconds/],
			["skill --task x --expect y --bogus", /unknown flag "--bogus"/],
			["skill --task x --expect y --runs", /--runs needs a value/],
			["skill --task x --task y --expect y", /--task is given twice/],
		];
		for (const [text, pattern] of cases) {
			const refusal = parseEvalArguments(text);
			expect(isRefusal(refusal), text).to.equal(true);
			if (!isRefusal(refusal)) continue;
			expect(refusal.code, text).to.equal("eval_refused");
			expect(refusal.message, text).to.match(pattern).and.to.include("Usage: /selfskills eval");
		}
	});
});

describe("eval verdict", function () {
	it("compares passes only, with both counts and N, never more than the runs show", function () {
		const arm = (label: string, outcomes: RunResult["outcome"][]) =>
			summarizeArm(
				label,
				outcomes.map((o) => run(o)),
			);
		const none = arm("without", ["failed", "failed", "passed"]);
		const all = arm("with", ["passed", "passed", "passed"]);
		expect(verdictOf(none, all)).to.equal("helped in 3 of 3 runs against 1 of 3");
		expect(verdictOf(all, none)).to.equal("worse: passed in 1 of 3 runs against 3 of 3");
		expect(verdictOf(none, none)).to.equal("no difference seen in 3 runs (1 passed in each arm)");
		expect(verdictOf(arm("a", []), arm("b", []))).to.match(/^no verdict/);
		const timedOut = arm("with", ["timed out", "error", "passed"]);
		expect(timedOut).to.include({ runs: 3, passes: 1, medianTurns: 1, inputTokens: 300, outputTokens: 30 });
	});

	it("takes the median of turns (the mean of the middle two for an even count)", function () {
		const s = summarizeArm("x", [run("passed", 1), run("passed", 5), run("failed", 2), run("failed", 4)]);
		expect(s.medianTurns).to.equal(3);
	});
});

describe("eval run tally", function () {
	it("counts assistant replies as turns and sums their usage and cost, across split chunks", function () {
		const reply = (text: string, cost: number, stopReason = "stop") =>
			JSON.stringify({
				type: "message_end",
				message: {
					role: "assistant",
					content: [{ type: "text", text }],
					usage: { input: 100, output: 20, cacheRead: 50, cacheWrite: 5, cost: { total: cost } },
					stopReason,
				},
			});
		const user = JSON.stringify({ type: "message_end", message: { role: "user", content: [] } });
		const text = [user, reply("thinking", 0.25), '{"type":"turn_end"}', reply("final DONE", 0.5)].join("\n");
		const tally = new EventTally();
		tally.feed(text.slice(0, 37));
		tally.feed(text.slice(37));
		tally.end();
		expect(tally).to.include({ turns: 2, inputTokens: 310, outputTokens: 40, cost: 0.75, finalText: "final DONE" });
		expect(tally.error).to.equal(undefined);
	});
});

describe("eval folders and sandbox", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-evalunit-" });

	it("lays out an arm: skills copied by name, the planned changes over the copies", function () {
		const env = getEnv();
		const dir = join(env.root, "lib", "deploy");
		mkdirSync(join(dir, "references"), { recursive: true });
		writeFileSync(join(dir, "SKILL.md"), "old\n");
		writeFileSync(join(dir, "references", "a.md"), "keep\n");
		const single = join(env.root, "lib", "single.md");
		writeFileSync(single, "single\n");
		const library = [
			{ name: "deploy", dir, filePath: join(dir, "SKILL.md") },
			{ name: "single", dir: undefined, filePath: single },
		];
		const change = {
			skill: "deploy",
			relPath: "SKILL.md",
			absPath: join(dir, "SKILL.md"),
			before: Buffer.from("old\n"),
			after: Buffer.from("new\n"),
		};
		const gone = { ...change, relPath: "references/a.md", absPath: join(dir, "references/a.md"), after: null };
		const outside = { ...change, relPath: "../../outside.md" };
		const [without, withChange] = proposalArms(library, [change, gone, outside]);
		materializeArm(without, join(env.root, "a"));
		materializeArm(withChange, join(env.root, "b"));
		expect(readFileSync(join(env.root, "a", "deploy", "SKILL.md"), "utf8")).to.equal("old\n");
		expect(readFileSync(join(env.root, "b", "deploy", "SKILL.md"), "utf8")).to.equal("new\n");
		expect(existsSync(join(env.root, "b", "deploy", "references", "a.md"))).to.equal(false);
		expect(readFileSync(join(env.root, "b", "single", "SKILL.md"), "utf8")).to.equal("single\n");
		expect(existsSync(join(env.root, "outside.md"))).to.equal(false);
		expect(readFileSync(join(dir, "SKILL.md"), "utf8")).to.equal("old\n");
		const [no, yes] = skillArms(library, "deploy");
		expect(no.skills.map((s) => s.name)).to.deep.equal(["single"]);
		expect(yes.skills.map((s) => s.name)).to.deep.equal(["deploy", "single"]);
	});

	it("copies the project with links kept and each node_modules bound, not copied", function () {
		const env = getEnv();
		const from = env.projectDir;
		mkdirSync(join(from, "node_modules", "dep"), { recursive: true });
		mkdirSync(join(from, "packages", "x", "node_modules"), { recursive: true });
		writeFileSync(join(from, "node_modules", "dep", "index.js"), "x");
		writeFileSync(join(from, "a.txt"), "a");
		symlinkSync("a.txt", join(from, "link"));
		const to = join(env.root, "copy");
		const binds = copyProject(from, to);
		expect(binds.map((b) => b.source).sort()).to.deep.equal(
			[join(from, "node_modules"), join(from, "packages", "x", "node_modules")].sort(),
		);
		expect(existsSync(join(to, "node_modules"))).to.equal(true);
		expect(existsSync(join(to, "node_modules", "dep"))).to.equal(false);
		expect(readFileSync(join(to, "a.txt"), "utf8")).to.equal("a");
		expect(readlinkSync(join(to, "link"))).to.equal("a.txt");
	});

	it("hides the outermost places only, binds back what lies inside them, mounts in a safe order", function () {
		const env = getEnv();
		const hidden = hiddenPlaces([env.root, env.home, "/", join(env.root, "missing")]);
		expect(hidden).to.deep.equal([env.root]);
		expect(keptPlaces([env.agentDir, "/usr", env.root], hidden)).to.deep.equal([env.agentDir]);
		const run = { dir: env.projectDir, tmpdir: join(env.projectDir, "tmp"), cwd: env.projectDir };
		const binds = [{ source: "/src/node_modules", target: join(env.projectDir, "node_modules") }];
		const argv = sandboxedArgv({ bwrap: "/usr/bin/bwrap", hidden, keep: [env.agentDir] }, { ...run, binds }, ["x"]);
		expect(argv[0]).to.equal("/usr/bin/bwrap");
		expect(argv.slice(-2)).to.deep.equal(["--", "x"]);
		const args = argv.slice(1, -2);
		const at = (flag: string, path: string) => args.findIndex((a, i) => a === flag && args[i + 1] === path);
		expect(at("--ro-bind", "/")).to.equal(0);
		expect(at("--ro-bind", "/")).to.be.lessThan(at("--tmpfs", env.root));
		expect(at("--tmpfs", env.root)).to.be.lessThan(at("--ro-bind", env.agentDir));
		expect(at("--ro-bind", env.agentDir)).to.be.lessThan(at("--bind", env.projectDir));
		expect(at("--bind", env.projectDir)).to.be.lessThan(at("--ro-bind", "/src/node_modules"));
		expect(args).to.include.members(["--unshare-pid", "--die-with-parent", "--cap-drop", "--new-session"]);
		expect(args).not.to.include("--unshare-net");
		expect(args.join(" ")).to.contain(`--setenv TMPDIR ${run.tmpdir}`).and.to.contain(`--chdir ${run.cwd}`);
		for (const name of UNSET_ENV) expect(args.join(" "), name).to.contain(`--unsetenv ${name}`);
	});

	it("runs in real bwrap with its own $TMPDIR in the run's folder and no desktop or agent sockets", function () {
		const probe = probeSandbox();
		expect(probe, "bubblewrap must work here").to.include({ available: true });
		if (!probe.available) return;
		const env = getEnv();
		const runDir = join(env.root, "run");
		const tmp = join(runDir, "tmp");
		mkdirSync(tmp, { recursive: true });
		const secret = join(env.home, "secret.txt");
		writeFileSync(secret, "s3cret\n");
		const sandbox = { bwrap: probe.bwrap, hidden: hiddenPlaces([env.home]), keep: [] };
		const script =
			'echo "tmp=$TMPDIR npm=$npm_config_cache"; for v in DISPLAY WAYLAND_DISPLAY DBUS_SESSION_BUS_ADDRESS ' +
			'SSH_AUTH_SOCK TMUX; do printenv "$v" >/dev/null && echo "$v=set" || echo "$v=unset"; done; ' +
			': > "$TMPDIR/x" && echo wrote-tmp; ' +
			'cat "$1" 2>/dev/null || echo home-hidden';
		const result = spawnSync(
			sandbox.bwrap,
			sandboxedArgv(sandbox, { dir: runDir, tmpdir: tmp, cwd: runDir, binds: [] }, [
				"/bin/sh",
				"-c",
				script,
				"sh",
				secret,
			]).slice(1),
			{
				encoding: "utf8",
				env: {
					PATH: process.env.PATH ?? "/usr/bin:/bin",
					TMPDIR: "/tmp",
					DISPLAY: ":0",
					WAYLAND_DISPLAY: "wayland-0",
					DBUS_SESSION_BUS_ADDRESS: "unix:path=/run/user/0/bus",
					SSH_AUTH_SOCK: "/tmp/ssh-agent.sock",
					TMUX: "/tmp/tmux-0/default,1,0",
				},
			},
		);
		expect(result.status, result.stderr).to.equal(0);
		expect(result.stdout.split("\n")).to.include.members([
			`tmp=${tmp} npm=${tmp}/npm-cache`,
			...UNSET_ENV.map((name) => `${name}=unset`),
			"wrote-tmp",
			"home-hidden",
		]);
		expect(existsSync(join(tmp, "x"))).to.equal(true);
	});

	it("sweeps only the folders whose owner is dead", function () {
		const env = getEnv();
		const dead = join(env.root, `${EVAL_FOLDER_PREFIX}999999999-abc`);
		const alive = join(env.root, `${EVAL_FOLDER_PREFIX}${process.pid}-abc`);
		const other = join(env.root, "selfskills-eval-notapid");
		for (const dir of [dead, alive, other]) mkdirSync(join(dir, "r1-0"), { recursive: true });
		expect(sweepWorkspaces(env.root)).to.deep.equal([dead]);
		expect([dead, alive, other].map((d) => existsSync(d))).to.deep.equal([false, true, true]);
	});
});
