// Which paths a bash command may write, read off its text, for the side-door guard where bash is not
// sandboxed; and whether it runs pi to approve its own proposals. Best effort by design: a shell can
// always hide a write (a script file, a computed name), so this knows the plain and the common wrapped
// forms (prefixes, nested shells, xargs, find -exec, archives, git, one-liners) and claims no more.

import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { expandHome, getHomeDir } from "../base/paths.ts";

// Markers inside a word, from the Unicode private use area (stripped from the command first).
/** `VAR name VAR_END`: a `$name` for the walker to expand. */
const VAR = "\uE000";
const VAR_END = "\uE001";
/** Unquoted braces and commas, for brace expansion. */
const B_OPEN = "\uE002";
const B_COMMA = "\uE003";
const B_CLOSE = "\uE004";
/** Any path the command names elsewhere: what xargs reads, what `$(…)` prints, what `read` gets. */
const NAMED = "\uE005";
/** A name that cannot be known here: the path is cut before it, like a wildcard. */
const SOME = "\uE006";
/** One new entry right in the folder before it (`curl -O`): kept as `<folder>/*`. */
const CHILD = "\uE007";
const MARKERS = /[\uE000-\uE00F]/g;
const MARKERS_IN_WORD = /[\uE000-\uE004]/;

/**
 * Bounds on the work for one command: nested shells, `eval` and `$(…)` this deep, this many commands,
 * tokens and written paths. A command past a bound is taken to write anywhere (the guard stops it).
 */
const MAX_DEPTH = 6;
const MAX_COMMANDS = 10_000;
const MAX_TOKENS = 50_000;
const MAX_PATHS = 10_000;
/** Longer than this is no path (PATH_MAX). */
const MAX_PATH = 4096;
/** Candidate words from one word (braces, variables) at most; longer words are not brace-expanded. */
const MAX_EXPANSIONS = 64;
const MAX_BRACE_WORD = 4096;
const MAX_SUBSHELLS = 256;
/** Interpreter code scanned for writing calls: its first this many characters. */
const MAX_CODE = 65_536;

interface Token {
	readonly text: string;
	/** An unquoted shell operator (`|`, `&&`, `;`, `>`, `<<`, `(`, ...), not a word. */
	readonly operator: boolean;
	/** The inner texts of the command substitutions in a word (`$(…)`, backticks, `<(…)`). */
	readonly subs?: string[];
}

/** Characters that end a run of plain word characters. */
const SPECIAL = new Uint8Array(128);
for (const c of " \t'\"\\$`#;&|<>()\n") SPECIAL[c.charCodeAt(0)] = 1;

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

/** `$name`, `${name…}`, `$(…)`, `$((…))` at `i` (the `$`): the text to put in the word and where it ends. */
function dollar(s: string, i: number, subs: string[]): { text: string; end: number } {
	const next = s[i + 1];
	if (next === "(") {
		const close = closingParen(s, i + 1);
		if (s[i + 2] === "(") return { text: SOME, end: close };
		subs.push(s.slice(i + 2, close));
		return { text: NAMED, end: close };
	}
	if (next === "{") {
		const close = endOf(s, "}", i + 2);
		const name = /^[#!]?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])/.exec(s.slice(i + 2, close))?.[1];
		return { text: name ? VAR + name + VAR_END : SOME, end: close };
	}
	let end = i + 1;
	if (isNameChar(s.charCodeAt(end), true)) end++;
	else if (isNameChar(s.charCodeAt(end), false)) while (end < s.length && isNameChar(s.charCodeAt(end), false)) end++;
	return end > i + 1 ? { text: VAR + s.slice(i + 1, end) + VAR_END, end: end - 1 } : { text: "$", end: i };
}

/** A letter, digit or `_` of a variable name; with `special`, a one-character name (`$1`, `$@`, `$?`). */
function isNameChar(c: number, special: boolean): boolean {
	if (special) return (c >= 48 && c <= 57) || "@*#?$!-".includes(String.fromCharCode(c));
	return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95;
}

const ANSI_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", e: "\u001b", a: "\u0007", "0": "\0" };

/**
 * Splits a command into words and operators, honouring quotes, backslashes, `$'…'` and comments. A
 * here-document becomes the operator `<<` followed by a word holding its body; `2>` counts as `>`.
 */
export function tokenize(command: string, limit = Number.POSITIVE_INFINITY): Token[] | undefined {
	const tokens: Token[] = [];
	const heredocs: Array<{ index: number; delimiter: string; tabs: boolean }> = [];
	// The word being read, in pieces (joined once: appending one character at a time costs far more).
	let word: string[] = [];
	let inWord = false;
	let subs: string[] = [];
	const flush = () => {
		if (inWord) {
			const text = word.join("");
			tokens.push(subs.length > 0 ? { text, operator: false, subs } : { text, operator: false });
		}
		word = [];
		inWord = false;
		subs = [];
	};
	const s = command;
	for (let i = 0; i < s.length; i++) {
		if (tokens.length > limit) return undefined;
		// In a word of thousands of pieces (no path), `$` is read as a plain character.
		const plain = word.length > MAX_BRACE_WORD ? 36 : -1;
		const code = s.charCodeAt(i);
		if (code >= 128 || SPECIAL[code] === 0 || code === plain) {
			let j = i + 1;
			for (let at = s.charCodeAt(j); j < s.length && (at >= 128 || SPECIAL[at] === 0 || at === plain); )
				at = s.charCodeAt(++j);
			const run = s.slice(i, j);
			// Braces are marked for expansion only where a word can still be a path.
			word.push(run.length <= MAX_BRACE_WORD && /[{},]/.test(run) ? markBraces(run) : run);
			inWord = true;
			i = j - 1;
			continue;
		}
		const c = s[i];
		if (c === "'") {
			const end = endOf(s, "'", i + 1);
			word.push(s.slice(i + 1, end));
			inWord = true;
			i = end;
		} else if (c === "$" && s[i + 1] === '"') {
			inWord = true;
		} else if (c === "$" && s[i + 1] === "'") {
			let j = i + 2;
			for (; j < s.length && s[j] !== "'"; j++)
				word.push(s[j] === "\\" && j + 1 < s.length ? (ANSI_ESCAPES[s[++j]] ?? s[j]) : s[j]);
			inWord = true;
			i = j;
		} else if (c === '"') {
			let j = i + 1;
			for (; j < s.length && s[j] !== '"'; j++) {
				const at = s[j];
				if (at === "\\" && j + 1 < s.length) word.push('$`"\\\n'.includes(s[j + 1]) ? s[++j] : at);
				else if (at === "$") {
					const { text, end } = dollar(s, j, subs);
					word.push(text);
					j = end;
				} else if (at === "`") {
					const end = endOf(s, "`", j + 1);
					subs.push(s.slice(j + 1, end));
					word.push(NAMED);
					j = end;
				} else {
					let k = j + 1;
					while (k < s.length && s[k] !== '"' && s[k] !== "\\" && s[k] !== "$" && s[k] !== "`") k++;
					word.push(s.slice(j, k));
					j = k - 1;
				}
			}
			inWord = true;
			i = j;
		} else if (c === "\\" && i + 1 < s.length) {
			if (s[i + 1] !== "\n") {
				word.push(s[i + 1]);
				inWord = true;
			}
			i++;
		} else if (c === "$") {
			const { text, end } = dollar(s, i, subs);
			word.push(text);
			inWord = true;
			i = end;
		} else if (c === "`") {
			const end = endOf(s, "`", i + 1);
			subs.push(s.slice(i + 1, end));
			word.push(NAMED);
			inWord = true;
			i = end;
		} else if ((c === "<" || c === ">") && s[i + 1] === "(") {
			// Process substitution: its command runs; the word is a pipe, no file.
			const close = closingParen(s, i + 1);
			subs.push(s.slice(i + 2, close));
			word.push(SOME);
			inWord = true;
			i = close;
		} else if (c === " " || c === "\t") flush();
		else if (c === "#" && !inWord) i = endOf(s, "\n", i) - 1;
		else if (c === "#") word.push(c);
		else {
			const op = operatorAt(s, i);
			// A file descriptor before a redirection (`2>`, `1>>`) belongs to the operator.
			if (inWord && (op[0] === ">" || op[0] === "<") && /^\d+$/.test(word.join(""))) {
				word = [];
				inWord = false;
			} else flush();
			tokens.push({ text: op === "<<-" ? "<<" : op, operator: true });
			i += op.length - 1;
			if (op === "<<" || op === "<<-") {
				const delimiter = /^[ \t]*(?:'([^']*)'|"([^"]*)"|\\?([^\s;&|<>()]+))/.exec(s.slice(i + 1, i + 257));
				if (delimiter) {
					heredocs.push({
						index: tokens.length,
						delimiter: delimiter[1] ?? delimiter[2] ?? delimiter[3],
						tabs: op === "<<-",
					});
					tokens.push({ text: "", operator: false });
					i += delimiter[0].length;
				}
			} else if (op === "\n" && heredocs.length > 0) i = readHeredocs(s, i + 1, heredocs, tokens) - 1;
		}
	}
	flush();
	return tokens;
}

