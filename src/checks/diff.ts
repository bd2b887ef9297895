// Unified diffs of planned changes, for dry runs, tool results and the TUI renderer. Bounded like
// every result: lines cut at 1,000 characters, the whole diff at the read limit (30,000), Myers'
// diff given up past an edit length or a time budget, control characters of the files escaped.

import { createTwoFilesPatch } from "diff";
import { clipText, escapeControls, READ_CHAR_LIMIT } from "./content-guard.ts";

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

/** Lines of context around each change, as in `diff -u`. */
const CONTEXT = 3;
/** Bytes compared at once while looking for the span that differs. */
const CHUNK = 4096;
const NL = 0x0a;

/** Where the line `lines` lines above the line holding byte `at` starts (0: the file's start). */
function lineStartBefore(bytes: Buffer, at: number, lines: number): number {
	// Buffer#lastIndexOf searches from the end for a negative offset: stop at 0 instead.
	const startOfLine = (i: number) => (i < 0 ? 0 : bytes.lastIndexOf(NL, i) + 1);
	let from = startOfLine(at - 1);
	for (let i = 0; i < lines && from > 0; i++) from = startOfLine(from - 2);
	return from;
}

/** Where the line `lines` lines below the line holding byte `at` ends, past its newline (or the file's end). */
function lineEndAfter(bytes: Buffer, at: number, lines: number): number {
	let to = at;
	for (let i = 0; i <= lines && to < bytes.length; i++) {
		const nl = bytes.indexOf(NL, to);
		to = nl === -1 ? bytes.length : nl + 1;
	}
	return to;
}

function countLines(bytes: Buffer, end: number): number {
	let count = 0;
	for (let nl = bytes.indexOf(NL); nl !== -1 && nl < end; nl = bytes.indexOf(NL, nl + 1)) count++;
	return count;
}

/**
 * The span of two files that differs, widened to whole lines plus the context, decoded, and the
 * number of lines above it (the same in both). Cut at newline bytes, so no UTF-8 character is split.
 * Decoding and diffing whole files to show one changed line would cost a large file's size each time.
 */
function changedWindow(before: Buffer, after: Buffer): { before: string; after: string; skipped: number } {
	const max = Math.min(before.length, after.length);
	// Whole chunks first (one native comparison each), then byte by byte in the first that differs.
	let start = 0;
	while (start + CHUNK <= max && before.subarray(start, start + CHUNK).equals(after.subarray(start, start + CHUNK)))
		start += CHUNK;
	while (start < max && before[start] === after[start]) start++;
	let end = 0;
	const sameTail = (n: number) =>
		before
			.subarray(before.length - n, before.length - end)
			.equals(after.subarray(after.length - n, after.length - end));
	while (end + CHUNK <= max - start && sameTail(end + CHUNK)) end += CHUNK;
	while (end < max - start && before[before.length - 1 - end] === after[after.length - 1 - end]) end++;
	const from = lineStartBefore(before, start, CONTEXT);
	// The common tail is the same bytes in both: cut both at the same distance from their ends.
	const tail = before.length - lineEndAfter(before, before.length - end, CONTEXT);
	return {
		before: before.subarray(from, before.length - tail).toString("utf8"),
		after: after.subarray(from, after.length - tail).toString("utf8"),
		skipped: countLines(before, from),
	};
}

/** Moves every hunk header of a window's patch down by `skipped` lines. */
function shiftHunks(patch: string, skipped: number): string {
	if (skipped === 0) return patch;
	return patch.replace(
		/^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@/gm,
		(_m, a: string, b = "", c: string, d = "") => `@@ -${Number(a) + skipped}${b} +${Number(c) + skipped}${d} @@`,
	);
}

function textDiff(oldName: string, newName: string, before: Buffer, after: Buffer): string | undefined {
	if (before.length === 0 || after.length === 0) {
		return wholeFilePatch(oldName, newName, asText(before.length === 0 ? after : before), before.length === 0);
	}
	const window = changedWindow(before, after);
	const patch = createTwoFilesPatch(oldName, newName, window.before, window.after, undefined, undefined, {
		context: CONTEXT,
		maxEditLength: MAX_EDIT_LENGTH,
		timeout: DIFF_TIMEOUT_MS,
	});
	return patch === undefined ? undefined : shiftHunks(patch.replace(/^=+\n/, ""), window.skipped);
}

/** A file's bytes before and after a change (null: it did not exist, or is removed). */
export interface ChangedFile {
	readonly skill: string;
	readonly relPath: string;
	readonly before: Buffer | null;
	readonly after: Buffer | null;
}

export function diffChange(change: ChangedFile): string {
	const name = `${change.skill}/${change.relPath}`;
	if (!isText(change.before) || !isText(change.after))
		return escapeControls(`Binary file ${name} ${change.after === null ? "deleted" : "changed"}\n`);
	const oldName = change.before === null ? "/dev/null" : `a/${name}`;
	const newName = change.after === null ? "/dev/null" : `b/${name}`;
	const before = change.before ?? Buffer.alloc(0);
	const after = change.after ?? Buffer.alloc(0);
	const patch = textDiff(oldName, newName, before, after);
	if (patch === undefined) {
		return escapeControls(
			`--- ${oldName}\n+++ ${newName}\n` +
				`(too many changes to show a diff: ${lineCount(asText(before))} line(s) before, ` +
				`${lineCount(asText(after))} after)\n`,
		);
	}
	return escapeControls(cutLongLines(patch));
}

/** The diffs of all changes, cut at the read limit; files past it are counted, not diffed. */
export function diffChanges(changes: readonly ChangedFile[]): string {
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
