// Shell forms of the risk scan, read from the raw line with the project's shell reader: which commands a
// line runs, past wrappers (`sudo -E`, `env`, `/bin/` paths), through pipes, `tee`, substitutions and
// here-strings. Words are normalised one by one (so `ᴄurl` is curl) but the structure is the shell's own:
// a look-alike never makes an operator. Two families: a download run as code (pipe-to-shell) and local
// data sent to another host (exfiltration).

import { MARKERS, type Token, tokenize } from "../base/shell-words.ts";
import { normalizeCased, normalizeWord } from "./normalize.ts";

export type ShellFamily = "pipe-to-shell" | "exfiltration";

interface Word {
	/** The word normalised, variables as `$name`. */
	readonly text: string;
	/** The same but for its case (options). */
	readonly cased: string;
	/** The command texts substituted in it (`$(…)`, backticks, `<(…)`). */
	readonly subs: readonly string[];
}

interface Stage {
	readonly words: Word[];
	readonly redirects: Array<{ op: string; target: Word }>;
}

/** A stage's command once wrappers are set aside: its name (a basename) and its arguments. */
interface Command {
	readonly name: string;
	/** The word the command was named by (a path such as `./i.sh`). */
	readonly word: string;
	readonly args: readonly Word[];
}

/** How deep substitutions are read (`$(… $(…))`). */
const MAX_DEPTH = 3;

const PIPES = new Set(["|", "|&"]);
const REDIRECTS = new Set(["<", ">", ">>", "<<<", "<<", "<>", ">&", "&>", "&>>", ">|", "<&"]);
const GROUPING = new Set(["(", ")"]);

export const SHELL_NAMES: ReadonlySet<string> = new Set([
	"sh",
	"bash",
	"zsh",
	"dash",
	"ksh",
	"mksh",
	"ash",
	"csh",
	"tcsh",
	"fish",
	"yash",
	"posh",
]);
/** Interpreters and the options whose value they run as code. */
const CODE_OPTIONS: Readonly<Record<string, readonly string[]>> = {
	shell: ["-c"],
	python: ["-c"],
	node: ["-e", "-p", "--eval", "--print"],
	deno: ["eval"],
	bun: ["-e", "--eval"],
	perl: ["-e", "-E"],
	ruby: ["-e"],
	php: ["-r"],
	lua: ["-e"],
	pwsh: ["-c", "-command"],
};
const INTERPRETERS: Readonly<Record<string, string>> = {
	python: "python",
	pypy: "python",
	pypy3: "python",
	node: "node",
	nodejs: "node",
	deno: "deno",
	bun: "bun",
	perl: "perl",
	ruby: "ruby",
	php: "php",
	lua: "lua",
	pwsh: "pwsh",
	powershell: "pwsh",
};
/** Commands that run their arguments as code wherever they stand, or stdin when piped to. */
const EVALUATORS = new Set(["eval", "iex", "invoke-expression"]);
const SOURCES = new Set(["source", "."]);

const FETCHERS = new Set([
	"curl",
	"wget",
	"wget2",
	"fetch",
	"http",
	"https",
	"xh",
	"aria2c",
	"lynx",
	"iwr",
	"irm",
	"invoke-webrequest",
	"invoke-restmethod",
]);
const NETCATS = new Set(["nc", "ncat", "netcat", "socat", "telnet"]);
const UPLOADERS = new Set(["scp", "rsync", "sftp", ...NETCATS]);

/** Wrappers and keywords that run the command after them, with the options of theirs that take a value. */
const WRAPPERS = new Map<string, readonly string[]>([
	["sudo", ["-u", "-g", "-h", "-p", "-c", "-d", "-r", "-t", "-C", "-D", "-R", "-T", "-U", "--user", "--group"]],
	["doas", ["-u", "-C"]],
	["env", ["-u", "-C", "--unset", "--chdir"]],
	["exec", ["-a"]],
	["nice", ["-n"]],
	["ionice", ["-c", "-n", "-p"]],
	["timeout", ["-s", "-k", "--signal", "--kill-after"]],
	["stdbuf", ["-i", "-o", "-e"]],
	...["command", "builtin", "nohup", "time", "setsid", "busybox", "unbuffer"].map((w) => [w, []] as const),
	...["then", "do", "else", "!", "{"].map((w) => [w, []] as const),
]);

const KNOWN = new Set([
	...SHELL_NAMES,
	...Object.keys(INTERPRETERS),
	...EVALUATORS,
	...FETCHERS,
	...UPLOADERS,
	...[...WRAPPERS.keys()].filter((w) => /^[a-z]/.test(w)),
]);