/** Reads the bodies of the pending here-documents from `start` into their placeholder words; returns the end. */
function readHeredocs(
	s: string,
	start: number,
	pending: Array<{ index: number; delimiter: string; tabs: boolean }>,
	tokens: Token[],
): number {
	let at = start;
	for (const doc of pending.splice(0)) {
		const lines: string[] = [];
		while (at < s.length) {
			const end = endOf(s, "\n", at);
			const line = s.slice(at, end);
			at = end + 1;
			if ((doc.tabs ? line.replace(/^\t+/, "") : line) === doc.delimiter) break;
			lines.push(line);
		}
		tokens[doc.index] = { text: lines.join("\n"), operator: false };
	}
	return Math.min(at, s.length);
}

/** A shell's state where the walk is: working folder, `cd -` and `pushd` memory, variables. */
interface Scope {
	dir: string;
	prev: string;
	stack: string[];
	vars: Map<string, string[]>;
}

/** What the walk found over the whole command, nested shells included. */
interface Found {
	readonly writes: Set<string>;
	/** Paths the command names anywhere: the candidates for what xargs, `$(…)` and `read` hand on. */
	readonly named: Set<string>;
	/** Written words that begin with what another command printed: resolved against `named` at the end. */
	readonly fromNamed: Array<{ rest: string; dir: string }>;
	runsPi: boolean;
	/** Commands, tokens and written paths left before the walk gives up and takes the command to write anywhere. */
	budget: number;
	tokens: number;
	paths: number;
	overflow: boolean;
}

const SEPARATORS = new Set([";", "&&", "||", "|", "|&", "&", "\n", ";;"]);
const WRITE_REDIRECTS = new Set([">", ">>", ">|", "&>", "&>>", "<>", ">&"]);
const OPENING_WORDS = new Set(["!", "if", "then", "else", "elif", "while", "until", "do", B_OPEN]);
const CLOSING_WORDS = new Set(["fi", "done", "esac", B_CLOSE]);

/** Walks a command text at `depth`, recording into `found`; `scope` is changed as the shell would. */
function walk(text: string, scope: Scope, found: Found, depth: number): void {
	if (text.trim() === "") return;
	const tokens = depth > MAX_DEPTH || found.budget-- <= 0 ? undefined : tokenize(text, found.tokens);
	if (tokens === undefined) {
		found.overflow = true;
		return;
	}
	found.tokens -= tokens.length;
	// The scopes to restore when a subshell ends; past MAX_SUBSHELLS deep, a subshell's `cd` is kept.
	const saved: Array<Scope | undefined> = [];
	let simple: Token[] = [];
	const finish = () => {
		if (simple.length > 0) runSimple(simple, scope, found, depth);
		simple = [];
	};
	for (const token of tokens) {
		if (found.budget <= 0) {
			found.overflow = true;
			return;
		}
		if (!token.operator || !(SEPARATORS.has(token.text) || token.text === "(" || token.text === ")")) {
			simple.push(token);
			continue;
		}
		finish();
		if (token.text === "(") saved.push(saved.length < MAX_SUBSHELLS ? copyScope(scope) : undefined);
		else if (token.text === ")") {
			// A subshell's `cd` and variables end with it.
			const outer = saved.pop();
			if (outer) Object.assign(scope, outer);
		}
	}
	finish();
}

function copyScope(scope: Scope): Scope {
	return { dir: scope.dir, prev: scope.prev, stack: [...scope.stack], vars: new Map(scope.vars) };
}

/** One simple command: its redirections, assignments, substitutions, then what the command itself writes. */
function runSimple(tokens: readonly Token[], scope: Scope, found: Found, depth: number): void {
	found.budget--;
	const words: Token[] = [];
	const redirects: string[] = [];
	let stdin: string | undefined;
	for (let i = 0; i < tokens.length; i++) {
		const token = tokens[i];
		const next = tokens[i + 1];
		for (const sub of token.subs ?? []) if (/\S/.test(sub)) walk(sub, copyScope(scope), found, depth + 1);
		if (!token.operator) words.push(token);
		else if (next && !next.operator) {
			i++;
			for (const sub of next.subs ?? []) walk(sub, copyScope(scope), found, depth + 1);
			// `>&2` duplicates a descriptor and writes no file.
			if (WRITE_REDIRECTS.has(token.text) && !/^(&?\d+|-)$/.test(next.text)) redirects.push(next.text);
			else if (token.text === "<<" || token.text === "<<<") stdin = next.text;
		}
	}
	for (const target of redirects) for (const path of expand(target, scope)) addWrite(found, path, scope.dir);
	let start = 0;
	while (start < words.length && (OPENING_WORDS.has(words[start].text) || CLOSING_WORDS.has(words[start].text)))
		start++;
	const first = words[start]?.text ?? "";
	if (first === "for" || first === "select") {
		const name = words[start + 1]?.text ?? "";
		const values = words[start + 2]?.text === "in" ? words.slice(start + 3) : [];
		scope.vars.set(name, values.flatMap((w) => expand(w.text, scope)).slice(0, MAX_EXPANSIONS));
		return;
	}
	if (first === "case") return;
	if (first === "function") start += words[start + 2]?.text === B_OPEN ? 3 : 2;
	// Leading NAME=value words: shell variables when nothing else follows, the command's environment otherwise.
	const assigned: Array<[string, string[]]> = [];
	while (start < words.length && /^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(words[start].text)) {
		const text = words[start].text;
		const eq = text.indexOf("=");
		assigned.push([text.slice(0, eq).replace(/\+$/, ""), expand(text.slice(eq + 1), scope)]);
		start++;
	}
	if (start === words.length) {
		for (const [name, values] of assigned) scope.vars.set(name, values);
		return;
	}
	const argv = words.slice(start).flatMap((w) => expand(w.text, scope));
	analyze(argv, { scope, found, depth, stdin, dir: scope.dir });
}

