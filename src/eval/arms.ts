// The two arms of an eval, as skill libraries laid out in a run's throwaway agent folder: for a
// proposal, the skills as they are now against the same skills with the proposal's planned changes
// laid over their copies; for a skill, the library without it against the library with it.

import { copyFileSync, cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { isWithin } from "../base/paths.ts";
import type { DiscoveredSkill } from "../policy/discovery.ts";
import type { FileChange } from "../pipeline/types.ts";

/** One skill of the person's library, as pi loads it (the first of a name wins). */
export interface LibrarySkill {
	readonly name: string;
	/** The skill folder, or undefined for a single-file skill. */
	readonly dir: string | undefined;
	readonly filePath: string;
}

export interface Arm {
	/** "without the proposal" / "with the proposal", "without <skill>" / "with <skill>". */
	readonly label: string;
	readonly skills: readonly LibrarySkill[];
	/** Planned changes laid over the copies (the proposal's), by skill name and path inside it. */
	readonly changes: readonly FileChange[];
}

/** The library pi loads: every discovered skill once, the first of a name (pi's precedence) winning. */
export function libraryOf(skills: readonly DiscoveredSkill[]): LibrarySkill[] {
	const seen = new Set<string>();
	return skills.flatMap((s) => {
		if (seen.has(s.name)) return [];
		seen.add(s.name);
		return [{ name: s.name, dir: s.dir, filePath: s.filePath }];
	});
}

export function proposalArms(library: readonly LibrarySkill[], changes: readonly FileChange[]): [Arm, Arm] {
	return [
		{ label: "without the proposal", skills: library, changes: [] },
		{ label: "with the proposal", skills: library, changes },
	];
}

export function skillArms(library: readonly LibrarySkill[], skill: string): [Arm, Arm] {
	return [
		{ label: `without ${skill}`, skills: library.filter((s) => s.name !== skill), changes: [] },
		{ label: `with ${skill}`, skills: library, changes: [] },
	];
}

/**
 * Lays the arm out under `skillsDir`: each skill copied to `<name>/` (a single-file skill as
 * `<name>/SKILL.md`), then each planned change written over its copy (null: the file removed).
 */
export function materializeArm(arm: Arm, skillsDir: string): void {
	mkdirSync(skillsDir, { recursive: true });
	for (const skill of arm.skills) {
		const into = join(skillsDir, skill.name);
		if (skill.dir !== undefined && basename(skill.filePath) === "SKILL.md") {
			cpSync(skill.dir, into, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
		} else {
			mkdirSync(into, { recursive: true });
			copyFileSync(skill.filePath, join(into, "SKILL.md"));
		}
	}
	for (const change of arm.changes) {
		const path = join(skillsDir, change.skill, change.relPath);
		// The plan passed every gate (no `..` in a file name); a path outside the copy is never written.
		if (!isWithin(skillsDir, path)) continue;
		if (change.after === null) rmSync(path, { force: true });
		else {
			mkdirSync(dirname(path), { recursive: true });
			writeFileSync(path, change.after, { mode: change.mode ?? 0o644 });
		}
	}
}
