// The `skill_manage` tool definition: its strict public schema, the texts pi puts in the system
// prompt, and `execute`, which builds the call's context and dispatches to one action. A refusal
// comes back as data (details.ok === false); index.ts flags it `isError` in a tool_result handler,
// since pi drops `details` of a thrown error.

import { StringEnum } from "@mariozechner/pi-ai";
import type { AgentToolResult, ExtensionContext, ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { listSkills } from "../actions/list.ts";
import { showHistory } from "../actions/history.ts";
import { readSkillFile } from "../actions/read.ts";
import { askPerson } from "./ask.ts";
import { ACTIONS, ArgumentError, BATCH_ACTIONS, normalizeArguments, type SkillManageArgs } from "./arguments.ts";
import {
	createSessionCallContext,
	type ActionResult,
	type CallContext,
	type Policy,
} from "../pipeline/call-context.ts";
import { clipText, decodeText, READ_CHAR_LIMIT, RESULT_CHAR_LIMIT } from "../checks/content-guard.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import { runMutations } from "../pipeline/mutate.ts";
import { prepareCall } from "./prepare.ts";
import { renderSkillCall, renderSkillResult } from "./render.ts";
import type { SessionDeps } from "../pipeline/session-state.ts";
import { sha256 } from "../base/hash.ts";
import type { AskRequest, RunOptions } from "../pipeline/types.ts";

export const TOOL_NAME = "skill_manage";

/**
 * A field's description, or none: batch items repeat the top-level fields, and every character is
 * paid on each request.
 */
const note = (described: boolean, description: string) => (described ? { description } : {});

const targetFields = (d: boolean) => ({
	skill: Type.Optional(Type.String(note(d, "Skill name (from list)"))),
	path: Type.Optional(Type.String(note(d, "Skill folder or its SKILL.md, instead of skill"))),
	file: Type.Optional(Type.String(note(d, "File in the skill folder, e.g. references/api.md; default SKILL.md"))),
});
const editFields = (d: boolean) => ({
	old_string: Type.Optional(Type.String(note(d, "patch: exact text to replace"))),
	new_string: Type.Optional(Type.String(note(d, "patch: replacement text"))),
	replace_all: Type.Optional(Type.Boolean(note(d, "patch: replace every occurrence"))),
	content: Type.Optional(Type.String(note(d, "write: full text of the bundled file"))),
	reason: Type.Optional(Type.String(note(d, "why: what in this task proved the skill wrong (the person sees it)"))),
});

export const skillManageSchema = Type.Object({
	action: StringEnum(ACTIONS),
	...targetFields(true),
	...editFields(true),
	name: Type.Optional(Type.String({ description: "create: new skill name, lowercase-hyphenated" })),
	description: Type.Optional(Type.String({ description: "create: when to use the skill and what it does" })),
	body: Type.Optional(Type.String({ description: "create: Markdown after the frontmatter" })),
	backup: Type.Optional(Type.String({ description: "restore: backup id from history; default latest" })),
	distinct_from: Type.Optional(
		Type.Array(Type.String(), {
			description: "create/patch: skills this one really differs from (after similar_exists); needs a reason",
		}),
	),
	operations: Type.Optional(
		Type.Array(Type.Object({ action: StringEnum(BATCH_ACTIONS), ...targetFields(false), ...editFields(false) }), {
			description: "all-or-nothing batch of patch/write/delete; each item takes that action's fields",
		}),
	),
	dry_run: Type.Optional(Type.Boolean({ description: "check everything, return the diff, write nothing" })),
});

export const TOOL_DESCRIPTION =
	"Manage your pi skills: list, read, patch, create, write bundled files, delete, restore, history, batch. " +
	"A change needs the skill read this session and unchanged since, stays in writable skill folders, " +
	"matches old_string once, must still load in pi and is backed up first. " +
	"Refusals start with a code and name the next call.";

export const PROMPT_SNIPPET = "Read, patch or create your own pi skills safely (backed up, validated, restorable)";

export const PROMPT_GUIDELINES = [
	"Use skill_manage to fix a skill only when it proved wrong in this task.",
	"Before skill_manage patch, skill_manage read the skill and copy old_string exactly from it.",
];

type Dispatch = ActionResult | Refusal;

async function dispatch(
	ctx: CallContext,
	args: SkillManageArgs,
	options: Omit<RunOptions, "dryRun" | "batch" | "args">,
): Promise<Dispatch> {
	switch (args.action) {
		case "list":
			return listSkills(ctx, args.skill);
		case "read":
			return readSkillFile(ctx, args, args.file);
		case "history":
			return showHistory(ctx, args);
		default: {
			const prepared = prepareCall(ctx, args);
			if ("code" in prepared) return prepared;
			const { dry_run: _dry, ...call } = args;
			return runMutations(ctx, prepared, {
				...options,
				dryRun: args.dry_run === true,
				batch: args.action === "operations",
				args: call as Record<string, unknown>,
			});
		}
	}
}

export function refusalResult(refusal: Refusal): AgentToolResult<Record<string, unknown>> {
	return {
		content: [{ type: "text", text: clipText(refusal.message, RESULT_CHAR_LIMIT) }],
		details: { ok: false, code: refusal.code, ...refusal.data },
	};
}

/**
 * A `stale` refusal shows the file as it is now and records that read, so the agent can retry
 * against the current text in one call instead of two (a read, then the patch).
 */
function withCurrentText(ctx: CallContext, refusal: Refusal): Refusal {
	const path = refusal.data.path;
	if (refusal.code !== "stale" || typeof path !== "string") return refusal;
	let bytes: Buffer;
	try {
		bytes = ctx.fs.readFile(path);
	} catch {
		return refusal;
	}
	const text = decodeText(bytes, path);
	if (typeof text !== "string" || text.length > READ_CHAR_LIMIT) return refusal;
	ctx.ledger.record(path, sha256(bytes));
	return refusals.withNote(
		refusal,
		`Its current content, now recorded as read, so you may retry against it directly:\n${text}`,
		{ currentText: text },
	);
}

/**
 * pi turns a throw in prepareArguments into an error result with empty details, so arguments
 * normalizeArguments refuses travel to execute under this key instead (inside an object pi's
 * schema check accepts), where the refusal is returned with its code and data like any other.
 */
const REFUSED_ARGUMENTS = "__selfskills_refused_arguments";

function prepareArguments(raw: unknown): SkillManageArgs {
	try {
		return normalizeArguments(raw);
	} catch (error) {
		if (!(error instanceof ArgumentError)) throw error;
		// The call still renders under the action the model asked for, when that is one.
		const asked = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>).action : undefined;
		const action = (ACTIONS as readonly unknown[]).includes(asked) ? asked : "list";
		return { action, [REFUSED_ARGUMENTS]: raw } as unknown as SkillManageArgs;
	}
}

