// `npm run demo`: pi-selfskills doing its main job in a REAL pi process, offline. The package is
// installed with `pi install <this repo>` into a temp agent dir, a scripted model (the faux
// provider of test/fixtures/faux-cli-ext.ts) drives skill_manage, and every tool call and result is
// printed exactly as the model receives it. The temp folder is deleted at the end.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FauxStep } from "../support/faux-script.ts";
import { FAUX_CLI_ARGS, piInstall, runPiCli, type PiCliResult } from "../support/pi-cli.ts";
import { getPiLineInfo, REPO_ROOT } from "../support/pi-line.ts";
import { createTempEnv, type TempEnv } from "../support/temp-env.ts";

const SKILL = `---
name: deploy-checks
description: Use when deploying the web app to staging. Lists the build and health checks to run.
---
# Deploy checks

1. Build with \`npm build\`.
2. Check that https://staging.example.com/health answers 200.

If \`npm build\` fails, read the log before retrying.
`;

const call = (args: Record<string, unknown>): FauxStep => ({ toolCall: { name: "skill_manage", arguments: args } });

/** The model's side of the first session: what a careful agent does after a failed deploy. */
const agentSteps = (env: TempEnv): FauxStep[] => [
	call({ action: "list", skill: "deploy" }),
	call({ action: "read", skill: "deploy-checks" }),
	call({ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build" }),
	call({ action: "patch", skill: "deploy-checks", old_string: "npm build", new_string: "npm run build", replace_all: true }),
	call({ action: "patch", skill: "deploy-checks", old_string: "/health answers", new_string: "/healthz answers" }),
	call({
		action: "create",
		name: "staging-rollback",
		description: "Use when a staging deploy must be undone: finds the previous release and redeploys it.",
		body: "# Staging rollback\n\n1. `git tag --sort=-creatordate | head -2` names the previous release.\n2. `npm run deploy -- --tag <previous>`.\n3. Run the deploy-checks skill again.\n",
	}),
	call({ action: "history", skill: "deploy-checks" }),
	call({ action: "restore", skill: "deploy-checks" }),
	{ text: "Fixed the build step in deploy-checks (npm run build), undid my unverified /healthz change, and saved the rollback procedure as the skill staging-rollback." },
	// second prompt of the same session: the new skill is already named in the system prompt, with its path
	{ toolCall: { name: "read", arguments: { path: join(env.agentDir, "skills", "staging-rollback", "SKILL.md") } } },
	{ text: "Following staging-rollback: finding the previous release tag first." },
];

const AFTER_RELOAD_STEPS: FauxStep[] = [{ text: "staging-rollback is in pi's own skill list now." }];

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

const indent = (text: string, prefix: string) => text.split("\n").map((line) => `${prefix}${line}`).join("\n");
const textOf = (content: unknown) => (Array.isArray(content) ? (content as Block[]).filter((b) => b.type === "text").map((b) => b.text ?? "").join("\n") : String(content ?? ""));

function heading(title: string): void {
	console.log(`\n━━ ${title}`);
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
	if (result.exitCode !== 0) throw new Error(`${what} failed (exit ${result.exitCode}):\n${result.stdout}\n${result.stderr}`);
	return result;
}

function capturedSystemPrompts(env: TempEnv, name: string): string[] {
	const path = join(env.root, `${name}.capture.jsonl`);
	if (!existsSync(path)) return [];
	return readFileSync(path, "utf8").split("\n").filter(Boolean).map((line) => (JSON.parse(line) as { systemPrompt: string }).systemPrompt);
}

const between = (text: string, open: string, close: string) => {
	const start = text.indexOf(open);
	const end = text.indexOf(close, start);
	return start < 0 || end < 0 ? "" : text.slice(start, end + close.length);
};

async function demo(env: TempEnv): Promise<void> {
	const { line, cliPath, nodeBinary } = getPiLineInfo();
	const pi = (args: string[], extraEnv?: Record<string, string>) => runPiCli(args, { env, extraEnv });
	console.log(`pi-selfskills demo — real pi ${line} CLI (${cliPath.replace(REPO_ROOT + "/", "")} on ${nodeBinary === process.execPath ? `node ${process.version}` : nodeBinary.replace(REPO_ROOT + "/", "")}), scripted offline model, temp dir ${env.root}`);

	heading(`pi install ${REPO_ROOT}`);
	const install = await piInstall(env, REPO_ROOT);
	console.log(install.stdout.trim());
	const skillDir = join(env.agentDir, "skills", "deploy-checks");
	mkdirSync(skillDir, { recursive: true });
	writeFileSync(join(skillDir, "SKILL.md"), SKILL);
	console.log(`and one skill of the user's own, with a wrong build command: ${join(skillDir, "SKILL.md")}`);

	heading("a session: the deploy failed, the agent repairs its skill (pi -p --mode json)");
	const session = check(
		await pi(["-p", "--mode", "json", "--no-session", ...FAUX_CLI_ARGS,
			"The staging deploy failed: `npm build` is not a command, `npm run build` works. Fix your deploy skill, and keep the rollback we just did as a skill.",
			"Roll staging back again, please."], writeScript(env, "session", agentSteps(env))),
		"agent session",
	);
	printTranscript(session.stdout);
	const prompts = capturedSystemPrompts(env, "session");
	console.log(`\nEvery model call of the session carried the standing rules: ${prompts.filter((p) => p.includes("<selfskills-rules>")).length} of ${prompts.length} calls.`);
	console.log("On the second prompt, before any /reload, the system prompt named the new skill:");
	console.log(indent(between(prompts.at(-1) ?? "", "<selfskills-changed>", "</selfskills-changed>") || "(missing!)", "    │ "));

	heading("on disk");
	console.log(indent(readFileSync(join(skillDir, "SKILL.md"), "utf8").trimEnd(), "    │ "));
	const backupDir = join(env.agentDir, "selfskills", "backups", "deploy-checks", "SKILL.md");
	console.log(`backups (restore them with cp): ${backupDir}\n${readdirSync(backupDir).map((f) => `    ${f}`).join("\n")}`);
	console.log(`audit log: ${readFileSync(join(env.agentDir, "selfskills", "audit.jsonl"), "utf8").trim().split("\n").length} line(s) in ${join(env.agentDir, "selfskills", "audit.jsonl")}`);

	// One pi process runs the four commands in order (print mode takes several messages); a second,
	// fresh process (what /reload does) runs beside it.
	const oldest = readdirSync(backupDir).sort()[0].replace(/\.md$/, "");
	const commands = ["/selfskills", "/selfskills history deploy-checks", "/selfskills restore deploy-checks", `/selfskills restore deploy-checks ${oldest}`];
	const [human, next] = await Promise.all([
		pi(["-p", "--no-session", ...FAUX_CLI_ARGS, ...commands]),
		pi(["-p", "--mode", "json", "--no-session", ...FAUX_CLI_ARGS, "What skills do you have for staging?"], writeScript(env, "reload", AFTER_RELOAD_STEPS)),
	]);
	heading(`the human: pi -p ${commands.map((c) => `"${c}"`).join(" ")}`);
	console.log("(no UI here: it prints instead of asking, and restores only a named backup; the last one puts back the original, undoing every edit of the session)");
	const outputs = `${check(human, "/selfskills commands").stdout}${human.stderr}`.split(/\n(?=selfskills: enabled|\d+ backup\(s\) of|Would restore|restore landed)/);
	commands.forEach((command, i) => {
		console.log(`\n${command}`);
		console.log(indent((outputs[i] ?? "(no output!)").trimEnd(), "    "));
	});

	heading("a new pi process (what /reload does): pi now lists staging-rollback itself");
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
	console.error(`\nDemo FAILED: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
	process.exitCode = 1;
} finally {
	env.cleanup({ keep: process.env.SELFSKILLS_KEEP_TMP === "1" });
}
