// Unified diffs of planned changes, for dry runs, tool results and the TUI renderer.

import { createTwoFilesPatch } from "diff";
import type { FileChange } from "./plan.ts";

function asText(bytes: Buffer | null): string {
	return bytes === null ? "" : bytes.toString("utf8");
}

function isText(bytes: Buffer | null): boolean {
	return bytes === null || !bytes.includes(0);
}

export function diffChange(change: FileChange): string {
	const name = `${change.skill}/${change.relPath}`;
	if (!isText(change.before) || !isText(change.after)) return `Binary file ${name} ${change.after === null ? "deleted" : "changed"}\n`;
	const oldName = change.before === null ? "/dev/null" : `a/${name}`;
	const newName = change.after === null ? "/dev/null" : `b/${name}`;
	const patch = createTwoFilesPatch(oldName, newName, asText(change.before), asText(change.after), undefined, undefined, { context: 3 });
	return patch.replace(/^=+\n/, "");
}

export function diffChanges(changes: readonly FileChange[]): string {
	return changes.map(diffChange).join("");
}

/** The first `maxLines` lines of a diff, saying how many were left out. */
export function clipDiff(diff: string, maxLines: number): string {
	const lines = diff.split("\n");
	if (lines.length <= maxLines) return diff;
	return `${lines.slice(0, maxLines).join("\n")}\n… ${lines.length - maxLines} more diff line(s)`;
}
