// `read`: SKILL.md or a bundled file of a discovered skill, cut at 30,000 characters, and the
// record in the session's ledger (path -> sha256 of the whole file) that unlocks mutations.

import type { ActionResult, CallContext } from "../pipeline/call-context.ts";
import { decodeText, escapeControls, READ_CHAR_LIMIT } from "../checks/content-guard.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import { NotRegularFileError, type FsOps } from "../base/fs-ops.ts";
import { findSkill, notRegularReason, resolveFileTarget, type SkillSelector } from "../policy/target.ts";
import { errnoCode, walkTree } from "../base/fs-reads.ts";
import { sha256 } from "../base/hash.ts";

/** Bundled file names a read lists; the count is always given, so the result stays bounded. */
const MAX_LISTED_FILES = 100;

/**
 * Bundled files of a skill folder (relative paths), hidden entries, node_modules and SKILL.md left
 * out. Stops one past `limit`, so a folder of a hundred thousand files costs no more than a small one.
 */
export function listBundledFiles(fs: FsOps, dir: string, limit = MAX_LISTED_FILES): string[] {
	const skip = (name: string, relPath: string) =>
		name.startsWith(".") || name === "node_modules" || relPath === "SKILL.md";
	return walkTree(fs, dir, { skip, maxFiles: limit + 1 }).files.map((f) => f.relPath);
}

/** File names for an echo: escaped, at most MAX_LISTED_FILES, saying when there were more. */
function namesForEcho(files: readonly string[]): string {
	const shown = files.slice(0, MAX_LISTED_FILES).map(escapeControls).join(", ");
	return files.length > MAX_LISTED_FILES ? `${shown}, … (more than ${MAX_LISTED_FILES})` : shown;
}

export function readSkillFile(
	ctx: CallContext,
	selector: SkillSelector,
	file: string | undefined,
): ActionResult | Refusal {
	const skill = findSkill(ctx.discovery.skills, selector, ctx.cwd);
	if ("code" in skill) return skill;
	const target = resolveFileTarget(skill, file);
	if ("code" in target) return target;
	let bytes: Buffer;
	try {
		bytes = ctx.fs.readFile(target.absPath);
	} catch (error) {
		// resolveFileTarget refused it already, unless it was swapped in since.
		if (error instanceof NotRegularFileError)
			return refusals.badFilePath(target.relPath, notRegularReason(error.kind, target.relPath, skill.name));
		if (errnoCode(error) === "ENOENT") {
			const files = skill.dir ? listBundledFiles(ctx.fs, skill.dir, 20) : [];
			return refusals.badFilePath(
				target.relPath,
				`no such file in skill "${skill.name}" (files: ${namesForEcho(files.slice(0, 20)) || "none"})`,
			);
		}
		return refusals.ioError(target.absPath, error);
	}
	const text = decodeText(bytes, target.absPath);
	if (typeof text !== "string") return text;
	const hash = sha256(bytes);
	ctx.ledger.record(target.absPath, hash);
	const cut = text.length > READ_CHAR_LIMIT;
	const shown = cut ? text.slice(0, READ_CHAR_LIMIT) : text;
	const found = target.isSkillFile && skill.dir ? listBundledFiles(ctx.fs, skill.dir) : [];
	const bundled = found.slice(0, MAX_LISTED_FILES);
	const header =
		`${escapeControls(target.absPath)} (${bytes.length} bytes, sha256 ${hash.slice(0, 12)}, ` +
		`${skill.patchable ? "patchable" : `read-only: ${skill.reason}`})`;

	const footer = [
		cut ? `[cut at ${READ_CHAR_LIMIT} of ${text.length} characters; patch only text you have seen]` : "",
		found.length > 0 ? `Bundled files: ${namesForEcho(found)}` : "",
	].filter(Boolean);
	return {
		text: [header, shown, ...footer].join("\n"),
		details: {
			ok: true,
			action: "read",
			skill: skill.name,
			file: target.relPath,
			path: target.absPath,
			hash,
			truncated: cut,
			bundled,
			...(found.length > bundled.length ? { bundledCut: true } : {}),
		},
	};
}