/** Where a command runs: the walk's state, the folder it runs in, and what its standard input holds. */
interface Run {
	readonly scope: Scope;
	readonly found: Found;
	readonly depth: number;
	readonly stdin: string | undefined;
	readonly dir: string;
}

/** A word's values: variables substituted (unknown ones cut the path), braces expanded. */
function expand(word: string, scope: Scope): string[] {
	if (!MARKERS_IN_WORD.test(word)) return [word];
	// A word this long is no path; as a nested script, its variables are taken as unknown.
	if (word.length > MAX_BRACE_WORD) return [literalBraces(word.replace(/\uE000[^\uE001]*\uE001/g, SOME))];
	let values = [word];
	if (word.includes(VAR)) {
		values = [];
		const parts = word.split(VAR);
		let partial = [parts[0]];
		for (const part of parts.slice(1)) {
			const end = part.indexOf(VAR_END);
			const name = part.slice(0, end);
			const known = variable(name, scope) ?? [SOME];
			const next: string[] = [];
			for (const head of partial)
				for (const value of known) if (next.length < MAX_EXPANSIONS) next.push(head + value + part.slice(end + 1));
			partial = next;
		}
		values = partial;
	}
	return values.flatMap((v) => braces(v)).slice(0, MAX_EXPANSIONS);
}

function variable(name: string, scope: Scope): string[] | undefined {
	const known = scope.vars.get(name);
	if (known) return known;
	if (name === "HOME") return [getHomeDir()];
	if (name === "PWD") return [scope.dir];
	if (name === "OLDPWD") return [scope.prev];
	return undefined;
}

/** Brace expansion (`a{b,c}`, `{1..3}`), bounded; braces that expand nothing stay literal. */
function braces(word: string): string[] {
	if (!word.includes(B_OPEN) || word.length > MAX_BRACE_WORD) return [literalBraces(word)];
	const out: string[] = [];
	expandBraces(word, out);
	return out;
}

function literalBraces(word: string): string {
	if (!MARKERS_IN_WORD.test(word)) return word;
	if (word.length <= MAX_BRACE_WORD)
		return word.replaceAll(B_OPEN, "{").replaceAll(B_COMMA, ",").replaceAll(B_CLOSE, "}");
	// One pass over a long word (replaceAll on a megabyte is slow).
	const out = new Uint16Array(word.length);
	for (let i = 0; i < word.length; i++) {
		const c = word.charCodeAt(i);
		out[i] = c === 0xe002 ? 123 : c === 0xe003 ? 44 : c === 0xe004 ? 125 : c;
	}
	let text = "";
	for (let i = 0; i < out.length; i += 8192) text += String.fromCharCode(...out.subarray(i, i + 8192));
	return text;
}

function markBraces(run: string): string {
	return run.replaceAll("{", B_OPEN).replaceAll(",", B_COMMA).replaceAll("}", B_CLOSE);
}

function expandBraces(word: string, out: string[]): void {
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
		const inner = word.slice(open + 1, close);
		let parts: string[] = [];
		if (commas.length > 0)
			parts = [open, ...commas].map((at, k) => word.slice(at + 1, k < commas.length ? commas[k] : close));
		else parts = sequence(inner) ?? [];
		if (parts.length === 0) continue;
		for (const part of parts) {
			if (out.length >= MAX_EXPANSIONS) return;
			expandBraces(word.slice(0, open) + part + word.slice(close + 1), out);
		}
		return;
	}
	if (out.length < MAX_EXPANSIONS) out.push(literalBraces(word));
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

