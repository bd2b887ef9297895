// From a call's arguments to its prepared mutations: each op resolved to its target and planner by
// its action's module, with the agent's reason attached. Shared by the tool and by an approval of a
// proposal, which plans the call it recorded again.

import { prepareCreate } from "../actions/create.ts";
import { prepareDelete } from "../actions/delete.ts";
import { preparePatch } from "../actions/patch.ts";
import { prepareRestore } from "../actions/restore.ts";
import { prepareWrite } from "../actions/write-file.ts";
import type { OperationArgs, SkillManageArgs } from "./arguments.ts";
import type { CallContext, PreparedMutation } from "../pipeline/call-context.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import { MAX_OPERATIONS } from "../pipeline/mutate.ts";

function prepareOne(ctx: CallContext, op: OperationArgs | SkillManageArgs): PreparedMutation | Refusal {
	switch (op.action) {
		case "patch":
			return preparePatch(ctx, { ...op, old_string: op.old_string ?? "", new_string: op.new_string ?? "" });
		case "write":
			return prepareWrite(ctx, { ...op, file: op.file ?? "", content: op.content ?? "" });
		case "delete":
			return prepareDelete(ctx, op);
		case "create":
			return prepareCreate(ctx, {
				name: op.name ?? "",
				description: op.description ?? "",
				body: op.body ?? "",
				distinct_from: "distinct_from" in op ? op.distinct_from : undefined,
			});
		case "restore":
			return prepareRestore(ctx, op);
		default:
			return refusals.invalidArguments(op.action, "not a mutating action");
	}
}

/** The prepared mutations of a mutating call (one, or each op of `operations`), or the first refusal. */
export function prepareCall(ctx: CallContext, args: SkillManageArgs): PreparedMutation[] | Refusal {
	if (args.action !== "operations") {
		const one = prepareOne(ctx, args);
		return "code" in one ? one : [{ ...one, reason: args.reason, distinctFrom: args.distinct_from }];
	}
	const ops = args.operations ?? [];
	if (ops.length > MAX_OPERATIONS) return refusals.tooManyOperations(ops.length, MAX_OPERATIONS);
	const prepared: PreparedMutation[] = [];
	for (const [index, op] of ops.entries()) {
		const one = prepareOne(ctx, op);
		if ("code" in one) return refusals.forOperation(index, one);
		prepared.push({ ...one, reason: op.reason ?? args.reason, distinctFrom: op.distinct_from });
	}
	return prepared;
}
