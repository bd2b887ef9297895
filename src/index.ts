// pi-selfskills: wires the package into pi. It registers the skill_manage tool and the
// /selfskills command, flags refusals as errors while keeping their details, injects the
// standing-rules block (with the person's verdicts on proposals) before each prompt, and recovers
// interrupted batches and approvals at session start and before each call.

import { basename, dirname } from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { getAgentDir } from "@mariozechner/pi-coding-agent";
import { CHANGED_EVENT } from "./store/audit.ts";
import { loadPolicy } from "./pipeline/call-context.ts";
import {
	COMMAND_NAME,
	completeArguments,
	handleCommand,
	OUTPUT_MESSAGE_TYPE,
	type CommandDeps,
} from "./face/command.ts";
import { settingsWarning } from "./face/command-text.ts";
import { realFs } from "./base/fs-ops.ts";
import { buildInjectedBlock } from "./face/prompt.ts";
import { takeDecisions } from "./store/proposals.ts";
import { finishInterrupted } from "./face/review.ts";
import { renderCommandOutput } from "./face/render.ts";
import { createSessionState, resetSessionState, type SessionState } from "./pipeline/session-state.ts";
import { createSideDoorGuard } from "./guard/side-doors.ts";
import type { SandboxProbe } from "./guard/sandbox.ts";
import { type Boundary, createBoundary } from "./guard/boundary.ts";
import { registerBashTool } from "./guard/bash-tool.ts";
import { controlIsOn } from "./policy/settings.ts";
import { appearedNotice, findAppearedSkills, recordSeenSkills } from "./guard/skill-watch.ts";
import { recordUse } from "./store/usage.ts";
import { createSkillManageTool, executeSkillManage, TOOL_NAME } from "./face/tool.ts";
import { isScannedByPi } from "./policy/discovery.ts";
import { checkSkillContent } from "./checks/validation.ts";
import { pathExists } from "./base/fs-reads.ts";
import type { MutationEffects } from "./pipeline/types.ts";
import { sweepWorkspaces } from "./eval/workspace.ts";

function isEnabled(ctx: Pick<ExtensionContext, "cwd">): { enabled: boolean; inject: boolean } {
	const { settings } = loadPolicy(ctx, getAgentDir()).report;
	return { enabled: settings.enabled, inject: settings.enabled && settings.inject };
}

/** What a killed process left: a half-done commit put back, then an approval finished or undone. */
function recover(state: SessionState): void {
	state.recoveries.push(...finishInterrupted(realFs, getAgentDir()));
}

function createEffects(pi: ExtensionAPI, state: SessionState): MutationEffects {
	return {
		onLanded(record, change) {
			pi.events.emit(CHANGED_EVENT, record);
			if (change.relPath !== "SKILL.md") return;
			if (change.newHash === null) {
				state.changed.set(change.skill, {
					name: change.skill,
					description: "",
					path: change.absPath,
					action: "delete",
				});
				return;
			}
			let description = change.loaded?.description;
			try {
				// pi's edit, write or bash (side-doors.ts) pass no loader answer along: asked here.
				description ??= checkSkillContent(
					realFs.readFile(change.absPath).toString("utf8"),
					basename(dirname(change.absPath)),
				).description;
			} catch {
				// The change landed; a missing description only shortens the injected note.
			}
			state.changed.set(change.skill, {
				name: change.skill,
				description: description ?? "",
				path: change.absPath,
				action: record.action,
			});
		},
	};
}

/** What the session's handlers share: its state, what a landed change sets off, and bubblewrap's probe. */
interface Wiring {
	readonly pi: ExtensionAPI;
	readonly state: SessionState;
	readonly effects: MutationEffects;
	readonly sandbox: () => SandboxProbe;
	readonly boundary: Boundary;
}

export default function selfskills(pi: ExtensionAPI): void {
	if (!isEnabled({ cwd: process.cwd() }).enabled) return;
	const state = createSessionState();
	// Proven at first need; a working bwrap is kept for the process, so a sandbox broken later fails
	// closed (the command errors) instead of falling back to the matcher.
	const boundary = createBoundary(realFs);
	const sandbox = (): SandboxProbe => boundary.probe();
	const wiring: Wiring = { pi, state, effects: createEffects(pi, state), sandbox, boundary };
	registerTool(wiring);
	registerCommand(wiring);
	const firstPrompt = { pending: true };
	pi.on("session_start", (_event, ctx) => {
		resetSessionState(state);
		recover(state);
		firstPrompt.pending = true;
		startBoundary(ctx, boundary);
		warnAtStart(ctx);
		// Throwaway folders of an eval whose pi was killed: one readdir of the temp folder, after start-up.
		setImmediate(() => sweepWorkspaces());
	});
	pi.on("session_shutdown", () => boundary.end());
	registerPrompt(wiring, firstPrompt);
	registerSideDoors(wiring);
	registerBashTool(pi, { agentDir: getAgentDir, fs: realFs, state, boundary, tellPerson });
}

/** Before the first tool call: pi's own folder and the programs found, the protected folders pinned under a control. */
function startBoundary(ctx: ExtensionContext, boundary: Boundary): void {
	const { settings } = loadPolicy(ctx, getAgentDir()).report;
	boundary.start({ cwd: ctx.cwd, agentDir: getAgentDir(), settings, control: controlIsOn(settings) });
}

