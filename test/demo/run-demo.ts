// `npm run demo`: pi-selfskills doing its main job in a REAL pi process, offline. The package is
// installed with `pi install <this repo>` into a temp agent dir; a scripted model (the faux provider
// of test/fixtures/faux-cli-ext.ts) deploys a web app, finds its skill's build command wrong, fixes
// it with one patch, saves a new routine and adds a step it is asked for; then the human reviews with
// /selfskills and undoes that last step, turns on approval "propose", and approves the agent's next
// change from /selfskills pending. Every tool call and result is printed exactly as the model
// receives it. The temp folder is deleted at the end.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FauxStep } from "../support/faux-script.ts";
import type { PiCliResult } from "../support/pi-cli.ts";
import type { TempEnv } from "../support/temp-env.ts";

// Loading pi's modules takes seconds: say so first, then load them.
console.log("pi-selfskills demo: loading pi (a few seconds), then about 30 s of scripted sessions…");
const { call } = await import("../support/faux-script.ts");
const { FAUX_CLI_ARGS, piInstall, runPiCli } = await import("../support/pi-cli.ts");
const { getPiLineInfo, REPO_ROOT } = await import("../support/pi-line.ts");
const { createTempEnv } = await import("../support/temp-env.ts");

const SKILL = `---
name: deploy-checks
description: Use when deploying the web app to staging. Lists the build, deploy and health steps.
---
# Deploy checks

1. Build with \`npm build\`.
2. Deploy with \`npm run deploy:staging\`.
3. Check that \`npm run health:staging\` answers 200 OK.

If \`npm build\` fails, read the log before retrying.
`;

/** The web app the agent deploys: npm scripts that stand in for the real build, deploy and checks. */
const WEBAPP_PACKAGE = {
	name: "webapp",
	version: "1.0.0",
	private: true,
	scripts: {
		build: "echo built dist/ in 2.1 s",
		"deploy:staging": "echo deployed build 42 to https://staging.example.com",
		"health:staging": "echo staging health: 200 OK",
		"smoke:staging": "echo smoke tests on staging: 3 of 3 passed",
	},
};

const PROMPTS = [
	"Deploy the web app to staging, following your deploy checks. " +
		"And: after every staging deploy we run the smoke tests (npm run smoke:staging) " +
		"and post the result in #deploys. Keep that as a skill.",
	"Run the smoke tests now, please.",
	"From now on we deploy staging from the release branch. Add that to the deploy checks.",
];

const bash = (command: string): FauxStep => ({ toolCall: { name: "bash", arguments: { command } } });

