// The words of `/selfskills eval <proposal id | skill> --task <text | @file> (--check <command> |
// --expect <text>) [--runs N] [--extension <path>] [--timeout <seconds>] [--no-sandbox] [--yes]`:
// split like a shell splits them (quotes keep spaces), then checked; a bad one is eval_refused.

import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";

export const EVAL_USAGE =
	"/selfskills eval <proposal id | skill> --task <text | @file> (--check <command> | --expect <text>) " +
	"[--runs N] [--extension <path>] [--timeout <seconds>] [--no-sandbox] [--yes]";

export const DEFAULT_RUNS = 3;
export const MAX_RUNS = 20;
/** A run's time limit unless --timeout says otherwise: 10 minutes. */
export const DEFAULT_TIMEOUT_SECONDS = 600;
const MAX_TIMEOUT_SECONDS = 24 * 3600;

export interface EvalArguments {
	/** A pending proposal's id or a skill's name. */
	readonly target: string;
	/** The task text, or `@path` of a file holding it (read later, relative to the session's folder). */
	readonly task: string;
	readonly check?: string;
	readonly expect?: string;
	readonly runs: number;
	readonly extension?: string;
	readonly timeoutSeconds: number;
	readonly sandbox: boolean;
	readonly yes: boolean;
}

/** Words as a POSIX shell splits them: '…' literal, "…" with \\ escapes, \\ outside quotes. */
export function splitWords(text: string): string[] | undefined {
	const words: string[] = [];
	let word: string | undefined;
	let quote: "'" | '"' | undefined;
	for (let i = 0; i < text.length; i++) {
		const c = text[i];
		if (quote === "'") {
			if (c === "'") quote = undefined;
			else word += c;
		} else if (quote === '"') {
			if (c === '"') quote = undefined;
			else if (c === "\\" && i + 1 < text.length && '"\\$`'.includes(text[i + 1])) word += text[++i];
			else word += c;
		} else if (/\s/.test(c)) {
			if (word !== undefined) words.push(word);
			word = undefined;
		} else if (c === "'" || c === '"') {
			quote = c;
			word ??= "";
		} else if (c === "\\" && i + 1 < text.length) {
			word = (word ?? "") + text[++i];
		} else word = (word ?? "") + c;
	}
	if (quote) return undefined;
	if (word !== undefined) words.push(word);
	return words;
}

const VALUED = new Set(["--task", "--check", "--expect", "--runs", "--extension", "--timeout"]);
const SWITCHES = new Set(["--no-sandbox", "--yes"]);

const bad = (problem: string) => refusals.evalRefused(problem, `Usage: ${EVAL_USAGE}`);

/** The eval's arguments from the text after `/selfskills eval`, or what is wrong with them. */
export function parseEvalArguments(text: string): EvalArguments | Refusal {
	const words = splitWords(text);
	if (words === undefined) return bad(`a quote in ${JSON.stringify(text.slice(0, 120))} is not closed`);
	const values = new Map<string, string>();
	const switches = new Set<string>();
	const positional: string[] = [];
	for (let i = 0; i < words.length; i++) {
		const word = words[i];
		const eq = word.indexOf("=");
		const flag = word.startsWith("--") && eq > 0 ? word.slice(0, eq) : word;
		if (VALUED.has(flag)) {
			const value = flag === word ? words[++i] : word.slice(eq + 1);
			if (value === undefined) return bad(`${flag} needs a value`);
			if (values.has(flag)) return bad(`${flag} is given twice`);
			values.set(flag, value);
		} else if (SWITCHES.has(word)) switches.add(word);
		else if (word.startsWith("--")) return bad(`unknown flag ${JSON.stringify(word)}`);
		else positional.push(word);
	}
	if (positional.length !== 1)
		return bad(
			positional.length === 0
				? "name the proposal id or the skill to evaluate"
				: `one proposal id or skill, not ${positional.map((p) => JSON.stringify(p)).join(" ")}`,
		);
	const task = values.get("--task");
	if (task === undefined || task.trim() === "" || task.trim() === "@") return bad("--task is missing or empty");
	const check = values.get("--check");
	const expect = values.get("--expect");
	if ((check === undefined) === (expect === undefined))
		return bad(
			check === undefined
				? "say how a run passes: --check <command> (exits 0) or --expect <text> (in the final answer)"
				: "--check and --expect both given; a run passes by one of them",
		);
	if (check?.trim() === "" || expect === "") return bad(`${check === undefined ? "--expect" : "--check"} is empty`);
	const runs = values.has("--runs") ? wholeNumber(values.get("--runs") ?? "") : DEFAULT_RUNS;
	if (!(runs >= 1 && runs <= MAX_RUNS))
		return bad(`--runs ${JSON.stringify(values.get("--runs"))} is not a whole number from 1 to ${MAX_RUNS}`);
	const timeoutSeconds = values.has("--timeout")
		? wholeNumber(values.get("--timeout") ?? "")
		: DEFAULT_TIMEOUT_SECONDS;
	if (!(timeoutSeconds >= 1 && timeoutSeconds <= MAX_TIMEOUT_SECONDS))
		return bad(`--timeout ${JSON.stringify(values.get("--timeout"))} is not a number of seconds (1 to 86400)`);
	return {
		target: positional[0],
		task,
		...(check === undefined ? {} : { check }),
		...(expect === undefined ? {} : { expect }),
		runs,
		...(values.has("--extension") ? { extension: values.get("--extension") } : {}),
		timeoutSeconds,
		sandbox: !switches.has("--no-sandbox"),
		yes: switches.has("--yes"),
	};
}

function wholeNumber(text: string): number {
	return /^\d{1,6}$/.test(text) ? Number(text) : Number.NaN;
}
