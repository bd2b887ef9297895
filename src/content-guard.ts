// What content the tool accepts: UTF-8 text only (no NUL, no invalid sequences), at most 1 MiB,
// and no invisible or direction-changing characters in text the agent adds. Valid UTF-8
// decodes and re-encodes byte for byte, BOM and CRLF included, so edits never touch other bytes.

import * as refusals from "./errors.ts";
import type { Refusal } from "./errors.ts";

export const MAX_FILE_BYTES = 1024 * 1024;
export const READ_CHAR_LIMIT = 30_000;

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

const UNSAFE_PATTERNS: ReadonlyArray<{ label: string; pattern: RegExp }> = [
	{ label: "Unicode tag characters U+E0000-E007F", pattern: /[\u{E0000}-\u{E007F}]/u },
	{ label: "bidi override/isolate U+202A-202E/U+2066-2069", pattern: /[\u202A-\u202E\u2066-\u2069]/u },
	{ label: "a run of zero-width characters", pattern: /[\u200B-\u200D\u2060\uFEFF]{2,}/u },
	{ label: "a zero-width no-break space U+FEFF", pattern: /\uFEFF/u },
];

/**
 * Refuses text the agent adds that carries hidden characters. `replaced` is the text it
 * replaces: what was already there (a BOM kept by a patch) is not counted as added.
 */
export function checkUnsafe(what: string, text: string, replaced = ""): Refusal | undefined {
	const found = UNSAFE_PATTERNS.filter(({ pattern }) => pattern.test(text) && !pattern.test(replaced)).map(({ label }) => label);
	return found.length > 0 ? refusals.unsafeContent(what, found) : undefined;
}
