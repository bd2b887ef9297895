// Unified diffs of planned changes, for dry runs, tool results and the TUI renderer. Bounded like
// every result: lines cut at 1,000 characters, the whole diff at the read limit (30,000), Myers'
// diff given up past an edit length or a time budget, control characters of the files escaped.

import { createTwoFilesPatch } from "diff";
import { clipText, escapeControls, READ_CHAR_LIMIT } from "./content-guard.ts";
import type { FileChange } from "./plan.ts";

/** A one-line 300 KB asset would otherwise be echoed twice in full (as - and as +). */
const MAX_LINE_CHARS = 1000;
/** Myers' cost grows with the edit length; past these the diff is replaced by a line count. */
const MAX_EDIT_LENGTH = 5000;
const DIFF_TIMEOUT_MS = 50;

function asText(bytes: Buffer | null): string {
	return bytes === null ? "" : bytes.toString("utf8");
}

function isText(bytes: Buffer | null): boolean {
	return bytes === null || !bytes.includes(0);
}

const lineCount = (text: string): number => (text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0));

function cutLongLines(diff: string): string {
	return diff
		.split("\n")
		.map((line) =>
			line.length > MAX_LINE_CHARS
				? `${line.slice(0, MAX_LINE_CHARS)}… [line cut: ${line.length - MAX_LINE_CHARS} more characters]`
				: line,
		)
		.join("\n");
}

/** A whole file added or deleted, written out directly: Myers spends over 100 ms on 40,000 lines of it. */
function wholeFilePatch(oldName: string, newName: string, text: string, added: boolean): string {
	if (text === "") return `--- ${oldName}\n+++ ${newName}\n`;
	const lines = text.split("\n");
	const newlineAtEnd = text.endsWith("\n");
	if (newlineAtEnd) lines.pop();
	const sign = added ? "+" : "-";
	const range = added ? `@@ -0,0 +1,${lines.length} @@` : `@@ -1,${lines.length} +0,0 @@`;
	const body = lines.map((line) => sign + line).join("\n");
	const end = newlineAtEnd ? "" : "\\ No newline at end of file\n";
	return `--- ${oldName}\n+++ ${newName}\n${range}\n${body}\n${end}`;
}

function textDiff(oldName: string, newName: string, before: string, after: string): string | undefined {
	if (before === "" || after === "") return wholeFilePatch(oldName, newName, before || after, before === "");
	const patch = createTwoFilesPatch(oldName, newName, before, after, undefined, undefined, {
		context: 3,
		maxEditLength: MAX_EDIT_LENGTH,
		timeout: DIFF_TIMEOUT_MS,
	});
	return patch?.replace(/^=+\n/, "");
}

export function diffChange(change: FileChange): string {
	const name = `${change.skill}/${change.relPath}`;
	if (!isText(change.before) || !isText(change.after))
		return escapeControls(`Binary file ${name} ${change.after === null ? "deleted" : "changed"}\n`);
	const oldName = change.before === null ? "/dev/null" : `a/${name}`;
	const newName = change.after === null ? "/dev/null" : `b/${name}`;
	const before = asText(change.before);
	const after = asText(change.after);
	const patch = textDiff(oldName, newName, before, after);
	if (patch === undefined) {
		return escapeControls(
			`--- ${oldName}\n+++ ${newName}\n` +
				`(too many changes to show a diff: ${lineCount(before)} line(s) before, ${lineCount(after)} after)\n`,
		);
	}
	return escapeControls(cutLongLines(patch));
}

/** The diffs of all changes, cut at the read limit; files past it are counted, not diffed. */
export function diffChanges(changes: readonly FileChange[]): string {
	let out = "";
	let shown = 0;
	for (const change of changes) {
		if (out.length >= READ_CHAR_LIMIT) break;
		out += diffChange(change);
		shown++;
	}
	const cut = clipText(out, READ_CHAR_LIMIT, "diff");
	return shown < changes.length
		? `${cut}${cut.endsWith("\n") ? "" : "\n"}[${changes.length - shown} more file(s) changed, not shown]\n`
		: cut;
}

/** The first `maxLines` lines of a diff, saying how many were left out. */
export function clipDiff(diff: string, maxLines: number): string {
	const lines = diff.split("\n");
	if (lines.length <= maxLines) return diff;
	return `${lines.slice(0, maxLines).join("\n")}\n… ${lines.length - maxLines} more diff line(s)`;
}