/** The absolute path a word names from `dir`, cut before its first wildcard or unknown part; undefined if none. */
function pathOf(word: string, dir: string): string | undefined {
	if (word === "" || word === "-" || word.length > MAX_PATH || word.includes(NAMED)) return undefined;
	const child = word.endsWith(`/${CHILD}`) ? word.slice(0, -CHILD.length - 1) : undefined;
	const plain = child ?? word;
	const wildcard = plain.search(/[*?[\uE006]/);
	const literal = wildcard === -1 ? plain : plain.slice(0, plain.lastIndexOf("/", wildcard) + 1);
	if (literal === "" && wildcard !== -1) return plain[0] === SOME ? undefined : dir;
	const expanded = expandHome(literal);
	const absolute = isAbsolute(expanded) ? resolve(expanded) : resolve(dir, expanded);
	if (absolute.length > MAX_PATH) return undefined;
	return child === undefined ? absolute : join(absolute, "*");
}

function addWrite(found: Found, word: string, dir: string): void {
	if (word.startsWith(NAMED)) {
		if (found.fromNamed.length < 64) found.fromNamed.push({ rest: word.slice(NAMED.length), dir });
	} else if (found.paths-- <= 0) found.overflow = true;
	else {
		const path = pathOf(word.includes(NAMED) ? word.slice(0, word.indexOf(NAMED)) + SOME : word, dir);
		if (path !== undefined) found.writes.add(path);
	}
}

function addNamed(found: Found, words: readonly string[], dir: string): void {
	for (const word of words) {
		if (/^[*?[\uE006]/.test(word) || found.named.size >= 4096) continue;
		const path = pathOf(word, dir);
		if (path !== undefined) found.named.add(path);
	}
}

/** The words of a command's arguments that are paths: options and their values left out, `--` honoured. */
function plainArgs(args: readonly string[], valueOptions: readonly string[] = []): string[] {
	const out: string[] = [];
	let optionsEnd = false;
	for (let i = 0; i < args.length; i++) {
		const arg = args[i];
		if (optionsEnd || !arg.startsWith("-") || arg === "-") out.push(arg);
		else if (arg === "--") optionsEnd = true;
		else if (valueOptions.includes(arg)) i++;
	}
	return out;
}

/** The value of option `-x`/`--long` (`-x v`, `-xv`, `--long=v`, `--long v`) wherever it appears. */
function optionValues(args: readonly string[], names: readonly string[]): string[] {
	const out: string[] = [];
	for (let i = 0; i < args.length; i++) {
		const arg = args[i];
		if (arg === "--") break;
		for (const name of names) {
			if (arg === name && i + 1 < args.length) out.push(args[i + 1]);
			else if (name.startsWith("--") && arg.startsWith(`${name}=`)) out.push(arg.slice(name.length + 1));
			else if (!name.startsWith("--") && arg.startsWith(name) && arg.length > 2 && !arg.startsWith("--"))
				out.push(arg.slice(2));
		}
	}
	return out;
}

/** Short flag `letter` alone or in a bundle (`-xzf`), or one of the long forms. */
function hasFlag(args: readonly string[], letter: string, long: readonly string[] = []): boolean {
	return args.some(
		(a) =>
			(a.length > 1 && a[0] === "-" && a[1] !== "-" && a.slice(1).includes(letter)) ||
			long.some((l) => a === l || a.startsWith(`${l}=`)),
	);
}

/** A command that changes every path argument it names (options aside): option words that take a value. */
const CHANGES_EVERY_ARG: Record<string, readonly string[]> = {
	rm: [],
	rmdir: [],
	unlink: [],
	shred: ["-n", "-s", "--iterations", "--size", "--random-source"],
	truncate: ["-s", "-r", "--size", "--reference"],
	touch: ["-d", "-t", "-r", "--date", "--reference"],
	mv: ["-S", "--suffix", "-t", "--target-directory"],
	tee: [],
	mkdir: ["-m", "--mode", "--context"],
	mkfifo: ["-m", "--mode"],
	rename: [],
	ed: ["-p", "--prompt"],
	ex: ["-c", "-S", "-u", "-i"],
	setfacl: ["-m", "-x", "-M", "-X", "--modify", "--remove", "--set"],
	chattr: [],
	patch: ["-i", "-p", "-o", "-d", "-r", "-B", "-z", "-F", "--input", "--strip", "--directory", "--reject-file"],
};
/** A command whose first plain word is a mode, an owner or a script, not a path. */
const CHANGES_AFTER_FIRST: Record<string, readonly string[]> = {
	chmod: ["--reference"],
	chown: ["--reference", "--from"],
	chgrp: ["--reference"],
	rename: [],
};
/** A command that changes only its destination: the last path argument, or the folder after `-t`. */
const CHANGES_DESTINATION: Record<string, readonly string[]> = {
	cp: ["-S", "--suffix", "-t", "--target-directory"],
	install: ["-m", "-o", "-g", "-S", "-t", "--mode", "--owner", "--group", "--suffix", "--target-directory"],
	rsync: [
		"-e",
		"--rsh",
		"-f",
		"--filter",
		"--exclude",
		"--include",
		"--exclude-from",
		"--include-from",
		"--files-from",
		"-T",
		"--temp-dir",
		"--backup-dir",
		"--suffix",
		"--chmod",
		"--chown",
		"--log-file",
		"--partial-dir",
		"--compare-dest",
		"--copy-dest",
		"--link-dest",
	],
	scp: ["-P", "-i", "-o", "-F", "-l", "-c", "-J", "-S"],
};

/** Wrappers that run the rest of their words as a command: options taking a value, plain words before it. */
const WRAPPERS: Record<string, { values?: readonly string[]; positionals?: number }> = {
	sudo: { values: ["-u", "-g", "-h", "-p", "-C", "-r", "-t", "-U", "-D", "-T", "--user", "--group", "--chdir"] },
	doas: { values: ["-u", "-C"] },
	run0: { values: ["-u", "-g", "-D", "--user", "--group", "--chdir"] },
	runuser: { values: ["-u", "-g", "-G", "--user", "--group"] },
	env: { values: ["-u", "-C", "-S", "-P", "--unset", "--chdir", "--split-string"] },
	timeout: { values: ["-k", "-s", "--kill-after", "--signal"], positionals: 1 },
	nice: { values: ["-n", "--adjustment"] },
	ionice: { values: ["-c", "-n", "--class", "--classdata"] },
	stdbuf: { values: ["-i", "-o", "-e", "--input", "--output", "--error"] },
	time: { values: ["-o", "-f", "--output", "--format"] },
	exec: { values: ["-a"] },
	taskset: { positionals: 1 },
	flock: { values: ["-w", "-E", "-c", "--timeout", "--conflict-exit-code", "--command"], positionals: 1 },
	chrt: { positionals: 1 },
	nohup: {},
	setsid: {},
	command: {},
	builtin: {},
	unbuffer: {},
	chronic: {},
	fakeroot: {},
	nocorrect: {},
	noglob: {},
	busybox: {},
	"stdbuf.exe": {},
};

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "rbash"]);
const PYTHONS = /^(python[0-9.]*|pypy[0-9.]*)$/;
const JS_RUNTIMES = new Set(["node", "nodejs", "bun", "deno", "tsx", "ts-node"]);
const ARCHIVE_COMPRESSORS = new Set([
	"gzip",
	"gunzip",
	"bzip2",
	"bunzip2",
	"xz",
	"unxz",
	"lzma",
	"unlzma",
	"zstd",
	"unzstd",
	"lz4",
	"brotli",
]);

