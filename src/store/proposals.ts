// Proposals: changes the person wants to review before they land. One JSON file each, written
// durably like every file of the store, private and never through a symlink:
//
//   <agentDir>/selfskills/proposals/p-3f2a9c0b.json      pending: the call as planned, each target's
//                                                        base and planned sha256, the diff, the reason
//   <agentDir>/selfskills/proposals/decided/p-3f2a9c0b.json   approved or rejected, until the model is told
//   <agentDir>/selfskills/proposals/told/p-3f2a9c0b.json      the same verdict once told, for `show`
//
// Its key is a hash of the call and the bytes it was planned on, so an identical pending proposal
// is never filed twice; its id is new each time (a decided id is never reused). An approval marks
// the proposal `approving` (with the hashes it will write) before its commit; the sweep, run after
// the journal's recovery, finishes or clears such a mark left by a killed process: the change
// landed (every target holds its new hash) and the proposal goes, or it did not and the proposal
// stays pending. So a kill never lands a change twice nor leaves a proposal that can no longer be
// approved or rejected.

import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { FsOps } from "../base/fs-ops.ts";
import { getProposalsDir } from "../base/paths.ts";
import { assertNoLinkBelow, isProcessAlive, mkdirPrivate, removeFileDurable, writeFileAtomic } from "../base/writer.ts";
import { listDir, lstatIfExists, tryReadJson } from "../base/fs-reads.ts";
import { tryHash } from "../base/hash.ts";
import { sha256 } from "../base/hash.ts";
import { isEvalRecord, type EvalRecord } from "./evals.ts";

/** One file the proposed change touches: its hash when planned (null: absent) and after the change. */
export interface ProposalTarget {
	readonly path: string;
	readonly skill: string;
	readonly file: string;
	readonly before: string | null;
	readonly after: string | null;
}

/** An approval under way: written before its commit, so a sweep can tell whether it landed. */
export interface Approving {
	readonly pid: number;
	readonly at: string;
	/** The targets as the approval planned them (a replay may differ from the proposal's). */
	readonly targets: readonly ProposalTarget[];
	/** The person's words, if any. */
	readonly words?: string;
}

export interface Proposal {
	readonly id: string;
	/** The same call planned on the same bytes has the same key (proposalKey). */
	readonly key: string;
	readonly time: string;
	readonly cwd: string;
	/** The tool action (patch, write, delete, create, restore or operations). */
	readonly action: string;
	readonly skills: readonly string[];
	/** The call exactly as the model made it (normalised; no dry_run), planned again on approval. */
	readonly args: Record<string, unknown>;
	readonly reason?: string;
	readonly targets: readonly ProposalTarget[];
	readonly diff: string;
	readonly added: number;
	readonly removed: number;
	/** The mode that made it a proposal: "propose", or "ask" in a session nobody could be asked in. */
	readonly mode: "propose" | "ask";
	/** Lines the change adds that the risk scan flags, as they were when it was proposed. */
	readonly findings?: ReadonlyArray<{ readonly category: string; readonly line: number; readonly text: string }>;
	readonly approving?: Approving;
	/** The last `/selfskills eval` of this proposal: whether the change helped on the person's task. */
	readonly eval?: EvalRecord;
}

export interface Decision {
	readonly id: string;
	readonly verdict: "approved" | "rejected";
	readonly time: string;
	readonly cwd: string;
	readonly action: string;
	readonly skills: readonly string[];
	/** The person's words, if any. */
	readonly words?: string;
	/** The agent's reason for the proposal, to remind it which change this was. */
	readonly reason?: string;
}

const ID = /^p-[0-9a-f]{8}$/;
const DECIDED = "decided";
const TOLD = "told";

export function isProposalId(id: string): boolean {
	return ID.test(id);
}

/** The key of a call planned on these bytes: the same change of the same files (whatever the reason). */
export function proposalKey(args: Record<string, unknown>, targets: readonly ProposalTarget[]): string {
	const { reason: _reason, dry_run: _dry, ...call } = args;
	const ops = Array.isArray(call.operations)
		? call.operations.map(({ reason: _r, ...op }: Record<string, unknown>) => op)
		: undefined;
	return sha256(
		JSON.stringify({
			call: ops ? { ...call, operations: ops } : call,
			targets: targets.map((t) => [t.path, t.before, t.after]),
		}),
	);
}

