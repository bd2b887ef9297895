// Where pi's edit, write and bash may write while a control is on: the project (pi's rule: the nearest
// folder up from the working folder holding a `.git` entry, else the working folder), the session's
// own temp folder and the global `selfskills.sandbox.writable` folders — never the protected set.

import { type FsOps, realFs } from "../base/fs-ops.ts";
import { findProjectRoot, getHomeDir, isWithin, resolveReal } from "../base/paths.ts";
import { getGlobalSettingsPath, type SelfSkillsSettings } from "../policy/settings.ts";
import { getProtectedSet, type ProtectedSet, type ProtectedSetInput } from "./protected-set.ts";

/** One folder pi's tools may write while a control is on (a real path), and why. */
export interface WritablePlace {
	readonly real: string;
	readonly why: string;
}

export interface WritablePlaces {
	readonly places: readonly WritablePlace[];
	/** Folders that would have been writable and are not, each with the reason (for the person and the model). */
	readonly notes: readonly string[];
	/** The writable place holding `real` (a symlink-free path), or undefined. */
	find(real: string): WritablePlace | undefined;
}

export interface WritableInput {
	readonly cwd: string;
	readonly settings: Pick<SelfSkillsSettings, "sandbox">;
	/** The session's own temp folder (real path). */
	readonly tmpdir: string;
	/** A writable place inside a protected place is not one: the protected place wins. */
	readonly protectedSet: ProtectedSet;
	readonly fs?: FsOps;
}

export function getWritablePlaces(input: WritableInput): WritablePlaces {
	const fs = input.fs ?? realFs;
	const home = resolveReal(getHomeDir(), fs);
	const project = resolveReal(findProjectRoot(input.cwd, fs), fs);
	const wanted: WritablePlace[] = [
		{ real: project, why: "the project" },
		{ real: input.tmpdir, why: "the session's temp folder ($TMPDIR in bash)" },
		...input.settings.sandbox.writable.map((real) => ({ real, why: "selfskills.sandbox.writable" })),
	];
	const places: WritablePlace[] = [];
	const notes: string[] = [];
	for (const place of wanted) {
		const holder = input.protectedSet.find(place.real);
		if (isWithin(place.real, home)) {
			const what =
				place.real === home ? "the home folder" : place.real === "/" ? "the filesystem root" : "above home";
			notes.push(`${place.why} ${place.real} is not writable: it is ${what}`);
		} else if (holder) {
			notes.push(`${place.why} ${place.real} is not writable: it lies in ${holder.path} (${holder.why})`);
		} else if (!places.some((p) => p.real === place.real)) places.push(place);
	}
	return { places, notes, find: (real) => places.find((p) => isWithin(p.real, real)) };
}

/** The writable places as one phrase for a refusal or a note. */
export function describeWritable(writable: WritablePlaces): string {
	const list = writable.places.map((p) => `${p.real} (${p.why})`).join(", ");
	const notes = writable.notes.length > 0 ? `; ${writable.notes.join("; ")}` : "";
	return `${list || "none"}${notes}`;
}

/**
 * The `selfskills.sandbox.writable` folders the tools refuse although the settings took them (one lies
 * in a protected place), one settings problem each, for /selfskills status: settings.ts already reports
 * `/`, the home folder and its ancestors.
 */
export function refusedWritableSettings(input: ProtectedSetInput & Pick<WritableInput, "settings">): string[] {
	if (input.settings.sandbox.writable.length === 0) return [];
	const protectedSet = getProtectedSet(input);
	// The session's temp folder is not judged here (only the settings' folders are reported): any path will do.
	const places = getWritablePlaces({ ...input, tmpdir: "/nonexistent-selfskills-tmp", protectedSet });
	const prefix = "selfskills.sandbox.writable ";
	return places.notes
		.filter((note) => note.startsWith(prefix))
		.map(
			(note) =>
				`${getGlobalSettingsPath(input.agentDir)}: ${note}; left out while a control is on ` +
				"(remove it, or name a folder outside the protected set)",
		);
}
