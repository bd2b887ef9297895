// pi-selfskills: wires the package into pi. It registers the skill_manage tool and the /selfskills
// command, flags refusals as errors while keeping their details, injects the standing-rules block
// (with the person's verdicts on proposals) before each prompt, and recovers interrupted batches and
// approvals at session start and before each call.
//
// Start-up pays only for what every session needs: the settings, the tool's schema and texts, the
// injected block. The working half (face/session.ts: state, execute, /selfskills, the side-door guard)
// is loaded by the first call, command or hook that needs it. A new registration plugs in the same
// way: register it here with what pi needs up front, and let its handler `await wiring.session()`.
// This file and what it imports are built into dist/start.ts, so the working half loads its own copy
// of those modules from src/: state one of them keeps for the process must live on globalThis (as
// settings.ts's last valid settings do), or the two copies disagree.

import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ExtensionAPI, ExtensionContext, Theme } from "@mariozechner/pi-coding-agent";
import { createBashToolDefinition, getAgentDir } from "@mariozechner/pi-coding-agent";
import { Text } from "@mariozechner/pi-tui";
import { realFs } from "./base/fs-ops.ts";
import { listDir, pathExists, tryRead } from "./base/fs-reads.ts";
import { EVAL_FOLDER_PREFIX, getJournalDir, getProposalsDir, getSelfSkillsDir } from "./base/paths.ts";
import { loadPolicy } from "./policy/load-policy.ts";
import { controlIsOn } from "./policy/settings.ts";
import { buildInjectedBlock } from "./face/prompt.ts";
import { COMMAND_NAME, OUTPUT_MESSAGE_TYPE } from "./face/names.ts";
import { SKILL_MANAGE_FACE, TOOL_NAME } from "./face/tool-schema.ts";
import type { Session } from "./face/session.ts";
import type * as Render from "./face/render.ts";

/** What the handlers share: pi, the working half (loaded once, at first need) and the renderers. */
interface Wiring {
	readonly pi: ExtensionAPI;
	/** The working half, loaded and created at the first call. */
	session(): Promise<Session>;
	/** The working half if it is loaded already. */
	loaded(): Session | undefined;
	/** The TUI renderers, once loaded (a session with a UI loads them at start). */
	render(): typeof Render | undefined;
	loadRender(): Promise<typeof Render>;
	/** pi's skill files and names at the last prompt, kept here until the working half is loaded. */
	readonly seen: { files: string[]; names: ReadonlyMap<string, string> };
}

function createWiring(pi: ExtensionAPI): Wiring {
	let session: Session | undefined;
	let loading: Promise<Session> | undefined;
	let render: typeof Render | undefined;
	const seen = { files: [] as string[], names: new Map<string, string>() as ReadonlyMap<string, string> };
	return {
		pi,
		seen,
		session() {
			loading ??= import("./face/session.ts").then(({ createSession }) => {
				session = createSession(pi);
				session.state.runtimeSkillFiles = seen.files;
				session.state.runtimeSkillNames = seen.names;
				return session;
			});
			return loading;
		},
		loaded: () => session,
		render: () => render,
		async loadRender() {
			render ??= await import("./face/render.ts");
			return render;
		},
	};
}

function isEnabled(ctx: Pick<ExtensionContext, "cwd">): { enabled: boolean; inject: boolean } {
	const { settings } = loadPolicy(ctx, getAgentDir()).report;
	return { enabled: settings.enabled, inject: settings.enabled && settings.inject };
}

export default function selfskills(pi: ExtensionAPI): void {
	if (!isEnabled({ cwd: process.cwd() }).enabled) return;
	const wiring = createWiring(pi);
	registerTool(wiring);
	registerCommand(wiring);
	const firstPrompt = { pending: true };
	pi.on("session_start", async (_event, ctx) => {
		firstPrompt.pending = true;
		if (ctx.hasUI) wiring.loadRender().catch(() => undefined);
		const { report } = loadPolicy(ctx, getAgentDir());
		const needed =
			wiring.loaded() !== undefined ||
			report.problems.length > 0 ||
			controlIsOn(report.settings) ||
			mayHaveLeftWork(getAgentDir());
		if (needed) (await wiring.session()).start(ctx, report);
		// Throwaway folders of an eval whose pi was killed: looked for after start-up, one readdir.
		setImmediate(() => sweepEvalLeftovers());
	});
	pi.on("session_shutdown", () => wiring.loaded()?.end());
	registerPrompt(wiring, firstPrompt);
	registerSideDoors(wiring);
	registerBash(wiring);
}

