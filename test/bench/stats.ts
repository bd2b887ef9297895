// Timing and reporting for the benchmark: medians with min–max over repeated runs, ratios
// against a peer measured in the same run, and the final table of goals.

import { performance } from "node:perf_hooks";

export interface Sample {
	readonly median: number;
	readonly min: number;
	readonly max: number;
	readonly runs: number;
}

export function summarize(values: readonly number[]): Sample {
	const sorted = [...values].sort((a, b) => a - b);
	const mid = Math.floor(sorted.length / 2);
	const median = sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
	return { median, min: sorted[0], max: sorted[sorted.length - 1], runs: sorted.length };
}

/** Milliseconds one call of `fn` takes. */
export async function timeOnce(fn: () => unknown): Promise<number> {
	const start = performance.now();
	await fn();
	return performance.now() - start;
}

/** Repetition counts scale with BENCH_SCALE (e.g. 0.2 for a quick run); never below `floor`. */
export function reps(base: number, floor = 3): number {
	const scale = Number(process.env.BENCH_SCALE ?? "1");
	return Math.max(floor, Math.round(base * (Number.isFinite(scale) && scale > 0 ? scale : 1)));
}

const fmtNumber = (value: number): string =>
	value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);

export function fmtMs(sample: Sample): string {
	return `${fmtNumber(sample.median)} ms (${fmtNumber(sample.min)}–${fmtNumber(sample.max)}, n=${sample.runs})`;
}

/** A ratio as a signed change: 1.021 → "+2.1 %", 0.986 → "−1.4 %". */
export function fmtChange(ratio: number): string {
	const change = (ratio - 1) * 100;
	return `${change < 0 ? "−" : "+"}${Math.abs(change).toFixed(1)} %`;
}

export function fmtRatio(ratio: number): string {
	return `${ratio.toFixed(2)}×`;
}

export interface GoalRow {
	readonly figure: string;
	readonly value: string;
	readonly goal: string;
	readonly met: boolean;
	/** SPEC "Cost": a gated figure, or one it reports without a goal; none: another goal of the bench. */
	readonly cost?: "gate" | "report";
}

const GROUPS: ReadonlyArray<[string, (row: GoalRow) => boolean]> = [
	['SPEC "Cost", gated', (r) => r.cost === "gate"],
	['SPEC "Cost", reported (not gated)', (r) => r.cost === "report"],
	["other goals of the bench", (r) => r.cost === undefined],
];

/** The summary: SPEC Cost's gated figures, then its reported ones, then the bench's other goals. */
export function printTable(rows: readonly GoalRow[]): void {
	const headers = ["figure", "value", "goal", "met"];
	const cells = rows.map((r) => [r.figure, r.value, r.goal, r.cost === "report" ? "-" : r.met ? "yes" : "NO"]);
	const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
	const line = (c: string[]) => c.map((v, i) => v.padEnd(widths[i])).join(" | ");
	for (const [title, inGroup] of GROUPS) {
		const group = rows.flatMap((r, i) => (inGroup(r) ? [cells[i]] : []));
		if (group.length === 0) continue;
		console.log(`\n${title}`);
		console.log(line(headers));
		console.log(widths.map((w) => "-".repeat(w)).join("-|-"));
		for (const c of group) console.log(line(c));
	}
}
