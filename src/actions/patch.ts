// `patch`: exact-text replacement in SKILL.md or a bundled file, through GATE_ORDER.patch.
// Only the replaced span changes: BOM, CRLF, trailing spaces and every other byte stay as found.

import { basename } from "node:path";
import type { CallContext, PlanInput, PreparedMutation } from "../policy/call-context.ts";
import { checkUnsafe, checkIsText, decodeText, encodeText, MAX_FILE_BYTES } from "../checks/content-guard.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import {
	checkOldString,
	checkUnchanged,
	checkUnique,
	checkValid,
	checkWritable,
	writableInput,
	GATE_ORDER,
	humanGates,
	readGates,
	replaceExact,
	replacedSize,
	runGates,
} from "../pipeline/gates.ts";
import type { Plan } from "../pipeline/plan.ts";
import { skillNamed } from "../policy/discovery.ts";
import { findSkill, resolveFileTarget, type FileTarget, type SkillSelector } from "../policy/target.ts";
import { checkSkillContent, descriptionOf, loadedNameOf } from "../checks/validation.ts";

export interface PatchArgs extends SkillSelector {
	readonly file?: string;
	readonly old_string: string;
	readonly new_string: string;
	readonly replace_all?: boolean;
}

/** loadedNameOf for text gate 6 already checked: pi's own answer, from the check cache. */
const loadedName = (text: string, dirName: string): string =>
	checkSkillContent(text, dirName).name ?? loadedNameOf(text, dirName);

/**
 * The other skills' names gate 6 compares `after` against, narrowed to the one that matters: the
 * name `after` loads under, when another skill holds it (pi loads one skill per name).
 */
function collidingNames(ctx: CallContext, target: FileTarget, after: string, dirName: string): string[] {
	const name = checkSkillContent(after, dirName).name;
	const holder = name === undefined ? undefined : skillNamed(ctx.discovery.skills, name);
	return name !== undefined && holder !== undefined && holder.filePath !== target.skill.filePath ? [name] : [];
}

export function preparePatch(ctx: CallContext, args: PatchArgs): PreparedMutation | Refusal {
	// Gate 1 needs no target, so a bad pair is refused before the skill is even looked up.
	const first = checkOldString(args.old_string, args.new_string);
	if (first) return first;
	const skill = findSkill(ctx.discovery.skills, args, ctx.cwd);
	if ("code" in skill) return skill;
	const target = resolveFileTarget(skill, args.file);
	if ("code" in target) return target;
	return {
		action: "patch",
		skill: skill.name,
		file: target.relPath,
		paths: [target.absPath],
		plan: (input) => planPatch(ctx, args, target, input),
	};
}

function planPatch(ctx: CallContext, args: PatchArgs, target: FileTarget, input: PlanInput): Plan | Refusal {
	const replaceAll = args.replace_all === true;
	const bytes = input.view.read(target.absPath);
	const dirName = basename(target.skill.dir ?? target.absPath);
	// What the gates work out on the way, in their order: the text now, then the text after.
	let text = "";
	let after = "";
	const refused = runGates(GATE_ORDER.patch, {
		old_string: () => undefined, // checked in preparePatch, before the lookup
		...readGates(ctx, target, input),
		writable: () => checkWritable(writableInput(ctx), target),
		...humanGates(ctx, input, { name: target.skill.name, dir: target.skill.dir ?? target.absPath }),
		exists: () =>
			bytes === null
				? (checkUnchanged(ctx.ledger, target, null) ??
					refusals.badFilePath(target.relPath, "the file does not exist (deleted earlier in this batch?)"))
				: undefined,
		text: () => {
			const decoded = decodeText(bytes ?? Buffer.alloc(0), target.absPath);
			if (typeof decoded !== "string") return decoded;
			text = decoded;
			return checkIsText("new_string", args.new_string);
		},
		unique: () => checkUnique(text, args.old_string, replaceAll, target.absPath),
		// Sized before it is built: a replace_all of a short old_string can multiply the file.
		size: () => {
			const size = replacedSize(text, args.old_string, args.new_string, replaceAll);
			return size > MAX_FILE_BYTES ? refusals.tooLarge(target.absPath, size, MAX_FILE_BYTES) : undefined;
		},
		unsafe: () => {
			after = replaceExact(text, args.old_string, args.new_string, replaceAll);
			return checkUnsafe("new_string", after, text);
		},
		valid: () =>
			target.isSkillFile
				? checkValid({
						before: text,
						after,
						dirName,
						path: target.absPath,
						otherNames: collidingNames(ctx, target, after, dirName),
						previousDescription: () => descriptionOf(text),
					})
				: undefined,
	});
	if (refused) return refused;
	return {
		action: "patch",
		skill: target.skill.name,
		changes: [
			{
				skill: target.skill.name,
				relPath: target.relPath,
				absPath: target.absPath,
				before: bytes,
				after: encodeText(after),
				expectName: target.isSkillFile ? loadedName(after, dirName) : undefined,
			},
		],
	};
}
