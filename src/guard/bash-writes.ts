// Which paths a bash command writes, read off its text: redirections (`>`, `>>`, `&>`, `tee`), and the
// path arguments of the commands that change files (`sed -i`, `perl -i`, `mv`, `cp`, `rm`,
// `truncate`, `chmod`, `ln`, `git checkout|restore`, ...). Best effort by design: a shell can always
// hide a write (a variable, `eval`, a script), so this finds the plain forms and never claims more.
// Reading commands (`cat`, `grep`, `less`, `head`) name paths but write none.

import { isAbsolute, resolve } from "node:path";
import { expandHome } from "../base/paths.ts";

/** A command that changes every path argument it names (options aside). */
const CHANGES_EVERY_ARG = new Set([
	"rm",
	"rmdir",
	"unlink",
	"shred",
	"truncate",
	"chmod",
	"chown",
	"chgrp",
	"touch",
	"mv",
	"tee",
	"mkdir",
]);
/** A command that changes only its destination: the last path argument, or the folder after `-t`. */
const CHANGES_DESTINATION = new Set(["cp", "ln", "install", "rsync"]);
/** Options that take the next word as their value, per command (that word is no path). */
const VALUE_OPTIONS: Record<string, readonly string[]> = {
	sed: ["-e", "-f", "--expression", "--file", "-l"],
	perl: ["-e", "-E", "-I", "-M", "-m"],
	truncate: ["-s", "-r", "--size", "--reference"],
	touch: ["-d", "-t", "-r", "--date", "--reference"],
	mkdir: ["-m", "--mode"],
	cp: ["-S", "--suffix"],
	ln: ["-S", "--suffix"],
	install: ["-m", "-o", "-g", "-S", "--mode", "--owner", "--group", "--suffix"],
	chmod: ["--reference"],
	chown: ["--reference"],
	chgrp: ["--reference"],
	git: ["-C", "-c"],
};
/** The first plain word is no path: a mode, an owner, or the script when no -e/-f gave one. */
const FIRST_WORD_IS_NO_PATH: Record<string, (args: readonly string[]) => boolean> = {
	chmod: (args) => !args.some((a) => a.startsWith("--reference")),
	chown: (args) => !args.some((a) => a.startsWith("--reference")),
	chgrp: (args) => !args.some((a) => a.startsWith("--reference")),
	sed: (args) => !args.some((a) => /^(-e|-f|--expression|--file)/.test(a)),
	perl: (args) => !args.some((a) => /^-[a-zA-Z]*[eE]$/.test(a)),
};

/** The words of a command's arguments that are paths: options and their values left out, `--` honoured. */
function pathArgs(name: string, args: readonly string[]): string[] {
	const withValue = VALUE_OPTIONS[name] ?? [];
	const out: string[] = [];
	let optionsEnd = false;
	for (let i = 0; i < args.length; i++) {
		const arg = args[i];
		if (optionsEnd || !arg.startsWith("-") || arg === "-") out.push(arg);
		else if (arg === "--") optionsEnd = true;
		else if (withValue.includes(arg) || (name === "perl" && /^-[a-zA-Z]*[eE]$/.test(arg))) i++;
	}
	return FIRST_WORD_IS_NO_PATH[name]?.(args) ? out.slice(1) : out;
}

/** Words that run the next word as the command. */
const PREFIXES = new Set(["sudo", "command", "exec", "nohup", "env", "time", "builtin", "xargs"]);

interface Token {
	readonly text: string;
	/** An unquoted shell operator (`|`, `&&`, `;`, `>`, `>>`, ...), not a word. */
	readonly operator: boolean;
}

const OPERATORS = ["&>>", "&&", "||", ">>", ">|", ">&", "&>", "<<<", "<<", ";", "|", "&", ">", "<", "(", ")", "\n"];

/** The command without the bodies of its here-documents (text fed to a command, never run). */
function stripHeredocs(command: string): string {
	const lines = command.split("\n");
	const out: string[] = [];
	let delimiter: string | undefined;
	for (const line of lines) {
		if (delimiter !== undefined) {
			if (line.replace(/^\t+/, "") === delimiter) delimiter = undefined;
			continue;
		}
		out.push(line);
		delimiter = /<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1/.exec(line)?.[2];
	}
	return out.join("\n");
}

