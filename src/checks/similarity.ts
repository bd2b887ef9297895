// How alike two skills read to the model that picks one: a deterministic score in [0, 1] over name
// and description (what pi puts in the system prompt). Words are read from the normalised text every
// content check reads (normalize.ts: invisibles dropped, look-alikes folded), so a near-copy padded with
// zero-width spaces or spelled with Cyrillic letters scores as the plain copy; then a light suffix
// stemmer, stop words dropped, weighted by how rare they are in the library (IDF), and the
// two weighted sets compared by cosine. No model, no network; a library of 1,000 skills takes a few ms.

import { normalizeText } from "./normalize.ts";

export interface SkillCard {
	readonly name: string;
	readonly description: string;
	/** Where the skill lives, for the refusal and the doctor. */
	readonly path?: string;
}

export interface SimilarSkill {
	readonly name: string;
	readonly score: number;
	readonly path: string;
}

/** Words that say nothing about what a skill is for (and the words every description uses). */
const STOP = new Set(
	(
		"a an the and or but if of to in on at by for with from into onto about as is are be been being " +
		"was were it its this that these those you your yours we our us i me my they them their he she " +
		"his her can could should would will may might must do does did done not no any all some each " +
		"every other such than then so also very more most use used uses using when whenever while where " +
		"which who what how why skill skills user users asks ask want wants need needs help helps like e " +
		"g etc via new one two"
	).split(" "),
);

/** A light stemmer: enough that "creating", "creates" and "created" meet, deterministic and cheap. */
export function stem(word: string): string {
	let w = word;
	if (w.length > 4 && w.endsWith("ies")) w = `${w.slice(0, -3)}y`;
	else if (w.length > 3 && w.endsWith("es") && /(?:ss|sh|ch|x|z)es$/.test(w)) w = w.slice(0, -2);
	else if (w.length > 3 && w.endsWith("s") && !w.endsWith("ss") && !w.endsWith("us")) w = w.slice(0, -1);
	for (const suffix of ["ation", "ing", "ed", "er", "ly", "ment"]) {
		if (w.length - suffix.length >= 3 && w.endsWith(suffix)) {
			w = w.slice(0, -suffix.length);
			break;
		}
	}
	if (w.length > 3 && w.endsWith("e")) w = w.slice(0, -1);
	return w;
}

/** The distinct stems of a card: its name split at hyphens, then its description. */
export function stemsOf(card: SkillCard): Set<string> {
	const text = normalizeText(`${card.name.replace(/-/g, " ")} ${card.description}`);
	const out = new Set<string>();
	for (const word of text.split(/[^\p{L}\p{N}]+/u)) {
		if (word.length < 2 || STOP.has(word)) continue;
		out.add(stem(word));
	}
	return out;
}

/** Each stem's weight: log(1 + N / df), so a word every skill has weighs little and a rare one much. */
function weights(cards: readonly Set<string>[]): Map<string, number> {
	const df = new Map<string, number>();
	for (const stems of cards) for (const s of stems) df.set(s, (df.get(s) ?? 0) + 1);
	const n = cards.length;
	const out = new Map<string, number>();
	for (const [s, count] of df) out.set(s, Math.log(1 + n / count));
	return out;
}

function cosine(a: Set<string>, b: Set<string>, weight: Map<string, number>): number {
	let dot = 0;
	let na = 0;
	let nb = 0;
	for (const s of a) {
		const w = (weight.get(s) ?? 0) ** 2;
		na += w;
		if (b.has(s)) dot += w;
	}
	for (const s of b) nb += (weight.get(s) ?? 0) ** 2;
	return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/**
 * The score of `card` against each of `library` (weights from the library and the card together),
 * in the library's order.
 */
export function scoreAgainst(card: SkillCard, library: readonly SkillCard[]): number[] {
	const mine = stemsOf(card);
	const theirs = library.map(stemsOf);
	const weight = weights([mine, ...theirs]);
	return theirs.map((stems) => cosine(mine, stems, weight));
}

/** The score of two cards alone, weighted within the given library (default: just the two). */
export function similarityScore(a: SkillCard, b: SkillCard, library: readonly SkillCard[] = []): number {
	const all = [a, b, ...library].map(stemsOf);
	return cosine(all[0], all[1], weights(all));
}

/**
 * The skills of `library` at or above `threshold` against `card`, most similar first; skills named
 * in `except` (the card's own name, the `distinct_from` list) are left out.
 */
export function findSimilar(
	card: SkillCard,
	library: readonly SkillCard[],
	threshold: number,
	except: readonly string[] = [],
): SimilarSkill[] {
	const others = library.filter((s) => s.name !== card.name && !except.includes(s.name));
	const scores = scoreAgainst(card, others);
	return others
		.map((s, i) => ({ name: s.name, score: Math.round(scores[i] * 100) / 100, path: s.path ?? "" }))
		.filter((s) => s.score >= threshold)
		.sort((a, b) => b.score - a.score || a.name.localeCompare(b.name))
		.slice(0, 5);
}

/** Every pair of the library at or above `threshold`, most similar first (through an index of shared stems). */
export function similarPairs(
	library: readonly SkillCard[],
	threshold: number,
): Array<{ a: SkillCard; b: SkillCard; score: number }> {
	const stems = library.map(stemsOf);
	const weight = weights(stems);
	const holders = new Map<string, number[]>();
	stems.forEach((set, i) => {
		for (const s of set) holders.set(s, [...(holders.get(s) ?? []), i]);
	});
	const pairs: Array<{ a: SkillCard; b: SkillCard; score: number }> = [];
	stems.forEach((set, i) => {
		const met = new Set<number>();
		for (const s of set) for (const j of holders.get(s) ?? []) if (j > i) met.add(j);
		for (const j of met) {
			const score = Math.round(cosine(set, stems[j], weight) * 100) / 100;
			if (score >= threshold) pairs.push({ a: library[i], b: library[j], score });
		}
	});
	return pairs.sort((x, y) => y.score - x.score);
}