/** Lines added and removed in a unified diff. */
export function countDiffLines(diff: string): { added: number; removed: number } {
	let added = 0;
	let removed = 0;
	for (const line of diff.split("\n")) {
		if (line.startsWith("+") && !line.startsWith("+++")) added++;
		else if (line.startsWith("-") && !line.startsWith("---")) removed++;
	}
	return { added, removed };
}

const pendingPath = (agentDir: string, id: string) => join(getProposalsDir(agentDir), `${id}.json`);
const decidedPath = (agentDir: string, id: string) => join(getProposalsDir(agentDir), DECIDED, `${id}.json`);
const toldPath = (agentDir: string, id: string) => join(getProposalsDir(agentDir), TOLD, `${id}.json`);

function writeRecord(fs: FsOps, agentDir: string, path: string, record: object): void {
	mkdirPrivate(fs, agentDir, join(path, ".."));
	writeFileAtomic(fs, path, Buffer.from(`${JSON.stringify(record, null, 2)}\n`), { mode: 0o600, storeBase: agentDir });
}

function readRecord<T>(fs: FsOps, agentDir: string, path: string): T | undefined {
	try {
		assertNoLinkBelow(fs, agentDir, path);
	} catch {
		return undefined;
	}
	const parsed = tryReadJson(fs, path);
	return typeof parsed === "object" && parsed !== null ? (parsed as T) : undefined;
}

function idsIn(fs: FsOps, dir: string): string[] {
	return listDir(fs, dir)
		.filter((name) => name.endsWith(".json"))
		.map((name) => name.slice(0, -5))
		.filter(isProposalId);
}

const isString = (v: unknown): v is string => typeof v === "string";
const isHash = (v: unknown): boolean => v === null || (isString(v) && /^[0-9a-f]{64}$/.test(v));
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** What is wrong with a list of targets read from disk, or undefined. */
function targetsProblem(targets: unknown, where: string): string | undefined {
	if (!Array.isArray(targets)) return `${where} is not a list`;
	for (const [i, t] of targets.entries()) {
		if (!isObject(t)) return `${where}[${i}] is not an object`;
		for (const key of ["path", "skill", "file"]) if (!isString(t[key])) return `${where}[${i}].${key} is not text`;
		for (const key of ["before", "after"])
			if (!isHash(t[key])) return `${where}[${i}].${key} is not a sha256 or null`;
	}
	return undefined;
}

/**
 * What makes a pending proposal file one this package did not write (a field of the wrong type), or
 * undefined: anything else there is never planned, shown or approved.
 */
export function proposalProblem(record: unknown, id: string): string | undefined {
	if (!isObject(record)) return "not a JSON object";
	if (record.id !== id) return "its id is not its file name";
	for (const key of ["key", "time", "cwd", "action", "diff"]) if (!isString(record[key])) return `${key} is not text`;
	if (!Array.isArray(record.skills) || !record.skills.every(isString)) return "skills is not a list of names";
	if (!isObject(record.args)) return "args is not an object";
	if ("operations" in record.args && !Array.isArray(record.args.operations)) return "args.operations is not a list";
	if (record.reason !== undefined && !isString(record.reason)) return "reason is not text";
	for (const key of ["added", "removed"]) if (!Number.isInteger(record[key])) return `${key} is not a count`;
	if (record.mode !== "propose" && record.mode !== "ask") return 'mode is not "propose" or "ask"';
	const targets = targetsProblem(record.targets, "targets");
	if (targets) return targets;
	if (record.eval !== undefined && !isEvalRecord(record.eval)) return "eval is not an eval record";
	if (record.approving === undefined) return undefined;
	const a = record.approving;
	if (!isObject(a) || !Number.isInteger(a.pid) || !isString(a.at)) return "approving is not an approval mark";
	if (a.words !== undefined && !isString(a.words)) return "approving.words is not text";
	return targetsProblem(a.targets, "approving.targets");
}

/** A pending proposal file as found: valid, invalid (with what is wrong), or absent. */
export function inspectProposal(
	fs: FsOps,
	agentDir: string,
	id: string,
): { proposal: Proposal } | { problem: string } | undefined {
	if (!isProposalId(id)) return undefined;
	const path = pendingPath(agentDir, id);
	if (!lstatIfExists(fs, path)) return undefined;
	const record = readRecord<unknown>(fs, agentDir, path);
	if (record === undefined) return { problem: "not a regular file holding JSON" };
	const problem = proposalProblem(record, id);
	return problem ? { problem } : { proposal: record as Proposal };
}

