// The one normalisation every content check reads (risk scan, near-duplicate score): NFKC, invisible and
// soft-hyphen characters dropped, non-ASCII look-alike letters folded to the ASCII letters they imitate,
// whitespace runs collapsed with line breaks kept, case folded. So `ᴄurl`, `сurl` and `cu\u00ADrl` all read
// `curl`, and a description padded with zero-width spaces reads as the plain one.

import { createRequire } from "node:module";

/**
 * Latin small capitals Unicode's confusables (13.0, as unhomoglyph ships it) does not map to an ASCII
 * letter (`ᴋ` and `ᴍ` it maps to other non-ASCII letters): each is named "LATIN LETTER SMALL CAPITAL
 * <letter>" in the Unicode character database, and the SPEC names small capitals.
 */
const SMALL_CAPITALS: Readonly<Record<string, string>> = {
	"\u1D00": "a",
	"\u0299": "b",
	"\u1D05": "d",
	"\u1D07": "e",
	"\uA730": "f",
	"\u0262": "g",
	"\u029C": "h",
	"\u1D0A": "j",
	"\u1D0B": "k",
	"\u029F": "l",
	"\u1D0D": "m",
	"\u0274": "n",
	"\u1D18": "p",
	"\uA7AF": "q",
	"\u0280": "r",
	"\u1D1B": "t",
};

let folding: ReadonlyMap<string, string> | undefined;

/**
 * The look-alike table, built on first use (not at pi's start): from Unicode's confusables (npm
 * `unhomoglyph`), only non-ASCII characters that imitate ASCII letters. ASCII is never folded: the table
 * also maps `|` to `l` and `0` to `O`, which would turn `curl … | sh` into `curl … l sh`.
 */
function getFolding(): ReadonlyMap<string, string> {
	if (folding) return folding;
	const confusables = createRequire(import.meta.url)("unhomoglyph/data.json") as Record<string, string>;
	const table = new Map<string, string>();
	for (const [from, to] of Object.entries({ ...confusables, ...SMALL_CAPITALS })) {
		if (/^[A-Za-z]+$/.test(to) && /[^\u0000-\u007F]/.test(from)) table.set(from, to.toLowerCase());
	}
	folding = table;
	return folding;
}

const NON_ASCII = /[^\u0000-\u007F]/;
const NON_ASCII_RUNS = /[^\u0000-\u007F]+/gu;

/** Non-ASCII look-alike letters replaced by the ASCII letters they imitate (lower case). */
export function foldLookAlikes(text: string): string {
	if (!NON_ASCII.test(text)) return text;
	const table = getFolding();
	return text.replace(NON_ASCII_RUNS, (run) => {
		let out = "";
		for (const c of run) out += table.get(c) ?? c;
		return out;
	});
}

/** Invisible, joining and direction characters, the soft hyphen and variation selectors. */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu;

/**
 * Runs of white space other than a newline (NFKC has made the other Unicode spaces plain ones); a single
 * plain space is left as it is, which keeps this fast on ordinary text.
 */
const SPACES = /[ \t\f\v\u1680\u2028\u2029\u0085]{2,}|[\t\f\v\u1680\u2028\u2029\u0085]/g;

/**
 * `text` as every content check reads it. Line breaks are kept one for one (`\r\n` and a lone `\r` become
 * `\n`), so a line of the result is the same line of the file.
 */
export function normalizeText(text: string): string {
	return normalizeLines(text)
		.join("\n")
		.replace(/ \n|\n /g, "\n");
}

/**
 * `text` normalised as its lines, one for each line of the file (a space may be left at either end).
 * `split`: the text's lines as they are, when the caller has them (`text.split(/\r\n?|\n/)`).
 */
export function normalizeLines(text: string, split?: readonly string[]): string[] {
	const unified = text.replace(/\r\n?/g, "\n");
	const lines = unified.toLowerCase().replace(SPACES, " ").split("\n");
	if (!NON_ASCII.test(unified)) return lines;
	// An ASCII line is only lower-cased: none of NFKC, the invisibles and the look-alikes touches ASCII, and
	// none of them reaches across a line break, so only lines with other characters pay for them.
	(split ?? unified.split("\n")).forEach((line, index) => {
		if (NON_ASCII.test(line) && !inert(line)) lines[index] = normalizeLine(line).replace(SPACES, " ");
	});
	return lines;
}

/**
 * Blocks of symbols (punctuation, arrows, operators, technical, box drawing, shapes, dingbats, emoji) in
 * which no character is a combining mark or the second half of a composition: next to ASCII, NFKC leaves
 * such a character as it is.
 */
const SYMBOL_BLOCKS: ReadonlyArray<readonly [number, number]> = [
	[0x2010, 0x2027],
	[0x2030, 0x205e],
	[0x2190, 0x23ff],
	[0x2500, 0x27bf],
	[0x1f300, 0x1faff],
];

/** INVISIBLE and SPACES without the global flag, for a test that keeps no state between calls. */
const IS_INVISIBLE = new RegExp(INVISIBLE.source, "u");
const IS_SPACE = new RegExp(SPACES.source);

const inertChars = new Map<string, boolean>();

/**
 * Whether normalizeLine leaves a character as it is: a symbol of SYMBOL_BLOCKS with no decomposition, not
 * invisible, no space, no case, no look-alike.
 */
function inertChar(c: string): boolean {
	let known = inertChars.get(c);
	if (known === undefined) {
		const code = c.codePointAt(0) ?? 0;
		known =
			SYMBOL_BLOCKS.some(([from, to]) => code >= from && code <= to) &&
			c.normalize("NFKD") === c &&
			c.normalize("NFKC") === c &&
			!/\s/.test(c) &&
			!IS_INVISIBLE.test(c) &&
			!IS_SPACE.test(c) &&
			c.toLowerCase() === c &&
			!getFolding().has(c);
		inertChars.set(c, known);
	}
	return known;
}

/**
 * Whether a line's characters past ASCII are all inert: then its normal form is its lower case (what
 * normalizeLines has already), and NFKC and the look-alikes are not paid for (a line with a dash or an
 * arrow is common in real skills: some 10 ms on 1 MiB).
 */
function inert(line: string): boolean {
	for (const run of line.matchAll(NON_ASCII_RUNS)) for (const c of run[0]) if (!inertChar(c)) return false;
	return true;
}

/** One line with characters past ASCII: NFKC, invisibles dropped, look-alikes folded, lower case. */
function normalizeLine(line: string): string {
	// Folded before and after lower-casing: an upper-case look-alike (Greek Eta, `Η`) imitates `H`, and
	// lower-casing may make a letter that imitates another (Cyrillic `Ѕ` to `ѕ`).
	return foldLookAlikes(foldLookAlikes(line.normalize("NFKC").replace(INVISIBLE, "")).toLowerCase());
}

/** One word as the checks compare it (a shell word read from the raw line): normalised, no spaces around. */
export function normalizeWord(word: string): string {
	return normalizeText(word).trim();
}

/** A word normalised but for its case (a shell option: `-O` is not `-o`); look-alikes still fold. */
export function normalizeCased(word: string): string {
	return foldLookAlikes(word.normalize("NFKC").replace(INVISIBLE, ""));
}

/** Makes an invisible character visible as `\uXXXX` (a finding shown to the person). */
export function showInvisibles(text: string): string {
	return text.replace(INVISIBLE, (c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`);
}
