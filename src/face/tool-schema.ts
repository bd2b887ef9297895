// The `skill_manage` tool's public face, which pi needs at start-up: its name, strict schema, the
// texts pi puts in the system prompt, and the argument preparation pi runs before `execute`. Light on
// purpose (index.ts registers the tool from it and loads the rest, tool.ts, at the first call).

import { StringEnum } from "@mariozechner/pi-ai";
import { Type } from "typebox";
import { ACTIONS, ArgumentError, BATCH_ACTIONS, normalizeArguments, type SkillManageArgs } from "./arguments.ts";

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