/** A command name as written: its basename, `.exe` dropped, `python3.12` as `python`. */
function nameOf(word: string): string {
	const base = word.slice(word.lastIndexOf("/") + 1).replace(/\.exe$/, "");
	return /^python[0-9.]*$/.test(base) ? "python" : base;
}

/** ASCII and the shell reader's markers: nothing to normalise. */
const PLAIN = /^[\u0000-\u007F\uE000-\uE00F]*$/;

function wordOf(token: Token): Word {
	const plain = PLAIN.test(token.text) ? token.text : normalizeCased(token.text);
	const cased = plain.includes("\uE000") ? plain.replace(/\uE000([^\uE001]*)\uE001/g, "$$$1") : plain;
	return { text: cased.toLowerCase(), cased, subs: token.subs ?? [] };
}

/** A word made of part of another (an option's attached value). */
const partOf = (word: Word, from: number): Word => ({
	text: word.cased.slice(from).toLowerCase(),
	cased: word.cased.slice(from),
	subs: word.subs,
});

/** A line as lists of pipelines of stages (grouping parentheses are read through). */
function parse(line: string): Stage[][] | undefined {
	// An apostrophe inside a word is prose ("the user's"), not a quote that would swallow the line.
	const unmarked = line.replace(MARKERS, "");
	const text = unmarked.includes("'") ? unmarked.replace(/(?<=\p{L})'(?=\p{L})/gu, "\u2019") : unmarked;
	const tokens = tokenize(text, text.length * 2 + 64);
	if (!tokens) return undefined;
	const lists: Stage[][] = [];
	let pipeline: Stage[] = [];
	let stage: Stage = { words: [], redirects: [] };
	for (let i = 0; i <= tokens.length; i++) {
		const token = tokens[i];
		if (token !== undefined && !token.operator) stage.words.push(wordOf(token));
		else if (token !== undefined && GROUPING.has(token.text)) continue;
		else if (token !== undefined && REDIRECTS.has(token.text)) {
			const next = tokens[i + 1];
			if (next && !next.operator) stage.redirects.push({ op: token.text, target: wordOf(next) });
			if (next && !next.operator) i++;
		} else {
			// A pipe ends a stage; a list operator (or the end) ends the pipeline too.
			if (stage.words.length > 0 || stage.redirects.length > 0) pipeline.push(stage);
			stage = { words: [], redirects: [] };
			if (token !== undefined && PIPES.has(token.text)) continue;
			if (pipeline.length > 0) lists.push(pipeline);
			pipeline = [];
		}
	}
	return lists;
}

/**
 * The command a stage runs, past assignments and wrappers. With `search`, a stage that starts with prose
 * ("To install, run curl …") is read from its first known command.
 */
function commandOf(stage: Stage, search: boolean): Command | undefined {
	const words = stage.words;
	let i = 0;
	if (search) {
		const first = words.findIndex((w) => KNOWN.has(nameOf(w.text)));
		if (first > 0 && !KNOWN.has(nameOf(words[0].text))) i = first;
	}
	while (i < words.length) {
		const word = words[i].text;
		if (/^[a-z_][a-z0-9_]*=/.test(word)) {
			i++;
			continue;
		}
		const name = nameOf(word);
		const valued = WRAPPERS.get(name);
		if (valued === undefined) return { name, word, args: words.slice(i + 1) };
		i++;
		let operands = name === "timeout" ? 1 : 0;
		while (i < words.length) {
			const next = words[i].text;
			if (next.startsWith("-") && next.length > 1) {
				i += valued.includes(next) ? 2 : 1;
			} else if (name === "env" && /^[a-z_][a-z0-9_]*=/.test(next)) i++;
			else if (operands > 0) {
				operands--;
				i++;
			} else break;
		}
	}
	return undefined;
}

/** The interpreter family of a command (`shell`, `python`, …), or undefined. */
function interpreterOf(name: string): string | undefined {
	return SHELL_NAMES.has(name) ? "shell" : INTERPRETERS[name];
}

/** Options of an interpreter that take a separate value (so that value is no script). */
const VALUED: Readonly<Record<string, readonly string[]>> = {
	shell: ["-o", "+o", "--rcfile", "--init-file"],
	python: ["-W", "-X", "-w", "-x"],
	node: ["-r", "--require", "--import", "--loader"],
	ruby: ["-r", "-I"],
	perl: ["-I", "-M"],
};

/** What a command runs as code: words, and whether it reads its code from stdin. */
function codeOf(cmd: Command): { words: Word[]; stdin: boolean } {
	if (EVALUATORS.has(cmd.name)) return { words: [...cmd.args], stdin: cmd.name !== "eval" };
	if (SOURCES.has(cmd.name)) {
		const file = cmd.args[0];
		return { words: file ? [file] : [], stdin: file?.text === "/dev/stdin" || file?.text === "-" };
	}
	const family = interpreterOf(cmd.name);
	if (family === undefined) return { words: [], stdin: false };
	const codeOptions = CODE_OPTIONS[family] ?? [];
	const valued = (VALUED[family] ?? []).map((o) => o.toLowerCase());
	for (let i = 0; i < cmd.args.length; i++) {
		const arg = cmd.args[i].text;
		if (codeOptions.includes(arg)) return { words: cmd.args[i + 1] ? [cmd.args[i + 1]] : [], stdin: false };
		if (family === "python" && arg === "-m") return { words: [], stdin: false };
		if (arg === "-" || (family === "shell" && /^-[a-z]*s[a-z]*$/.test(arg))) return { words: [], stdin: true };
		if (arg === "--") continue;
		if (arg.startsWith("-") || arg.startsWith("+")) {
			if (valued.includes(arg)) i++;
			continue;
		}
		// A script file runs; a bare word is prose after the command ("| sh to install"), which leaves stdin.
		return /[./$\uE005\uE006]/.test(arg) ? { words: [cmd.args[i]], stdin: false } : { words: [], stdin: true };
	}
	return { words: [], stdin: true };
}

/** Short options of curl that take a value. */
const CURL_VALUED = new Set("oTdFHXuAeEKbcmwxyYzrCDQt".split(""));

/** A command's options as [option, value] pairs (long `--x=v` and `--x v`, short clusters `-sSLo v`). */
function optionsOf(args: readonly Word[], shortValued: ReadonlySet<string>, longValued: ReadonlySet<string>) {
	const out: Array<[string, Word | undefined]> = [];
	for (let i = 0; i < args.length; i++) {
		const text = args[i].cased;
		if (text.startsWith("--")) {
			const eq = text.indexOf("=");
			if (eq > 0) out.push([text.slice(0, eq).toLowerCase(), partOf(args[i], eq + 1)]);
			else if (longValued.has(text.toLowerCase())) out.push([text.toLowerCase(), args[++i]]);
			else out.push([text.toLowerCase(), undefined]);
		} else if (text.startsWith("-") && text.length > 1) {
			for (let k = 1; k < text.length; k++) {
				const letter = text[k];
				if (!shortValued.has(letter)) {
					out.push([`-${letter}`, undefined]);
					continue;
				}
				const rest = text.slice(k + 1);
				out.push([`-${letter}`, rest !== "" ? partOf(args[i], k + 1) : args[++i]]);
				break;
			}
		}
	}
	return out;
}

const CURL_LONG = new Set([
	"--output",
	"--upload-file",
	"--data",
	"--data-binary",
	"--data-raw",
	"--data-ascii",
	"--data-urlencode",
	"--json",
	"--form",
	"--form-string",
	"--header",
	"--request",
	"--user",
	"--url",
]);
const WGET_LONG = new Set(["--output-document", "--post-file", "--post-data", "--body-file", "--body-data"]);
const STDOUT = new Set(["-", "/dev/stdout"]);

/** The last path part of the first URL among `args` (what `curl -O` and a bare `wget` save to). */
function urlName(args: readonly Word[]): string | undefined {
	const url = args.find((a) => /^(?:https?|ftp):\/\//.test(a.text))?.text;
	return url
		?.replace(/[?#].*$/, "")
		.replace(/\/+$/, "")
		.split("/")
		.pop();
}

/** Where a fetcher puts what it downloads: stdout, files (their names), or nowhere (not a fetcher). */
function downloadOf(cmd: Command): { stdout: boolean; files: string[] } {
	const none = { stdout: false, files: [] };
	if (!FETCHERS.has(cmd.name)) return none;
	if (cmd.name === "curl") {
		const options = optionsOf(cmd.args, CURL_VALUED, CURL_LONG);
		const outputs = options.filter(([o]) => o === "-o" || o === "--output").map(([, v]) => v?.text ?? "");
		const remote = options.some(([o]) => o === "-O" || o === "--remote-name" || o === "--remote-name-all");
		const files = [...outputs.filter((o) => !STDOUT.has(o)), ...(remote ? [urlName(cmd.args) ?? ""] : [])];
		return { stdout: files.length === 0, files };
	}
	if (cmd.name === "wget" || cmd.name === "wget2" || cmd.name === "fetch" || cmd.name === "aria2c") {
		const short = new Set(cmd.name === "wget" || cmd.name === "wget2" ? ["O", "o", "e", "a"] : ["o"]);
		const options = optionsOf(cmd.args, short, WGET_LONG);
		const named = options.filter(([o]) => (cmd.name.startsWith("wget") ? o === "-O" : o === "-o"));
		const output = [...named, ...options.filter(([o]) => o === "--output-document")].map(([, v]) => v?.text ?? "");
		if (output.some((o) => STDOUT.has(o))) return { stdout: true, files: [] };
		return { stdout: false, files: output.length > 0 ? output : [urlName(cmd.args) ?? ""] };
	}
	if (cmd.name === "lynx")
		return { stdout: cmd.args.some((a) => a.text === "-source" || a.text === "-dump"), files: [] };
	return { stdout: true, files: [] };
}

/** A file name that says it holds a secret. */
const SECRET_NAME =
	/(?:env|secret|credential|token|passw|history|id_[a-z0-9]+|keychain|wallet|cookie)|\.(?:pem|key|p12|pfx)$/;

/** A path whose content is the person's, not the project's: home, system folders, dotfiles, secrets. */
export function isPrivatePath(path: string): boolean {
	const p = path.replace(/^["']|["']$/g, "");
	if (/^(?:~|\$home\b|\$\{home\}|\/root\b|\/home\/|\/users\/|\/etc\/|\/var\/|\/proc\/)/.test(p)) return true;
	if (p.split("/").some((part) => part.startsWith(".") && part !== "." && part !== "..")) return true;
	return SECRET_NAME.test(p.slice(p.lastIndexOf("/") + 1));
}

/** `user@host:path`, `host:path`, `host:`, `host::module` or an scp/rsync URL: not this machine. */
function isRemote(arg: string): boolean {
	if (/^(?:scp|sftp|rsync|ssh):\/\//.test(arg)) return true;
	if (/^[./~$]/.test(arg)) return false;
	return /^(?:[^\s/@:]+@)?[^\s/:]{2,}:/.test(arg);
}

/** Operands of scp/rsync (options and their values set aside). */
function operandsOf(cmd: Command): string[] {
	const valued = cmd.name === "scp" ? "PioFclSJDX" : "efTBM";
	const out: string[] = [];
	for (let i = 0; i < cmd.args.length; i++) {
		const arg = cmd.args[i].cased;
		if (arg.startsWith("--")) {
			if (!arg.includes("=") && /^--(?:rsh|exclude|include|filter|port|files-from|exclude-from)$/.test(arg)) i++;
		} else if (arg.startsWith("-") && arg.length > 1) {
			const letter = [...arg.slice(1)].find((c) => valued.includes(c));
			if (letter !== undefined && arg.endsWith(letter)) i++;
		} else out.push(cmd.args[i].text);
	}
	return out;
}

/** Commands whose output, put in a request, is local data (`-d "$(env)"`). */
const READERS = /^\s*(?:cat|env|printenv|history|tar|zip|base64|ls|find|set|git|head|tail|xxd|od|strings)\b/;

/** A value sent by an upload option: a file (`@f`, `<f`), stdin (`@-`), or command output. */
function sendsLocalData(value: Word | undefined, piped: boolean, anyFile: boolean): boolean {
	if (value === undefined) return false;
	if (value.subs.some((sub) => READERS.test(sub))) return true;
	const at = /(?:^|=|[a-z0-9_])[@<](.+)$/.exec(value.text) ?? /^@?(.*)$/.exec(value.text);
	const file = at?.[1]?.replace(/;.*$/, "") ?? "";
	if (!/[@<]/.test(value.text) && !anyFile) return false;
	if (file === "-" || file === "." || file === "/dev/stdin") return piped;
	return anyFile ? file !== "" : isPrivatePath(file);
}

/** Whether a stage sends local data to another host. */
function uploads(cmd: Command, stage: Stage, piped: boolean, line: string): boolean {
	const fromFile = stage.redirects.some((r) => r.op === "<" || r.op === "<<<" || r.op === "<<");
	if (cmd.name === "curl") {
		return optionsOf(cmd.args, CURL_VALUED, CURL_LONG).some(([o, v]) => {
			if (o === "-T" || o === "--upload-file") return sendsLocalData(v, piped, true);
			if (/^(?:-d|--data[a-z-]*|--json|-F|--form)$/.test(o)) return sendsLocalData(v, piped, false);
			return false;
		});
	}
	if (cmd.name === "wget" || cmd.name === "wget2") {
		return optionsOf(cmd.args, new Set(["O", "o"]), WGET_LONG).some(
			([o, v]) =>
				o === "--post-file" ||
				o === "--body-file" ||
				(/^--(?:post|body)-data$/.test(o) && sendsLocalData(v, piped, false)),
		);
	}
	if (cmd.name === "scp" || cmd.name === "rsync") {
		const operands = operandsOf(cmd);
		return operands.length >= 2 && isRemote(operands.at(-1) ?? "") && operands.slice(0, -1).some((o) => !isRemote(o));
	}
	if (cmd.name === "sftp") return /\bput\b/.test(line) || cmd.args.some((a) => a.text === "-b");
	if (NETCATS.has(cmd.name)) return (piped || fromFile) && !cmd.args.some((a) => a.text === "-z" || a.text === "-zv");
	return false;
}

/** What reading one line has learnt so far: files it downloaded, substitutions known to download. */
interface LineState {
	readonly normalized: string;
	readonly found: Set<ShellFamily>;
	readonly fetched: Set<string>;
	readonly downloading: Map<string, boolean>;
}

/** Whether a word holds a substitution that downloads (`$(curl …)`, `<(wget -qO- …)`). */
function downloadsIn(state: LineState, word: Word): boolean {
	for (const sub of word.subs) {
		let known = state.downloading.get(sub);
		if (known === undefined) {
			known = downloads(sub);
			state.downloading.set(sub, known);
		}
		if (known) return true;
	}
	return false;
}

/** One stage of a pipeline; returns whether its output is a download (for the stages after it). */
function readStage(state: LineState, stage: Stage, index: number, piped: boolean, depth: number): boolean {
	for (const word of stage.words)
		for (const sub of word.subs) if (depth < MAX_DEPTH) familiesOf(sub, state.normalized, depth + 1, state.found);
	let stdinDownload = false;
	for (const { op, target } of stage.redirects) {
		for (const sub of target.subs) if (depth < MAX_DEPTH) familiesOf(sub, state.normalized, depth + 1, state.found);
		if (op.startsWith(">") && /^\/dev\/(?:tcp|udp)\//.test(target.text)) state.found.add("exfiltration");
		if (op.startsWith("<") && downloadsIn(state, target)) stdinDownload = true;
	}
	const cmd = commandOf(stage, index === 0);
	if (!cmd) return false;
	const code = codeOf(cmd);
	let runs = code.stdin && (piped || stdinDownload);
	for (const word of code.words) if (downloadsIn(state, word) || state.fetched.has(pathKey(word.text))) runs = true;
	if (runs || state.fetched.has(pathKey(cmd.word))) state.found.add("pipe-to-shell");
	if (uploads(cmd, stage, index > 0, state.normalized)) state.found.add("exfiltration");
	const download = downloadOf(cmd);
	for (const file of download.files) if (file !== "") state.fetched.add(pathKey(file));
	return download.stdout || stage.words.some((w) => w.subs.length > 0 && downloadsIn(state, w));
}

/** Each family the command text runs, read through its substitutions to MAX_DEPTH. */
function familiesOf(line: string, normalized: string, depth: number, found: Set<ShellFamily>): void {
	const lists = parse(line);
	if (!lists) return;
	const state: LineState = { normalized, found, fetched: new Set(), downloading: new Map() };
	for (const pipeline of lists) {
		let piped = false;
		for (let index = 0; index < pipeline.length; index++) {
			if (readStage(state, pipeline[index], index, piped, depth)) piped = true;
		}
	}
}

/** Whether a command text downloads to its output (a substitution that is then run). */
function downloads(text: string): boolean {
	for (const pipeline of parse(text) ?? [])
		for (let index = 0; index < pipeline.length; index++) {
			const cmd = commandOf(pipeline[index], index === 0);
			if (cmd !== undefined && downloadOf(cmd).stdout) return true;
		}
	return false;
}

function pathKey(path: string): string {
	return path.replace(/^\.\//, "");
}

/**
 * The shell families a (logical) line of a skill runs: a download run as code, local data sent out.
 * `normalized` is the same line normalised (the words of prose around the command, such as sftp's `put`).
 */
export function shellFamilies(line: string, normalized = normalizeWord(line)): ShellFamily[] {
	// Markdown around a command is not part of it: list bullets, quotes, headings, a prompt `$`.
	const command = line.replace(/^\s*(?:(?:#{1,6}|[-*+>]|\d{1,3}[.)]|\$)\s+)+/, "");
	const found = new Set<ShellFamily>();
	familiesOf(command, normalized, 0, found);
	return [...found];
}
