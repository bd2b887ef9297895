// The shell reader under bash-writes.ts and the risk scan's shell forms: a command text split into words and
// operators (quotes, escapes, substitutions, here-documents), and a word's values (variables, braces). Linear in
// the text; what would cost more than its budget counts as past the bounds, which the caller fails closed.

// Markers inside a word, from the Unicode private use area (stripped from the command first).
/** `VAR name VAR_END`: a `$name` for the walker to expand. */
const VAR = "\uE000";
const VAR_END = "\uE001";
/** Unquoted braces and commas, for brace expansion. */
export const B_OPEN = "\uE002";
const B_COMMA = "\uE003";
export const B_CLOSE = "\uE004";
const BRACE_MARKS = B_OPEN + B_COMMA + B_CLOSE;
/** Any path the command names elsewhere: what xargs reads, what `$(…)` prints, what `read` gets. */
export const NAMED = "\uE005";
/** A name that cannot be known here: the path is cut before it, like a wildcard. */
export const SOME = "\uE006";
/** One new entry right in the folder before it (`curl -O`): kept as `<folder>/*`. */
export const CHILD = "\uE007";
export const MARKERS = /[\uE000-\uE00F]/g;
const MARKERS_IN_WORD = /[\uE000-\uE004]/;

/** Candidate words from one word (braces, variables) at most; longer words are not brace-expanded. */
export const MAX_EXPANSIONS = 64;
const MAX_BRACE_WORD = 4096;
/** Braces and commas in one run of a word at most; past it the run is taken as unknown. */
const MAX_BRACES = 64;

export interface Token {
	readonly text: string;
	/** An unquoted shell operator (`|`, `&&`, `;`, `>`, `<<`, `(`, ...), not a word. */
	readonly operator: boolean;
	/** The inner texts of the command substitutions in a word (`$(…)`, backticks, `<(…)`). */
	readonly subs?: string[];
}

/** Work left for one command, in characters produced; below zero the command is past its bounds. */
export interface Work {
	work: number;
}

/** Characters that end a run of plain word characters. */
const SPECIAL = new Uint8Array(128);
for (const c of " \t'\"\\$`#;&|<>()\n") SPECIAL[c.charCodeAt(0)] = 1;

const ANSI_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", e: "\u001b", a: "\u0007", "0": "\0" };

interface Heredoc {
	readonly index: number;
	readonly delimiter: string;
	readonly tabs: boolean;
}

/** The tokenizer's place in one command text. */
interface Reader {
	readonly s: string;
	/** The next character to read. */
	i: number;
	readonly tokens: Token[];
	readonly heredocs: Heredoc[];
	/** The word being read, in pieces (joined once: a long chain of appended strings costs far more). */
	word: string[] | undefined;
	subs: string[];
	/** Tokens, substitutions and pieces of words left; below zero the text is past its bounds. */
	left: number;
}

/**
 * Splits a command into words and operators, honouring quotes, backslashes, `$'…'` and comments. A
 * here-document becomes the operator `<<` followed by a word holding its body; `2>` counts as `>`.
 * Undefined past `limit` tokens, substitutions and pieces of words.
 */
export function tokenize(command: string, limit = Number.POSITIVE_INFINITY): Token[] | undefined {
	const r: Reader = { s: command, i: 0, tokens: [], heredocs: [], word: undefined, subs: [], left: limit };
	while (r.i < command.length && r.left >= 0) readNext(r);
	endWord(r);
	return r.left >= 0 ? r.tokens : undefined;
}

function readNext(r: Reader): void {
	const { s, i } = r;
	const code = s.charCodeAt(i);
	const c = s[i];
	const d = s[i + 1];
	if (code >= 128 || SPECIAL[code] === 0) readPlain(r);
	else if (c === "'") append(r, s.slice(i + 1, endOf(s, "'", i + 1)), endOf(s, "'", i + 1));
	else if (c === '"') readDoubleQuoted(r);
	else if (c === "$" && d === "'") readAnsiQuoted(r);
	else if (c === "$" && d === '"') append(r, "", i);
	// A backslash before a newline joins the lines.
	else if (c === "\\" && d === "\n") r.i += 2;
	else if (c === "\\") append(r, d ?? "", i + 1);
	else if (c === "$" || c === "`") {
		const { text, end } = c === "$" ? dollar(r, i) : backtick(r, i);
		append(r, text, end);
	} else if ((c === "<" || c === ">") && d === "(") {
		// Process substitution: its command runs; the word is a pipe, no file.
		const close = closingParen(s, i + 1);
		addSub(r, s.slice(i + 2, close));
		append(r, SOME, close);
	} else if (c === " " || c === "\t") {
		endWord(r);
		r.i++;
	} else if (c === "#" && r.word === undefined) r.i = endOf(s, "\n", i);
	else if (c === "#") append(r, c, i);
	else readOperator(r);
}

