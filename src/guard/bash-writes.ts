// Which paths a bash command may write, read off its text, for the side-door guard where bash is not
// sandboxed; and whether it runs pi to approve its own proposals. Best effort by design: a shell can
// always hide a write (a script file, a computed name), so this knows the plain and the common wrapped
// forms (prefixes, nested shells, xargs, find -exec, archives, git, one-liners) and claims no more.

import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { expandHome, getHomeDir } from "../base/paths.ts";
import {
	B_CLOSE,
	B_OPEN,
	CHILD,
	expand,
	MARKERS,
	MAX_EXPANSIONS,
	NAMED,
	SOME,
	type Token,
	tokenize,
	type Work,
} from "../base/shell-words.ts";

/**
 * Bounds on the work for one command: nested shells, `eval` and `$(…)` this deep, this many commands,
 * tokens, written paths, nested subshells and characters of expanded words and copied state. A command
 * past a bound is taken to write anywhere (the guard stops it).
 */
const MAX_DEPTH = 6;
const MAX_COMMANDS = 10_000;
const MAX_TOKENS = 50_000;
const MAX_PATHS = 10_000;
const MAX_SUBSHELLS = 64;
const MAX_WORK = 1_000_000;
/** The work one pair of a printed name and a word that writes it costs. */
const PAIR_COST = 64;
/** Longer than this is no path (PATH_MAX). */
const MAX_PATH = 4096;
/** Interpreter code scanned for writing calls: its first this many characters. */
const MAX_CODE = 65_536;

/** A shell's state where the walk is: working folder, `cd -` and `pushd` memory, variables. */
interface Scope {
	dir: string;
	prev: string;
	stack: string[];
	vars: Map<string, string[]>;
}

/** What the walk found over the whole command, nested shells included. */
interface Found extends Work {
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
	if (!/\S/.test(text)) return;
	const tokens = depth > MAX_DEPTH || found.budget-- <= 0 ? undefined : tokenize(text, found.tokens);
	if (tokens === undefined) {
		found.overflow = true;
		return;
	}
	found.tokens -= tokens.length;
	// The scopes to restore when a subshell ends.
	const saved: Scope[] = [];
	let simple: Token[] = [];
	const finish = () => {
		if (simple.length > 0) runSimple(simple, scope, found, depth);
		simple = [];
	};
	for (const token of tokens) {
		if (found.overflow || found.budget <= 0 || found.work < 0) {
			found.overflow = true;
			return;
		}
		if (!token.operator || !(SEPARATORS.has(token.text) || token.text === "(" || token.text === ")")) {
			simple.push(token);
			continue;
		}
		finish();
		if (token.text === "(") {
			if (saved.length === MAX_SUBSHELLS) found.overflow = true;
			saved.push(copyScope(scope, found));
		} else if (token.text === ")") {
			// A subshell's `cd` and variables end with it.
			const outer = saved.pop();
			if (outer) Object.assign(scope, outer);
		}
	}
	finish();
}

/** The scope a nested shell starts from; copying is charged to the work left. */
function copyScope(scope: Scope, found: Work): Scope {
	found.work -= scope.vars.size + scope.stack.length + 1;
	return { dir: scope.dir, prev: scope.prev, stack: [...scope.stack], vars: new Map(scope.vars) };
}

/** The command substitutions of a word, each in a copy of the scope. */
function walkSubs(subs: readonly string[] | undefined, scope: Scope, found: Found, depth: number): void {
	for (const sub of subs ?? []) if (/\S/.test(sub)) walk(sub, copyScope(scope, found), found, depth + 1);
}

