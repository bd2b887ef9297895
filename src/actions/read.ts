// `read`: SKILL.md or a bundled file of a discovered skill, cut at 30,000 characters, and the
// record in the session's ledger (path -> sha256 of the whole file) that unlocks mutations.

import { type Dirent, readdirSync } from "node:fs";
import { join } from "node:path";
import type { ActionResult, CallContext } from "../call-context.ts";
import { decodeText, READ_CHAR_LIMIT } from "../content-guard.ts";
import * as refusals from "../errors.ts";
import type { Refusal } from "../errors.ts";
import { sha256 } from "../read-ledger.ts";
import { findSkill, resolveFileTarget, type SkillSelector } from "../target.ts";

/** Bundled files of a skill folder (relative paths), hidden entries and SKILL.md left out. */
export function listBundledFiles(dir: string, prefix = ""): string[] {
	let entries: Dirent[];
	try {
		entries = readdirSync(join(dir, prefix), { withFileTypes: true });
	} catch {
		return [];
	}
	const out: string[] = [];
	for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
		if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
		const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
		if (entry.isDirectory()) out.push(...listBundledFiles(dir, rel));
		else if (rel !== "SKILL.md") out.push(rel);
	}
	return out;
}

export function readSkillFile(ctx: CallContext, selector: SkillSelector, file: string | undefined): ActionResult | Refusal {
	const skill = findSkill(ctx.discovery.skills, selector, ctx.cwd);
	if ("code" in skill) return skill;
	const target = resolveFileTarget(skill, file);
	if ("code" in target) return target;
	let bytes: Buffer;
	try {
		const stat = ctx.fs.lstat(target.absPath);
		if (stat.isDirectory()) return refusals.badFilePath(target.relPath, "it is a folder; name a file inside it");
		bytes = ctx.fs.readFile(target.absPath);
	} catch (error) {
		if (refusals.errnoCode(error) === "ENOENT") {
			const files = skill.dir ? listBundledFiles(skill.dir) : [];
			return refusals.badFilePath(target.relPath, `no such file in skill "${skill.name}" (files: ${files.slice(0, 20).join(", ") || "none"})`);
		}
		return refusals.ioError(target.absPath, error);
	}
	const text = decodeText(bytes, target.absPath);
	if (typeof text !== "string") return text;
	const hash = sha256(bytes);
	ctx.ledger.record(target.absPath, hash);
	const cut = text.length > READ_CHAR_LIMIT;
	const shown = cut ? text.slice(0, READ_CHAR_LIMIT) : text;
	const bundled = target.isSkillFile && skill.dir ? listBundledFiles(skill.dir) : [];
	const header = `${target.absPath} (${bytes.length} bytes, sha256 ${hash.slice(0, 12)}, ${skill.patchable ? "patchable" : `read-only: ${skill.reason}`})`;
	const footer = [
		cut ? `[cut at ${READ_CHAR_LIMIT} of ${text.length} characters; patch only text you have seen]` : "",
		bundled.length > 0 ? `Bundled files: ${bundled.join(", ")}` : "",
	].filter(Boolean);
	return {
		text: [header, shown, ...footer].join("\n"),
		details: { ok: true, action: "read", skill: skill.name, file: target.relPath, path: target.absPath, hash, truncated: cut, bundled },
	};
}