/** Throwaway folders of an eval whose pi was killed; the eval's code is loaded only when there are some. */
function sweepEvalLeftovers(): void {
	if (!listDir(realFs, tmpdir()).some((name) => name.startsWith(EVAL_FOLDER_PREFIX))) return;
	import("./eval/workspace.ts").then(({ sweepWorkspaces }) => sweepWorkspaces()).catch(() => undefined);
}

/**
 * pi's `bash`, run by the package (guard/bash-tool.ts): pi's own definition now, the work loaded at
 * the first call; under a control the whole command runs inside the sandbox.
 */
function registerBash(wiring: Wiring): void {
	wiring.pi.registerTool({
		...createBashToolDefinition(process.cwd()),
		execute: async (id, params, signal, onUpdate, ctx) =>
			(await wiring.session()).bash.execute(id, params, signal, onUpdate, ctx),
	});
}

/**
 * Whether a killed process may have left work to finish: a commit journal, or a pending proposal
 * marked `approving` (an approval cut short). Each is a file of the store: a look at two folders.
 */
function mayHaveLeftWork(agentDir: string): boolean {
	if (listDir(realFs, getJournalDir(agentDir)).some((name) => name.endsWith(".json"))) return true;
	const proposals = getProposalsDir(agentDir);
	return listDir(realFs, proposals).some(
		(name) => name.endsWith(".json") && (tryRead(realFs, join(proposals, name))?.includes('"approving"') ?? true),
	);
}

/** skill_manage: its face registered now, its work loaded at the first call. */
function registerTool(wiring: Wiring): void {
	wiring.pi.registerTool({
		...SKILL_MANAGE_FACE,
		async execute(_id, params, signal, _onUpdate, ctx) {
			const policy = loadPolicy(ctx, getAgentDir());
			if (!policy.report.settings.enabled) {
				return {
					content: [
						{
							type: "text",
							text: "disabled: selfskills is switched off (selfskills.enabled: false) for this project.",
						},
					],
					details: { ok: false, code: "disabled" },
				};
			}
			return (await wiring.session()).execute(params, ctx, signal, policy);
		},
		renderCall: (args, theme) => wiring.render()?.renderSkillCall(args, theme) ?? plainTitle(theme),
		renderResult: (result, options, theme) =>
			wiring.render()?.renderSkillResult(result, options, theme) ?? new Text("", 0, 0),
	});
}

/** Until the renderers are loaded (a TUI loads them as its session starts): the tool's name alone. */
function plainTitle(theme: Theme): Text {
	return new Text(theme.fg("toolTitle", theme.bold(TOOL_NAME)), 0, 0);
}

/** /selfskills, its outputs (kept from the model: they are for the person) and their renderer. */
function registerCommand(wiring: Wiring): void {
	const { pi } = wiring;
	pi.registerCommand(COMMAND_NAME, {
		description:
			"selfskills status; help; history|restore <skill>; pending; show|approve|reject|export <id>; " +
			"pin|unpin <skill>; trust; untrust; unused; doctor; eval",
		getArgumentCompletions: async (prefix) => {
			const [session, command] = await Promise.all([wiring.session(), import("./face/command.ts")]);
			return command.completeArguments(session.commandDeps, prefix);
		},
		handler: async (args, ctx) => {
			const [session, command] = await Promise.all([wiring.session(), import("./face/command.ts")]);
			await wiring.loadRender();
			return command.handleCommand(session.commandDeps, args, ctx);
		},
	});
	pi.registerMessageRenderer(OUTPUT_MESSAGE_TYPE, (message, options, theme) =>
		wiring.render()?.renderCommandOutput(message as Parameters<typeof Render.renderCommandOutput>[0], options, theme),
	);
	pi.on("context", (event) => {
		const messages = event.messages.filter((m) => !(m.role === "custom" && m.customType === OUTPUT_MESSAGE_TYPE));
		return messages.length === event.messages.length ? undefined : { messages };
	});
}

