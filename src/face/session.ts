// The session's working half, which index.ts loads at the first call, command or hook that needs more
// than the settings: the session's state, what a landed change sets off, the tool's execute, the
// /selfskills handler, the side-door guard, recovery of interrupted work and the start-up warnings.

import { basename, dirname } from "node:path";
import type { AgentToolResult, ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { getAgentDir } from "@mariozechner/pi-coding-agent";
import { CHANGED_EVENT } from "../store/audit.ts";
import type { Policy } from "../policy/load-policy.ts";
import { controlIsOn, type SettingsReport } from "../policy/settings.ts";
import type { CommandDeps } from "./command.ts";
import { settingsWarning } from "./command-text.ts";
import { realFs } from "../base/fs-ops.ts";
import { finishInterrupted } from "./review.ts";
import { createSessionState, resetSessionState, type SessionState } from "../pipeline/session-state.ts";
import { createSideDoorGuard, type SideDoorGuard } from "../guard/side-doors.ts";
import type { SandboxProbe } from "../guard/sandbox.ts";
import { type Boundary, createBoundary } from "../guard/boundary.ts";
import { createPackageBash, type PackageBash } from "../guard/bash-tool.ts";
import { appearedNotice, findAppearedSkills, recordSeenSkills } from "../guard/skill-watch.ts";
import { recordUse } from "../store/usage.ts";
import { executeSkillManage } from "./tool.ts";
import { checkSkillContent } from "../checks/validation.ts";
import type { MutationEffects } from "../pipeline/types.ts";

/** What index.ts asks of the working half; one per pi instance, its state reset at each session start. */
export interface Session {
	readonly state: SessionState;
	readonly commandDeps: CommandDeps;
	readonly sideDoors: SideDoorGuard;
	readonly boundary: Boundary;
	/** pi's bash as the package runs it (index.ts registers it). */
	readonly bash: PackageBash;
	/** A session starts: state reset, interrupted work finished, the boundary started, warnings. */
	start(ctx: ExtensionContext, report: SettingsReport): void;
	/** A session ends: the session's temp folder and held-open folders removed. */
	end(): void;
	/** pi's tool_call: another extension's bash under a control, then the side doors. */
	onToolCall: SideDoorGuard["onToolCall"];
	/** skill_manage with trust and settings read once for the call; a read counts as a use of the skill. */
	execute(
		params: unknown,
		ctx: ExtensionContext,
		signal: AbortSignal | undefined,
		policy: Policy,
	): Promise<ToolResult>;
	/** At each prompt: names skills that appeared outside the tool (first prompt), records what pi loaded. */
	watchSkillFiles(ctx: ExtensionContext, first: boolean, control: boolean): void;
}

type ToolResult = AgentToolResult<Record<string, unknown>>;

export function createSession(pi: ExtensionAPI): Session {
	const state = createSessionState();
	// Proven at first need; a working bwrap is kept for the process, so a sandbox broken later fails
	// closed (the command errors) instead of falling back to the matcher.
	const boundary = createBoundary(realFs);
	const sandbox = (): SandboxProbe => boundary.probe();
	const effects = createEffects(pi, state);
	const deps = { agentDir: getAgentDir, fs: realFs, state, effects };
	const recover = () => state.recoveries.push(...finishInterrupted(realFs, getAgentDir()));
	const sideDoors = createSideDoorGuard({ ...deps, boundary, tellPerson });
	const bash = createPackageBash(pi, { ...deps, boundary, tellPerson });
	return {
		state,
		commandDeps: { ...deps, send: (message) => pi.sendMessage(message), knownSkills: [], sandbox },
		sideDoors,
		boundary,
		bash,
		start(ctx, report) {
			resetSessionState(state);
			recover();
			bash.reset();
			// Before the first tool call: pi's own folder and the programs found, the protected folders
			// pinned under a control. An unsandboxed bash is said at its first call.
			const { settings } = report;
			boundary.start({ cwd: ctx.cwd, agentDir: getAgentDir(), settings, control: controlIsOn(settings) });
			const warning = settingsWarning(report.problems);
			if (warning) tellPerson(ctx, warning);
		},
		end: () => boundary.end(),
		onToolCall: (event, ctx) => bash.foreignBlock(event, ctx) ?? sideDoors.onToolCall(event, ctx),
		async execute(params, ctx, signal, policy) {
			recover();
			const result = await executeSkillManage(deps, params, ctx, signal, policy);
			const { ok, action, skill } = result.details as { ok?: unknown; action?: unknown; skill?: unknown };
			if (ok === true && action === "read" && typeof skill === "string") recordUse(realFs, getAgentDir(), skill);
			return result;
		},
		watchSkillFiles(ctx, first, control) {
			try {
				const agentDir = getAgentDir();
				const files = state.runtimeSkillFiles;
				if (first) {
					const appeared = findAppearedSkills(realFs, agentDir, files);
					if (appeared.length > 0) tellPerson(ctx, appearedNotice(appeared));
				}
				const changed = [...state.changed.values()].filter((c) => c.action !== "delete").map((c) => c.path);
				recordSeenSkills(realFs, agentDir, [...files, ...changed], control);
			} catch {
				// The record is a notice for the person, not a gate.
			}
		},
	};
}

export function tellPerson(ctx: ExtensionContext, text: string): void {
	if (ctx.hasUI) ctx.ui.notify(text, "warning");
	else process.stderr.write(`${text}\n`);
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
