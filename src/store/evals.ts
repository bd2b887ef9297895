// What `/selfskills eval` measured, kept for the person: a proposal's eval inside its proposal file
// (proposals.ts), a skill's evals in one bounded JSON-lines file per skill:
//
//   <agentDir>/selfskills/evals/deploy-notes.jsonl     {"time":…,"target":{"skill":"deploy-notes"},…}
//                                                       the newest EVALS_KEPT lines, oldest first

import { join } from "node:path";
import type { FsOps } from "../base/fs-ops.ts";
import { getSelfSkillsDir } from "../base/paths.ts";
import { readJsonLines } from "../base/fs-reads.ts";
import { mkdirPrivate, writeFileAtomic } from "../base/writer.ts";
import { sha256 } from "../base/hash.ts";

/** Evals kept per skill; the oldest go first. */
export const EVALS_KEPT = 20;

/** One arm's runs, as pi reported them. */
export interface ArmSummary {
	/** "without the proposal", "with the proposal", "without <skill>", "with <skill>". */
	readonly label: string;
	readonly runs: number;
	readonly passes: number;
	readonly medianTurns: number;
	readonly inputTokens: number;
	readonly outputTokens: number;
	/** Cost as pi reports it (the sum of each reply's usage.cost.total). */
	readonly cost: number;
	readonly wallMs: number;
}

export interface EvalRecord {
	readonly time: string;
	readonly target: { readonly proposal: string } | { readonly skill: string };
	/** "provider/id" and the thinking level the runs used. */
	readonly model: string;
	readonly thinking?: string;
	/** The task as given (bounded). */
	readonly task: string;
	/** How a run passed: `check: <command>` or `expect: <text>` (bounded). */
	readonly pass: string;
	/** Runs asked per arm. */
	readonly runs: number;
	/** The arm without the change first, the arm with it second. */
	readonly arms: readonly [ArmSummary, ArmSummary];
	readonly verdict: string;
	/** Stopped before every run finished (aborted by the person): the counts are of finished runs. */
	readonly stopped?: string;
	readonly sandboxed: boolean;
}

export function getEvalsDir(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "evals");
}

/** A file name for any skill name: the name itself when plain, else a hash of it. */
function evalsPath(agentDir: string, skill: string): string {
	const plain = /^[a-z0-9][a-z0-9_-]{0,63}$/.test(skill) ? skill : `x-${sha256(skill).slice(0, 16)}`;
	return join(getEvalsDir(agentDir), `${plain}.jsonl`);
}

/** Whether `value` has the shape of an eval record (the store is ours, but is read defensively). */
export function isEvalRecord(value: unknown): value is EvalRecord {
	if (typeof value !== "object" || value === null) return false;
	const r = value as Record<string, unknown>;
	return (
		typeof r.time === "string" &&
		typeof r.verdict === "string" &&
		typeof r.model === "string" &&
		typeof r.runs === "number" &&
		typeof r.target === "object" &&
		r.target !== null &&
		Array.isArray(r.arms) &&
		r.arms.length === 2
	);
}

/** A skill's evals, oldest first. */
export function readSkillEvals(fs: FsOps, agentDir: string, skill: string): EvalRecord[] {
	const records: unknown[] = readJsonLines(fs, evalsPath(agentDir, skill));
	return records.filter(isEvalRecord).filter((r) => "skill" in r.target && r.target.skill === skill);
}

/** Adds a skill's eval, keeping the newest EVALS_KEPT. */
export function recordSkillEval(fs: FsOps, agentDir: string, skill: string, record: EvalRecord): void {
	const kept = [...readSkillEvals(fs, agentDir, skill), record].slice(-EVALS_KEPT);
	mkdirPrivate(fs, agentDir, getEvalsDir(agentDir));
	const text = kept.map((r) => JSON.stringify(r)).join("\n");
	writeFileAtomic(fs, evalsPath(agentDir, skill), Buffer.from(`${text}\n`), { mode: 0o600, storeBase: agentDir });
}