/** Adds `text` to the word being read, which ends at `end` (the last character taken). */
function append(r: Reader, text: string, end: number): void {
	if (r.word === undefined) r.word = [text];
	else r.word.push(text);
	r.left--;
	r.i = end + 1;
}

function endWord(r: Reader): void {
	if (r.word !== undefined) {
		const text = r.word.join("");
		r.tokens.push(r.subs.length > 0 ? { text, operator: false, subs: r.subs } : { text, operator: false });
		r.left--;
	}
	r.word = undefined;
	r.subs = [];
}

function addSub(r: Reader, text: string): void {
	r.subs.push(text);
	r.left--;
}

/** A run of plain characters; braces are marked for expansion only where a word can still be a path. */
function readPlain(r: Reader): void {
	const { s, i } = r;
	let j = i + 1;
	for (let at = s.charCodeAt(j); j < s.length && (at >= 128 || SPECIAL[at] === 0); ) at = s.charCodeAt(++j);
	const run = s.slice(i, j);
	const braces = run.length <= MAX_BRACE_WORD ? countBraces(run) : 0;
	// Past MAX_BRACES the run is no path anyone writes: a name that cannot be known, not thousands of expansions.
	append(r, braces === 0 ? run : braces > MAX_BRACES ? SOME : markBraces(run), j - 1);
}

function countBraces(run: string): number {
	let count = 0;
	for (let i = 0; i < run.length; i++) {
		const c = run.charCodeAt(i);
		if (c === 123 || c === 44 || c === 125) count++;
	}
	return count;
}

/** `$'…'`: backslash escapes read, runs between them taken whole. */
function readAnsiQuoted(r: Reader): void {
	const s = r.s;
	let text = "";
	let j = r.i + 2;
	let quote = endOf(s, "'", j);
	for (; ; r.left--) {
		if (quote < j) quote = endOf(s, "'", j);
		// Searched only up to the quote: a backslash far beyond it would make each `$'…'` cost the rest.
		const backslash = j + s.slice(j, quote).indexOf("\\");
		if (backslash < j || r.left < 0) {
			append(r, text + s.slice(j, quote), quote);
			return;
		}
		const letter = s[backslash + 1] ?? "\\";
		text += s.slice(j, backslash) + (ANSI_ESCAPES[letter] ?? letter);
		j = backslash + 2;
	}
}

/** `"…"`: backslash before `$`, a backtick, `"`, `\` or a newline; `$…` and backticks substituted. */
function readDoubleQuoted(r: Reader): void {
	const s = r.s;
	let text = "";
	let j = r.i + 1;
	for (; j < s.length && s[j] !== '"' && r.left >= 0; r.left--) {
		const at = s[j];
		if (at === "\\" && j + 1 < s.length) {
			text += '$`"\\\n'.includes(s[j + 1]) ? s[++j] : at;
			j++;
		} else if (at === "$" || at === "`") {
			const { text: part, end } = at === "$" ? dollar(r, j) : backtick(r, j);
			text += part;
			j = end + 1;
		} else {
			let k = j + 1;
			while (k < s.length && s[k] !== '"' && s[k] !== "\\" && s[k] !== "$" && s[k] !== "`") k++;
			text += s.slice(j, k);
			j = k;
		}
	}
	append(r, text, j);
}