function refusedArguments(args: unknown): { raw: unknown } | undefined {
	if (typeof args !== "object" || args === null || !(REFUSED_ARGUMENTS in args)) return undefined;
	return { raw: (args as Record<string, unknown>)[REFUSED_ARGUMENTS] };
}

/** `policy`: trust and settings the caller read for this call already (none: read here). */
export async function executeSkillManage(
	deps: SessionDeps,
	rawArgs: unknown,
	ctx: ExtensionContext,
	signal?: AbortSignal,
	policy?: Policy,
): Promise<AgentToolResult<Record<string, unknown>>> {
	try {
		const args = normalizeArguments(refusedArguments(rawArgs)?.raw ?? rawArgs);
		const ask = ctx.hasUI ? (request: AskRequest) => askPerson(ctx, request) : undefined;
		const callCtx = await createSessionCallContext(deps, ctx, { signal, policy });
		const result = await dispatch(callCtx, args, {
			effects: deps.effects,
			ask,
			allowed: deps.state.allowedSkills,
		});
		if (refusals.isRefusal(result)) return refusalResult(withCurrentText(callCtx, result));
		return {
			content: [{ type: "text" as const, text: clipText(result.text, RESULT_CHAR_LIMIT) }],
			details: result.details,
		};
	} catch (error) {
		if (error instanceof ArgumentError) return refusalResult(error.refusal);
		return refusalResult(refusals.ioError("(skill_manage)", error));
	}
}

export function createSkillManageTool(
	deps: SessionDeps,
): ToolDefinition<typeof skillManageSchema, Record<string, unknown>> {
	return {
		name: TOOL_NAME,
		label: "Skill manage",
		description: TOOL_DESCRIPTION,
		promptSnippet: PROMPT_SNIPPET,
		promptGuidelines: PROMPT_GUIDELINES,
		parameters: skillManageSchema,
		executionMode: "sequential",
		prepareArguments: (raw) => prepareArguments(raw) as never,
		execute: (_id, params, signal, _onUpdate, ctx) => executeSkillManage(deps, params, ctx, signal),
		renderCall: renderSkillCall,
		renderResult: renderSkillResult,
	};
}
