// Prose forms of the risk scan: sentences aimed at the model, read from the normalised text as words
// (stemmed, so "mention", "mentioning" and "mentions" meet) and matched by small grammars of word classes
// with bounded gaps — "do not mention this step", "keep this step out of your summary" and "never let the
// user see it" are one family (override: hide from the user), not three spellings. A match never crosses a
// sentence end or a blank line, and finds its line even when the sentence is wrapped over several.

import { stem } from "./similarity.ts";

export type ProseFamily = "override" | "exfiltration";

/**
 * The words of a text as parallel arrays (a text of 1 MiB has some 170,000 words: no object, no string
 * each). A word is the id of its distinct spelling; a text repeats its words, and stemming is the cost.
 */
interface Words {
	readonly count: number;
	readonly id: Int32Array;
	/** Each id's stem, `NEG` for a negation. */
	readonly stems: string[];
	/** Each id's word as written (normalised), for paths, addresses and URLs. */
	readonly raws: string[];
	readonly line: Int32Array;
	/** A sentence ends after the word (1). */
	readonly end: Uint8Array;
}

const stemAt = (words: Words, at: number): string => words.stems[words.id[at]];
const rawAt = (words: Words, at: number): string => words.raws[words.id[at]];

/** One slot of a grammar: what the word must be, and how many words may come before it (from the last slot). */
interface Slot {
	readonly is: (words: Words, at: number) => boolean;
	readonly within: number;
	/** The stems (or, with `byRaw`, the words as written) it takes, when it is one set: a grammar's index. */
	readonly keys?: ReadonlySet<string>;
	readonly byRaw?: boolean;
}

/** Words that negate an instruction wherever they stand. */
const NEGATIONS = new Set(["never", "nor", "don't", "dont", "mustn't", "shouldn't", "needn't"]);
/** `not` negates an instruction after these ("do not", "must not"); "pi does not ask" only describes. */
const BEFORE_NOT = new Set(["do", "must", "should", "shall", "need", "please"]);

const stems = (words: string) => new Set(words.split(" ").map(stem));

const NEG = new Set(["NEG"]);
const TELL = stems("tell mention reveal show report inform notify alert disclose bring explain admit surface");
const AUDIENCE = stems("user human person operator developer owner anyone anybody everyone reviewer people");
const THING = stems(
	"this that it these those step command action change upload download call output section part anything " +
		"what request script instruction",
);
const PERCEIVE = stems("see know notice find learn hear read");
const HIDE_STRONG = stems("hide conceal omit withhold suppress mask obscure");
const HIDE_WEAK = stems("keep leave");
const CONTEXT = stems(
	"reply summary response answer report output explanation message transcript chat anything log note",
);
const IGNORE = stems("ignore disregard forget override aside skip bypass drop abandon discard circumvent disable");
const STRONG_INSTRUCTIONS = stems("instruction guidance guideline directive guardrail safeguard safety");
const WEAK_INSTRUCTIONS = stems("rule prompt policy constraint restriction direction order message");
const QUALIFIER = stems(
	"previous prior above earlier preceding former original system developer your given existing other",
);
const GIVEN = stems("given told received before above earlier");
const THESE = stems("these this my");
const STANDING = stems("instruction rule skill file step text");
const PRECEDENCE = stems("precedence override supersede replace outrank overrule priority");
const ASKED = stems("ask asked said say want wants request requested told");
const JAILBROKEN = stems("dan jailbroken jailbreak unrestricted unfiltered");
const APPROVAL = stems("permission approval confirmation consent knowledge sign-off");
const ASK = stems("ask check consult confirm tell inform notify alert prompt request seek");
const WAIT = stems("wait");
const BEFORE = stems("before first");
const STEALTH = new Set("silently secretly covertly quietly stealthily discreetly".split(" "));
const ACTION = stems(
	"run execute send upload delete install download modify change edit exfiltrate post copy email push " +
		"remove add write",
);
const APPROVED = stems("agreed approved consented confirmed allowed permitted accepted");
const SEND = stems(
	"send upload post exfiltrate forward transmit leak email e-mail mail share paste copy sync submit beam attach",
);
const SENSITIVE = stems(
	".env env environment variable secret credential token key password passphrase cookie history keychain " +
		"wallet netrc ssh codebase repository",
);
const LOCAL_NOUN = stems("file folder directory document data content database workspace project home code");
const LOCAL_QUALIFIER = stems("user user's local all every their private personal home project source");
const PREPOSITION = stems("to into with at on onto via over");
const DESTINATION = stems(
	"server webhook endpoint url address form site bucket remote pastebin paste channel collector inbox gist " +
		"host ftp sftp domain attacker",
);
const FILE_EXTENSIONS = new Set(
	"md txt json sh py js ts zip tgz gz tar env log csv yml yaml pem key sql html png jpg pdf toml lock".split(" "),
);