/** `$name`, `${name…}`, `$(…)`, `$((…))` at `i` (the `$`): the text to put in the word and where it ends. */
function dollar(r: Reader, i: number): { text: string; end: number } {
	const s = r.s;
	const next = s[i + 1];
	if (next === "(") {
		const close = closingParen(s, i + 1);
		if (s[i + 2] === "(") return { text: SOME, end: close };
		addSub(r, s.slice(i + 2, close));
		return { text: NAMED, end: close };
	}
	if (next === "{") {
		const close = endOf(s, "}", i + 2);
		const name = /^[#!]?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])/.exec(s.slice(i + 2, close))?.[1];
		return { text: name ? VAR + name + VAR_END : SOME, end: close };
	}
	let end = i + 1;
	if (isNameChar(s.charCodeAt(end), true)) end++;
	else while (end < s.length && isNameChar(s.charCodeAt(end), false)) end++;
	return end > i + 1 ? { text: VAR + s.slice(i + 1, end) + VAR_END, end: end - 1 } : { text: "$", end: i };
}

function backtick(r: Reader, i: number): { text: string; end: number } {
	const end = endOf(r.s, "`", i + 1);
	addSub(r, r.s.slice(i + 1, end));
	return { text: NAMED, end };
}

/** A letter, digit or `_` of a variable name; with `special`, a one-character name (`$1`, `$@`, `$?`). */
function isNameChar(c: number, special: boolean): boolean {
	if (special) return (c >= 48 && c <= 57) || "@*#?$!-".includes(String.fromCharCode(c));
	return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95;
}

/** An operator; a file descriptor before a redirection (`2>`, `1>>`) belongs to it; `<<` reads a delimiter. */
function readOperator(r: Reader): void {
	const op = operatorAt(r.s, r.i);
	if (r.word !== undefined && (op[0] === ">" || op[0] === "<") && /^\d+$/.test(r.word.join(""))) {
		r.word = undefined;
		r.subs = [];
	} else endWord(r);
	r.tokens.push({ text: op === "<<-" ? "<<" : op, operator: true });
	r.left--;
	r.i += op.length;
	if (op === "<<" || op === "<<-") {
		const delimiter = /^[ \t]*(?:'([^']*)'|"([^"]*)"|\\?([^\s;&|<>()]+))/.exec(r.s.slice(r.i, r.i + 256));
		if (!delimiter) return;
		const text = delimiter[1] ?? delimiter[2] ?? delimiter[3];
		r.heredocs.push({ index: r.tokens.length, delimiter: text, tabs: op === "<<-" });
		r.tokens.push({ text: "", operator: false });
		r.i += delimiter[0].length;
	} else if (op === "\n" && r.heredocs.length > 0) readHeredocs(r);
}

/** The shell operator starting at `i` (a character of `;&|<>()` or a newline), longest first. */
function operatorAt(s: string, i: number): string {
	const c = s[i];
	const d = s[i + 1];
	switch (c) {
		case "&":
			return d === ">" ? (s[i + 2] === ">" ? "&>>" : "&>") : d === "&" ? "&&" : "&";
		case "|":
			return d === "|" ? "||" : d === "&" ? "|&" : "|";
		case ";":
			return d === ";" ? ";;" : ";";
		case ">":
			return d === ">" || d === "|" || d === "&" ? c + d : ">";
		case "<":
			if (d === "<") return s[i + 2] === "<" ? "<<<" : s[i + 2] === "-" ? "<<-" : "<<";
			return d === "&" || d === ">" ? c + d : "<";
		default:
			return c;
	}
}

/** Reads the bodies of the pending here-documents into their placeholder words. */
function readHeredocs(r: Reader): void {
	const s = r.s;
	for (const doc of r.heredocs.splice(0)) {
		const start = r.i;
		let body = s.length;
		while (r.i < s.length) {
			const end = endOf(s, "\n", r.i);
			const line = s.slice(r.i, end);
			const lineStart = r.i;
			r.i = end + 1;
			if ((doc.tabs ? line.replace(/^\t+/, "") : line) === doc.delimiter) {
				body = lineStart - 1;
				break;
			}
		}
		r.tokens[doc.index] = { text: s.slice(start, Math.max(start, body)), operator: false };
	}
}

/** The index of the `)` that closes the `(` at `open`, honouring quotes; the end when there is none. */
function closingParen(s: string, open: number): number {
	let depth = 0;
	for (let i = open; i < s.length; i++) {
		const c = s[i];
		if (c === "\\") i++;
		else if (c === "'") i = endOf(s, "'", i + 1);
		else if (c === '"') i = closingQuote(s, i + 1);
		else if (c === "(") depth++;
		else if (c === ")" && --depth === 0) return i;
	}
	return s.length;
}

function endOf(s: string, what: string, from: number): number {
	const end = s.indexOf(what, from);
	return end === -1 ? s.length : end;
}

function closingQuote(s: string, from: number): number {
	for (let i = from; i < s.length; i++) {
		if (s[i] === "\\") i++;
		else if (s[i] === '"') return i;
	}
	return s.length;
}

