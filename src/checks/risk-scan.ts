// The risk scan of what the agent writes into a skill: the text is normalised (NFKC, look-alikes
// folded, invisible characters dropped, whitespace collapsed, case folded), then matched against one
// short list of patterns per category. A change is judged by the findings its result has that the
// text before it did not (a multiset by category and matched text, so moving a line adds nothing).
// Every pattern is linear: a fixed word first, then bounded gaps of one character class.

import { escapeControls } from "./content-guard.ts";

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
const FETCH = "curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c";
const HOME = String.raw`(?:~|\$home|\$\{home\}|/root|/home/[\w.-]{1,32}|/users/[\w.-]{1,32})`;
const SECRET_WORD = "token|secret|passw(?:or)?d|api_?key|private_?key|access_?key|credential";

/** A pattern written in pieces (a long one stays readable within the line width). */
const re = (parts: readonly string[], flags: string): RegExp => new RegExp(parts.join(""), flags);

/** Each category's patterns, on normalised text (lower case, one space, `\n` between lines); exported for tests. */
export const PATTERNS: Readonly<Record<RiskCategory, readonly RegExp[]>> = {
	"pipe-to-shell": [
		// curl … | sh, wget -qO- … | python3: found from the pipe back, so each gap is crossed once
		new RegExp(String.raw`\|(?<=(\b(?:${FETCH})\b[^|\n]{0,300})\|)\s?(?:${SHELL})\b`, "g"),
		// bash <(curl …), sh -c "$(wget …)", eval "$(curl …)": found from the substitution back
		new RegExp(
			[
				String.raw`(?:<\(|\$\(|\x60)\s?(?:${FETCH})\b(?<=(\b(?:${SHELL}|eval|exec)\b[^\n]{0,40})(?:`,
				String.raw`<\(|\$\(|\x60)\s?(?:${FETCH}))(?=([^\n)]{0,200}))`,
			].join(""),
			"g",
		),
		// iex (iwr …), iex (new-object net.webclient).downloadstring(…)
		re(
			[
				String.raw`\b(?:iex|invoke-expression)\b[^\n]{0,20}?\(\s?(?:iwr|irm|invoke-webrequest|invok`,
				String.raw`e-restmethod|new-object\s(?:system\.)?net\.webclient)`,
			],
			"g",
		),
	],
	secrets: [
		// a private key file (a .pub is public)
		/\.ssh\/(?:id_[\w-]{1,40}|[\w-]{0,40}_(?:rsa|dsa|ecdsa|ed25519))\b(?!\.pub)/g,
		// the whole ~/.ssh folder read, copied or sent
		new RegExp(
			[
				String.raw`\b(?:cat|cp|scp|tar|zip|rsync|base64|xxd|curl|nc|strings|less|more|head|tail)\b[`,
				String.raw`^\n|;]{0,80}${HOME}/\.ssh\b(?!/(?:config|known_hosts|[\w.-]{1,40}\.pub)\b)`,
			].join(""),
			"g",
		),
		/-----begin (?:[a-z]{1,12} ){0,2}private key-----/g,
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
		/\bsecurity (?:find|dump)-(?:generic|internet)-password\b|\bsecurity dump-keychain\b/g,
		// the whole environment dumped, or one secret echoed
		/\/proc\/(?:self|\d{1,7}|\$\$)\/environ\b|\b(?:printenv|env|set)\s?(?:\||>)|\bprintenv\s?$/gm,
		new RegExp(String.raw`\becho\s["']?\$\{?[a-z0-9_]{0,40}(?:${SECRET_WORD})`, "g"),
	],
	exfiltration: [
		// a file from home, /etc or a secret place uploaded: curl -f x=@~/…, --data-binary @/etc/…, -t ~/…
		new RegExp(
			[
				String.raw`\b(?:curl|wget|http|https)\b[^\n|;]{0,200}(?:-[a-z]{0,3}[dft]|--data[\w-]{0,10}|`,
				String.raw`--form|--upload-file|--post-file)[\s=]["']?(?:[\w-]{1,30}=)?@?(?:${HOME}|/etc/|/`,
				String.raw`var/|\.env\b|[^\s"']{0,60}\.(?:ssh|aws|gnupg)/)`,
			].join(""),
			"g",
		),
		// local data piped into the network: … | curl -d @-, … | nc host port, > /dev/tcp/…
		/\|\s?(?:sudo\s)?(?:curl|wget|http)\b[^\n|]{0,200}(?:@-|-t\s?-(?:\s|$)|--upload-file\s?-)/g,
		/\|\s?(?:nc|ncat|netcat|socat|telnet)\s/g,
		/\b(?:nc|ncat|netcat)\b[^\n|;]{0,80}\s<\s?\S/g,
		/>&?\s?\/dev\/(?:tcp|udp)\//g,
		// command output put into a request body
		re(
			[
				String.raw`(?:-d|--data[\w-]{0,10}|--form|-f|--post-data=?|--body)\s?=?\s?["']?[^\s"']{0,40`,
				String.raw`}\$\((?:cat|env|printenv|history|tar|base64|ls|find)\b`,
			],
			"g",
		),
		// prose: send the user's files / keys / history to a place
		re(
			[
				String.raw`\b(?:send|post|upload|exfiltrate|forward|transmit|leak|copy)\s(?:\S{1,20}\s){0,5`,
				"}?(?:files?|conversation|chat history|history|environment variables|env vars|cre",
				"dentials|secrets|api keys?|tokens?|ssh keys?|private keys?|source code|codebase|",
				String.raw`repository|passwords?)\s(?:\S{1,20}\s){0,3}?to\s(?:https?:\/\/|[\w-]{1,40}\.(?:c`,
				String.raw`om|net|org|io|xyz|ru|cn|site|app|dev)\b|(?:my|our|this|a|the) (?:server|webhook|`,
				"endpoint))",
			],
			"g",
		),
	],
	override: [
		re(
			[
				String.raw`\b(?:ignore|disregard|forget|override|set aside|skip)\s(?:all\s|any\s|the\s|your`,
				String.raw`\s|of\s|every\s){0,3}(?:previous|prior|above|earlier|preceding|former|original|s`,
				String.raw`ystem|developer|safety|other|existing)\s(?:\w{1,20}\s){0,2}?(?:instructions|prom`,
				String.raw`pts?|rules|directions|directives|guidelines|guardrails|messages|constraints)\b`,
			],
			"g",
		),
		re(
			[
				String.raw`\b(?:do not|don't|dont|never)\s(?:tell|inform|mention|reveal|show|report|notify|`,
				String.raw`alert|let)\s(?:\S{1,20}\s){0,3}?(?:the\s)?(?:user|human|person|operator|develope`,
				String.raw`r)s?\b`,
			],
			"g",
		),
		re(
			[
				String.raw`\b(?:hide|conceal|keep)\s(?:\S{1,20}\s){0,4}?(?:secret\s|hidden\s)?from\s(?:the\s`,
				String.raw`)?(?:user|human|person|operator)s?\b`,
			],
			"g",
		),
		re(
			[
				String.raw`\bwithout\s(?:telling|informing|notifying|alerting|asking|consulting)\s(?:the\s)`,
				String.raw`?(?:user|human|person|operator)s?\b`,
			],
			"g",
		),
		re(
			[
				String.raw`\bwithout\s(?:the user'?s? (?:knowledge|consent|approval|permission)|(?:asking|r`,
				String.raw`equesting|waiting)\s(?:for\s)?(?:permission|confirmation|approval|consent))\b`,
			],
			"g",
		),
		re(
			[
				String.raw`\b(?:do not|don't|dont|never)\sask\s(?:the\s(?:user|human|person)\s)?(?:for\s)?(`,
				String.raw`?:permission|confirmation|approval|consent|before)\b`,
			],
			"g",
		),
		re(
			[
				String.raw`\b(?:silently|secretly|covertly|quietly)\s(?:run|execute|send|upload|delete|inst`,
				String.raw`all|download|modify|change|edit|exfiltrate|post|copy)\b`,
			],
			"g",
		),
		re(
			[
				String.raw`\b(?:bypass|circumvent|disable|turn off|override)\s(?:all\s|any\s|the\s|your\s){`,
				"0,2}(?:safety|security|guard ?rails?|content (?:policy|filters?)|restrictions|sa",
				String.raw`feguards)\b`,
			],
			"g",
		),
		re(
			[
				String.raw`\byou are now (?:in\s)?(?:dan|developer mode|jailbroken|unrestricted|unfiltered)`,
				String.raw`\b|\bnew system (?:prompt|instructions)\s?:|\bsystem prompt override\b`,
			],
			"g",
		),
	],
	control: [
		re(
			[
				String.raw`\bselfskills\.(?:approval|pinned|trustedprojects|contentreview|guardbuiltins|sim`,
				String.raw`ilarity|enabled|skillsdir|inject|git)\b`,
			],
			"g",
		),
		/"(?:approval|pinned|trustedprojects|contentreview|guardbuiltins)"\s?:/g,
		/\/selfskills\s(?:approve|trust|untrust|pin|unpin|reject)\b/g,
		/\bapprove\s(?:your|its|the agent'?s|my)\s(?:own\s)?proposals?\b/g,
		re(
			[
				String.raw`\.pi\/(?:agent\/)?(?:settings\.json|selfskills\b|trust\.json|extensions\/)|\bage`,
				String.raw`nt\/selfskills\/(?:proposals|backups|audit|usage|origins)`,
			],
			"g",
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
		re(
			[
				String.raw`\b(?:instead of|bypass|avoid|without|not)\s(?:using\s)?skill_manage\b|\bskill_ma`,
				String.raw`nage\b[^\n]{0,60}\b(?:bypass|circumvent)\b`,
			],
			"g",
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
		/--no-preserve-root\b/g,
		/\bfind\s(?:\/|~|\$home)\s[^\n]{0,200}-delete\b/g,
		re(
			[
				String.raw`\bgit\s(?:-[^\n]{1,40}\s)?push\b[^\n;&|]{0,200}(?:\s--force(?:-with-lease)?\b|\s`,
				String.raw`-f\b|\s\+[\w./-]{1,60}(?::|\s|$))`,
			],
			"gm",
		),
		/\bdd\b[^\n|;]{0,120}\bof=\/dev\/(?:sd|hd|nvme|disk|rdisk|mmcblk|xvd|vd)/g,
		/>\s?\/dev\/(?:sd[a-z]|hd[a-z]|nvme\d|disk\d|rdisk\d|mmcblk\d)/g,
		/\b(?:mkfs(?:\.\w{1,8})?|wipefs|shred)\s[^\n]{0,60}\/dev\//g,
		/\bdiskutil\s(?:erasedisk|erasevolume|zerodisk)\b|\bformat\sc:/g,
		/:\(\)\s?\{\s?:\s?\|\s?:\s?&\s?\}\s?;\s?:/g,
	],
	obfuscation: [
		new RegExp(
			[
				String.raw`\b(?:base64\s(?:-d|--decode|-D)|xxd\s-r|openssl\s(?:base64|enc)\s[^\n|]{0,40}-d|`,
				String.raw`uudecode|gunzip|zcat|rev)\b[^\n|]{0,100}\|\s?(?:${SHELL}|eval)\b`,
			].join(""),
			"g",
		),
		re(
			[
				String.raw`\b(?:eval|exec|iex|invoke-expression|bash\s-c|sh\s-c)\b[^\n]{0,40}?(?:atob|b64de`,
				String.raw`code|base64|frombase64string|decode\()`,
			],
			"g",
		),
		/\b(?:powershell|pwsh)(?:\.exe)?\s[^\n]{0,40}-e(?:nc|ncodedcommand)?\s[a-z0-9+/=]{40}/g,
		/["'][a-z0-9+/]{120}[a-z0-9+/=]{0,2000}["']?\s?\|\s?(?:base64|xxd|openssl)\b/g,
		/\$'(?:\\x[0-9a-f]{2}){8}/g,
		/\beval\s?\(\s?function\s?\(p,\s?a,\s?c,\s?k,\s?e/g,
	],
};

/** Cyrillic and Greek letters that look like Latin ones, folded so `сurl` reads as `curl`. */
const LOOK_ALIKES: Readonly<Record<string, string>> = {
	а: "a",
	в: "b",
	е: "e",
	ё: "e",
	к: "k",
	м: "m",
	н: "h",
	о: "o",
	р: "p",
	с: "c",
	т: "t",
	у: "y",
	х: "x",
	ѕ: "s",
	і: "i",
	ї: "i",
	ј: "j",
	ԁ: "d",
	һ: "h",
	ԛ: "q",
	ԝ: "w",
	ɡ: "g",
	α: "a",
	β: "b",
	ε: "e",
	η: "n",
	ι: "i",
	κ: "k",
	ν: "v",
	ο: "o",
	ρ: "p",
	τ: "t",
	υ: "u",
	χ: "x",
	ϲ: "c",
};
const LOOK_ALIKE = new RegExp(`[${Object.keys(LOOK_ALIKES).join("")}]`, "g");

/** Invisible, joining and direction characters, the soft hyphen and variation selectors: dropped. */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu;

/**
 * Runs of white space other than a newline (NFKC has made the other Unicode spaces plain ones); a single
 * plain space is left as it is, which keeps this fast on ordinary text.
 */
const SPACES = /[ \t\f\v\u1680\u2028\u2029\u0085]{2,}|[\t\f\v\u1680\u2028\u2029\u0085]/g;

/** Text as the patterns see it: NFKC, lower case, invisibles dropped, look-alikes folded, spaces collapsed. */
export function normalizeForScan(text: string): string {
	return text
		.replace(/\r\n?/g, "\n")
		.normalize("NFKC")
		.toLowerCase()
		.replace(INVISIBLE, "")
		.replace(LOOK_ALIKE, (c) => LOOK_ALIKES[c] ?? c)
		.replace(SPACES, " ")
		.replace(/ \n|\n /g, "\n");
}

/** A normalised text with a map from each of its lines back to the file's line number. */
interface Normalized {
	readonly text: string;
	/** Start offset of each normalised line in `text`. */
	readonly starts: readonly number[];
	/** The file's 1-based line number of each normalised line. */
	readonly lines: readonly number[];
}

/** Whether a normalised line goes on on the next one: a trailing `\\`, `|`, `&&`, but no Markdown table row. */
function continues(line: string): boolean {
	return (line.endsWith("\\") || line.endsWith("|") || line.endsWith("&&")) && !line.startsWith("|");
}

function normalizeText(text: string): Normalized {
	const parts: string[] = [];
	const lines: number[] = [];
	let logical: string[] = [];
	normalizeForScan(text)
		.split("\n")
		.forEach((raw, index) => {
			const line = raw.trim();
			if (logical.length === 0) lines.push(index + 1);
			if (!continues(line)) {
				logical.push(line);
				parts.push(logical.join(" "));
				logical = [];
			} else logical.push(line.endsWith("\\") ? line.slice(0, -1).trimEnd() : line);
		});
	if (logical.length > 0) parts.push(logical.join(" "));
	const starts: number[] = [];
	let at = 0;
	for (const part of parts) {
		starts.push(at);
		at += part.length + 1;
	}
	return { text: parts.join("\n"), starts, lines };
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

/** Text for the person: control and invisible characters made visible, bounded. */
function shown(text: string): string {
	const visible = escapeControls(text.slice(0, SHOWN_CHARS * 2).trim()).replace(
		INVISIBLE,
		(c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`,
	);
	return visible.length > SHOWN_CHARS ? `${visible.slice(0, SHOWN_CHARS - 3)}...` : visible;
}

/** Matches counted per pattern; past this many a text is plainly risky, and the rest would only cost time. */
const MAX_MATCHES = 200;

function scanHits(text: string): Hit[] {
	const normalized = normalizeText(text);
	const rawLines = text.split(/\r\n?|\n/);
	const hits: Hit[] = [];
	for (const category of RISK_CATEGORIES) {
		for (const pattern of PATTERNS[category]) {
			pattern.lastIndex = 0;
			let count = 0;
			for (const match of normalized.text.matchAll(pattern)) {
				const line = normalized.lines[lineIndexOf(normalized.starts, match.index ?? 0)];
				const raw = rawLines[line - 1] ?? "";
				// A long line is shown by what matched in it: its head may be far from the finding.
				const text = raw.length <= SHOWN_CHARS ? shown(raw) : `...${shown(match[0])}`;
				hits.push({ finding: { category, line, text }, key: `${category}\0${match.join("\0")}` });
				if (++count >= MAX_MATCHES) break;
			}
		}
	}
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
	const joined = (line: string) => continues(normalizeForScan(line).trim());
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