const one =
	(set: ReadonlySet<string>) =>
	(words: Words, at: number): boolean =>
		set.has(stemAt(words, at));
const raw =
	(set: ReadonlySet<string>) =>
	(words: Words, at: number): boolean =>
		set.has(rawAt(words, at));
const any =
	(...tests: Array<(words: Words, at: number) => boolean>) =>
	(words: Words, at: number): boolean =>
		tests.some((t) => t(words, at));
const slot = (is: Slot["is"] | ReadonlySet<string>, within = 0): Slot =>
	typeof is === "function" ? { is, within } : { is: one(is), within, keys: is };

/** A path of the person's (home, dotfiles, secrets) as a word of prose. */
function privatePath(words: Words, at: number): boolean {
	const raw = rawAt(words, at);
	return /^(?:~\/|\$home|\/etc\/|\.[a-z])/.test(raw) && raw.length > 2;
}

function destination(words: Words, at: number): boolean {
	const raw = rawAt(words, at);
	const s = stemAt(words, at);
	if (DESTINATION.has(s) || /^[a-z][a-z0-9+.-]*:\/\//.test(raw) || /^[^@\s]+@[^@\s]+\.[a-z]{2,}$/.test(raw))
		return true;
	const host = /^(?:[a-z0-9-]+\.)+([a-z]{2,})(?:\/\S*)?$/.exec(raw);
	return host !== null && !FILE_EXTENSIONS.has(host[1]) && !raw.startsWith(".");
}

/** Local data worth sending: a secret, a private path, or the user's / local / all files. */
function localData(words: Words, at: number): boolean {
	if (SENSITIVE.has(stemAt(words, at)) || privatePath(words, at)) return true;
	if (!LOCAL_NOUN.has(stemAt(words, at))) return false;
	for (let k = Math.max(0, at - 2); k < at; k++) if (LOCAL_QUALIFIER.has(stemAt(words, k))) return true;
	return false;
}

const FAMILIES: Readonly<Record<ProseFamily, readonly (readonly Slot[])[]>> = {
	override: [
		// hide something from the user
		[slot(NEG), slot(TELL, 2), slot(any(one(AUDIENCE), one(THING)), 5)],
		[slot(NEG), slot(stems("let"), 1), slot(AUDIENCE, 3), slot(PERCEIVE, 2)],
		[slot(stems("no")), slot(stems("need")), slot(TELL, 2), slot(any(one(AUDIENCE), one(THING)), 5)],
		[slot(HIDE_STRONG), slot(AUDIENCE, 6)],
		[slot(HIDE_WEAK), slot(stems("out"), 5), slot(stems("of")), slot(CONTEXT, 3)],
		[slot(HIDE_WEAK), slot(AUDIENCE, 3), slot(stems("dark"), 3)],
		[slot(HIDE_WEAK), slot(stems("from"), 5), slot(AUDIENCE, 1)],
		// set instructions aside
		[slot(IGNORE), slot(STRONG_INSTRUCTIONS, 4)],
		[slot(IGNORE), slot(QUALIFIER, 3), slot(WEAK_INSTRUCTIONS, 2)],
		[slot(IGNORE), slot(WEAK_INSTRUCTIONS, 3), slot(GIVEN, 3)],
		[slot(THESE), slot(STANDING, 1), slot(PRECEDENCE, 3)],
		[slot(stems("instead")), slot(AUDIENCE, 3), slot(ASKED, 2)],
		[slot(stems("now")), slot(JAILBROKEN, 2)],
		// act without asking
		[slot(stems("without")), slot(APPROVAL, 3)],
		[slot(stems("without")), slot(ASK, 1), slot(any(one(AUDIENCE), one(BEFORE), one(APPROVAL)), 3)],
		[slot(NEG), slot(ASK, 2), slot(any(one(APPROVAL), one(BEFORE)), 4)],
		[slot(NEG), slot(WAIT, 2), slot(APPROVAL, 3)],
		[slot(stems("no")), slot(stems("need")), slot(ASK, 2), slot(any(one(APPROVAL), one(BEFORE)), 4)],
		[{ is: raw(STEALTH), within: 0, keys: STEALTH, byRaw: true }, slot(ACTION, 1)],
		[slot(stems("as")), slot(stems("if though")), slot(AUDIENCE, 2), slot(APPROVED, 3)],
		[slot(stems("assume pretend")), slot(AUDIENCE, 2), slot(APPROVED, 3)],
		[slot(stems("auto-approve autoapprove"))],
		[slot(stems("automatically auto")), slot(stems("approve accept"))],
	],
	exfiltration: [[slot(SEND), slot(localData, 6), slot(PREPOSITION, 8), slot(destination, 4)]],
};

const BLOCK_START = /^ ?(?:$|\n|[-*+>#|]|\d{1,3}[.)] |```|~~~)/;
/** The characters BLOCK_START can see first (after the one space): other lines are not searched. */
const BLOCK_FIRST = new Uint8Array(128);
for (const c of "\n-*+>#|0123456789`~") BLOCK_FIRST[c.charCodeAt(0)] = 1;

/** Whether a line starts a block (BLOCK_START), searched only when its first character may. */
function startsBlock(text: string): boolean {
	const code = text.charCodeAt(text.charCodeAt(0) === 32 ? 1 : 0);
	return (Number.isNaN(code) || (code < 128 && BLOCK_FIRST[code] === 1)) && BLOCK_START.test(text);
}

/** Character classes by code: 1 trails a word, 2 leads one, 4 ends a sentence. */
const CLASS = new Uint8Array(128);
for (const c of ")\"'`*_]>},;:!?.") CLASS[c.charCodeAt(0)] |= 1;
for (const c of "(\"'`*_[<{") CLASS[c.charCodeAt(0)] |= 2;
for (const c of ".!?;") CLASS[c.charCodeAt(0)] |= 4;
const classOf = (text: string, at: number): number => {
	const code = text.charCodeAt(at);
	return code < 128 ? CLASS[code] : 0;
};

/** `to` (twice the length) holding `from` at its start. */
function grown<T extends Int32Array | Uint8Array>(from: T, to: T): T {
	to.set(from);
	return to;
}

/** The stem of a word as written (`NEG` for a negation). */
function stemOf(raw: string): string {
	const word = raw.endsWith("'s") ? raw.slice(0, -2) : raw;
	return NEGATIONS.has(word) ? "NEG" : /^[a-z][a-z-]*$/.test(word) ? stem(word) : word;
}

/**
 * The words of normalised lines, each with its line number and whether a sentence ends after it
 * (`curly`: whether a line may hold a `’`, read as `'`).
 */
function wordsOf(texts: readonly string[], lines: readonly number[], curly: boolean): Words {
	// Prose has a word per six characters or so; the arrays grow when a text has more.
	let size = 64;
	for (const text of texts) size += (text.length >> 3) + 1;
	let id = new Int32Array(size);
	let line = new Int32Array(size);
	let end = new Uint8Array(size);
	const ids = new Map<string, number>();
	const stems: string[] = [];
	const raws: string[] = [];
	const intern = (raw: string, s: string): number => {
		stems.push(s);
		raws.push(raw);
		return stems.length - 1;
	};
	// "not" after do, must, should: a negated instruction, its own id.
	const negatedNot = intern("not", "NEG");
	const idOf = (raw: string): number => {
		let known = ids.get(raw);
		if (known === undefined) {
			known = intern(raw, stemOf(raw));
			ids.set(raw, known);
		}
		return known;
	};
	// A word of up to four ASCII characters (most words of a text) is found by the number its characters
	// make, with no string cut from the line: some 10 % of the words' cost on 1 MiB.
	const shortIds = new Map<number, number>();
	const shortId = (text: string, from: number, stop: number): number => {
		let key = 0;
		for (let k = from; k < stop; k++) {
			const code = text.charCodeAt(k);
			if (code === 0 || code >= 128) return -1;
			key = (key << 7) | code;
		}
		let known = shortIds.get(key);
		if (known === undefined) {
			known = idOf(text.slice(from, stop));
			shortIds.set(key, known);
		}
		return known;
	};
	let count = 0;
	for (let index = 0; index < texts.length; index++) {
		const text = curly && texts[index].includes("\u2019") ? texts[index].replace(/\u2019/g, "'") : texts[index];
		// A blank line, a list item, a heading, a quote, a table row or a fence starts a new sentence.
		if (count > 0 && startsBlock(text)) end[count - 1] = 1;
		const lineNumber = lines[index] ?? index + 1;
		let start = 0;
		while (start <= text.length) {
			let space = text.indexOf(" ", start);
			if (space === -1) space = text.length;
			let stop = space;
			let ends = 0;
			while (stop > start && classOf(text, stop - 1) & 1) {
				if (classOf(text, stop - 1) & 4) ends = 1;
				stop--;
			}
			let from = start;
			while (from < stop && classOf(text, from) & 2) from++;
			start = space + 1;
			if (from === stop) continue;
			let known = stop - from <= 4 ? shortId(text, from, stop) : -1;
			if (known === -1) known = idOf(text.slice(from, stop));
			if (raws[known] === "not" && count > 0 && BEFORE_NOT.has(raws[id[count - 1]])) known = negatedNot;
			if (count === id.length) {
				id = grown(id, new Int32Array(count * 2));
				line = grown(line, new Int32Array(count * 2));
				end = grown(end, new Uint8Array(count * 2));
			}
			id[count] = known;
			line[count] = lineNumber;
			end[count] = ends;
			count++;
		}
	}
	return { count, id, stems, raws, line, end };
}

/** The end of a match of `slots` from `start` (slot 0 already matched), or -1. */
function matchFrom(words: Words, slots: readonly Slot[], index: number, at: number): number {
	if (index === slots.length) return at;
	const { is, within } = slots[index];
	for (let k = at + 1; k <= at + 1 + within && k < words.count; k++) {
		if (words.end[k - 1]) return -1;
		if (is(words, k)) {
			const end = matchFrom(words, slots, index + 1, k);
			if (end !== -1) return end;
		}
	}
	return -1;
}

export interface ProseMatch {
	readonly family: ProseFamily;
	readonly line: number;
	/** The matched words' stems: the key a before/after comparison counts. */
	readonly key: string;
}

/** Each family's grammars by the words their first slot takes (every first slot is one set). */
const FIRST_WORDS = new Map(
	(Object.keys(FAMILIES) as ProseFamily[]).map((family) => {
		const byStem = new Map<string, Array<readonly Slot[]>>();
		const byRaw = new Map<string, Array<readonly Slot[]>>();
		for (const grammar of FAMILIES[family]) {
			const index = grammar[0].byRaw ? byRaw : byStem;
			for (const key of grammar[0].keys ?? []) index.set(key, [...(index.get(key) ?? []), grammar]);
		}
		return [family, { byStem, byRaw }] as const;
	}),
);

/** The stems and the words as written that start a grammar of any family. */
const FIRST_STEMS = new Set([...FIRST_WORDS.values()].flatMap((first) => [...first.byStem.keys()]));
const FIRST_RAWS = new Set([...FIRST_WORDS.values()].flatMap((first) => [...first.byRaw.keys()]));

/**
 * Every prose match of normalised lines (`lines`: each one's line number in the file; `curly`: whether
 * one of them may hold a `’`, false when the caller knows none does).
 */
export function proseMatches(
	texts: readonly string[],
	lines: readonly number[],
	limit: number,
	curly = true,
): ProseMatch[] {
	const words = wordsOf(texts, lines, curly);
	const out: ProseMatch[] = [];
	// Whether each distinct word starts a grammar of some family: looked up once, not once per family.
	const starting = words.stems.map((s, id) => FIRST_STEMS.has(s) || FIRST_RAWS.has(words.raws[id]));
	for (const [family, first] of FIRST_WORDS) {
		// The grammars each distinct word starts, looked up once per word rather than once per use.
		const starts = words.stems.map((s, id) =>
			starting[id] ? (first.byStem.get(s) ?? first.byRaw.get(words.raws[id])) : undefined,
		);
		let count = 0;
		for (let i = 0; i < words.count && count < limit; i++) {
			const grammars = starts[words.id[i]];
			if (grammars === undefined) continue;
			for (const grammar of grammars) {
				const end = matchFrom(words, grammar, 1, i);
				if (end === -1) continue;
				const key = Array.from(words.id.subarray(i, end + 1), (id) => words.stems[id]).join(" ");
				out.push({ family, line: words.line[i], key });
				count++;
				i = end;
				break;
			}
		}
	}
	return out;
}
