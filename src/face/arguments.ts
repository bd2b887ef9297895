// The tool's public argument shape and the checks TypeBox cannot express: which fields each
// action takes and needs, and the common mistaken shapes models send (`file_path`, `old_text`,
// a stringified `operations`), mapped the way pi's own edit tool maps its legacy arguments.

import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";

export const ACTIONS = [
	"list",
	"read",
	"patch",
	"create",
	"write",
	"delete",
	"restore",
	"history",
	"operations",
] as const;
export type Action = (typeof ACTIONS)[number];
export const BATCH_ACTIONS = ["patch", "write", "delete"] as const;

export interface OperationArgs {
	action: (typeof BATCH_ACTIONS)[number];
	skill?: string;
	path?: string;
	file?: string;
	old_string?: string;
	new_string?: string;
	replace_all?: boolean;
	content?: string;
	/** Why: what in this task proved the skill wrong (shown to the person, kept in the audit line). */
	reason?: string;
	/** Skills a create or a renaming patch says it differs from (needs a reason); kept in the audit line. */
	distinct_from?: string[];
}

export interface SkillManageArgs extends Omit<OperationArgs, "action"> {
	action: Action;
	name?: string;
	description?: string;
	body?: string;
	backup?: string;
	operations?: OperationArgs[];
	dry_run?: boolean;
}

const ALIASES: Record<string, string> = {
	file_path: "path",
	filePath: "path",
	skill_path: "path",
	skill_name: "skill",
	skillName: "skill",
	old_text: "old_string",
	oldText: "old_string",
	new_text: "new_string",
	newText: "new_string",
	replaceAll: "replace_all",
	dryRun: "dry_run",
	backup_id: "backup",
	backupId: "backup",
};

const STRING_FIELDS = [
	"skill",
	"path",
	"file",
	"old_string",
	"new_string",
	"content",
	"name",
	"description",
	"body",
	"backup",
	"reason",
];
const BOOLEAN_FIELDS = ["replace_all", "dry_run"];

const TARGETED = ["skill", "path"];
/** Fields each action accepts (besides `action`); `dry_run` and `reason` go with every mutation. */
const ACCEPTS: Record<Action, readonly string[]> = {
	list: ["skill"],
	read: [...TARGETED, "file"],
	patch: [...TARGETED, "file", "old_string", "new_string", "replace_all", "dry_run", "reason", "distinct_from"],
	create: ["name", "description", "body", "dry_run", "reason", "distinct_from"],
	write: [...TARGETED, "file", "content", "dry_run", "reason"],
	delete: [...TARGETED, "file", "dry_run", "reason"],
	restore: [...TARGETED, "file", "backup", "dry_run", "reason"],
	history: [...TARGETED, "file"],
	operations: ["operations", "dry_run", "reason"],
};
const REQUIRES: Record<Action, readonly string[]> = {
	list: [],
	read: [],
	patch: ["old_string", "new_string"],
	create: ["name", "description", "body"],
	write: ["file", "content"],
	delete: [],
	restore: [],
	history: [],
	operations: ["operations"],
};

export class ArgumentError extends Error {
	constructor(readonly refusal: Refusal) {
		super(refusal.message);
	}
}

function renameAliases(raw: Record<string, unknown>): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(raw)) {
		const name = ALIASES[key] ?? key;
		if (!(name in out) || out[name] === undefined) out[name] = value;
	}
	return out;
}

function checkTypes(args: Record<string, unknown>, action: string): Refusal | undefined {
	const distinct = args.distinct_from;
	if (distinct !== undefined && (!Array.isArray(distinct) || !distinct.every((n) => typeof n === "string")))
		return refusals.invalidArguments(action, '"distinct_from" must be a list of skill names', {
			field: "distinct_from",
		});
	if (Array.isArray(distinct) && distinct.length > 0 && (typeof args.reason !== "string" || !args.reason.trim()))
		return refusals.invalidArguments(action, '"distinct_from" needs a "reason" saying how this skill differs', {
			field: "reason",
		});
	for (const [key, value] of Object.entries(args)) {
		if (value === undefined || value === null) continue;
		if (STRING_FIELDS.includes(key) && typeof value !== "string")
			return refusals.invalidArguments(action, `"${key}" must be a string, got ${typeof value}`, { field: key });
		if (BOOLEAN_FIELDS.includes(key) && typeof value !== "boolean")
			return refusals.invalidArguments(action, `"${key}" must be true or false, got ${JSON.stringify(value)}`, {
				field: key,
			});
	}
	return undefined;
}

