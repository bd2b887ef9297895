// Skills that appear outside the tool while a control is on: the skill files pi loaded are recorded
// (in the protected store) at each prompt while one is on; the next session's first prompt names the
// skill files pi loads that the record lacks and this package did not create, so the person can look.
//
//   <agentDir>/selfskills/seen-skills.json   {"time":"2026-12-04T16:40:00.000Z","files":["/…/SKILL.md", …]}

import { dirname, join } from "node:path";
import type { FsOps } from "../base/fs-ops.ts";
import { getSelfSkillsDir, resolveReal } from "../base/paths.ts";
import { createPrivateDirs, writePrivate } from "../base/writer.ts";
import { isJsonObject } from "../policy/settings.ts";
import { readCreatedDirs } from "../store/origins.ts";

export function getSeenSkillsPath(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "seen-skills.json");
}

/** The recorded skill files, or undefined when there is no record (no control was on at the last prompt). */
export function readSeenSkills(fs: FsOps, agentDir: string): Set<string> | undefined {
	try {
		const json: unknown = JSON.parse(fs.readFile(getSeenSkillsPath(agentDir)).toString("utf8"));
		if (!isJsonObject(json) || !Array.isArray(json.files)) return undefined;
		return new Set(json.files.filter((f): f is string => typeof f === "string"));
	} catch {
		return undefined;
	}
}

/** Records `files` while a control is on; drops the record when none is (what appears then is allowed). */
export function recordSeenSkills(fs: FsOps, agentDir: string, files: readonly string[], control: boolean): void {
	const path = getSeenSkillsPath(agentDir);
	if (!control) {
		try {
			fs.unlink(path);
		} catch {
			// No record: nothing to drop.
		}
		return;
	}
	const sorted = [...new Set(files.map((f) => resolveReal(f, fs)))].sort();
	const before = readSeenSkills(fs, agentDir);
	if (before && before.size === sorted.length && sorted.every((f) => before.has(f))) return;
	const text = `${JSON.stringify({ time: new Date().toISOString(), files: sorted })}\n`;
	writePrivate(fs, createPrivateDirs(fs, agentDir), path, Buffer.from(text));
}

/** Skill files pi loads now that the record lacks and this package did not create; empty without a record. */
export function findAppearedSkills(fs: FsOps, agentDir: string, files: readonly string[]): string[] {
	const seen = readSeenSkills(fs, agentDir);
	if (!seen) return [];
	const created = readCreatedDirs(fs, agentDir);
	return files.map((f) => resolveReal(f, fs)).filter((f) => !seen.has(f) && !created.has(dirname(f)));
}

/** The notice for the person, naming each skill file. */
export function appearedNotice(files: readonly string[]): string {
	return (
		`selfskills: ${files.length} skill file(s) appeared while your review was on, not through skill_manage ` +
		`(if you did not add them, read them before use):\n${files.map((f) => `  ${f}`).join("\n")}`
	);
}
