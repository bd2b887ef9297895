// The `skill_manage` tool's public face, which pi needs at start-up: its name, strict schema, the
// texts pi puts in the system prompt, and the argument preparation pi runs before `execute`. Light on
// purpose (index.ts registers the tool from it and loads the rest, tool.ts, at the first call).

import { StringEnum } from "@mariozechner/pi-ai";
import { Type } from "typebox";
import { ACTIONS, ArgumentError, BATCH_ACTIONS, normalizeArguments, type SkillManageArgs } from "./arguments.ts";

export const TOOL_NAME = "skill_manage";

/**
 * Every character here is paid on each request: descriptions say only what the name does not, and
 * batch items name their action alone (their fields are the top-level ones, checked in code).
 */
export const skillManageSchema = Type.Object({
	action: StringEnum(ACTIONS),
	skill: Type.Optional(Type.String()),
	path: Type.Optional(Type.String({ description: "Skill folder or SKILL.md, instead of skill" })),
	file: Type.Optional(Type.String({ description: "File in the skill; default SKILL.md" })),
	old_string: Type.Optional(Type.String({ description: "patch: exact text to replace" })),
	new_string: Type.Optional(Type.String()),
	replace_all: Type.Optional(Type.Boolean()),
	content: Type.Optional(Type.String({ description: "write: whole file text" })),
	reason: Type.Optional(Type.String({ description: "what proved the skill wrong in this task" })),
	name: Type.Optional(Type.String({ description: "create: lowercase-hyphenated" })),
	description: Type.Optional(Type.String({ description: "create: when to use it, what it does" })),
	body: Type.Optional(Type.String()),
	backup: Type.Optional(Type.String({ description: "restore: id from history" })),
	distinct_from: Type.Optional(
		Type.Array(Type.String(), { description: "skills it differs from, after similar_exists; needs reason" }),
	),
	operations: Type.Optional(
		Type.Array(Type.Object({ action: StringEnum(BATCH_ACTIONS) }), {
			description: "all-or-nothing; items: {action, ...its fields}",
		}),
	),
	dry_run: Type.Optional(Type.Boolean({ description: "diff only, write nothing" })),
});

export const TOOL_DESCRIPTION =
	"Read, fix and create your pi skills. A change needs the file read this session and unchanged since, " +
	"old_string found once and a result that still loads; it is backed up first. " +
	"Refusals start with a code and say the fix.";

export const PROMPT_SNIPPET = "Read, fix or create your pi skills";

export const PROMPT_GUIDELINES = ["Before a skill_manage patch, read the skill with it; copy old_string exactly."];

/**
 * pi turns a throw in prepareArguments into an error result with empty details, so arguments
 * normalizeArguments refuses travel to execute under this key instead (inside an object pi's
 * schema check accepts), where the refusal is returned with its code and data like any other.
 */
const REFUSED_ARGUMENTS = "__selfskills_refused_arguments";

export function prepareArguments(raw: unknown): SkillManageArgs {
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

export function refusedArguments(args: unknown): { raw: unknown } | undefined {
	if (typeof args !== "object" || args === null || !(REFUSED_ARGUMENTS in args)) return undefined;
	return { raw: (args as Record<string, unknown>)[REFUSED_ARGUMENTS] };
}

/** What pi needs of the tool before any call: everything but `execute` and the renderers. */
export const SKILL_MANAGE_FACE = {
	name: TOOL_NAME,
	label: "Skill manage",
	description: TOOL_DESCRIPTION,
	promptSnippet: PROMPT_SNIPPET,
	promptGuidelines: PROMPT_GUIDELINES,
	parameters: skillManageSchema,
	executionMode: "sequential" as const,
	prepareArguments: (raw: unknown) => prepareArguments(raw) as never,
};