/** What one command (argv expanded) writes, through wrappers and nested shells. */
function analyze(argv: readonly string[], run: Run): void {
	const { found } = run;
	if (argv.length === 0) return;
	if (found.budget-- <= 0) {
		found.overflow = true;
		return;
	}
	const name = basename(argv[0]);
	const args = argv.slice(1);
	const wrapper = WRAPPERS[name];
	if (wrapper) {
		unwrap(name, args, wrapper, run);
		return;
	}
	if (name === "xargs") {
		xargs(args, run);
		return;
	}
	if (name === "cd" || name === "pushd" || name === "popd") {
		changeDir(name, args, run);
		return;
	}
	if (name === "eval") {
		walk(args.join(" "), run.scope, found, run.depth + 1);
		return;
	}
	if (name === "read" || name === "mapfile" || name === "readarray") {
		for (const variable of plainArgs(args, ["-p", "-d", "-t", "-n", "-N", "-u", "-a", "-C", "-c"]))
			run.scope.vars.set(variable, [NAMED]);
		return;
	}
	if (name === "export" || name === "local" || name === "declare" || name === "typeset" || name === "readonly") {
		for (const arg of args) {
			const eq = arg.indexOf("=");
			if (eq > 0 && !arg.startsWith("-")) run.scope.vars.set(arg.slice(0, eq), [arg.slice(eq + 1)]);
		}
		return;
	}
	if (name === "watch") {
		const rest = args.slice(plainStart(args, ["-n", "-d", "--interval", "--differences"]));
		walk(rest.join(" "), copyScope(run.scope), found, run.depth + 1);
		return;
	}
	if (SHELLS.has(name) || name === "su") {
		shell(name, args, run);
		return;
	}
	if (isPi(name, args)) found.runsPi = true;
	if (name === "find") {
		find(args, run);
		return;
	}
	const at = (word: string) => addWrite(found, word, run.dir);
	if (name === "git") {
		git(args, run);
		return;
	}
	const every = CHANGES_EVERY_ARG[name];
	const afterFirst = CHANGES_AFTER_FIRST[name];
	const destination = CHANGES_DESTINATION[name];
	if (afterFirst) {
		// `chmod -w x`: a mode that looks like an option.
		const paths = plainArgs(args, afterFirst);
		const modeAsOption = name === "chmod" && args.some((a) => /^-[rwxXstugo]+$/.test(a));
		const reference = args.some((a) => a.startsWith("--reference"));
		addNamed(found, paths, run.dir);
		for (const path of modeAsOption || reference ? paths : paths.slice(1)) at(path);
	} else if (every) {
		const paths = plainArgs(args, every);
		addNamed(found, paths, run.dir);
		for (const path of paths) at(path);
		for (const target of optionValues(args, ["-t", "--target-directory", "-d", "--directory", "-o"]))
			if (name === "mv" || name === "patch") at(target);
	} else if (destination) {
		const paths = plainArgs(args, destination).filter((p) => !/^[^/]*:/.test(p) || p.startsWith("./"));
		addNamed(found, paths, run.dir);
		const target = optionValues(args, ["-t", "--target-directory"]);
		if (name === "install" && hasFlag(args, "d", ["--directory"])) paths.forEach(at);
		else if (target.length > 0) target.forEach(at);
		else if (paths.length > 0) at(paths[paths.length - 1]);
		if (name === "rsync" && args.includes("--remove-source-files")) paths.slice(0, -1).forEach(at);
	} else if (name === "ln") link(args, run);
	else if (name === "sed") sed(args, run);
	else if (name === "perl") perl(args, run);
	else if (name === "awk" || name === "gawk" || name === "mawk" || name === "nawk") awk(args, run);
	else if (name === "dd") for (const arg of args) arg.startsWith("of=") && at(arg.slice(3));
	else if (name === "tar" || name === "bsdtar") tar(args, run);
	else if (name === "unzip") {
		const flags = args.filter((a) => !/^-[dPx]/.test(a));
		if (!["l", "t", "Z", "p", "c", "v", "z"].some((letter) => hasFlag(flags, letter)))
			at(optionValues(args, ["-d"])[0] ?? ".");
		addNamed(found, plainArgs(args, ["-d", "-P", "-x"]), run.dir);
	} else if (name === "7z" || name === "7za" || name === "7zz") {
		if (args[0] === "x" || args[0] === "e") at(args.find((a) => a.startsWith("-o"))?.slice(2) || ".");
		else if (args[0] === "a" || args[0] === "d" || args[0] === "u") at(plainArgs(args.slice(1))[0] ?? "");
	} else if (ARCHIVE_COMPRESSORS.has(name)) {
		if (!hasFlag(args, "c", ["--stdout", "--to-stdout"]) && !hasFlag(args, "t", ["--test"]) && !hasFlag(args, "l"))
			plainArgs(args, ["-S", "--suffix"]).forEach(at);
	} else if (name === "curl") {
		optionValues(args, ["-o", "--output"]).forEach(at);
		if (hasFlag(args, "O", ["--remote-name", "--remote-name-all"]))
			at(`${optionValues(args, ["--output-dir"])[0] ?? "."}/${CHILD}`);
	} else if (name === "wget") {
		const documents = optionValues(args, ["-O", "--output-document"]);
		documents.forEach(at);
		if (documents.length === 0) at(`${optionValues(args, ["-P", "--directory-prefix"])[0] ?? "."}/${CHILD}`);
	} else if (name === "sort" || name === "uniq" || name === "split" || name === "csplit") {
		optionValues(args, ["-o", "--output"]).forEach(at);
		if (name === "uniq" && plainArgs(args, ["-f", "-s", "-w"]).length > 1) at(plainArgs(args, ["-f", "-s", "-w"])[1]);
		if (name === "split" || name === "csplit")
			at(`${plainArgs(args, ["-b", "-l", "-n", "-C", "-a"])[1] ?? "x"}${SOME}`);
	} else if (PYTHONS.test(name)) {
		const code = optionValues(args, ["-c"])[0];
		const script = plainArgs(args, ["-c", "-m", "-W", "-X"])[0];
		scanCode(code ?? (script === undefined || script === "-" ? run.stdin : undefined), run);
	} else if (JS_RUNTIMES.has(name)) {
		const code =
			optionValues(args, ["-e", "--eval", "-p", "--print"])[0] ?? (args[0] === "eval" ? args[1] : undefined);
		scanCode(code ?? (plainArgs(args).length === 0 || args.includes("-") ? run.stdin : undefined), run);
	} else if (name === "ruby" || name === "php" || name === "lua") scanCode(optionValues(args, ["-e", "-r"])[0], run);
	else if (name === "vim" || name === "vi" || name === "nvim") {
		if (args.some((a) => /^(-e|-es|-E|-s|-c|\+)/.test(a)))
			plainArgs(args, ["-c", "-S", "-u", "-i", "--cmd"]).forEach(at);
	} else
		addNamed(
			found,
			args.filter((a) => !a.startsWith("-")),
			run.dir,
		);
}

/** The index of the first plain word after the options of `args` (values of `valueOptions` skipped). */
function plainStart(args: readonly string[], valueOptions: readonly string[]): number {
	for (let i = 0; i < args.length; i++) {
		const arg = args[i];
		if (arg === "--") return i + 1;
		if (!arg.startsWith("-") || arg === "-") return i;
		if (valueOptions.includes(arg)) i++;
	}
	return args.length;
}

function unwrap(
	name: string,
	args: readonly string[],
	spec: { values?: readonly string[]; positionals?: number },
	run: Run,
): void {
	const values = spec.values ?? [];
	let start = plainStart(args, values);
	const options = args.slice(0, start);
	let dir = run.dir;
	for (const chdir of optionValues(options, name === "env" ? ["-C", "--chdir"] : ["-D", "--chdir"]))
		dir = pathOf(chdir, dir) ?? dir;
	if (name === "command" && hasFlag(options, "v")) return;
	if (name === "time") for (const p of optionValues(options, ["-o", "--output"])) addWrite(run.found, p, run.dir);
	if (name === "flock") {
		if (args[start]) addWrite(run.found, args[start], run.dir);
		for (const script of optionValues(options, ["-c", "--command"]))
			walk(script, copyScope(run.scope), run.found, run.depth + 1);
	}
	if (name === "env") while (start < args.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(args[start])) start++;
	let rest = args.slice(start + (spec.positionals ?? 0));
	if (name === "env")
		for (const split of optionValues(options, ["-S", "--split-string"])) rest = [...split.split(/\s+/), ...rest];
	if (name === "flock" && /^\d+$/.test(args[start] ?? "")) rest = [];
	analyze(rest, { ...run, dir });
}

function changeDir(name: string, args: readonly string[], run: Run): void {
	const { scope } = run;
	const target = plainArgs(args.filter((a) => !/^-[LPe@]+$/.test(a)))[0];
	let next: string | undefined;
	if (name === "popd") next = scope.stack.pop();
	else if (target === "-") next = scope.prev;
	else if (target === undefined) next = name === "cd" ? getHomeDir() : undefined;
	else if (!target.includes(NAMED)) next = pathOf(target, scope.dir);
	if (next === undefined || next.includes("*") || next.length > MAX_PATH) return;
	if (name === "pushd") scope.stack.push(scope.dir);
	scope.prev = scope.dir;
	scope.dir = next;
}

