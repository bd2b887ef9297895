// An eval's report: per arm the runs that passed, median turns, tokens, cost as pi reported it and
// wall time; then one verdict line that compares passes only and never claims more than the runs
// can show — "helped in 3 of 3 runs against 1 of 3", "no difference seen in 3 runs", "worse in …".

import type { ArmSummary, EvalRecord } from "../store/evals.ts";
import type { RunResult } from "./run.ts";

function median(values: readonly number[]): number {
	if (values.length === 0) return 0;
	const sorted = [...values].sort((a, b) => a - b);
	const mid = Math.floor(sorted.length / 2);
	return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function summarizeArm(label: string, results: readonly RunResult[]): ArmSummary {
	const sum = (pick: (r: RunResult) => number) => results.reduce((total, r) => total + pick(r), 0);
	return {
		label,
		runs: results.length,
		passes: results.filter((r) => r.outcome === "passed").length,
		medianTurns: median(results.map((r) => r.turns)),
		inputTokens: sum((r) => r.inputTokens),
		outputTokens: sum((r) => r.outputTokens),
		cost: sum((r) => r.cost),
		wallMs: sum((r) => r.wallMs),
	};
}

/**
 * The verdict on passes only: the change's arm (second) against the arm without it (first), each
 * over the runs it finished; "no verdict" when an arm finished none.
 */
export function verdictOf(without: ArmSummary, withChange: ArmSummary): string {
	if (without.runs === 0 || withChange.runs === 0) return "no verdict: no run finished in both arms";
	const of = (a: ArmSummary) => `${a.passes} of ${a.runs}`;
	if (withChange.passes > without.passes) return `helped in ${of(withChange)} runs against ${of(without)}`;
	if (withChange.passes < without.passes) return `worse: passed in ${of(withChange)} runs against ${of(without)}`;
	const runs = without.runs === withChange.runs ? `${without.runs} runs` : `${of(withChange)} and ${of(without)} runs`;
	return `no difference seen in ${runs} (${withChange.passes} passed in each arm)`;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const dollars = (cost: number) => `$${cost.toFixed(cost > 0 && cost < 0.01 ? 4 : 2)}`;

/** One arm as a line of the report. */
export function armLine(a: ArmSummary): string {
	return (
		`  ${a.label}: passed ${a.passes} of ${a.runs}; median turns ${a.medianTurns}; ` +
		`tokens in ${a.inputTokens}, out ${a.outputTokens}; cost ${dollars(a.cost)}; wall ${seconds(a.wallMs)}`
	);
}

/** The report the person reads after an eval, and what show/history print of a kept one. */
export function evalReportText(record: EvalRecord): string {
	const what = "proposal" in record.target ? `proposal ${record.target.proposal}` : `skill ${record.target.skill}`;
	return [
		`eval of ${what} on ${record.model}${record.thinking ? ` (thinking ${record.thinking})` : ""}, ` +
			`${record.runs} run(s) per arm, ${record.pass}${record.sandboxed ? "" : ", NOT sandboxed"}` +
			`${record.stopped ? `, ${record.stopped}` : ""} (${record.time})`,
		...record.arms.map(armLine),
		`verdict: ${record.verdict}`,
	].join("\n");
}

/** One run's line while the eval goes on. */
export function runLine(label: string, index: number, runs: number, r: RunResult): string {
	return (
		`  ${label}, run ${index} of ${runs}: ${r.outcome}${r.note ? ` (${r.note})` : ""}; ` +
		`${r.turns} turn(s), tokens in ${r.inputTokens}, out ${r.outputTokens}, ${dollars(r.cost)}, ${seconds(r.wallMs)}`
	);
}
