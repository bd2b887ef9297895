// `patch`: exact-text replacement in SKILL.md or a bundled file, through gates 1-6 in order.
// Only the replaced span changes: BOM, CRLF, trailing spaces and every other byte stay as found.

import { basename } from "node:path";
import type { CallContext, PlanInput, PreparedMutation } from "../call-context.ts";
import { checkUnsafe, checkIsText, decodeText, encodeText, MAX_FILE_BYTES } from "../content-guard.ts";
import * as refusals from "../errors.ts";
import type { Refusal } from "../errors.ts";
import { checkOldString, checkRead, checkUnchanged, checkUnique, checkValid, checkWritable, replaceExact, replacedSize } from "../gates.ts";
import { hashOrNull, type Plan } from "../plan.ts";
import { findSkill, resolveFileTarget, type FileTarget, type SkillSelector } from "../target.ts";
import { checkSkillContent } from "../validation.ts";
import { parseFrontmatter } from "@mariozechner/pi-coding-agent";

export interface PatchArgs extends SkillSelector {
	readonly file?: string;
	readonly old_string: string;
	readonly new_string: string;
	readonly replace_all?: boolean;
}

function frontmatterField(text: string, key: string): string | undefined {
	try {
		const { frontmatter } = parseFrontmatter<Record<string, unknown>>(text.replace(/^\uFEFF/, ""));
		return typeof frontmatter[key] === "string" ? frontmatter[key] : undefined;
	} catch {
		return undefined;
	}
}

const descriptionOf = (text: string): string | undefined => frontmatterField(text, "description");

/** The name pi loads a skill file under: its frontmatter name, else its folder's name. */
export const loadedNameOf = (text: string, dirName: string): string => frontmatterField(text, "name") || dirName;

/** loadedNameOf for text gate 6 already checked: pi's own answer, from the check cache. */
const loadedName = (text: string, dirName: string): string => checkSkillContent(text, dirName).name ?? loadedNameOf(text, dirName);

/** Gates 2-4, shared by every action that changes an existing file it must have read. */
export function checkReadUnchangedWritable(ctx: CallContext, target: FileTarget, input: PlanInput): Refusal | undefined {
	const writable = () => checkWritable({ roots: ctx.discovery.roots, agentDir: ctx.agentDir, fs: ctx.fs }, target);
	if (input.touched.has(target.absPath)) return writable();
	return checkRead(ctx.ledger, target) ?? checkUnchanged(ctx.ledger, target, hashOrNull(input.disk.read(target.absPath))) ?? writable();
}

export function otherSkillNames(ctx: CallContext, target: FileTarget): string[] {
	return ctx.discovery.skills.filter((s) => s.filePath !== target.skill.filePath).map((s) => s.name);
}

export function preparePatch(ctx: CallContext, args: PatchArgs): PreparedMutation | Refusal {
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
	const gated = checkReadUnchangedWritable(ctx, target, input);
	if (gated) return gated;
	const bytes = input.view.read(target.absPath);
	if (bytes === null) return checkUnchanged(ctx.ledger, target, null) ?? refusals.badFilePath(target.relPath, "the file does not exist (deleted earlier in this batch?)");
	const text = decodeText(bytes, target.absPath);
	if (typeof text !== "string") return text;
	const notText = checkIsText("new_string", args.new_string);
	if (notText) return notText;
	const unique = checkUnique(text, args.old_string, args.replace_all === true, target.absPath);
	if (unique) return unique;
	// Sized before it is built: a replace_all of a short old_string can multiply the file.
	const size = replacedSize(text, args.old_string, args.new_string, args.replace_all === true);
	if (size > MAX_FILE_BYTES) return refusals.tooLarge(target.absPath, size, MAX_FILE_BYTES);
	const after = replaceExact(text, args.old_string, args.new_string, args.replace_all === true);
	const unsafe = checkUnsafe("new_string", after, text);
	if (unsafe) return unsafe;
	const dirName = basename(target.skill.dir ?? target.absPath);
	if (target.isSkillFile) {
		const invalid = checkValid({ before: text, after, dirName, path: target.absPath, otherNames: otherSkillNames(ctx, target), previousDescription: () => descriptionOf(text) });
		if (invalid) return invalid;
	}
	return {
		action: "patch",
		skill: target.skill.name,
		changes: [{ skill: target.skill.name, relPath: target.relPath, absPath: target.absPath, before: bytes, after: encodeText(after), expectName: target.isSkillFile ? loadedName(after, dirName) : undefined }],
	};
}
