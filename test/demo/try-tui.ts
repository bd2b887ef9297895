// `npm run try`: pi's own TUI with this checkout installed, offline and with no API key. A throw-away
// HOME holds pi's agent folder, a sample skill library and a project ~/webapp; the scripted model of
// test/fixtures/faux-cli-ext.ts answers whatever is typed by fixing a skill, then saving a new one.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, type FauxStep } from "../support/faux-script.ts";
import { FAUX_CLI_ARGS, piInstall } from "../support/pi-cli.ts";
import { getPiLineInfo, REPO_ROOT } from "../support/pi-line.ts";
import type { TempEnv } from "../support/temp-env.ts";

const DEPLOY_SKILL = `---
name: deploy-checks
description: Use when deploying the web app to staging. Lists the build and health checks to run.
---
# Deploy checks

1. Build with \`npm build\`.
2. Check that https://staging.example.com/health answers 200.

If the build fails, read the log before retrying.
`;

const NOTES_SKILL = `---
name: release-notes
description: Use when writing release notes for the web app. Says where they go and how they are worded.
---
# Release notes

Write them in CHANGELOG.md under the version, one line per change, newest first.
`;

const SMOKE_BODY =
	"# Staging smoke test\n\n1. Run `npm run smoke:staging` after every staging deploy.\n" +
	"2. Post the result in #deploys.\n";

/** What the scripted model does, one step per model call, whatever the prompt says. */
export const TRY_STEPS: FauxStep[] = [
	call({ action: "read", skill: "deploy-checks" }),
	call({
		action: "patch",
		skill: "deploy-checks",
		old_string: "1. Build with `npm build`.",
		new_string: "1. Build with `npm run build` (there is no `npm build` script).",
		reason: "npm build failed on staging; the script is npm run build",
	}),
	{
		text:
			"Fixed deploy-checks: step 1 now says `npm run build`. The old text is backed up " +
			"(`/selfskills history deploy-checks`). Send another message and I will save the smoke test as a skill.",
	},
	call({
		action: "create",
		name: "staging-smoke",
		description: "Use after every staging deploy of the web app: runs the smoke tests and posts the result.",
		body: SMOKE_BODY,
		reason: "the user runs this routine after every staging deploy",
	}),
	{ text: "Saved staging-smoke. That is the whole script: try /selfskills, then leave with ctrl+d." },
	...Array.from({ length: 20 }, () => ({
		text:
			"(The scripted model has no more steps.) Try /selfskills, /selfskills history deploy-checks or " +
			"/selfskills restore deploy-checks; leave with ctrl+d.",
	})),
];

/** The throw-away HOME: pi's agent folder at its default place, so pi shows the project as ~/webapp. */
function createTryEnv(): TempEnv {
	const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-selfskills-try-")));
	const env: TempEnv = {
		root,
		agentDir: join(root, ".pi", "agent"),
		home: root,
		projectDir: join(root, "webapp"),
		runtimeDir: join(root, "run"),
		cleanup: (options = {}) => {
			if (!options.keep) rmSync(root, { recursive: true, force: true });
		},
	};
	for (const dir of [env.agentDir, env.projectDir]) mkdirSync(dir, { recursive: true });
	mkdirSync(env.runtimeDir, { mode: 0o700 });
	return env;
}

function writeSkill(env: TempEnv, name: string, text: string): void {
	mkdirSync(join(env.agentDir, "skills", name), { recursive: true });
	writeFileSync(join(env.agentDir, "skills", name, "SKILL.md"), text);
}

export interface TrySetup {
	readonly env: TempEnv;
	/** The pi CLI of the chosen line and its flags; run with `cwd: env.projectDir`. */
	readonly command: readonly string[];
	readonly childEnv: NodeJS.ProcessEnv;
}

/** Everything but the TUI: the temp HOME, `pi install <this checkout>`, the sample skills and the script. */
export async function setUpTry(): Promise<TrySetup> {
	const env = createTryEnv();
	writeSkill(env, "deploy-checks", DEPLOY_SKILL);
	writeSkill(env, "release-notes", NOTES_SKILL);
	const scriptPath = join(env.root, "faux-script.json");
	writeFileSync(scriptPath, JSON.stringify(TRY_STEPS));
	await piInstall(env, REPO_ROOT);
	const { cliPath, nodeBinary } = getPiLineInfo();
	const { NODE_OPTIONS: _dropped, ...inherited } = process.env;
	return {
		env,
		command: [nodeBinary, cliPath, "--no-session", ...FAUX_CLI_ARGS],
		childEnv: {
			...inherited,
			HOME: env.home,
			PI_CODING_AGENT_DIR: env.agentDir,
			PI_OFFLINE: "1",
			XDG_RUNTIME_DIR: env.runtimeDir,
			FAUX_SCRIPT: scriptPath,
		},
	};
}

const INTRO = (setup: TrySetup) =>
	[
		`pi-selfskills, tried in pi ${getPiLineInfo().line} with a scripted model: offline, no API key.`,
		`Throw-away HOME: ${setup.env.root} (removed when pi exits; SELFSKILLS_KEEP_TMP=1 keeps it).`,
		"Skills: deploy-checks (its build step says `npm build`, which is wrong) and release-notes.",
		"Type anything, e.g. `npm build failed on staging, fix the deploy skill`: the model reads",
		"deploy-checks and patches it. Your next message makes it save a new skill, staging-smoke.",
		"Then: /selfskills, /selfskills history deploy-checks, /selfskills restore deploy-checks. Leave: ctrl+d.",
		"",
	].join("\n");

async function main(): Promise<void> {
	const setup = await setUpTry();
	process.stdout.write(INTRO(setup));
	const [binary, ...args] = setup.command;
	const child = spawn(binary, args, { cwd: setup.env.projectDir, env: setup.childEnv, stdio: "inherit" });
	const code = await new Promise<number>((resolve) => child.on("close", (status) => resolve(status ?? 1)));
	const keep = process.env.SELFSKILLS_KEEP_TMP === "1";
	setup.env.cleanup({ keep });
	process.stdout.write(keep ? `kept ${setup.env.root}\n` : `removed ${setup.env.root}\n`);
	process.exitCode = code;
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(new URL(import.meta.url).pathname)) await main();
