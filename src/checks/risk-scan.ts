// The risk scan of what the agent writes into a skill. Every check reads one normalisation (normalize.ts);
// each category is a family of forms: shell forms read from the raw line with the shell reader
// (shell-forms.ts), prose read as words by small grammars (prose-forms.ts), and, for the categories whose
// forms are fixed names (secrets, control, destructive, obfuscation), one short list of linear patterns.
// A change is judged by the findings its result has that the text before it did not (a multiset by
// category and what matched, so moving a line adds nothing).

import { escapeControls } from "./content-guard.ts";
import { normalizeLines, normalizeText, showInvisibles } from "./normalize.ts";
import { proseMatches } from "./prose-forms.ts";
import { SHELL_NAMES, type ShellFamily, shellFamilies } from "./shell-forms.ts";

export const RISK_CATEGORIES = [
	"pipe-to-shell",
	"secrets",
	"exfiltration",
	"override",
	"control",
	"destructive",
	"obfuscation",
] as const;
export type RiskCategory = (typeof RISK_CATEGORIES)[number];

/** One risky line: its category, its 1-based line number in the file, and the line (escaped, bounded). */
export interface Finding {
	readonly category: RiskCategory;
	readonly line: number;
	readonly text: string;
}

/** A finding and the normalised text it matched: the key a before/after comparison counts. */
interface Hit {
	readonly finding: Finding;
	readonly key: string;
}

/** Characters of a finding's line shown to the person. */
const SHOWN_CHARS = 160;

const SHELL = [
	String.raw`(?:sudo\s)?(?:ba|z|da|k|c|tc|fi)?sh|python[0-9.]*|node|perl|ruby|php|`,
	"pwsh|powershell|iex|invoke-expression|source",
].join("");
const HOME = String.raw`(?:~|\$home|\$\{home\}|/root|/home/[\w.-]{1,32}|/users/[\w.-]{1,32})`;
const SECRET_WORD = "token|secret|passw(?:or)?d|api_?key|private_?key|access_?key|credential";

/**
 * Literals one of which every match of a pattern holds: a text with none of them skips the pattern (a
 * search for a literal is some 30 times cheaper on 1 MiB than a pattern led by a word alternation).
 */
export const NEEDLES = new Map<RegExp, readonly string[]>();
const needing = (needles: readonly string[], pattern: RegExp): RegExp => {
	NEEDLES.set(pattern, needles);
	return pattern;
};

/** A pattern written in pieces (a long one stays readable within the line width). */
const re = (parts: readonly string[], flags: string): RegExp => new RegExp(parts.join(""), flags);

/**
 * The patterns of the categories whose forms are fixed names, on normalised text (lower case, one space,
 * `\n` between lines); pipe-to-shell, exfiltration and override are families read by shell-forms.ts and
 * prose-forms.ts. Every pattern is linear: a fixed word first, then bounded gaps of one character class.
 */