/** skill_manage, with trust and settings read once for the call; a read counts as a use of the skill. */
function registerTool({ pi, state, effects }: Wiring): void {
	const toolDeps = { agentDir: getAgentDir, fs: realFs, state, effects };
	pi.registerTool({
		...createSkillManageTool(toolDeps),
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
			recover(state);
			const result = await executeSkillManage(toolDeps, params, ctx, signal, policy);
			const { ok, action, skill } = result.details as { ok?: unknown; action?: unknown; skill?: unknown };
			if (ok === true && action === "read" && typeof skill === "string") recordUse(realFs, getAgentDir(), skill);
			return result;
		},
	});
}

/** /selfskills, its outputs (kept from the model: they are for the person) and their renderer. */
function registerCommand({ pi, state, effects, sandbox }: Wiring): void {
	const commandDeps: CommandDeps = {
		agentDir: getAgentDir,
		fs: realFs,
		state,
		effects,
		send: (message) => pi.sendMessage(message),
		knownSkills: [],
		sandbox,
	};
	pi.registerCommand(COMMAND_NAME, {
		description:
			"selfskills status; history <skill>; restore <skill> [file] [backup]; unused [days]; " +
			"trust; untrust; pending; show|approve|reject <id>; pin|unpin <skill>; doctor",
		getArgumentCompletions: (prefix) => completeArguments(commandDeps, prefix),
		handler: (args, ctx) => handleCommand(commandDeps, args, ctx),
	});
	pi.registerMessageRenderer(OUTPUT_MESSAGE_TYPE, renderCommandOutput);
	pi.on("context", (event) => {
		const messages = event.messages.filter((m) => !(m.role === "custom" && m.customType === OUTPUT_MESSAGE_TYPE));
		return messages.length === event.messages.length ? undefined : { messages };
	});
}

/** Once per session: a bad settings value (it falls back to its default). An unsandboxed bash is said at first use. */
function warnAtStart(ctx: ExtensionContext): void {
	const warning = settingsWarning(loadPolicy(ctx, getAgentDir()).report.problems);
	if (warning) tellPerson(ctx, warning);
}

function tellPerson(ctx: ExtensionContext, text: string): void {
	if (ctx.hasUI) ctx.ui.notify(text, "warning");
	else process.stderr.write(`${text}\n`);
}

/**
 * Before each prompt: pi's skill list noted, skills that appeared outside the tool named, and the
 * standing-rules block injected. A skillsDir pi does not scan is handed to pi, so what `create`
 * writes there loads in every later session (and after /reload), not just in this one's prompt.
 */
function registerPrompt({ pi, state }: Wiring, firstPrompt: { pending: boolean }): void {
	pi.on("resources_discover", (event, ctx) => {
		const { settings } = loadPolicy(ctx, getAgentDir()).report;
		if (!settings.enabled || !pathExists(realFs, settings.skillsDir)) return undefined;
		return isScannedByPi(settings.skillsDir, { cwd: event.cwd, agentDir: getAgentDir() })
			? undefined
			: { skillPaths: [settings.skillsDir] };
	});
	pi.on("before_agent_start", (event, ctx) => {
		const skills = event.systemPromptOptions?.skills ?? [];
		state.runtimeSkillFiles = skills.map((s) => s.filePath);
		state.runtimeSkillNames = new Map(skills.map((s) => [s.filePath, s.name]));
		const first = firstPrompt.pending;
		firstPrompt.pending = false;
		watchSkillFiles(ctx, state, first);
		if (!isEnabled(ctx).inject) return undefined;
		const decisions = takeDecisions(realFs, getAgentDir(), ctx.cwd);
		return { systemPrompt: `${event.systemPrompt}\n\n${buildInjectedBlock(state.changed.values(), decisions)}` };
	});
}

/**
 * The session's first prompt names skills that appeared outside the tool while a control was on;
 * each prompt then records what pi loaded (skill-watch.ts). A failure here never stops a prompt.
 */
function watchSkillFiles(ctx: ExtensionContext, state: SessionState, first: boolean): void {
	try {
		const agentDir = getAgentDir();
		const files = state.runtimeSkillFiles;
		if (first) {
			const appeared = findAppearedSkills(realFs, agentDir, files);
			if (appeared.length > 0) tellPerson(ctx, appearedNotice(appeared));
		}
		const changed = [...state.changed.values()].filter((c) => c.action !== "delete").map((c) => c.path);
		const control = controlIsOn(loadPolicy(ctx, agentDir).report.settings);
		recordSeenSkills(realFs, agentDir, [...files, ...changed], control);
	} catch {
		// The record is a notice for the person, not a gate.
	}
}

/** pi's own edit, write and bash on skill files: blocked, or backed up and checked (side-doors.ts). */
function registerSideDoors({ pi, state, effects, boundary }: Wiring): void {
	const deps = { agentDir: getAgentDir, fs: realFs, state, effects, boundary, tellPerson };
	const sideDoors = createSideDoorGuard(deps);
	pi.on("tool_call", (event, ctx) => sideDoors.onToolCall(event, ctx));
	pi.on("tool_result", (event) => {
		if (event.toolName !== TOOL_NAME) {
			const warning = sideDoors.onToolResult(event);
			return warning ? { content: [...event.content, { type: "text" as const, text: warning }] } : undefined;
		}
		// skill_manage's refusals are errors for pi, their details kept.
		const details = event.details as { ok?: unknown } | undefined;
		return details?.ok === false ? { isError: true } : undefined;
	});
}