/**
 * Before each prompt: pi's skill list noted, skills that appeared outside the tool named, and the
 * standing-rules block injected. A skillsDir pi does not scan is handed to pi, so what `create`
 * writes there loads in every later session (and after /reload), not just in this one's prompt.
 */
function registerPrompt(wiring: Wiring, firstPrompt: { pending: boolean }): void {
	const { pi } = wiring;
	pi.on("resources_discover", async (event, ctx) => {
		const agentDir = getAgentDir();
		const { settings } = loadPolicy(ctx, agentDir).report;
		if (!settings.enabled || !pathExists(realFs, settings.skillsDir)) return undefined;
		// The default, <agentDir>/skills, is where pi looks first.
		if (resolve(settings.skillsDir) === join(agentDir, "skills")) return undefined;
		const { isScannedByPi } = await import("./policy/discovery.ts");
		return isScannedByPi(settings.skillsDir, { cwd: event.cwd, agentDir })
			? undefined
			: { skillPaths: [settings.skillsDir] };
	});
	pi.on("before_agent_start", async (event, ctx) => {
		const agentDir = getAgentDir();
		const skills = event.systemPromptOptions?.skills ?? [];
		wiring.seen.files = skills.map((s) => s.filePath);
		wiring.seen.names = new Map(skills.map((s) => [s.filePath, s.name]));
		const first = firstPrompt.pending;
		firstPrompt.pending = false;
		const { settings } = loadPolicy(ctx, agentDir).report;
		const control = controlIsOn(settings);
		// Without a control and without a record of one, there is nothing to watch (skill-watch.ts).
		const watch = wiring.loaded() !== undefined || control || pathExists(realFs, seenSkillsRecord(agentDir));
		const session = watch ? await wiring.session() : undefined;
		if (session) {
			session.state.runtimeSkillFiles = wiring.seen.files;
			session.state.runtimeSkillNames = wiring.seen.names;
			session.watchSkillFiles(ctx, first, control);
		}
		if (!settings.enabled || !settings.inject) return undefined;
		const decisions = await takeDecisions(agentDir, ctx.cwd);
		const changed = session?.state.changed.values() ?? [];
		return { systemPrompt: `${event.systemPrompt}\n\n${buildInjectedBlock(changed, decisions)}` };
	});
}

/** <agentDir>/selfskills/seen-skills.json, present only while a control was on at the last prompt. */
function seenSkillsRecord(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "seen-skills.json");
}

/** The person's verdicts not yet told to the model; the proposal store is read only when it holds one. */
async function takeDecisions(agentDir: string, cwd: string) {
	if (listDir(realFs, join(getProposalsDir(agentDir), "decided")).length === 0) return [];
	const proposals = await import("./store/proposals.ts");
	return proposals.takeDecisions(realFs, agentDir, cwd);
}

/** pi's own edit, write and bash on skill files: blocked, or backed up and checked (side-doors.ts). */
function registerSideDoors(wiring: Wiring): void {
	const { pi } = wiring;
	pi.on("tool_call", async (event, ctx) => (await wiring.session()).onToolCall(event, ctx));
	pi.on("tool_result", (event) => {
		if (event.toolName !== TOOL_NAME) {
			const warning = wiring.loaded()?.sideDoors.onToolResult(event);
			return warning ? { content: [...event.content, { type: "text" as const, text: warning }] } : undefined;
		}
		// skill_manage's refusals are errors for pi, their details kept.
		const details = event.details as { ok?: unknown } | undefined;
		return details?.ok === false ? { isError: true } : undefined;
	});
}