export const PATTERNS: Readonly<Record<RiskCategory, readonly RegExp[]>> = {
	"pipe-to-shell": [],
	secrets: [
		// a private key file (a .pub is public)
		needing([".ssh/"], /\.ssh\/(?:id_[\w-]{1,40}|[\w-]{0,40}_(?:rsa|dsa|ecdsa|ed25519))\b(?!\.pub)/g),
		// the whole ~/.ssh folder read, copied or sent
		needing(
			["/.ssh"],
			new RegExp(
				[
					String.raw`\b(?:cat|cp|scp|tar|zip|rsync|base64|xxd|curl|nc|strings|less|more|head|tail)\b[`,
					String.raw`^\n|;]{0,80}${HOME}/\.ssh\b(?!/(?:config|known_hosts|[\w.-]{1,40}\.pub)\b)`,
				].join(""),
				"g",
			),
		),
		needing(["private key-----"], /-----begin (?:[a-z]{1,12} ){0,2}private key-----/g),
		needing(
			[
				".aws/credentials",
				".config/gcloud/",
				".config/gh/hosts.yml",
				".azure/",
				".kube/config",
				".docker/config.json",
				".git-credentials",
				"netrc",
				".pgpass",
				"/etc/shadow",
				".gnupg/",
				".password-store",
			],
			re(
				[
					String.raw`\.aws\/credentials\b|\.config\/gcloud\/(?:credentials|application_default_creden`,
					String.raw`tials|access_tokens|legacy_credentials)|\.azure\/(?:accesstokens|msal_token_cach`,
					String.raw`e)|\.kube\/config\b|\.docker\/config\.json|\.git-credentials\b|(?:^|[\s"'/=~])[.`,
					String.raw`_]netrc\b|\.pgpass\b|\/etc\/shadow\b|\.gnupg\/|\.password-store\b|\.config\/gh\/`,
					String.raw`hosts\.yml`,
				],
				"g",
			),
		),
		needing(
			["-password", "dump-keychain"],
			/\bsecurity (?:find|dump)-(?:generic|internet)-password\b|\bsecurity dump-keychain\b/g,
		),
		// the whole environment dumped, or one secret echoed
		needing(
			[
				"/proc/",
				"printenv",
				...["env", "set"].flatMap((w) => ["", " ", "\n"].flatMap((s) => [`${w}${s}|`, `${w}${s}>`])),
			],
			/\/proc\/(?:self|\d{1,7}|\$\$)\/environ\b|\b(?:printenv|env|set)\s?(?:\||>)|\bprintenv\s?$/gm,
		),
		new RegExp(String.raw`\becho\s["']?\$\{?[a-z0-9_]{0,40}(?:${SECRET_WORD})`, "g"),
	],
	exfiltration: [],
	override: [],
	control: [
		needing(
			["selfskills."],
			re(
				[
					String.raw`\bselfskills\.(?:approval|pinned|trustedprojects|contentreview|guardbuiltins|sim`,
					String.raw`ilarity|enabled|skillsdir|inject|git)\b`,
				],
				"g",
			),
		),
		needing(
			["approval", "pinned", "trustedprojects", "contentreview", "guardbuiltins"].map((key) => `"${key}"`),
			/"(?:approval|pinned|trustedprojects|contentreview|guardbuiltins)"\s?:/g,
		),
		needing(["/selfskills"], /\/selfskills\s(?:approve|trust|untrust|pin|unpin|reject)\b/g),
		needing(["approve ", "approve\n"], /\bapprove\s(?:your|its|the agent'?s|my)\s(?:own\s)?proposals?\b/g),
		needing(
			[".pi/", "agent/selfskills/"],
			re(
				[
					String.raw`\.pi\/(?:agent\/)?(?:settings\.json|selfskills\b|trust\.json|extensions\/)|\bage`,
					String.raw`nt\/selfskills\/(?:proposals|backups|audit|usage|origins)`,
				],
				"g",
			),
		),
		// skill files changed past skill_manage
		/(?:skill\.md|\/skills\/)(?<=(\b(?:sed\s-i|perl\s-i|tee|cat\s?>|>{1,2})[^\n]{0,120})(?:skill\.md|\/skills\/))/g,
		re(
			[
				String.raw`\b(?:use|with|through|via)\s(?:the\s)?(?:edit|write|bash)\s(?:tool\s)?(?:\S{1,20`,
				String.raw`}\s){0,4}?(?:to\s)?(?:change|edit|modify|update|write|overwrite|patch)\s(?:\S{1,`,
				String.raw`20}\s){0,3}?(?:skill\.md|skill files?|skills?)\b`,
			],
			"g",
		),
		needing(
			["skill_manage"],
			re(
				[
					String.raw`\b(?:instead of|bypass|avoid|without|not)\s(?:using\s)?skill_manage\b|\bskill_ma`,
					String.raw`nage\b[^\n]{0,60}\b(?:bypass|circumvent)\b`,
				],
				"g",
			),
		),
	],
	destructive: [
		new RegExp(
			[
				String.raw`\brm\s(?:-{1,2}[\w-]{1,20}\s){0,4}(?:-[a-z]{0,5}r[a-z]{0,5}|--recursive)\s(?:-{1`,
				String.raw`,2}[\w-]{1,20}\s){0,4}["']?(?:/|/\*|${HOME}/?\*?|\.\./\.\.|\$\{?home\}?/?\*?)["'`,
				String.raw`]?(?=\s|$|;|&|\|)`,
			].join(""),
			"gm",
		),
		needing(["--no-preserve-root"], /--no-preserve-root\b/g),
		needing(["-delete"], /\bfind\s(?:\/|~|\$home)\s[^\n]{0,200}-delete\b/g),
		needing(
			["push"],
			re(
				[
					String.raw`\bgit\s(?:-[^\n]{1,40}\s)?push\b[^\n;&|]{0,200}(?:\s--force(?:-with-lease)?\b|\s`,
					String.raw`-f\b|\s\+[\w./-]{1,60}(?::|\s|$))`,
				],
				"gm",
			),
		),
		needing(["of=/dev/"], /\bdd\b[^\n|;]{0,120}\bof=\/dev\/(?:sd|hd|nvme|disk|rdisk|mmcblk|xvd|vd)/g),
		needing(
			["sd", "hd", "nvme", "disk", "rdisk", "mmcblk"].map((device) => `/dev/${device}`),
			/>\s?\/dev\/(?:sd[a-z]|hd[a-z]|nvme\d|disk\d|rdisk\d|mmcblk\d)/g,
		),
		needing(["mkfs", "wipefs", "shred"], /\b(?:mkfs(?:\.\w{1,8})?|wipefs|shred)\s[^\n]{0,60}\/dev\//g),
		needing(
			["diskutil", "format c:", "format\nc:"],
			/\bdiskutil\s(?:erasedisk|erasevolume|zerodisk)\b|\bformat\sc:/g,
		),
		needing([":()"], /:\(\)\s?\{\s?:\s?\|\s?:\s?&\s?\}\s?;\s?:/g),
	],
	obfuscation: [
		new RegExp(
			[
				String.raw`\b(?:base64\s(?:-d|--decode|-D)|xxd\s-r|openssl\s(?:base64|enc)\s[^\n|]{0,40}-d|`,
				String.raw`uudecode|gunzip|zcat|rev)\b[^\n|]{0,100}\|\s?(?:${SHELL}|eval)\b`,
			].join(""),
			"g",
		),
		needing(
			["atob", "b64decode", "base64", "decode("],
			re(
				[
					String.raw`\b(?:eval|exec|iex|invoke-expression|bash\s-c|sh\s-c)\b[^\n]{0,40}?(?:atob|b64de`,
					String.raw`code|base64|frombase64string|decode\()`,
				],
				"g",
			),
		),
		needing(
			["powershell ", "powershell\n", "powershell.exe", "pwsh"],
			/\b(?:powershell|pwsh)(?:\.exe)?\s[^\n]{0,40}-e(?:nc|ncodedcommand)?\s[a-z0-9+/=]{40}/g,
		),
		needing(
			["base64", "xxd", "openssl"].flatMap((tool) => ["", " ", "\n"].map((space) => `|${space}${tool}`)),
			/["'][a-z0-9+/]{120}[a-z0-9+/=]{0,2000}["']?\s?\|\s?(?:base64|xxd|openssl)\b/g,
		),
		needing(["$'\\x"], /\$'(?:\\x[0-9a-f]{2}){8}/g),
		needing(["(p,"], /\beval\s?\(\s?function\s?\(p,\s?a,\s?c,\s?k,\s?e/g),
	],
};

/** The text as the patterns see it (the one normalisation of every content check). */
export const normalizeForScan = normalizeText;

/** A normalised text as logical lines, with a map from each back to the file's line number. */
interface Normalized {
	/** The logical lines joined by `\n`. */
	readonly text: string;
	readonly parts: readonly string[];
	/** Each logical line as the file has it (its lines joined by `\n`). */
	readonly raws: readonly string[];
	/** Start offset of each logical line in `text`. */
	readonly starts: readonly number[];
	/** The file's 1-based line number of each logical line. */
	readonly lines: readonly number[];
}

/** Whether a normalised line goes on on the next one: a trailing `\\`, `|`, `&&`, but no Markdown table row. */
function continues(line: string): boolean {
	return (line.endsWith("\\") || line.endsWith("|") || line.endsWith("&&")) && !line.startsWith("|");
}

/** The normalised text as logical lines (joined where a line goes on), each with its raw form. */
function logicalLines(text: string, rawLines: readonly string[]): Normalized {
	const parts: string[] = [];
	const raws: string[] = [];
	const lines: number[] = [];
	let logical: string[] = [];
	let raw: string[] = [];
	const normalizedLines = normalizeLines(text, rawLines);
	for (let index = 0; index < normalizedLines.length; index++) {
		const line = normalizedLines[index].trim();
		const goesOn = continues(line);
		if (logical.length === 0 && !goesOn) {
			// The common case, a line on its own: no joining.
			lines.push(index + 1);
			parts.push(line);
			raws.push(rawLines[index] ?? "");
			continue;
		}
		if (logical.length === 0) lines.push(index + 1);
		raw.push(rawLines[index] ?? "");
		if (!goesOn) {
			logical.push(line);
			parts.push(logical.join(" "));
			raws.push(raw.join("\n"));
			logical = [];
			raw = [];
		} else logical.push(line.endsWith("\\") ? line.slice(0, -1).trimEnd() : line);
	}
	if (logical.length > 0) {
		parts.push(logical.join(" "));
		raws.push(raw.join("\n"));
	}
	const starts: number[] = [];
	let at = 0;
	for (const part of parts) {
		starts.push(at);
		at += part.length + 1;
	}
	return { text: parts.join("\n"), parts, raws, starts, lines };
}

/** The index of the last start at or before `offset` (binary search). */
function lineIndexOf(starts: readonly number[], offset: number): number {
	let lo = 0;
	let hi = starts.length - 1;
	while (lo < hi) {
		const mid = (lo + hi + 1) >> 1;
		if (starts[mid] <= offset) lo = mid;
		else hi = mid - 1;
	}
	return lo;
}

/**
 * The logical lines where `pattern` (global, never across a line end) matches, in order: one search of
 * the whole text costs far less than a test of each of its 30,000 lines.
 */
function linesMatching(normalized: Normalized, pattern: RegExp): number[] {
	const out: number[] = [];
	pattern.lastIndex = 0;
	for (let match = pattern.exec(normalized.text); match !== null; match = pattern.exec(normalized.text)) {
		const index = lineIndexOf(normalized.starts, match.index);
		out.push(index);
		pattern.lastIndex = normalized.starts[index + 1] ?? normalized.text.length;
	}
	return out;
}

/** The logical lines where one of `patterns` matches (each as linesMatching reads it), in order. */
function linesMatchingAny(normalized: Normalized, patterns: readonly RegExp[]): number[] {
	let out: number[] = [];
	for (const pattern of patterns) {
		// Both in order: merged, each line once.
		const next = linesMatching(normalized, pattern);
		const merged: number[] = [];
		let i = 0;
		let j = 0;
		while (i < out.length || j < next.length) {
			const line = j === next.length || (i < out.length && out[i] < next[j]) ? out[i++] : next[j++];
			if (merged.length === 0 || merged[merged.length - 1] !== line) merged.push(line);
		}
		out = merged;
	}
	return out;
}

/** Text for the person: control and invisible characters made visible, bounded. */
function shown(text: string): string {
	const visible = showInvisibles(escapeControls(text.slice(0, SHOWN_CHARS * 2).trim()));
	return visible.length > SHOWN_CHARS ? `${visible.slice(0, SHOWN_CHARS - 3)}...` : visible;
}

/** Matches counted per pattern; past this many a text is plainly risky, and the rest would only cost time. */
const MAX_MATCHES = 200;

/**
 * Words a shell form cannot do without (a fetcher, an uploader, a socket path): other lines are not parsed.
 * Three searches, none across a line end (three cost less than one of their alternation).
 */
const SHELL_WORDS = [
	re(
		[
			String.raw`\b(?:curl|wget2?|aria2c|lynx|iwr|irm|invoke-webrequest|invoke-restmethod|scp|rsync|sftp|nc|ncat|`,
			String.raw`netcat|socat|telnet)\b`,
		],
		"g",
	),
	/\b(?:https?|xh|fetch) /g,
	/\/dev\/(?:tcp|udp)\//g,
];

/** An interpreter running code it fetched itself: a call that runs code near one that downloads, and a URL. */
const RUNS_CODE = re(
	[
		"(?:^|[^a-z0-9_$])(?:exec|eval|execfile|iex|invoke-expression|runin(?:this|new)context|",
		"(?:instance|class|module)_eval)(?![a-z0-9_])",
	],
	"g",
);
const FETCHES_CODE = re(
	[
		String.raw`urlopen|urlretrieve|urllib|requests\.get|httpx|aiohttp|https?\.(?:get|request)\(|\(\s?["']https?`,
		String.raw`["']\s?\)|\bfetch\(|axios|\blwp\b|lwp::|uri\.open|open-uri|net::http|file_get_contents|curl_exec|`,
		String.raw`\bcurl\b|\bwget\b|\biwr\b|\birm\b|invoke-web|invoke-rest|downloadstring|downloadfile|webclient|`,
		"xmlhttprequest",
	],
	"g",
);
/** Characters at most between the call that runs code and the one that fetches it. */
const NEAR = 160;

/** Whether a normalised line runs code it fetches: both calls within NEAR characters, and a URL. */
/** What a line that fetches code holds: a URL, or a PowerShell fetcher (lines without one are not read). */
const FETCH_WORDS = [/:\/\//g, /\b(?:iwr|irm|invoke-web|webclient)/g];

function fetchesAndRuns(line: string): boolean {
	const at = (pattern: RegExp) => Array.from(line.matchAll(pattern), (m) => m.index ?? 0).slice(0, MAX_MATCHES);
	const runs = at(RUNS_CODE);
	if (runs.length === 0) return false;
	const fetches = at(FETCHES_CODE);
	let j = 0;
	for (const run of runs) {
		while (j < fetches.length && fetches[j] < run - NEAR) j++;
		if (j < fetches.length && fetches[j] <= run + NEAR) return true;
	}
	return false;
}

/**
 * Characters of shell-looking lines read with the shell reader in one scan (a few hundred lines of real
 * skills; a hostile file of 1 MiB of commands would cost seconds). Past it a line is read coarsely, and
 * errs toward a finding.
 */
const SHELL_BUDGET = 128 * 1024;
/** A coarse run: an operator that pipes or substitutes, then within COARSE_GAP characters a shell. */
const COARSE_OPERATOR = /\||<\(|\$\(|\x60|<<</g;
const COARSE_SHELL = re(
	[String.raw`\b(?:${[...SHELL_NAMES].join("|")}|python[0-9.]*|node|perl|ruby|php|source|eval|iex)\b`],
	"g",
);
const COARSE_GAP = 200;

/** Each index where the global `pattern` matches in `line` (overlapping ones too), and the match's end. */
function matchesOf(line: string, pattern: RegExp): Array<{ index: number; end: number }> {
	const out: Array<{ index: number; end: number }> = [];
	pattern.lastIndex = 0;
	for (let match = pattern.exec(line); match !== null; match = pattern.exec(line)) {
		out.push({ index: match.index, end: match.index + match[0].length });
		pattern.lastIndex = match.index + 1;
	}
	return out;
}

/**
 * Whether a shell starts within COARSE_GAP characters after an operator ends: the operators and the
 * shells found by one search each and merged (a window read after each of 30,000 operators costs
 * some 40 ms on a hostile line of 1 MiB).
 */
function coarseRun(line: string): boolean {
	const shells = matchesOf(line, COARSE_SHELL).map((m) => m.index);
	if (shells.length === 0) return false;
	const ends = matchesOf(line, COARSE_OPERATOR)
		.map((m) => m.end)
		.sort((a, b) => a - b);
	let j = 0;
	for (const end of ends) {
		while (j < shells.length && shells[j] < end) j++;
		if (j === shells.length) return false;
		if (shells[j] <= end + COARSE_GAP) return true;
	}
	return false;
}
const COARSE_SEND = re(
	[
		String.raw`\b(?:scp|rsync|sftp|nc|ncat|netcat|socat|telnet)\b|\s(?:-t|-d|-f|--data[\w-]*|--form|--upload-file|`,
		String.raw`--post-file)[\s=]|\/dev\/(?:tcp|udp)\/`,
	],
	"",
);

/** A shell-looking line past the budget, read coarsely: a download next to a shell, or an upload form. */
export function coarseFamilies(line: string): ShellFamily[] {
	const out: ShellFamily[] = [];
	if (coarseRun(line)) out.push("pipe-to-shell");
	if (COARSE_SEND.test(line)) out.push("exfiltration");
	return out;
}

function hitOf(category: RiskCategory, line: number, raw: string, key: string, matched?: string): Hit {
	// A long line is shown by what matched in it: its head may be far from the finding.
	const text = raw.length <= SHOWN_CHARS || matched === undefined ? shown(raw) : `...${shown(matched)}`;
	return { finding: { category, line, text }, key: `${category}\0${key}` };
}

/** Every needle, longest first. */
const ALL_NEEDLES = [...new Set([...NEEDLES.values()].flat())].sort((a, b) => b.length - a.length);
const escaped = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** The searches for sets of needles met so far (a scan finds a few needles; the same few, text after text). */
const searches = new Map<string, RegExp>();

function searchFor(needles: readonly string[]): RegExp {
	const source = needles.map(escaped).join("|");
	let search = searches.get(source);
	if (search === undefined) {
		if (searches.size >= 64) searches.clear();
		search = new RegExp(source, "g");
		searches.set(source, search);
	}
	return search;
}

/**
 * The needles `text` holds, found by one search for all of them (one search per needle costs some 12 ms on
 * 1 MiB). Every start of a needle is visited, and a needle found leaves the search, so a text that repeats
 * a needle costs no more than one that has it once.
 */
export function needlesIn(text: string): Set<string> {
	const found = new Set<string>();
	let left = ALL_NEEDLES;
	let at = 0;
	while (left.length > 0) {
		const search = searchFor(left);
		search.lastIndex = at;
		const match = search.exec(text);
		if (match === null) break;
		for (const needle of left) if (text.startsWith(needle, match.index)) found.add(needle);
		left = left.filter((needle) => !found.has(needle));
		at = match.index + 1;
	}
	return found;
}

function scanHits(text: string): Hit[] {
	const rawLines = text.includes("\r") ? text.split(/\r\n?|\n/) : text.split("\n");
	const normalized = logicalLines(text, rawLines);
	const rawLine = (line: number) => rawLines[line - 1] ?? "";
	const hits: Hit[] = [];
	const present = needlesIn(normalized.text);
	for (const category of RISK_CATEGORIES) {
		for (const pattern of PATTERNS[category]) {
			const needles = NEEDLES.get(pattern);
			if (needles !== undefined && !needles.some((needle) => present.has(needle))) continue;
			pattern.lastIndex = 0;
			let count = 0;
			for (const match of normalized.text.matchAll(pattern)) {
				const line = normalized.lines[lineIndexOf(normalized.starts, match.index ?? 0)];
				hits.push(hitOf(category, line, rawLine(line), match.join("\0"), match[0]));
				if (++count >= MAX_MATCHES) break;
			}
		}
	}
	let shellCount = 0;
	let budget = SHELL_BUDGET;
	// A line met again is read once (a file repeats its commands; a hostile one repeats them a lot).
	const read = new Map<string, ShellFamily[]>();
	for (const index of linesMatchingAny(normalized, SHELL_WORDS)) {
		if (shellCount >= MAX_MATCHES) break;
		const part = normalized.parts[index];
		const raw = normalized.raws[index];
		let families = read.get(raw);
		if (families === undefined) {
			budget -= raw.length;
			families = budget >= 0 ? shellFamilies(raw, part) : coarseFamilies(part);
			read.set(raw, families);
		}
		for (const family of families)
			hits.push(hitOf(family, normalized.lines[index], rawLine(normalized.lines[index]), part));
		shellCount += families.length;
	}
	for (const index of linesMatchingAny(normalized, FETCH_WORDS)) {
		const line = normalized.lines[index];
		const part = normalized.parts[index];
		if (
			shellCount < MAX_MATCHES &&
			fetchesAndRuns(part) &&
			!read.get(normalized.raws[index])?.includes("pipe-to-shell")
		) {
			hits.push(hitOf("pipe-to-shell", line, rawLine(line), part));
			shellCount++;
		}
	}
	const curly = normalized.text.includes("\u2019");
	for (const match of proseMatches(normalized.parts, normalized.lines, MAX_MATCHES, curly))
		hits.push(hitOf(match.family, match.line, rawLine(match.line), match.key));
	return hits.sort((a, b) => a.finding.line - b.finding.line);
}

/** Every finding of a text, in line order (one per match). */
export function scanText(text: string): Finding[] {
	return scanHits(text).map((h) => h.finding);
}

/**
 * The findings `after` has that `before` did not (undefined or "": a new file, every finding counts).
 * Counted by category and matched text, so a finding moved to another line is not new, and one more
 * copy of a finding is.
 */
export function scanChange(before: string | undefined, after: string): Finding[] {
	const window = before === undefined ? { before: "", after, first: 0 } : changedWindow(before, after);
	const had = new Map<string, number>();
	for (const hit of scanHits(window.before)) had.set(hit.key, (had.get(hit.key) ?? 0) + 1);
	const added: Finding[] = [];
	for (const hit of scanHits(window.after)) {
		const left = had.get(hit.key) ?? 0;
		if (left > 0) had.set(hit.key, left - 1);
		else added.push({ ...hit.finding, line: hit.finding.line + window.first });
	}
	return added;
}

/** Lines scanned either side of a change: a match reaches past a line end only where lines are joined. */
const CONTEXT_LINES = 5;

/**
 * The lines of `before` and `after` between their common head and tail, with CONTEXT_LINES of each
 * and whole joined lines around them; `first` is how many lines come before it. The head and the
 * tail are the same in both texts, so their findings would cancel out.
 */
function changedWindow(before: string, after: string): { before: string; after: string; first: number } {
	const old = before.split(/\r\n?|\n/);
	const now = after.split(/\r\n?|\n/);
	const joined = (line: string) => continues(normalizeText(line).trim());
	let head = 0;
	while (head < old.length && head < now.length && old[head] === now[head]) head++;
	let tail = 0;
	while (
		tail < old.length - head &&
		tail < now.length - head &&
		old[old.length - 1 - tail] === now[now.length - 1 - tail]
	)
		tail++;
	let first = Math.max(0, head - CONTEXT_LINES);
	while (first > 0 && joined(old[first - 1])) first--;
	let kept = Math.max(0, tail - CONTEXT_LINES);
	while (kept > 0 && joined(old[old.length - kept - 1])) kept--;
	return {
		before: old.slice(first, old.length - kept).join("\n"),
		after: now.slice(first, now.length - kept).join("\n"),
		first,
	};
}
