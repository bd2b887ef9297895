// `patch`: exact-text replacement in SKILL.md or a bundled file, through GATE_ORDER.patch.
// Only the replaced span changes: BOM, CRLF, trailing spaces and every other byte stay as found.

import { basename } from "node:path";
import type { CallContext, PlanInput, PreparedMutation } from "../pipeline/call-context.ts";
import { checkUnsafe, checkIsText, decodeText, encodeText, MAX_FILE_BYTES } from "../checks/content-guard.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import {
	checkOldString,
	checkRisk,
	checkSimilar,
	checkSpec,
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
import { skillNamed } from "../policy/discovery.ts";
import { findSkill, resolveFileTarget, type FileTarget, type SkillSelector } from "../policy/target.ts";
import { checkSkillContent, descriptionOf, loadedNameOf, type SkillCheck } from "../checks/validation.ts";
import type { Plan } from "../pipeline/types.ts";

export interface PatchArgs extends SkillSelector {
	readonly file?: string;
	readonly old_string: string;
	readonly new_string: string;
	readonly replace_all?: boolean;
	readonly distinct_from?: readonly string[];
}

/**
 * The other skills' names gate 6 compares `after` against, narrowed to the one that matters: the
 * name `after` loads under, when another skill holds it (pi loads one skill per name).
 */
function collidingNames(ctx: CallContext, target: FileTarget, name: string | undefined): string[] {
	const holder = name === undefined ? undefined : skillNamed(ctx.discovery.skills, name);
	return name !== undefined && holder !== undefined && holder.filePath !== target.skill.filePath ? [name] : [];
}

/** Whether a SKILL.md change touches what the model picks a skill by: its name or its description. */
const cardChanged = (before: string, after: string, dirName: string): boolean =>
	loadedNameOf(before, dirName) !== loadedNameOf(after, dirName) || descriptionOf(before) !== descriptionOf(after);

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

/** A patch's file text before and after the replacement. */
interface Edit {
	readonly before: string;
	readonly after: string;
}

/** The edit, or too_large when the result would pass the limit (sized unbuilt). */
function replaced(before: string, args: PatchArgs, path: string): Edit | Refusal {
	const replaceAll = args.replace_all === true;
	const size = replacedSize(before, args.old_string, args.new_string, replaceAll);
	if (size > MAX_FILE_BYTES) return refusals.tooLarge(path, size, MAX_FILE_BYTES);
	return { before, after: replaceExact(before, args.old_string, args.new_string, replaceAll) };
}

function planPatch(ctx: CallContext, args: PatchArgs, target: FileTarget, input: PlanInput): Plan | Refusal {
	const replaceAll = args.replace_all === true;
	const bytes = input.view.read(target.absPath);
	const dirName = basename(target.skill.dir ?? target.absPath);
	// The values the gates check, worked out before any gate runs: the text now, and the text before
	// and after the replacement. A refusal stands in for a value that could not be had: no text, or
	// an after too large to build (a replace_all of a short old_string can multiply the file).
	const text = decodeText(bytes ?? Buffer.alloc(0), target.absPath);
	const edit = typeof text === "string" ? replaced(text, args, target.absPath) : text;
	// pi's loader's answer on the new SKILL.md text: asked once, when a gate first needs it.
	let asked: SkillCheck | undefined;
	const check = (after: string): SkillCheck => (asked ??= checkSkillContent(after, dirName));
	// A gate on the replacement, refused with its own refusal where the replacement could not be had.
	const onEdit = (gate: (e: Edit) => Refusal | undefined) => () => ("code" in edit ? edit : gate(edit));
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
		text: () => (typeof text === "string" ? checkIsText("new_string", args.new_string) : text),
		unique: () => (typeof text === "string" ? checkUnique(text, args.old_string, replaceAll, target.absPath) : text),
		size: onEdit(() => undefined),
		unsafe: onEdit((e) => checkUnsafe("new_string", e.after, e.before)),
		spec: onEdit((e) => (target.isSkillFile ? checkSpec(target.absPath, e.before, e.after, dirName) : undefined)),
		valid: onEdit((e) =>
			target.isSkillFile
				? checkValid({
						before: e.before,
						after: e.after,
						check: check(e.after),
						dirName,
						path: target.absPath,
						otherNames: collidingNames(ctx, target, check(e.after).name),
						previousDescription: () => descriptionOf(e.before),
					})
				: undefined,
		),
		// A new name or description is what the model picks a skill by: it must not read like another skill's.
		similar: onEdit((e) => {
			if (!target.isSkillFile || !cardChanged(e.before, e.after, dirName)) return undefined;
			const name = check(e.after).name ?? loadedNameOf(e.after, dirName);
			const description = descriptionOf(e.after) ?? "";
			return checkSimilar(ctx, { name, description }, [target.skill.name, ...(args.distinct_from ?? [])]);
		}),
		risk: onEdit((e) =>
			checkRisk(ctx, input, {
				skill: target.skill.name,
				file: target.relPath,
				path: target.absPath,
				before: e.before,
				after: e.after,
			}),
		),
	});
	if (refused) return refused;
	if ("code" in edit) return edit;
	return {
		action: "patch",
		skill: target.skill.name,
		changes: [
			{
				skill: target.skill.name,
				relPath: target.relPath,
				absPath: target.absPath,
				before: bytes,
				after: encodeText(edit.after),
				expectName: target.isSkillFile ? (check(edit.after).name ?? loadedNameOf(edit.after, dirName)) : undefined,
			},
		],
	};
}