export function readProposal(fs: FsOps, agentDir: string, id: string): Proposal | undefined {
	const found = inspectProposal(fs, agentDir, id);
	return found && "proposal" in found ? found.proposal : undefined;
}

/** Every pending proposal, oldest first. */
export function listProposals(fs: FsOps, agentDir: string): Proposal[] {
	const proposals = idsIn(fs, getProposalsDir(agentDir)).flatMap((id) => readProposal(fs, agentDir, id) ?? []);
	return proposals.sort((a, b) => a.time.localeCompare(b.time) || a.id.localeCompare(b.id));
}

/** Pending proposal files this package did not write, each with what is wrong: listed, never planned. */
export function invalidProposals(fs: FsOps, agentDir: string): Array<{ id: string; problem: string }> {
	return idsIn(fs, getProposalsDir(agentDir)).flatMap((id) => {
		const found = inspectProposal(fs, agentDir, id);
		return found && "problem" in found ? [{ id, problem: found.problem }] : [];
	});
}

/** A fresh id: short enough to type, never one a pending or decided proposal has. */
function newId(fs: FsOps, agentDir: string): string {
	for (;;) {
		const id = `p-${randomBytes(4).toString("hex")}`;
		if (![pendingPath, decidedPath, toldPath].some((path) => lstatIfExists(fs, path(agentDir, id)))) return id;
	}
}

/** Files a proposal, or finds the identical one already pending (same call on the same bytes). */
export function fileProposal(
	fs: FsOps,
	agentDir: string,
	proposal: Omit<Proposal, "id" | "key" | "time">,
): { proposal: Proposal; existed: boolean } {
	const key = proposalKey(proposal.args, proposal.targets);
	const pending = listProposals(fs, agentDir).find((p) => p.key === key);
	if (pending) return { proposal: pending, existed: true };
	const filed: Proposal = { id: newId(fs, agentDir), key, time: new Date().toISOString(), ...proposal };
	writeRecord(fs, agentDir, pendingPath(agentDir, filed.id), filed);
	return { proposal: filed, existed: false };
}

/** Keeps `record` with the pending proposal (its last eval replaces an earlier one). */
export function recordProposalEval(fs: FsOps, agentDir: string, proposal: Proposal, record: EvalRecord): Proposal {
	const withEval: Proposal = { ...proposal, eval: record };
	writeRecord(fs, agentDir, pendingPath(agentDir, proposal.id), withEval);
	return withEval;
}

/** Approvals running in this process right now: the sweep leaves their marks alone. */
const approvingHere = new Set<string>();

/** Marks `proposal` as being approved with these planned targets, durably, before the commit. */
export function markApproving(
	fs: FsOps,
	agentDir: string,
	proposal: Proposal,
	targets: readonly ProposalTarget[],
	words: string | undefined,
): Proposal {
	const marked: Proposal = {
		...proposal,
		approving: { pid: process.pid, at: new Date().toISOString(), targets, ...(words ? { words } : {}) },
	};
	approvingHere.add(proposal.id);
	writeRecord(fs, agentDir, pendingPath(agentDir, proposal.id), marked);
	return marked;
}

/** Stops owning an approval whose verdict could not be written: the next sweep judges it. */
export function releaseApproving(id: string): void {
	approvingHere.delete(id);
}

/** The approval did not land: the proposal is pending again, as it was. */
export function clearApproving(fs: FsOps, agentDir: string, proposal: Proposal): void {
	const { approving: _approving, ...pending } = proposal;
	writeRecord(fs, agentDir, pendingPath(agentDir, proposal.id), pending);
	approvingHere.delete(proposal.id);
}

/**
 * Records the person's verdict and drops the pending proposal: the decision is written first, so a
 * kill between the two leaves a decided proposal the sweep removes, never a verdict lost.
 */