/** One simple command: its redirections, assignments, substitutions, then what the command itself writes. */
function runSimple(tokens: readonly Token[], scope: Scope, found: Found, depth: number): void {
	found.budget--;
	const words: Token[] = [];
	const redirects: string[] = [];
	let stdin: string | undefined;
	const values = (word: string) => expand(word, (name) => variable(name, scope), found);
	for (let i = 0; i < tokens.length; i++) {
		const token = tokens[i];
		const next = tokens[i + 1];
		walkSubs(token.subs, scope, found, depth);
		if (!token.operator) words.push(token);
		else if (next && !next.operator) {
			i++;
			walkSubs(next.subs, scope, found, depth);
			// `>&2` duplicates a descriptor and writes no file.
			if (WRITE_REDIRECTS.has(token.text) && !/^(&?\d+|-)$/.test(next.text)) redirects.push(next.text);
			else if (token.text === "<<" || token.text === "<<<") stdin = next.text;
		}
	}
	for (const target of redirects) for (const path of values(target)) addWrite(found, path, scope.dir);
	let start = 0;
	while (start < words.length && (OPENING_WORDS.has(words[start].text) || CLOSING_WORDS.has(words[start].text)))
		start++;
	const first = words[start]?.text ?? "";
	if (first === "for" || first === "select") {
		const name = words[start + 1]?.text ?? "";
		const items = words[start + 2]?.text === "in" ? words.slice(start + 3) : [];
		scope.vars.set(name, items.flatMap((w) => values(w.text)).slice(0, MAX_EXPANSIONS));
		return;
	}
	if (first === "case") return;
	if (first === "function") start += words[start + 2]?.text === B_OPEN ? 3 : 2;
	// Leading NAME=value words: shell variables when nothing else follows, the command's environment otherwise.
	const assigned: Array<[string, string[]]> = [];
	while (start < words.length && /^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(words[start].text)) {
		const text = words[start].text;
		const eq = text.indexOf("=");
		assigned.push([text.slice(0, eq).replace(/\+$/, ""), values(text.slice(eq + 1))]);
		start++;
	}
	if (start === words.length) {
		for (const [name, values] of assigned) scope.vars.set(name, values);
		return;
	}
	const argv = words.slice(start).flatMap((w) => values(w.text));
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

function variable(name: string, scope: Scope): string[] | undefined {
	const known = scope.vars.get(name);
	if (known) return known;
	if (name === "HOME") return [getHomeDir()];
	if (name === "PWD") return [scope.dir];
	if (name === "OLDPWD") return [scope.prev];
	return undefined;
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

const names = (list: string) => list.split(" ");

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
	rsync: names(
		"-e --rsh -f --filter --exclude --include --exclude-from --include-from --files-from -T --temp-dir " +
			"--backup-dir --suffix --chmod --chown --log-file --partial-dir --compare-dest --copy-dest --link-dest",
	),
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

const SHELLS = names("sh bash dash zsh ksh mksh ash yash fish rbash su");
const PYTHONS = /^(python[0-9.]*|pypy[0-9.]*)$/;
const JS_RUNTIMES = names("node nodejs bun deno tsx ts-node");
const ARCHIVE_COMPRESSORS = names("gzip gunzip bzip2 bunzip2 xz unxz lzma unlzma zstd unzstd lz4 brotli");

/** What one command does with its arguments: `name` is the command's own (a handler may serve several). */
type Handler = (args: readonly string[], run: Run, name: string) => void;

/** What one command (argv expanded) writes, through wrappers and nested shells. */
function analyze(argv: readonly string[], run: Run): void {
	if (argv.length === 0) return;
	if (run.found.budget-- <= 0) {
		run.found.overflow = true;
		return;
	}
	const name = basename(argv[0]);
	const args = argv.slice(1);
	if (isPi(name, args)) run.found.runsPi = true;
	const handler = HANDLERS.get(name) ?? (PYTHONS.test(name) ? python : undefined);
	if (handler) handler(args, run, name);
	else
		addNamed(
			run.found,
			args.filter((a) => !a.startsWith("-")),
			run.dir,
		);
}

/** Adds a path word to what the command writes, from the folder it runs in. */
function writer(run: Run): (word: string) => void {
	return (word) => addWrite(run.found, word, run.dir);
}

function changesAfterFirst(args: readonly string[], run: Run, name: string): void {
	// `chmod -w x`: a mode that looks like an option.
	const paths = plainArgs(args, CHANGES_AFTER_FIRST[name]);
	const modeAsOption = name === "chmod" && args.some((a) => /^-[rwxXstugo]+$/.test(a));
	const reference = args.some((a) => a.startsWith("--reference"));
	addNamed(run.found, paths, run.dir);
	(modeAsOption || reference ? paths : paths.slice(1)).forEach(writer(run));
}

function changesEveryArg(args: readonly string[], run: Run, name: string): void {
	const paths = plainArgs(args, CHANGES_EVERY_ARG[name]);
	addNamed(run.found, paths, run.dir);
	paths.forEach(writer(run));
	if (name === "mv" || name === "patch")
		optionValues(args, ["-t", "--target-directory", "-d", "--directory", "-o"]).forEach(writer(run));
}

function changesDestination(args: readonly string[], run: Run, name: string): void {
	const at = writer(run);
	const paths = plainArgs(args, CHANGES_DESTINATION[name]).filter((p) => !/^[^/]*:/.test(p) || p.startsWith("./"));
	addNamed(run.found, paths, run.dir);
	const target = optionValues(args, ["-t", "--target-directory"]);
	if (name === "install" && hasFlag(args, "d", ["--directory"])) paths.forEach(at);
	else if (target.length > 0) target.forEach(at);
	else if (paths.length > 0) at(paths[paths.length - 1]);
	if (name === "rsync" && args.includes("--remove-source-files")) paths.slice(0, -1).forEach(at);
}

function unzip(args: readonly string[], run: Run): void {
	const flags = args.filter((a) => !/^-[dPx]/.test(a));
	if (!["l", "t", "Z", "p", "c", "v", "z"].some((letter) => hasFlag(flags, letter)))
		writer(run)(optionValues(args, ["-d"])[0] ?? ".");
	addNamed(run.found, plainArgs(args, ["-d", "-P", "-x"]), run.dir);
}

function sevenZip(args: readonly string[], run: Run): void {
	if (args[0] === "x" || args[0] === "e") writer(run)(args.find((a) => a.startsWith("-o"))?.slice(2) || ".");
	else if (args[0] === "a" || args[0] === "d" || args[0] === "u") writer(run)(plainArgs(args.slice(1))[0] ?? "");
}

function compressor(args: readonly string[], run: Run): void {
	if (!hasFlag(args, "c", ["--stdout", "--to-stdout"]) && !hasFlag(args, "t", ["--test"]) && !hasFlag(args, "l"))
		plainArgs(args, ["-S", "--suffix"]).forEach(writer(run));
}

function curl(args: readonly string[], run: Run): void {
	optionValues(args, ["-o", "--output"]).forEach(writer(run));
	if (hasFlag(args, "O", ["--remote-name", "--remote-name-all"]))
		writer(run)(`${optionValues(args, ["--output-dir"])[0] ?? "."}/${CHILD}`);
}

function wget(args: readonly string[], run: Run): void {
	const documents = optionValues(args, ["-O", "--output-document"]);
	documents.forEach(writer(run));
	if (documents.length === 0) writer(run)(`${optionValues(args, ["-P", "--directory-prefix"])[0] ?? "."}/${CHILD}`);
}

/** sort, uniq, split, csplit: `-o` names the output; uniq's second file and split's prefix are written. */
function textOutput(args: readonly string[], run: Run, name: string): void {
	const at = writer(run);
	optionValues(args, ["-o", "--output"]).forEach(at);
	if (name === "uniq" && plainArgs(args, ["-f", "-s", "-w"]).length > 1) at(plainArgs(args, ["-f", "-s", "-w"])[1]);
	if (name === "split" || name === "csplit") at(`${plainArgs(args, ["-b", "-l", "-n", "-C", "-a"])[1] ?? "x"}${SOME}`);
}

function python(args: readonly string[], run: Run): void {
	const code = optionValues(args, ["-c"])[0];
	const script = plainArgs(args, ["-c", "-m", "-W", "-X"])[0];
	scanCode(code ?? (script === undefined || script === "-" ? run.stdin : undefined), run);
}

function jsRuntime(args: readonly string[], run: Run): void {
	const code = optionValues(args, ["-e", "--eval", "-p", "--print"])[0] ?? (args[0] === "eval" ? args[1] : undefined);
	scanCode(code ?? (plainArgs(args).length === 0 || args.includes("-") ? run.stdin : undefined), run);
}

function vim(args: readonly string[], run: Run): void {
	if (args.some((a) => /^(-e|-es|-E|-s|-c|\+)/.test(a)))
		plainArgs(args, ["-c", "-S", "-u", "-i", "--cmd"]).forEach(writer(run));
}

/** `read` and `mapfile` set their variables to what the command reads: a path named elsewhere. */
function readVariables(args: readonly string[], run: Run): void {
	for (const variable of plainArgs(args, ["-p", "-d", "-t", "-n", "-N", "-u", "-a", "-C", "-c"]))
		run.scope.vars.set(variable, [NAMED]);
}

function declare(args: readonly string[], run: Run): void {
	for (const arg of args) {
		const eq = arg.indexOf("=");
		if (eq > 0 && !arg.startsWith("-")) run.scope.vars.set(arg.slice(0, eq), [arg.slice(eq + 1)]);
	}
}

function watch(args: readonly string[], run: Run): void {
	const rest = args.slice(plainStart(args, ["-n", "-d", "--interval", "--differences"]));
	walk(rest.join(" "), copyScope(run.scope, run.found), run.found, run.depth + 1);
}

function on(commands: readonly string[], handler: Handler): Array<[string, Handler]> {
	return commands.map((name) => [name, handler]);
}

/** Every command this knows, by name; a later entry wins (rename's first word is a script). */
const HANDLERS = new Map<string, Handler>([
	...on(Object.keys(WRAPPERS), unwrap),
	...on(Object.keys(CHANGES_EVERY_ARG), changesEveryArg),
	...on(Object.keys(CHANGES_AFTER_FIRST), changesAfterFirst),
	...on(Object.keys(CHANGES_DESTINATION), changesDestination),
	...on(SHELLS, shell),
	...on(JS_RUNTIMES, jsRuntime),
	...on(ARCHIVE_COMPRESSORS, compressor),
	...on(names("cd pushd popd"), changeDir),
	...on(names("read mapfile readarray"), readVariables),
	...on(names("export local declare typeset readonly"), declare),
	...on(names("awk gawk mawk nawk"), awk),
	...on(names("sort uniq split csplit"), textOutput),
	...on(names("7z 7za 7zz"), sevenZip),
	...on(names("vim vi nvim"), vim),
	...on(names("ruby php lua"), (args, run) => scanCode(optionValues(args, ["-e", "-r"])[0], run)),
	["eval", (args, run) => walk(args.join(" "), run.scope, run.found, run.depth + 1)],
	[
		"dd",
		(args, run) =>
			args
				.filter((a) => a.startsWith("of="))
				.map((a) => a.slice(3))
				.forEach(writer(run)),
	],
	["xargs", xargs],
	["watch", watch],
	["find", find],
	["git", git],
	["ln", link],
	["sed", sed],
	["perl", perl],
	["tar", tar],
	["bsdtar", tar],
	["unzip", unzip],
	["curl", curl],
	["wget", wget],
]);

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

function unwrap(args: readonly string[], run: Run, name: string): void {
	const spec = WRAPPERS[name];
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
			walk(script, copyScope(run.scope, run.found), run.found, run.depth + 1);
	}
	if (name === "env") while (start < args.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(args[start])) start++;
	let rest = args.slice(start + (spec.positionals ?? 0));
	if (name === "env")
		for (const split of optionValues(options, ["-S", "--split-string"])) rest = [...split.split(/\s+/), ...rest];
	if (name === "flock" && /^\d+$/.test(args[start] ?? "")) rest = [];
	analyze(rest, { ...run, dir });
}

function changeDir(args: readonly string[], run: Run, name: string): void {
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
function shell(args: readonly string[], run: Run, name: string): void {
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
	const { vars } = copyScope(run.scope, run.found);
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
		walk(m[1], copyScope(run.scope, run.found), run.found, run.depth + 1);
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
		const plain = plainArgs(rest, names("-b -o --branch --origin --depth --template --separate-git-dir -c"));
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
	new RegExp(String.raw`\bopen\s*(?:\(\s*)?(?:my\s+)?[$\w]{1,64}\s*,\s*['"]\+?>{1,2}['"]\s*,\s*${LITERAL}`, "g"),
	/\bopen\s*(?:\(\s*)?(?:my\s+)?[$\w]{1,64}\s*,\s*['"]\+?>{1,2}\s*([^'"\n]{1,1024})['"]/g,
	// Path('p').write_text(…), Path('p').unlink()
	new RegExp(
		String.raw`\bPath\s*\(\s*${LITERAL}\s*\)\s*\.\s*` +
			"(?:write_text|write_bytes|touch|unlink|mkdir|rmdir|rename|replace|" +
			String.raw`symlink_to|hardlink_to|chmod|open\s*\(\s*['"][^'"\n]{0,8}[wax+])`,
		"g",
	),
	// A call whose first argument is a written path.
	new RegExp(
		String.raw`(?:\b(?:writeFileSync|writeFile|appendFileSync|appendFile|createWriteStream|rmSync|rmdirSync|` +
			"unlinkSync|mkdirSync|truncateSync|chmodSync|utimesSync|makedirs|removedirs|rmtree|rm_rf|rm_r|" +
			String.raw`mkdir_p|unlink|rmdir|mkdir|truncate|touch)|\b(?:os|fs|FileUtils|File|IO|shutil)\s*\.\s*` +
			String.raw`(?:remove|rm|write|binwrite|chmod|delete))\s*\(\s*${LITERAL}`,
		"g",
	),
	// A call with a source and a destination: both count (a move removes the source, a link points in).
	new RegExp(
		String.raw`(?:\b(?:copyFileSync|copyFile|cpSync|renameSync|rename|copy2|copyfile|copytree|symlinkSync|` +
			"symlink|linkSync|ln_s|cp_r)|" +
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
	for (const m of text.matchAll(CODE_RUNS)) walk(m[1], copyScope(run.scope, run.found), run.found, run.depth + 1);
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
		work: MAX_WORK,
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
			// Each pair is charged: many printed names times many written words is past the bounds.
			found.work -= PAIR_COST + rest.length;
			const path = rest === "" ? named : pathOf(named + rest, dir);
			if (path !== undefined) found.writes.add(path);
		}
	}
	if (found.overflow || found.work < 0) found.writes.add("/");
	return [...found.writes];
}

const CONTROL_VERBS = /\/selfskills(?:["'\\\s]|\\n)+(approve|reject|pin|unpin|trust|untrust|restore|export|eval)\b/;

/**
 * The `/selfskills <verb>` a command would have pi carry out, when it runs pi (directly, through
 * npx or a prefix, or inside a nested shell) to change something (approve, reject, pin, unpin, trust,
 * untrust, restore, export) or to spend the person's money (eval); else
 * undefined. Best effort, like findBashWrites.
 */
export function findSelfApproval(command: string): string | undefined {
	const verb = CONTROL_VERBS.exec(command)?.[1];
	if (verb === undefined) return undefined;
	const found = walkAll(command, "/");
	return found.runsPi || found.overflow || found.work < 0 ? `/selfskills ${verb}` : undefined;
}

/** The reason a self-approval is blocked: the person decides. */
export function selfApprovalReason(found: string): string {
	return (
		`selfskills: this bash command runs pi to "${found}", which is the person's decision, not the agent's. ` +
		"Do not approve, reject, pin, unpin, trust, restore, export or eval through pi in bash or any other way; " +
		"tell the person what " +
		"awaits their review (/selfskills pending) and go on with the task."
	);
}