/** The model's side of the session: a careful agent that finds a gap in its skill the moment it bites. */
const agentSteps = (env: TempEnv): FauxStep[] => [
	// prompt 1: the documented command fails, npm names the real one, the skill gets one minimal fix
	call({ action: "list", skill: "deploy" }),
	call({ action: "read", skill: "deploy-checks" }),
	bash("npm build"),
	bash("npm run build"),
	call({ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build" }),
	call({
		action: "patch",
		skill: "deploy-checks",
		old_string: "npm build",
		new_string: "npm run build",
		replace_all: true,
	}),
	bash("npm run deploy:staging"),
	bash("npm run health:staging"),
	call({
		action: "create",
		name: "staging-smoke-test",
		description: "Use after every staging deploy: runs the smoke tests and posts the result in #deploys.",
		body:
			"# Staging smoke test\n\n1. Run `npm run smoke:staging`.\n" +
			"2. Post its last line in #deploys, passed or failed.\n",
	}),
	{
		text:
			"Deployed build 42 to staging; health answers 200 OK. deploy-checks said `npm build`, " +
			"which npm does not know (it pointed to `npm run build`, which works), " +
			"so I corrected both mentions in the skill. The smoke-test routine is the new skill staging-smoke-test.",
	},
	// prompt 2: the new skill is named in the system prompt before any /reload, with its path
	{ toolCall: { name: "read", arguments: { path: join(env.agentDir, "skills", "staging-smoke-test", "SKILL.md") } } },
	bash("npm run smoke:staging"),
	{
		text:
			"Smoke tests on staging: 3 of 3 passed. I cannot post in #deploys from here; " +
			'the line for it: "staging build 42: smoke 3/3 passed".',
	},
	// prompt 3: a change the user asks for, as one added line
	call({
		action: "patch",
		skill: "deploy-checks",
		old_string: "# Deploy checks\n\n",
		new_string: "# Deploy checks\n\nDeploy staging from the `release` branch.\n\n",
	}),
	{ text: "Added to deploy-checks: staging deploys from the `release` branch." },
];

const AFTER_RELOAD_STEPS: FauxStep[] = [{ text: "staging-smoke-test is in pi's own skill list now." }];

const REVIEW_PROMPT = "The health check should also confirm the deployed version. Note that in the deploy checks.";

/** Under approval "propose": the agent's patch becomes a proposal, and it says so instead of retrying. */
const PROPOSE_STEPS: FauxStep[] = [
	call({ action: "read", skill: "deploy-checks" }),
	call({
		action: "patch",
		skill: "deploy-checks",
		old_string: "answers 200 OK.",
		new_string: "answers 200 OK and reports the version just deployed.",
		reason: "the user asked that the health check confirm the deployed version",
	}),
	{ text: "I proposed that change to deploy-checks; it lands once you approve it (/selfskills pending)." },
];

interface JsonEvent {
	type?: string;
	message?: { role?: string; content?: unknown; isError?: boolean; toolName?: string };
}
interface Block {
	type: string;
	text?: string;
	name?: string;
	arguments?: unknown;
}

const indent = (text: string, prefix: string) =>
	text
		.split("\n")
		.map((line) => `${prefix}${line}`)
		.join("\n");
const textOf = (content: unknown) =>
	Array.isArray(content)
		? (content as Block[])
				.filter((b) => b.type === "text")
				.map((b) => b.text ?? "")
				.join("\n")
		: String(content ?? "");

function heading(title: string): void {
	console.log(`\n━━ ${title}`);
}

/** Said before a step that takes seconds, so the screen never sits still without a word. */
function working(what: string): void {
	console.log(`  (${what}…)`);
}

/** Turns pi's `--mode json` event stream into a transcript: prompts, tool calls, results, answers. */
function printTranscript(stdout: string): void {
	for (const line of stdout.split("\n")) {
		if (!line.startsWith("{")) continue;
		const event = JSON.parse(line) as JsonEvent;
		const message = event.message;
		if (event.type !== "message_end" || !message) continue;
		if (message.role === "user") console.log(`\nuser> ${textOf(message.content)}`);
		if (message.role === "assistant") {
			for (const block of (message.content ?? []) as Block[]) {
				if (block.type === "toolCall") console.log(`\n  → ${block.name} ${JSON.stringify(block.arguments)}`);
				if (block.type === "text") console.log(`\nassistant> ${block.text}`);
			}
		}
		if (message.role === "toolResult") {
			console.log(`  ← ${message.isError ? "ERROR (isError: true)" : "ok"}`);
			console.log(indent(textOf(message.content), "    │ "));
		}
	}
}

function writeScript(env: TempEnv, name: string, steps: FauxStep[]): Record<string, string> {
	const script = join(env.root, `${name}.json`);
	writeFileSync(script, JSON.stringify(steps));
	return { FAUX_SCRIPT: script, FAUX_CAPTURE: join(env.root, `${name}.capture.jsonl`) };
}

function check(result: PiCliResult, what: string): PiCliResult {
	if (result.exitCode !== 0)
		throw new Error(`${what} failed (exit ${result.exitCode}):\n${result.stdout}\n${result.stderr}`);
	return result;
}

function capturedSystemPrompts(env: TempEnv, name: string): string[] {
	const path = join(env.root, `${name}.capture.jsonl`);
	if (!existsSync(path)) return [];
	return readFileSync(path, "utf8")
		.split("\n")
		.filter(Boolean)
		.map((line) => (JSON.parse(line) as { systemPrompt: string }).systemPrompt);
}

const between = (text: string, open: string, close: string) => {
	const start = text.indexOf(open);
	const end = text.indexOf(close, start);
	return start < 0 || end < 0 ? "" : text.slice(start, end + close.length);
};

/** What one print-mode run of /selfskills commands printed (stdout and stderr, in that order). */
const printed = (result: PiCliResult) => `${result.stdout}${result.stderr}`.trimEnd();

/** Prints each command of a print-mode run with its own output (each output starts a known way). */
function printCommands(commands: readonly string[], output: string): void {
	const outputs = output.split(
		new RegExp(
			String.raw`\n(?=selfskills: enabled|\d+ backup\(s\) of|Would restore|restore landed|` +
				String.raw`\d+ pending proposal|No proposal is pending|proposal p-|approved p-)`,
		),
	);
	commands.forEach((command, i) => {
		console.log(`\n${command}`);
		console.log(indent((outputs[i] ?? "(no output!)").trimEnd(), "    "));
	});
}

async function demo(env: TempEnv): Promise<void> {
	const { line, cliPath, nodeBinary } = getPiLineInfo();
	const pi = (args: string[], extraEnv?: Record<string, string>) => runPiCli(args, { env, extraEnv });
	const runtime =
		nodeBinary === process.execPath ? `node ${process.version}` : nodeBinary.replace(`${REPO_ROOT}/`, "");
	console.log(
		`This demo runs the real pi ${line} CLI (${cliPath.replace(`${REPO_ROOT}/`, "")} on ${runtime}) ` +
			`offline with a scripted model, in the temp dir ${env.root} (deleted at the end).`,
	);

	heading(`pi install ${REPO_ROOT}`);
	const install = await piInstall(env, REPO_ROOT);
	console.log(install.stdout.trim());
	const skillDir = join(env.agentDir, "skills", "deploy-checks");
	mkdirSync(skillDir, { recursive: true });
	writeFileSync(join(skillDir, "SKILL.md"), SKILL);
	writeFileSync(join(env.projectDir, "package.json"), `${JSON.stringify(WEBAPP_PACKAGE, null, 2)}\n`);
	console.log(`The user's own skill ${join(skillDir, "SKILL.md")} names a build command npm does not have;`);
	console.log(`the project ${env.projectDir} is a web app whose npm scripts stand in for build, deploy and checks.`);

	heading("the agent: a deploy, a gap in its skill found and fixed, a new routine saved (pi -p --mode json)");
	working("running pi with three prompts and the scripted model; its transcript follows in about 10 s");
	const session = check(
		await pi(
			["-p", "--mode", "json", "--no-session", ...FAUX_CLI_ARGS, ...PROMPTS],
			writeScript(env, "session", agentSteps(env)),
		),
		"agent session",
	);
	printTranscript(session.stdout);
	const prompts = capturedSystemPrompts(env, "session");
	console.log(
		"\nEvery model call of the session carried the standing rules: " +
			`${prompts.filter((p) => p.includes("<selfskills-rules>")).length} of ${prompts.length} calls.`,
	);
	console.log("From the second prompt on, before any /reload, the system prompt named the new skill:");
	const changedBlock = between(prompts.at(-1) ?? "", "<selfskills-changed>", "</selfskills-changed>");
	console.log(indent(changedBlock || "(missing!)", "    │ "));

	heading("deploy-checks on disk after the session");
	console.log(indent(readFileSync(join(skillDir, "SKILL.md"), "utf8").trimEnd(), "    │ "));
	console.log(
		`audit log: ${
			readFileSync(join(env.agentDir, "selfskills", "audit.jsonl"), "utf8")
				.trim()
				.split("\n").length
		} line(s) in ${join(env.agentDir, "selfskills", "audit.jsonl")}`,
	);

	// The human reviews in one pi process (print mode takes several messages); a fresh process (what
	// /reload does) runs beside it to show pi listing the new skill itself.
	const review = ["/selfskills", "/selfskills history deploy-checks"];
	working("running the person's review and, beside it, a fresh pi process");
	const [reviewed, next] = await Promise.all([
		pi(["-p", "--no-session", ...FAUX_CLI_ARGS, ...review]),
		pi(
			["-p", "--mode", "json", "--no-session", ...FAUX_CLI_ARGS, "Which skills do you have for staging?"],
			writeScript(env, "reload", AFTER_RELOAD_STEPS),
		),
	]);
	heading(`the human reviews what changed: pi -p ${review.map((c) => `"${c}"`).join(" ")}`);
	printCommands(review, printed(check(reviewed, "/selfskills review")));

	// History's last line is the command that undoes the newest change.
	const restore = /^Restore one \(.*\): (\/selfskills restore .+)$/m.exec(printed(reviewed))?.[1];
	if (!restore) throw new Error("/selfskills history named no restore command");
	const undo = ["/selfskills restore deploy-checks", `${restore} --yes`];
	heading(
		"a week later the team deploys from main again; the human undoes the release-branch step: " +
			`pi -p ${undo.map((c) => `"${c}"`).join(" ")}`,
	);
	console.log(
		"(no UI here, so pi cannot ask: a restore named by skill alone only shows its diff, " +
			"and the command copied from history, confirmed with --yes, restores; in the TUI the first one asks)",
	);
	printCommands(
		undo,
		printed(check(await pi(["-p", "--no-session", ...FAUX_CLI_ARGS, ...undo]), "/selfskills restore")),
	);
	console.log("\ndeploy-checks on disk now (the build fix kept, the release-branch line gone):");
	console.log(indent(readFileSync(join(skillDir, "SKILL.md"), "utf8").trimEnd(), "    │ "));

	heading('the person turns on review ("selfskills": {"approval": "propose"}) and asks for one more step');
	const settingsPath = join(env.agentDir, "settings.json");
	const settings = JSON.parse(readFileSync(settingsPath, "utf8")) as Record<string, unknown>;
	writeFileSync(settingsPath, `${JSON.stringify({ ...settings, selfskills: { approval: "propose" } }, null, 2)}\n`);
	const before = readFileSync(join(skillDir, "SKILL.md"), "utf8");
	printTranscript(
		check(
			await pi(
				["-p", "--mode", "json", "--no-session", ...FAUX_CLI_ARGS, REVIEW_PROMPT],
				writeScript(env, "propose", PROPOSE_STEPS),
			),
			"proposal session",
		).stdout,
	);
	if (readFileSync(join(skillDir, "SKILL.md"), "utf8") !== before) throw new Error("a proposal changed the skill");
	const pendingCommand = ["/selfskills pending"];
	heading(`the person reviews the proposal: pi -p "${pendingCommand[0]}"`);
	const pendingOutput = printed(
		check(await pi(["-p", "--no-session", ...FAUX_CLI_ARGS, ...pendingCommand]), "/selfskills pending"),
	);
	printCommands(pendingCommand, pendingOutput);
	const id = /p-[0-9a-f]{8}/.exec(pendingOutput)?.[0];
	if (!id) throw new Error("/selfskills pending listed no proposal");
	const showCommand = [`/selfskills show ${id}`];
	heading(`and reads the change an approval would land, with its digest: pi -p "${showCommand[0]}"`);
	const shown = printed(check(await pi(["-p", "--no-session", ...FAUX_CLI_ARGS, ...showCommand]), "/selfskills show"));
	printCommands(showCommand, shown);
	const digest = /^digest: ([0-9a-f]+)$/m.exec(shown)?.[1];
	if (!digest) throw new Error("/selfskills show printed no digest");
	const decide = [`/selfskills approve ${id} --yes=${digest}`];
	heading(
		"then approves what it saw (in the TUI approve asks with the diff; print mode takes the digest show printed, " +
			`and refuses if the change is no longer that one): pi -p "${decide[0]}"`,
	);
	printCommands(
		decide,
		printed(check(await pi(["-p", "--no-session", ...FAUX_CLI_ARGS, ...decide]), "/selfskills approve")),
	);
	console.log("\ndeploy-checks on disk now (the approved step landed, backed up first):");
	console.log(indent(readFileSync(join(skillDir, "SKILL.md"), "utf8").trimEnd(), "    │ "));

	heading("a new pi process (what /reload does): pi now lists staging-smoke-test itself");
	printTranscript(check(next, "after reload").stdout);
	const listed = between(capturedSystemPrompts(env, "reload")[0] ?? "", "<available_skills>", "</available_skills>");
	console.log(`\npi's <available_skills> in the system prompt:\n${indent(listed || "(missing!)", "    │ ")}`);
}

const env = createTempEnv({ prefix: "selfskills-demo-" });
const started = Date.now();
try {
	await demo(env);
	console.log(`\nDemo finished in ${((Date.now() - started) / 1000).toFixed(1)} s; removing ${env.root}.`);
} catch (error) {
	console.error(`\nDemo FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
	process.exitCode = 1;
} finally {
	env.cleanup({ keep: process.env.SELFSKILLS_KEEP_TMP === "1" });
}
