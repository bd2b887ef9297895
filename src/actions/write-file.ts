// `write`: create or overwrite a bundled file (references/, scripts/, assets/...). SKILL.md is
// patch-only. Overwriting needs that file read and unchanged, and is backed up first; a new
// file is created non-executable, an overwritten one keeps its mode.

import type { CallContext, PlanInput, PreparedMutation } from "../pipeline/call-context.ts";
import { checkSize, checkUnsafe, checkIsText, decodeText, encodeText } from "../checks/content-guard.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import {
	checkRead,
	checkRisk,
	checkWritable,
	writableInput,
	GATE_ORDER,
	humanGates,
	readGates,
	runGates,
} from "../pipeline/gates.ts";
import { findSkill, resolveFileTarget, SKILL_FILE, type FileTarget, type SkillSelector } from "../policy/target.ts";
import type { Plan } from "../pipeline/types.ts";

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
	return {
		action: "write",
		skill: skill.name,
		file: target.relPath,
		paths: [target.absPath],
		plan: (input) => planWrite(ctx, args, target, input),
	};
}

function planWrite(ctx: CallContext, args: WriteArgs, target: FileTarget, input: PlanInput): Plan | Refusal {
	const current = input.view.read(target.absPath);
	// A new file needs its skill's SKILL.md read; an overwrite needs the file itself read and unchanged.
	const gates =
		current === null
			? {
					read: () =>
						checkRead(ctx.ledger, {
							...target,
							absPath: target.skill.filePath,
							relPath: SKILL_FILE,
							isSkillFile: true,
						}),
					unchanged: () => undefined,
				}
			: readGates(ctx, target, input);
	let before = "";
	const refused = runGates(GATE_ORDER.write, {
		...gates,
		writable: () => checkWritable(writableInput(ctx), target),
		...humanGates(ctx, input, { name: target.skill.name, dir: target.skill.dir ?? target.absPath }),
		text: () => {
			if (current === null) return undefined;
			const text = decodeText(current, target.absPath);
			if (typeof text !== "string") return text;
			before = text;
			return text === args.content ? refusals.noChange("content") : undefined;
		},
		unsafe: () => checkUnsafe("content", args.content, before),
		risk: () =>
			checkRisk(ctx, input, {
				skill: target.skill.name,
				file: target.relPath,
				path: target.absPath,
				before: current === null ? undefined : before,
				after: args.content,
			}),
	});
	if (refused) return refused;
	return {
		action: "write",
		skill: target.skill.name,
		changes: [
			{
				skill: target.skill.name,
				relPath: target.relPath,
				absPath: target.absPath,
				before: current,
				after: encodeText(args.content),
				mode: 0o644,
			},
		],
	};
}