/** Splits a command into words and operators, honouring quotes and backslashes; `2>` counts as `>`. */
export function tokenize(command: string): Token[] {
	const tokens: Token[] = [];
	let word = "";
	let inWord = false;
	const flush = () => {
		if (inWord) tokens.push({ text: word, operator: false });
		word = "";
		inWord = false;
	};
	for (let i = 0; i < command.length; i++) {
		const c = command[i];
		if (c === "'") {
			const end = command.indexOf("'", i + 1);
			word += command.slice(i + 1, end === -1 ? command.length : end);
			inWord = true;
			i = end === -1 ? command.length : end;
		} else if (c === '"') {
			let j = i + 1;
			for (; j < command.length && command[j] !== '"'; j++)
				word += command[j] === "\\" && j + 1 < command.length ? command[++j] : command[j];
			inWord = true;
			i = j;
		} else if (c === "\\" && i + 1 < command.length) {
			word += command[++i];
			inWord = true;
		} else if (c === " " || c === "\t") flush();
		else if (c === "#" && !inWord) {
			const end = command.indexOf("\n", i);
			i = end === -1 ? command.length : end - 1;
		} else {
			const op = OPERATORS.find((o) => command.startsWith(o, i));
			if (op === undefined) {
				word += c;
				inWord = true;
				continue;
			}
			// A file descriptor before a redirection (`2>`, `1>>`) belongs to the operator.
			if (/^\d+$/.test(word) && inWord && op.startsWith(">")) {
				word = "";
				inWord = false;
			} else flush();
			tokens.push({ text: op, operator: true });
			i += op.length - 1;
		}
	}
	flush();
	return tokens;
}

const SEPARATORS = new Set([";", "&&", "||", "|", "&", "\n", "(", ")"]);

/** Splits tokens into simple commands (what runs between `;`, `&&`, `||`, `|`, `&`, newlines). */
function simpleCommands(tokens: readonly Token[]): Token[][] {
	const out: Token[][] = [[]];
	for (const token of tokens) {
		if (token.operator && SEPARATORS.has(token.text)) out.push([]);
		else out[out.length - 1].push(token);
	}
	return out.filter((c) => c.length > 0);
}

/** The written paths of one simple command, as typed (relative or absolute, `~` not expanded). */
function writtenBy(command: readonly Token[]): { written: string[]; cd?: string } {
	const written: string[] = [];
	const words: string[] = [];
	for (let i = 0; i < command.length; i++) {
		const token = command[i];
		if (!token.operator) words.push(token.text);
		else if (/^(>|>>|>\||>&|&>|&>>)$/.test(token.text) && command[i + 1] && !command[i + 1].operator) {
			// `>&2` duplicates a descriptor and writes no file.
			if (!/^(&?\d+|-)$/.test(command[i + 1].text)) written.push(command[i + 1].text);
			i++;
		} else if (/^(<|<<|<<<)$/.test(token.text)) i++;
	}
	let start = 0;
	while (start < words.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[start]) || PREFIXES.has(words[start])))
		start++;
	const name = words[start]?.split("/").pop() ?? "";
	const args = words.slice(start + 1);
	const paths = pathArgs(name, args);
	if (name === "cd") return { written, cd: paths[0] ?? "~" };
	if (CHANGES_EVERY_ARG.has(name)) written.push(...paths);
	else if (CHANGES_DESTINATION.has(name)) {
		const target = args.findIndex((a) => a === "-t" || a === "--target-directory");
		if (target !== -1 && args[target + 1]) written.push(args[target + 1]);
		else if (paths.length > 0) written.push(paths[paths.length - 1]);
	} else if (name === "sed" && args.some((a) => /^-[a-zA-Z]*i/.test(a) || a.startsWith("--in-place"))) {
		// The script is the first plain word unless -e/-f gave it; a script never names a skill file anyway.
		written.push(...paths);
	} else if (name === "perl" && args.some((a) => /^-[a-zA-Z]*i/.test(a))) written.push(...paths);
	else if (name === "git" && (paths[0] === "checkout" || paths[0] === "restore")) written.push(...paths.slice(1));
	else if (name === "dd") written.push(...args.filter((a) => a.startsWith("of=")).map((a) => a.slice(3)));
	return { written };
}

/**
 * The absolute paths a bash command writes (symlinks not resolved), following `cd` between simple
 * commands; a glob (`refs/*.md`) is cut to the folder before its first wildcard.
 */
export function findBashWrites(command: string, cwd: string): string[] {
	let dir = cwd;
	const out: string[] = [];
	const absolute = (p: string) => {
		const expanded = expandHome(p);
		return isAbsolute(expanded) ? resolve(expanded) : resolve(dir, expanded);
	};
	for (const simple of simpleCommands(tokenize(stripHeredocs(command)))) {
		const { written, cd } = writtenBy(simple);
		for (const path of written) {
			const wildcard = path.search(/[*?[]/);
			const literal = wildcard === -1 ? path : path.slice(0, path.lastIndexOf("/", wildcard) + 1) || ".";
			if (literal !== "" && !literal.startsWith("$")) out.push(absolute(literal));
		}
		if (cd !== undefined && !cd.startsWith("$")) dir = absolute(cd);
	}
	return [...new Set(out)];
}