/** `xargs [opts] cmd args`: cmd gets what xargs reads, which is what the command names elsewhere. */
function xargs(args: readonly string[], run: Run): void {
	const values = ["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args"];
	const start = plainStart(args, [...values, "--max-procs", "--max-chars", "--max-lines", "--process-slot-var"]);
	const options = args.slice(0, start);
	const replace =
		optionValues(options, ["-I", "--replace"])[0] ??
		(options.some((o) => /^-i|^--replace$/.test(o)) ? "{}" : undefined);
	const inner = args.slice(start);
	analyze(replace ? inner.map((w) => w.replaceAll(replace, NAMED)) : [...inner, NAMED], run);
}

/** `sh -c 'script' arg0 args…`, a script on standard input, or `su -c 'cmd'`: the script is walked. */
function shell(name: string, args: readonly string[], run: Run): void {
	let script: string | undefined;
	let i = 0;
	let commandMode = false;
	for (; i < args.length; i++) {
		const arg = args[i];
		if (arg === "--" || arg === "-") {
			i++;
			break;
		}
		if (!/^[-+]/.test(arg)) break;
		if (["-o", "+o", "-O", "+O", "--rcfile", "--init-file"].includes(arg)) i++;
		else if (/^[-+][A-Za-z]*c[A-Za-z]*$/.test(arg) || arg === "--command") {
			commandMode = true;
			if (name === "su") script = args[++i];
		}
	}
	const vars = new Map(run.scope.vars);
	if (commandMode && name !== "su") {
		script = args[i];
		const positional = args.slice(i + 2);
		for (const [k, value] of positional.entries()) vars.set(String(k + 1), [value]);
		if (args[i + 1] !== undefined) vars.set("0", [args[i + 1]]);
		vars.set("@", positional.length > 0 ? positional : [SOME]);
		vars.set("*", positional.length > 0 ? positional : [SOME]);
	} else if (name !== "su" && (i >= args.length || args.includes("-s"))) script = run.stdin;
	if (script === undefined) return;
	walk(script, { dir: run.dir, prev: run.scope.prev, stack: [], vars }, run.found, run.depth + 1);
}

/** `find dirs… [expr]`: `-delete` writes under the dirs, `-exec cmd {} ;` runs cmd on what lies there. */
function find(args: readonly string[], run: Run): void {
	let i = 0;
	while (i < args.length && /^-[HLP]$|^-O\d*$/.test(args[i])) i++;
	if (args[i] === "-D") i += 2;
	const dirs: string[] = [];
	for (; i < args.length && !/^[-(!]/.test(args[i]); i++) dirs.push(args[i]);
	if (dirs.length === 0) dirs.push(".");
	addNamed(run.found, dirs, run.dir);
	for (; i < args.length; i++) {
		const arg = args[i];
		if (arg === "-delete") for (const dir of dirs) addWrite(run.found, dir, run.dir);
		else if (arg === "-fprint" || arg === "-fprint0" || arg === "-fls" || arg === "-fprintf")
			addWrite(run.found, args[++i] ?? "", run.dir);
		else if (arg === "-exec" || arg === "-execdir" || arg === "-ok" || arg === "-okdir") {
			let end = i + 1;
			while (end < args.length && args[end] !== ";" && args[end] !== "+") end++;
			const inner = args.slice(i + 1, end);
			for (const dir of dirs.slice(0, 8)) {
				const at = pathOf(dir, run.dir);
				if (at === undefined) continue;
				const within = arg.endsWith("dir") ? at : run.dir;
				analyze(
					inner.map((w) => w.replaceAll("{}", `${at}/${SOME}`)),
					{ ...run, dir: within },
				);
			}
			i = end;
		}
	}
}

/** `ln [-s] target… link`: the link is written, and so is what it points at (a link into a skill is a way in). */
function link(args: readonly string[], run: Run): void {
	const paths = plainArgs(args, ["-S", "--suffix", "-t", "--target-directory"]);
	const targetDir = optionValues(args, ["-t", "--target-directory"])[0];
	const links = targetDir !== undefined ? [targetDir] : paths.slice(-1);
	for (const path of [...paths, ...links]) addWrite(run.found, path, run.dir);
	if (!hasFlag(args, "s", ["--symbolic"])) return;
	// A relative symlink target counts from the link's folder.
	const targets = targetDir !== undefined ? paths : paths.slice(0, -1);
	for (const at of links) {
		const linkPath = pathOf(at, run.dir);
		if (linkPath === undefined) continue;
		for (const target of targets) {
			addWrite(run.found, target, dirname(linkPath));
			addWrite(run.found, target, linkPath);
		}
	}
}

/** `sed [-n] -i[SUFFIX] [-e script]… files`: bundled flags read one letter at a time. */
function sed(args: readonly string[], run: Run): void {
	let inPlace = false;
	let scriptGiven = false;
	const files: string[] = [];
	const scripts: string[] = [];
	let optionsEnd = false;
	for (let i = 0; i < args.length; i++) {
		const arg = args[i];
		if (optionsEnd || !arg.startsWith("-") || arg === "-") {
			files.push(arg);
			continue;
		}
		if (arg === "--") optionsEnd = true;
		else if (arg.startsWith("--in-place")) inPlace = true;
		else if (arg === "--expression" || arg === "--file") {
			scriptGiven = true;
			if (arg === "--expression") scripts.push(args[i + 1] ?? "");
			i++;
		} else if (arg.startsWith("--expression=") || arg.startsWith("--file=")) {
			scriptGiven = true;
			if (arg.startsWith("--expression=")) scripts.push(arg.slice(13));
		} else if (!arg.startsWith("--"))
			for (let k = 1; k < arg.length; k++) {
				const letter = arg[k];
				if (letter === "i") {
					inPlace = true;
					break;
				}
				if (letter === "e" || letter === "f" || letter === "l") {
					const value = k + 1 < arg.length ? arg.slice(k + 1) : args[++i];
					if (letter !== "l") scriptGiven = true;
					if (letter === "e") scripts.push(value ?? "");
					break;
				}
			}
	}
	if (!scriptGiven) scripts.push(files.shift() ?? "");
	addNamed(run.found, files, run.dir);
	if (inPlace) for (const file of files) addWrite(run.found, file, run.dir);
	// `w FILE` in a script writes FILE.
	for (const script of scripts)
		for (const m of script.matchAll(/(?:^|[;\n{}]|\/[gpiIme0-9]*)\s*w\s+([^;\n}]+)/g))
			addWrite(run.found, m[1].trim(), run.dir);
}

