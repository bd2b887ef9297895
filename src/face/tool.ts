// The `skill_manage` tool definition: its public face (tool-schema.ts) and `execute`, which builds
// the call's context and dispatches to one action. A refusal
// comes back as data (details.ok === false); index.ts flags it `isError` in a tool_result handler,
// since pi drops `details` of a thrown error.

import type { AgentToolResult, ExtensionContext, ToolDefinition } from "@mariozechner/pi-coding-agent";
import { listSkills } from "../actions/list.ts";
import { showHistory } from "../actions/history.ts";
import { readSkillFile } from "../actions/read.ts";
import { askPerson } from "./ask.ts";
import { ArgumentError, normalizeArguments, type SkillManageArgs } from "./arguments.ts";
import {
	PROMPT_GUIDELINES,
	PROMPT_SNIPPET,
	refusedArguments,
	SKILL_MANAGE_FACE,
	skillManageSchema,
	TOOL_DESCRIPTION,
	TOOL_NAME,
} from "./tool-schema.ts";
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

export { PROMPT_GUIDELINES, PROMPT_SNIPPET, skillManageSchema, TOOL_DESCRIPTION, TOOL_NAME };

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
		...SKILL_MANAGE_FACE,
		execute: (_id, params, signal, _onUpdate, ctx) => executeSkillManage(deps, params, ctx, signal),
		renderCall: renderSkillCall,
		renderResult: renderSkillResult,
	};
}
