// What content the tool accepts: UTF-8 text only (no NUL, no invalid sequences), at most 1 MiB,
// no invisible or direction-changing characters the change adds, and how file text is echoed
// (control characters escaped, results bounded). Valid UTF-8
// decodes and re-encodes byte for byte, BOM and CRLF included, so edits never touch other bytes.

import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";

export const MAX_FILE_BYTES = 1024 * 1024;
export const READ_CHAR_LIMIT = 30_000;
/** Hard bound on any result text: a read's 30,000 characters plus its header and file list. */
export const RESULT_CHAR_LIMIT = READ_CHAR_LIMIT + 10_000;

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Decodes file bytes as text, or refuses binary/invalid UTF-8. */
export function decodeText(bytes: Uint8Array, path: string): string | Refusal {
	if (bytes.length > MAX_FILE_BYTES) return refusals.tooLarge(path, bytes.length, MAX_FILE_BYTES);
	if (bytes.includes(0)) return refusals.binaryFile(path, "contains NUL bytes");
	try {
		return decoder.decode(bytes);
	} catch {
		return refusals.binaryFile(path, "invalid UTF-8");
	}
}

export function encodeText(text: string): Buffer {
	return Buffer.from(text, "utf8");
}

/**
 * Refuses new text the tool could not read back as it was sent: unpaired surrogates (encoding
 * would turn them into U+FFFD silently) and NUL bytes (decodeText calls such a file binary).
 */
export function checkIsText(what: string, text: string): Refusal | undefined {
	if (!text.isWellFormed()) return refusals.binaryFile(what, "it has unpaired surrogates, which are not valid UTF-8");
	if (text.includes("\0")) return refusals.binaryFile(what, "it contains NUL bytes");
	return undefined;
}

/** Refuses new text over the size limit. */
export function checkSize(what: string, text: string): Refusal | undefined {
	const size = Buffer.byteLength(text, "utf8");
	return size > MAX_FILE_BYTES ? refusals.tooLarge(what, size, MAX_FILE_BYTES) : undefined;
}

/** Hidden-instruction carriers, each matched as a whole run so runs can be compared before/after. */
const UNSAFE_PATTERNS: ReadonlyArray<{ label: string; pattern: RegExp }> = [
	{ label: "Unicode tag characters U+E0000-E007F", pattern: /[\u{E0000}-\u{E007F}]+/gu },
	{ label: "bidi override/isolate U+202A-202E/U+2066-2069", pattern: /[\u202A-\u202E\u2066-\u2069]+/gu },
	{ label: "a run of zero-width characters", pattern: /[\u200B-\u200D\u2060\uFEFF]{2,}/gu },
	{ label: "a zero-width no-break space U+FEFF", pattern: /\uFEFF/gu },
];

function countRuns(text: string, pattern: RegExp): Map<string, number> {
	const counts = new Map<string, number>();
	for (const [run] of text.matchAll(pattern)) counts.set(run, (counts.get(run) ?? 0) + 1);
	return counts;
}

/**
 * Refuses a change whose result holds an unsafe run the text before it did not (a new run, or
 * one more copy of a run). Judged on the whole result, not on the added text: two patches that
 * each add one zero-width character build a run, and an old_string that already holds one tag
 * character would otherwise let a whole tag payload in. A run already there (a BOM kept by a
 * patch) is not counted as added. `what` names what the agent sent.
 */
export function checkUnsafe(what: string, after: string, before = ""): Refusal | undefined {
	const found = UNSAFE_PATTERNS.filter(({ pattern }) => {
		const had = countRuns(before, pattern);
		return [...countRuns(after, pattern)].some(([run, count]) => count > (had.get(run) ?? 0));
	}).map(({ label }) => label);
	return found.length > 0 ? refusals.unsafeContent(what, found) : undefined;
}

/**
 * Characters that must never reach a terminal raw: C0 (tab and newline aside), DEL, C1, the line
 * and paragraph separators, and the bidi controls that reorder what a person sees.
 */
const BEYOND_C0 = String.raw`\u007F-\u009F\u2028\u2029\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069`;
const NAME_CONTROL = new RegExp(String.raw`[\u0000-\u001F${BEYOND_C0}]`, "u");
/** The same set for echoes, where tab and newline stay, and so does a CR that ends a CRLF line. */
const ECHO_CONTROL = new RegExp(String.raw`\r(?!\n)|[\u0000-\u0008\u000B\u000C\u000E-\u001F${BEYOND_C0}]`, "gu");

const codePoint = (char: string): string =>
	`U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;

/** The first control character of a file or skill name, as "U+001B", or undefined (tab and newline count too). */
export function controlCharIn(name: string): string | undefined {
	const found = NAME_CONTROL.exec(name);
	return found ? codePoint(found[0]) : undefined;
}

/** File text for an echo outside a read: each control character becomes a visible `\u001b`. */
export function escapeControls(text: string): string {
	return text.replace(ECHO_CONTROL, (char) => `\\u${(char.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`);
}

/** The first `limit` characters of a result text, saying how much was cut. */
export function clipText(text: string, limit = READ_CHAR_LIMIT, what = "output"): string {
	if (text.length <= limit) return text;
	return `${text.slice(0, limit)}\n[${what} cut at ${limit} of ${text.length} characters]\n`;
}