export function decideProposal(
	fs: FsOps,
	agentDir: string,
	proposal: Proposal,
	verdict: Decision["verdict"],
	words: string | undefined,
): Decision {
	const decision: Decision = {
		id: proposal.id,
		verdict,
		time: new Date().toISOString(),
		cwd: proposal.cwd,
		action: proposal.action,
		skills: proposal.skills,
		...(words ? { words } : {}),
		...(proposal.reason ? { reason: proposal.reason } : {}),
	};
	writeRecord(fs, agentDir, decidedPath(agentDir, proposal.id), decision);
	removeFileDurable(fs, pendingPath(agentDir, proposal.id));
	approvingHere.delete(proposal.id);
	return decision;
}

/** Decisions on proposals filed from `cwd` that the model was not told of yet; each is returned once. */
export function takeDecisions(fs: FsOps, agentDir: string, cwd: string): Decision[] {
	const dir = join(getProposalsDir(agentDir), DECIDED);
	const taken: Decision[] = [];
	for (const id of idsIn(fs, dir)) {
		const decision = readRecord<Decision>(fs, agentDir, decidedPath(agentDir, id));
		if (!decision || decision.cwd !== cwd) continue;
		try {
			// Kept (as told) so that `show` can still say what became of it.
			mkdirPrivate(fs, agentDir, join(getProposalsDir(agentDir), TOLD));
			fs.rename(decidedPath(agentDir, id), toldPath(agentDir, id));
			taken.push(decision);
		} catch {
			// Told next time instead.
		}
	}
	return taken.sort((a, b) => a.time.localeCompare(b.time));
}

/** The verdict on a proposal that is no longer pending (told to the model or not yet), or undefined. */
export function readDecision(fs: FsOps, agentDir: string, id: string): Decision | undefined {
	if (!isProposalId(id)) return undefined;
	for (const path of [decidedPath(agentDir, id), toldPath(agentDir, id)]) {
		const d = readRecord<Record<string, unknown>>(fs, agentDir, path);
		const valid =
			d?.id === id &&
			(d.verdict === "approved" || d.verdict === "rejected") &&
			isString(d.time) &&
			isString(d.action) &&
			Array.isArray(d.skills) &&
			d.skills.every(isString) &&
			(d.words === undefined || isString(d.words)) &&
			(d.reason === undefined || isString(d.reason));
		if (valid) return d as unknown as Decision;
	}
	return undefined;
}

/** Whether every target holds the hash the change gives it. */
export function hasLanded(fs: FsOps, targets: readonly ProposalTarget[]): boolean {
	return targets.every((t) => tryHash(fs, t.path) === t.after);
}

/** Targets whose bytes are no longer those the proposal was planned on. */
export function changedSince(fs: FsOps, proposal: Proposal): ProposalTarget[] {
	return proposal.targets.filter((t) => tryHash(fs, t.path) !== t.before);
}

/**
 * Finishes what a killed process left: a decided proposal still pending is removed; an approval
 * whose process is gone landed (every target holds its new hash: decided now) or did not (the mark
 * is cleared and the proposal is pending again). Run after the commit journal's recovery, which puts
 * a half-written commit back first. Returns what it finished, for /selfskills.
 */
export function sweepProposals(fs: FsOps, agentDir: string): string[] {
	const dir = getProposalsDir(agentDir);
	if (!lstatIfExists(fs, dir)) return [];
	const done: string[] = [];
	for (const id of idsIn(fs, dir)) {
		try {
			if (lstatIfExists(fs, decidedPath(agentDir, id))) {
				removeFileDurable(fs, pendingPath(agentDir, id));
				done.push(`${id}: decided; the pending copy was removed`);
				continue;
			}
			const proposal = readProposal(fs, agentDir, id);
			const approving = proposal?.approving;
			if (
				!proposal ||
				!approving ||
				approvingHere.has(id) ||
				(approving.pid !== process.pid && isProcessAlive(approving.pid))
			)
				continue;
			if (hasLanded(fs, approving.targets)) {
				decideProposal(fs, agentDir, proposal, "approved", approving.words);
				done.push(`${id}: its approval had landed; marked approved`);
			} else {
				clearApproving(fs, agentDir, proposal);
				done.push(`${id}: its approval was interrupted before it landed; pending again`);
			}
		} catch {
			// Left for the next sweep; a proposal is never lost by a failing sweep.
		}
	}
	return done;
}

/** Forgets this process's approvals (tests simulate a process that was killed). */
export function forgetApprovingHere(): void {
	approvingHere.clear();
}