/** perl's switches, bundled or not (`-0pi`, `-i.bak`, `-pie`, `-0777 -ne`): `-i` writes the files; code is scanned. */
function perl(args: readonly string[], run: Run): void {
	let inPlace = false;
	const code: string[] = [];
	let i = 0;
	for (; i < args.length; i++) {
		const arg = args[i];
		if (arg === "--") {
			i++;
			break;
		}
		if (!arg.startsWith("-") || arg === "-") break;
		for (let k = 1; k < arg.length; k++) {
			const letter = arg[k];
			if (letter === "0" || letter === "l") {
				while (k + 1 < arg.length && /[0-7]/.test(arg[k + 1])) k++;
			} else if (letter === "i") {
				inPlace = true;
				break;
			} else if (letter === "e" || letter === "E") {
				code.push(k + 1 < arg.length ? arg.slice(k + 1) : (args[++i] ?? ""));
				break;
			} else if ("IMmxCFdDV".includes(letter)) {
				if (k + 1 === arg.length && letter === "I") i++;
				break;
			}
		}
	}
	const rest = args.slice(i);
	const files = code.length > 0 ? rest : rest.slice(1);
	addNamed(run.found, files, run.dir);
	if (inPlace) for (const file of files) addWrite(run.found, file, run.dir);
	for (const text of code) scanCode(text, run);
}

