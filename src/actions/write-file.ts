// `write`: create or overwrite a bundled file (references/, scripts/, assets/...). SKILL.md is
// patch-only. Overwriting needs that file read and unchanged, and is backed up first; a new
// file is created non-executable, an overwritten one keeps its mode.

import type { CallContext, PlanInput, PreparedMutation } from "../call-context.ts";
import { checkSize, checkUnsafe, checkIsText, decodeText, encodeText } from "../content-guard.ts";
import * as refusals from "../errors.ts";
import type { Refusal } from "../errors.ts";
import { checkRead, checkWritable } from "../gates.ts";
import type { Plan } from "../plan.ts";
import { findSkill, resolveFileTarget, type FileTarget, type SkillSelector } from "../target.ts";
import { checkReadUnchangedWritable } from "./patch.ts";

export interface WriteArgs extends SkillSelector {
	readonly file: string;
	readonly content: string;
}

export function prepareWrite(ctx: CallContext, args: WriteArgs): PreparedMutation | Refusal {
	const skill = findSkill(ctx.discovery.skills, args, ctx.cwd);
	if ("code" in skill) return skill;
	const target = resolveFileTarget(skill, args.file);
	if ("code" in target) return target;
	if (target.isSkillFile) return refusals.patchOnly(skill.name);
	if (args.content.length === 0) return refusals.emptyContent(args.file);
	const problem = checkIsText(`content for ${args.file}`, args.content) ?? checkSize(target.absPath, args.content);
	if (problem) return problem;
	return { action: "write", skill: skill.name, file: target.relPath, paths: [target.absPath], plan: (input) => planWrite(ctx, args, target, input) };
}

function planWrite(ctx: CallContext, args: WriteArgs, target: FileTarget, input: PlanInput): Plan | Refusal {
	const current = input.view.read(target.absPath);
	const gated =
		current === null
			? checkRead(ctx.ledger, { ...target, absPath: target.skill.filePath, isSkillFile: true }) ?? checkWritable({ roots: ctx.discovery.roots, agentDir: ctx.agentDir, fs: ctx.fs }, target)
			: checkReadUnchangedWritable(ctx, target, input);
	if (gated) return gated;
	let before = "";
	if (current !== null) {
		const text = decodeText(current, target.absPath);
		if (typeof text !== "string") return text;
		if (text === args.content) return refusals.noChange("content");
		before = text;
	}
	const unsafe = checkUnsafe("content", args.content, before);
	if (unsafe) return unsafe;
	return {
		action: "write",
		skill: target.skill.name,
		changes: [{ skill: target.skill.name, relPath: target.relPath, absPath: target.absPath, before: current, after: encodeText(args.content), mode: 0o644 }],
	};
}