/**
 * A word's values: variables substituted (`lookup` answers a name's values, undefined when unknown,
 * which cuts the path), braces expanded; at most MAX_EXPANSIONS, each charged to `budget`.
 */
export function expand(word: string, lookup: (name: string) => readonly string[] | undefined, budget: Work): string[] {
	if (!MARKERS_IN_WORD.test(word)) return [word];
	// A word this long is no path; as a nested script, its variables are taken as unknown.
	if (word.length > MAX_BRACE_WORD) return [literalBraces(word.replace(/\uE000[^\uE001]*\uE001/g, SOME))];
	const parts = word.split(VAR);
	let values = [parts[0]];
	for (const part of parts.slice(1)) {
		const end = part.indexOf(VAR_END);
		const known = lookup(part.slice(0, end)) ?? [SOME];
		const next: string[] = [];
		for (const head of values)
			for (const value of known) {
				if (next.length === MAX_EXPANSIONS) break;
				const text = head + value + part.slice(end + 1);
				budget.work -= text.length;
				next.push(text);
			}
		if (budget.work < 0) return [];
		values = next;
	}
	const out: string[] = [];
	for (const value of values) expandBraces(value, out, budget);
	return out;
}

/** The word with its brace markers turned back into plain characters. */
export function literalBraces(word: string): string {
	return MARKERS_IN_WORD.test(word) ? translate(word, BRACE_MARKS, "{,}") : word;
}

function markBraces(run: string): string {
	return translate(run, "{,}", BRACE_MARKS);
}

/** `text` with each of the three characters of `from` turned into the one at its place in `to`, in one pass. */
function translate(text: string, from: string, to: string): string {
	const [a, b, c] = [from.charCodeAt(0), from.charCodeAt(1), from.charCodeAt(2)];
	const out = new Uint16Array(text.length);
	for (let i = 0; i < text.length; i++) {
		const at = text.charCodeAt(i);
		out[i] = at === a ? to.charCodeAt(0) : at === b ? to.charCodeAt(1) : at === c ? to.charCodeAt(2) : at;
	}
	let result = "";
	for (let i = 0; i < out.length; i += 8192) result += String.fromCharCode(...out.subarray(i, i + 8192));
	return result;
}

/** Brace expansion (`a{b,c}`, `{1..3}`) into `out`, bounded; braces that expand nothing stay literal. */
function expandBraces(word: string, out: string[], budget: Work): void {
	budget.work -= word.length;
	if (budget.work < 0 || out.length >= MAX_EXPANSIONS) return;
	for (let open = word.indexOf(B_OPEN); open !== -1; open = word.indexOf(B_OPEN, open + 1)) {
		let depth = 0;
		let close = -1;
		const commas: number[] = [];
		for (let j = open + 1; j < word.length && close === -1; j++) {
			if (word[j] === B_OPEN) depth++;
			else if (word[j] === B_CLOSE) {
				if (depth === 0) close = j;
				else depth--;
			} else if (word[j] === B_COMMA && depth === 0) commas.push(j);
		}
		if (close === -1) break;
		const parts =
			commas.length > 0
				? [open, ...commas].map((at, k) => word.slice(at + 1, k < commas.length ? commas[k] : close))
				: (sequence(word.slice(open + 1, close)) ?? []);
		if (parts.length === 0) continue;
		for (const part of parts) expandBraces(word.slice(0, open) + part + word.slice(close + 1), out, budget);
		return;
	}
	out.push(literalBraces(word));
}

/** `{1..3}` and `{a..c}`, bounded. */
function sequence(inner: string): string[] | undefined {
	const numbers = /^(-?\d+)\.\.(-?\d+)$/.exec(inner);
	const letters = /^([a-zA-Z])\.\.([a-zA-Z])$/.exec(inner);
	if (!numbers && !letters) return undefined;
	const from = numbers ? Number(numbers[1]) : (letters?.[1].charCodeAt(0) ?? 0);
	const to = numbers ? Number(numbers[2]) : (letters?.[2].charCodeAt(0) ?? 0);
	const out: string[] = [];
	for (let n = from; out.length < MAX_EXPANSIONS; n += from <= to ? 1 : -1) {
		out.push(numbers ? String(n) : String.fromCharCode(n));
		if (n === to) break;
	}
	return out;
}