/** awk: gawk's `-i inplace` writes the files; `print > "file"` and `system("…")` in the program count. */
function awk(args: readonly string[], run: Run): void {
	const values = ["-f", "-v", "-F", "-i", "-l", "--file", "--assign", "--field-separator", "--include", "--load"];
	const plain = plainArgs(args, values);
	const programGiven = optionValues(args, ["-f", "--file"]).length > 0;
	const program = programGiven ? "" : (plain[0] ?? "");
	const files = programGiven ? plain : plain.slice(1);
	addNamed(run.found, files, run.dir);
	if (optionValues(args, ["-i", "--include"]).some((v) => v === "inplace" || v === "inplace.awk"))
		for (const file of files) addWrite(run.found, file, run.dir);
	for (const m of program.matchAll(/>>?\s*"([^"]+)"/g)) addWrite(run.found, m[1], run.dir);
	for (const m of program.matchAll(/system\s*\(\s*"([^"]+)"/g))
		walk(m[1], copyScope(run.scope), run.found, run.depth + 1);
}

/** `tar`: extracting writes into `-C`/`--directory` (or here); creating writes the archive. */
function tar(args: readonly string[], run: Run): void {
	let mode = "";
	const valued = "fCTXbKNgVLH";
	const values = new Map<string, string[]>();
	const put = (letter: string, value: string | undefined) => {
		if (value === undefined) return;
		const list = values.get(letter);
		if (list) list.push(value);
		else values.set(letter, [value]);
	};
	for (let i = 0; i < args.length; i++) {
		const arg = args[i];
		const oldStyle = i === 0 && !arg.startsWith("-");
		if (arg.startsWith("--")) {
			const [long, inline] = arg.split(/=(.*)/s, 2);
			const modes: Record<string, string> = {
				"--extract": "x",
				"--get": "x",
				"--create": "c",
				"--append": "r",
				"--update": "u",
				"--delete": "c",
				"--list": "t",
				"--diff": "d",
				"--compare": "d",
			};
			if (modes[long]) mode ||= modes[long];
			else if (long === "--directory" || long === "--file") put(long === "--file" ? "f" : "C", inline ?? args[++i]);
			else if (long === "--to-stdout" || long === "--to-command") mode = "t";
		} else if (arg.startsWith("-") || oldStyle) {
			const letters = oldStyle ? arg : arg.slice(1);
			for (let k = 0; k < letters.length; k++) {
				const letter = letters[k];
				if ("xcrutdA".includes(letter)) mode ||= letter === "A" ? "c" : letter;
				if (letter === "O") mode = "t";
				if (valued.includes(letter)) {
					if (!oldStyle && k + 1 < letters.length) {
						put(letter, letters.slice(k + 1));
						break;
					}
					put(letter, args[++i]);
				}
			}
		}
	}
	const at = (word: string) => addWrite(run.found, word, run.dir);
	if (mode === "x") (values.get("C") ?? ["."]).forEach(at);
	else if ("cru".includes(mode) && mode !== "") for (const file of values.get("f") ?? []) file !== "-" && at(file);
	addNamed(run.found, values.get("f") ?? [], run.dir);
}

/** git: checkout/restore of paths, apply, stash, hard reset, clean, rm, mv, clone; `-C`/`--work-tree` move the base. */
function git(args: readonly string[], run: Run): void {
	let dir = run.dir;
	let i = 0;
	for (; i < args.length && args[i].startsWith("-"); i++) {
		const arg = args[i];
		if (arg === "-C") dir = pathOf(args[++i] ?? ".", dir) ?? dir;
		else if (arg === "-c" || arg === "--git-dir" || arg === "--namespace" || arg === "--exec-path") i++;
		else if (arg === "--work-tree") dir = pathOf(args[++i] ?? ".", dir) ?? dir;
		else if (arg.startsWith("--work-tree=")) dir = pathOf(arg.slice(12), dir) ?? dir;
	}
	const sub = args[i];
	const rest = args.slice(i + 1);
	const at = (word: string) => addWrite(run.found, word, dir);
	const dashes = rest.indexOf("--");
	const pathspecs = dashes === -1 ? undefined : rest.slice(dashes + 1);
	addNamed(run.found, pathspecs ?? [], dir);
	if (sub === "checkout") {
		const before = plainArgs(dashes === -1 ? rest : rest.slice(0, dashes), ["-b", "-B", "--orphan", "--conflict"]);
		if (pathspecs) pathspecs.forEach(at);
		else if (!hasFlag(rest, "b") && !hasFlag(rest, "B") && !rest.includes("--orphan")) before.forEach(at);
		if (rest.some((a) => a.startsWith("--pathspec-from-file"))) at(".");
	} else if (sub === "restore") {
		const worktree = !hasFlag(rest, "S", ["--staged"]) || hasFlag(rest, "W", ["--worktree"]);
		if (worktree) (pathspecs ?? plainArgs(rest, ["-s", "--source"])).forEach(at);
	} else if (sub === "apply" || sub === "am") {
		const onlyReads = ["--check", "--stat", "--numstat", "--summary", "--cached"].some((o) => rest.includes(o));
		if (!onlyReads || rest.includes("--apply") || rest.includes("--index")) {
			const into = optionValues(rest, ["--directory"])[0];
			at(into ?? ".");
		}
	} else if (sub === "stash") {
		const action = rest.find((a) => !a.startsWith("-"));
		if (!["list", "show", "create", "store", "drop", "clear"].includes(action ?? ""))
			(pathspecs ?? ["."]).forEach(at);
	} else if (sub === "reset") {
		if (rest.some((a) => a === "--hard" || a === "--merge" || a === "--keep")) (pathspecs ?? ["."]).forEach(at);
	} else if (sub === "clean") {
		const plain = plainArgs(rest, ["-e", "--exclude"]);
		if (hasFlag(rest, "f", ["--force"]) && !hasFlag(rest, "n", ["--dry-run"]))
			(pathspecs ?? (plain.length > 0 ? plain : ["."])).forEach(at);
	} else if (sub === "rm" || sub === "mv") {
		if (!rest.includes("--cached")) (pathspecs ?? plainArgs(rest)).forEach(at);
	} else if (sub === "clone" || sub === "init") {
		const plain = plainArgs(rest, [
			"-b",
			"-o",
			"--branch",
			"--origin",
			"--depth",
			"--template",
			"--separate-git-dir",
			"-c",
		]);
		if (sub === "init") at(plain[0] ?? ".");
		else if (plain.length > 1) at(plain[plain.length - 1]);
		else if (plain[0]) at(basename(plain[0]).replace(/\.git$/, ""));
	}
}

/** A string literal in code, its text captured (quotes inside a path are not expected). */
const LITERAL = String.raw`['"\x60]([^'"\x60\n]{1,1024})['"\x60]`;
/** Interpreter one-liners and scripts on stdin: the literals they open for writing or hand to a writing call. */
const CODE_WRITES: readonly RegExp[] = [
	// open('p', 'w'), fs.openSync('p', 'a+'), File.open('p', 'w')
	new RegExp(String.raw`\bopen(?:Sync)?\s*\(\s*${LITERAL}\s*,\s*['"][^'"\n]{0,8}[wax+]`, "g"),
	// perl open(F, '>', 'p') and open(F, ">p")
	new RegExp(String.raw`\bopen\s*\(?\s*(?:my\s+)?[$\w]{1,64}\s*,\s*['"]\+?>{1,2}['"]\s*,\s*${LITERAL}`, "g"),
	/\bopen\s*\(?\s*(?:my\s+)?[$\w]{1,64}\s*,\s*['"]\+?>{1,2}\s*([^'"\n]{1,1024})['"]/g,
	// Path('p').write_text(…), Path('p').unlink()
	new RegExp(
		String.raw`\bPath\s*\(\s*${LITERAL}\s*\)\s*\.\s*` +
			String.raw`(?:write_text|write_bytes|touch|unlink|mkdir|rmdir|rename|replace|` +
			String.raw`symlink_to|hardlink_to|chmod|open\s*\(\s*['"][^'"\n]{0,8}[wax+])`,
		"g",
	),
	// A call whose first argument is a written path.
	new RegExp(
		String.raw`(?:\b(?:writeFileSync|writeFile|appendFileSync|appendFile|createWriteStream|rmSync|rmdirSync|` +
			String.raw`unlinkSync|mkdirSync|truncateSync|chmodSync|utimesSync|makedirs|removedirs|rmtree|rm_rf|rm_r|` +
			String.raw`mkdir_p|unlink|rmdir|mkdir|truncate|touch)|\b(?:os|fs|FileUtils|File|IO|shutil)\s*\.\s*` +
			String.raw`(?:remove|rm|write|binwrite|chmod|delete))\s*\(\s*${LITERAL}`,
		"g",
	),
	// A call with a source and a destination: both count (a move removes the source, a link points in).
	new RegExp(
		String.raw`(?:\b(?:copyFileSync|copyFile|cpSync|renameSync|rename|copy2|copyfile|copytree|symlinkSync|` +
			String.raw`symlink|linkSync|ln_s|cp_r)|` +
			String.raw`\b(?:os|fs|FileUtils|File|shutil)\s*\.\s*(?:replace|move|copy|cp|mv|link))` +
			String.raw`\s*\(\s*${LITERAL}\s*,\s*${LITERAL}`,
		"g",
	),
];
const CODE_RUNS = new RegExp(
	String.raw`\b(?:system|exec|execSync|spawnSync|check_call|check_output|run|call|popen)\s*\(\s*` +
		String.raw`['"\x60]([^'"\x60\n]{1,4096})['"\x60]`,
	"g",
);

function scanCode(code: string | undefined, run: Run): void {
	if (!code) return;
	const text = code.slice(0, MAX_CODE);
	const at = (path: string) => addWrite(run.found, path.replace(/\$\{?/g, SOME), run.dir);
	for (const pattern of CODE_WRITES)
		for (const m of text.matchAll(pattern)) for (const group of m.slice(1)) if (group !== undefined) at(group);
	for (const m of text.matchAll(CODE_RUNS)) walk(m[1], copyScope(run.scope), run.found, run.depth + 1);
}

/** pi itself, or through npx/bunx/pnpm dlx/node on pi's package. */
function isPi(name: string, args: readonly string[]): boolean {
	if (name === "pi") return true;
	if (!["npx", "bunx", "pnpx", "npm", "pnpm", "yarn", "node", "bun", "deno", "tsx"].includes(name)) return false;
	return args.some((a) => /^(?:@[^/]+\/)?pi(?:-coding-agent)?(?:@[^/]*)?$|pi-coding-agent|\/pi$/.test(a));
}

function walkAll(command: string, cwd: string): Found {
	const found: Found = {
		writes: new Set(),
		named: new Set(),
		fromNamed: [],
		runsPi: false,
		budget: MAX_COMMANDS,
		tokens: MAX_TOKENS,
		paths: MAX_PATHS,
		overflow: false,
	};
	walk(command.replace(MARKERS, "?"), { dir: cwd, prev: cwd, stack: [], vars: new Map() }, found, 0);
	return found;
}

/**
 * The absolute paths a bash command may write (symlinks not resolved), following `cd` between simple
 * commands (a subshell's `cd` ends with it); a glob (`refs/*.md`) is cut to the folder before its first
 * wildcard, and so is a part that cannot be known (`$VAR` never set in the command, `{}` under find).
 */
export function findBashWrites(command: string, cwd: string): string[] {
	const found = walkAll(command, cwd);
	for (const { rest, dir } of found.fromNamed) {
		for (const named of found.named) {
			const path = pathOf(named + rest, dir);
			if (path !== undefined) found.writes.add(path);
		}
	}
	if (found.overflow) found.writes.add("/");
	return [...found.writes];
}

const CONTROL_VERBS = /\/selfskills(?:["'\\\s]|\\n)+(approve|reject|pin|unpin|trust|untrust)\b/;

/**
 * The `/selfskills <verb>` a command would have pi carry out, when it runs pi (directly, through
 * npx or a prefix, or inside a nested shell) to approve, reject, pin, unpin, trust or untrust; else
 * undefined. Best effort, like findBashWrites.
 */
export function findSelfApproval(command: string): string | undefined {
	const verb = CONTROL_VERBS.exec(command)?.[1];
	if (verb === undefined) return undefined;
	const found = walkAll(command, "/");
	return found.runsPi || found.overflow ? `/selfskills ${verb}` : undefined;
}

/** The reason a self-approval is blocked: the person decides. */
export function selfApprovalReason(found: string): string {
	return (
		`selfskills: this bash command runs pi to "${found}", which is the person's decision, not the agent's. ` +
		"Do not approve, reject, pin, unpin or trust through pi in bash or any other way; tell the person what " +
		"awaits their review (/selfskills pending) and go on with the task."
	);
}