function parseOperations(value: unknown): unknown {
	if (typeof value !== "string") return value;
	try {
		return JSON.parse(value);
	} catch {
		throw new ArgumentError(
			refusals.invalidArguments(
				"operations",
				'"operations" is a string that is not valid JSON; pass an array of {action, ...} objects',
			),
		);
	}
}

/** Maps mistaken shapes to the schema; refuses wrong types and fields that do not belong. */
export function normalizeArguments(input: unknown): SkillManageArgs {
	if (typeof input !== "object" || input === null || Array.isArray(input)) {
		throw new ArgumentError(refusals.invalidArguments("?", 'arguments must be an object with an "action"'));
	}
	const args = renameAliases(input as Record<string, unknown>);
	for (const key of Object.keys(args)) if (args[key] === null) delete args[key];
	const action = args.action;
	if (typeof action !== "string" || !(ACTIONS as readonly string[]).includes(action)) {
		throw new ArgumentError(
			refusals.invalidArguments(String(action), `"action" must be one of ${ACTIONS.join(", ")}`, {
				field: "action",
			}),
		);
	}
	if ("operations" in args) args.operations = parseOperations(args.operations);
	const problem = checkFields(args, action as Action) ?? checkTypes(args, action);
	if (problem) throw new ArgumentError(problem);
	if (action === "operations") args.operations = checkOperations(args.operations);
	return args as unknown as SkillManageArgs;
}

function checkFields(args: Record<string, unknown>, action: Action): Refusal | undefined {
	const accepted = new Set(["action", ...ACCEPTS[action]]);
	const extra = Object.keys(args).filter(
		(k) => !accepted.has(k) && !(BOOLEAN_FIELDS.includes(k) && args[k] === false),
	);
	if (extra.length > 0) {
		return refusals.invalidArguments(
			action,
			`${extra.map((k) => `"${k}"`).join(", ")} ${extra.length === 1 ? "does" : "do"} not belong to this action; ` +
				`it takes ${ACCEPTS[action].join(", ") || "no other field"}`,
			{ extra },
		);
	}
	const missing = REQUIRES[action].filter((k) => args[k] === undefined);
	if (missing.length > 0)
		return refusals.invalidArguments(action, `missing ${missing.map((k) => `"${k}"`).join(", ")}`, { missing });
	const needsSkill = action !== "list" && action !== "create" && action !== "operations";
	if (needsSkill && args.skill === undefined && args.path === undefined) {
		return refusals.invalidArguments(
			action,
			'pass "skill" (a name from {"action":"list"}) or "path" (a skill folder or its SKILL.md)',
		);
	}
	return undefined;
}

function checkOperations(value: unknown): OperationArgs[] {
	if (!Array.isArray(value))
		throw new ArgumentError(
			refusals.invalidArguments("operations", '"operations" must be an array of {action: patch|write|delete, ...}'),
		);
	return value.map((raw, index) => {
		try {
			const op = normalizeArguments(raw);
			if (!(BATCH_ACTIONS as readonly string[]).includes(op.action) || op.dry_run !== undefined) {
				throw new ArgumentError(
					refusals.invalidArguments(
						op.action,
						`only ${BATCH_ACTIONS.join(", ")} go in a batch (dry_run goes on the batch itself)`,
					),
				);
			}
			return op as OperationArgs;
		} catch (error) {
			if (error instanceof ArgumentError) throw new ArgumentError(refusals.forOperation(index, error.refusal));
			throw error;
		}
	});
}
