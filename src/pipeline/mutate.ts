// Running prepared mutations: take the locks for every path (sorted, once each), plan inside
// them (a batch on an overlay, so op N sees ops 0..N-1), return the diff for a dry run, or
// commit and then record the landing per op: ledger, one audit line and one `selfskills:changed`
// event for each file change of each landed op, and each op's fate when the commit failed.
// When the approval gate noted that the person decides (mode "ask" or "propose"), the whole call
// is decided once, after every op passed every gate: "propose" files one proposal and writes
// nothing; "ask" releases the locks, asks, and on "allow" plans again under the locks and commits
// only when the plan is byte for byte the one the person saw.

import { dirname } from "node:path";
import type { ApprovalNeed, CallContext, PreparedMutation, RiskNote } from "./call-context.ts";
import type { Finding } from "../checks/risk-scan.ts";
import { appendAudit, type ChangeRecord } from "../store/audit.ts";
import { commitPlan } from "./commit.ts";
import { diffChanges } from "../checks/diff.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import { withFileLocks, type LockGuard } from "../base/locks.ts";
import { recordCreated } from "../store/origins.ts";
import { createDiskView, createOverlay, mergeChanges } from "./plan.ts";
import { getProposalsDir } from "../base/paths.ts";
import { shownReason } from "../checks/agent-text.ts";
import { countDiffLines, fileProposal, type ProposalTarget } from "../store/proposals.ts";
import { checkLanded } from "../checks/validation.ts";
import { controlIsOn } from "../policy/settings.ts";
import { gitBefore } from "./git-commit.ts";
import { hashOrNull } from "../base/hash.ts";
import type {
	CommitPlan,
	FateReport,
	LandedChange,
	Fate,
	FileChange,
	FileView,
	Plan,
	FailedOutcome,
	LandedOutcome,
	MutationOutcome,
	MutationResult,
	OperationReport,
	ProposedOutcome,
	RunOptions,
} from "./types.ts";
import { renderOutcome } from "./mutation-text.ts";

export const MAX_OPERATIONS = 100;

interface Planned {
	readonly plans: Plan[];
	/** One change per file: the first op's `before`, the last op's `after`. */
	readonly changes: FileChange[];
	/** What the approval gate noted, one entry per op and skill that needs the person. */
	readonly approvals: readonly ApprovalNeed[];
	/** What the risk gate noted: files whose change adds risky lines (the person decides each time). */
	readonly risks: readonly RiskNote[];
}

/** An audit line of a batch also names the op it belongs to. */
interface OperationRecord extends ChangeRecord {
	readonly operation?: number;
	/** The skills a create or renaming patch said it differs from (near-duplicate check passed over). */
	readonly distinctFrom?: readonly string[];
}

/**
 * An op that needs what an earlier op of the batch deleted: anything in a skill deleted whole, or
 * the text a patch edits. (A write may re-create a deleted file; a second delete of one finds no file.)
 */
function deletedEarlier(view: FileView, op: PreparedMutation): Refusal | undefined {
	for (const path of op.paths) {
		const by = view.skillDeletedBy(path);
		if (by !== undefined) return refusals.deletedInBatch(`skill "${op.skill}"`, by, op.action);
	}
	const by = op.action === "patch" && op.paths.length === 1 ? view.deletedBy(op.paths[0]) : undefined;
	return by === undefined ? undefined : refusals.deletedInBatch(`${op.skill}/${op.file}`, by, op.action);
}

function planAll(
	ctx: CallContext,
	prepared: readonly PreparedMutation[],
	batch: boolean,
	dryRun: boolean,
): Planned | Refusal {
	const disk = createDiskView(ctx.fs);
	const overlay = createOverlay(disk);
	const touched = new Set<string>();
	const plans: Plan[] = [];
	const approvals: ApprovalNeed[] = [];
	const risks: RiskNote[] = [];
	for (const [index, op] of prepared.entries()) {
		const plan = deletedEarlier(overlay, op) ?? op.plan({ view: overlay, disk, touched, dryRun, approvals, risks });
		if ("code" in plan) return batch ? refusals.forOperation(index, plan) : plan;
		overlay.apply(plan, index);
		for (const change of plan.changes) touched.add(change.absPath);
		plans.push(plan);
	}
	return { plans, changes: mergeChanges(plans.flatMap((p) => p.changes)), approvals, risks };
}

function commitPlanOf(planned: Planned): CommitPlan {
	return {
		changes: planned.changes,
		snapshots: planned.plans.flatMap((p) => (p.snapshot ? [p.snapshot] : [])),
		removeDirs: planned.plans.flatMap((p) => p.removeDirs ?? []),
	};
}

function operationFate(files: OperationReport["files"], landed: boolean): Fate {
	if (landed) return "landed";
	if (files.some((f) => f.fate === "rollback_failed")) return "rollback_failed";
	return files.some((f) => f.fate === "rolled_back") ? "rolled_back" : "not_written";
}

/** Each op's fate from its files' fates (a file two ops changed shares its fate with both). */
function reportOperations(plans: readonly Plan[], fates: readonly FateReport[], landed: boolean): OperationReport[] {
	const byPath = new Map(fates.map((f) => [f.path, f]));
	return plans.map((plan, index) => {
		const files = plan.changes.map(
			(c): FateReport =>
				byPath.get(c.absPath) ?? { path: c.absPath, fate: landed ? "landed" : "not_written", backupPath: null },
		);
		return { index, action: plan.action, skill: plan.skill, files, fate: operationFate(files, landed) };
	});
}

/** One record per file change of each op, with that op's own hashes and the file's backup. */
function operationRecords(
	ctx: CallContext,
	planned: Planned,
	prepared: readonly PreparedMutation[],
	landed: readonly LandedChange[],
	options: RunOptions,
): Array<{ record: OperationRecord; change: LandedChange }> {
	const batch = options.batch;
	const byPath = new Map(landed.map((l) => [l.absPath, l]));
	const time = new Date().toISOString();
	return planned.plans.flatMap((plan, index) =>
		plan.changes.map((c) => {
			const file = byPath.get(c.absPath);
			const change: LandedChange = {
				skill: c.skill,
				relPath: c.relPath,
				absPath: c.absPath,
				oldHash: hashOrNull(c.before),
				newHash: hashOrNull(c.after),
				backupId: file?.backupId ?? null,
				backupPath: file?.backupPath ?? null,
			};
			const reason = prepared[index]?.reason?.trim();
			const record: OperationRecord = {
				time,
				cwd: ctx.cwd,
				action: plan.action,
				...(batch ? { operation: index } : {}),
				skill: c.skill,
				file: c.relPath,
				oldHash: change.oldHash,
				newHash: change.newHash,
				backup: change.backupId,
				...(reason ? { reason } : {}),
				...(prepared[index]?.distinctFrom?.length ? { distinctFrom: prepared[index].distinctFrom } : {}),
				...options.decided?.mark,
			};
			return { record, change };
		}),
	);
}

/**
 * A landed create makes the skill the package's own (for approval per origin); a failure is reported
 * like the audit's.
 */
function recordCreates(ctx: CallContext, plans: readonly Plan[]): Error | undefined {
	try {
		for (const plan of plans) {
			const file = plan.action === "create" ? plan.changes.find((c) => c.relPath === "SKILL.md") : undefined;
			if (file) recordCreated(ctx.fs, ctx.agentDir, plan.skill, dirname(file.absPath));
		}
		return undefined;
	} catch (error) {
		return error instanceof Error ? error : new Error(String(error));
	}
}

/** The targets of a plan as a proposal records them (hashes before and after each file). */
function proposalTargets(changes: readonly FileChange[]): ProposalTarget[] {
	return changes.map((c) => ({
		path: c.absPath,
		skill: c.skill,
		file: c.relPath,
		before: hashOrNull(c.before),
		after: hashOrNull(c.after),
	}));
}

/** Whether two plans change the same files from the same bytes to the same bytes. */
function sameTargets(a: readonly ProposalTarget[], b: readonly ProposalTarget[]): boolean {
	const key = (t: ProposalTarget) => `${t.path}\0${t.before}\0${t.after}`;
	const keys = new Set(a.map(key));
	return a.length === b.length && b.every((t) => keys.has(key(t)));
}

type Decision = "auto" | "ask" | "propose";

/**
 * The strictest need of the call; "ask" for skills all allowed this session is "auto". Risky lines
 * always need the person (asked, or proposed without a UI): a skill allowed for the session does not
 * cover them.
 */
function decide(planned: Planned, options: RunOptions): Decision {
	if (options.decided) return "auto";
	const needs = planned.approvals;
	if (needs.some((n) => n.mode === "propose")) return "propose";
	const asking = needs.filter((n) => n.mode === "ask" && !options.allowed?.has(n.skill));
	if (asking.length === 0 && planned.risks.length === 0) return "auto";
	return options.ask ? "ask" : "propose";
}

/** Every finding of the call, in file order. */
const findingsOf = (planned: Planned): Finding[] => planned.risks.flatMap((r) => r.findings);

const skillsOf = (planned: Planned): string[] => [...new Set(planned.plans.map((p) => p.skill))];
const actionOf = (planned: Planned, batch: boolean): string =>
	batch ? "operations" : (planned.plans[0]?.action ?? "operations");

/** The agent's reasons for the call: the call's own and each op's, once each. */
function reasonOf(prepared: readonly PreparedMutation[]): string | undefined {
	const reasons = [...new Set(prepared.map((p) => p.reason?.trim()).filter((r): r is string => Boolean(r)))];
	// Bounded and escaped once here: the proposal keeps, and the person sees, at most 500 characters.
	return reasons.length > 0 ? shownReason(reasons.join(" / ")) : undefined;
}

function propose(
	ctx: CallContext,
	planned: Planned,
	prepared: readonly PreparedMutation[],
	options: RunOptions,
	diff: string,
): ProposedOutcome {
	const action = actionOf(planned, options.batch);
	const skills = skillsOf(planned);
	const mode = planned.approvals.some((n) => n.mode === "propose") ? "propose" : "ask";
	const reason = reasonOf(prepared);
	const findings = findingsOf(planned);
	const { proposal, existed } = fileProposal(ctx.fs, ctx.agentDir, {
		cwd: ctx.cwd,
		action,
		skills,
		args: options.args ?? {},
		...(reason ? { reason } : {}),
		targets: proposalTargets(planned.changes),
		diff,
		...countDiffLines(diff),
		mode,
		...(findings.length > 0 ? { findings } : {}),
	});
	return {
		kind: "proposed",
		action,
		skills,
		mode,
		proposal: proposal.id,
		alreadyPending: existed,
		diff,
		findings,
		riskOnly: findings.length > 0 && !planned.approvals.some((n) => n.mode === "ask"),
	};
}

/** Plans every op under the locks; commits at once when nobody needs to be asked. */
async function planAndMaybeCommit(
	ctx: CallContext,
	prepared: readonly PreparedMutation[],
	options: RunOptions,
): Promise<MutationOutcome | Refusal | { readonly pending: Planned; readonly decision: "ask" | "propose" }> {
	const paths = prepared.flatMap((p) => p.paths);
	return withFileLocks(paths, async (guard) => {
		const planned = planAll(ctx, prepared, options.batch, options.dryRun);
		if ("code" in planned) return planned;
		const expect = options.decided?.expect;
		if (expect && !sameTargets(expect, proposalTargets(planned.changes))) {
			return refusals.conflict(
				planned.changes[0]?.absPath ?? "(files)",
				"the files changed after the person saw the change; nothing was written. Ask again with the same call",
			);
		}
		const decision = decide(planned, options);
		if (options.dryRun) {
			const diff = diffChanges(planned.changes);
			const targets = proposalTargets(planned.changes);
			const findings = findingsOf(planned);
			return { kind: "dry_run", diff, changes: planned.changes, targets, review: decision, findings };
		}
		if (decision !== "auto") return { pending: planned, decision };
		return commitPlanned(ctx, planned, prepared, options, guard);
	});
}

/** Runs a call's prepared mutations (see the header); the result's text comes from mutation-text.ts. */
export async function runMutations(
	ctx: CallContext,
	prepared: readonly PreparedMutation[],
	options: RunOptions,
): Promise<MutationResult | Refusal> {
	const outcome = await decideAndRun(ctx, prepared, options);
	return "kind" in outcome ? renderOutcome(outcome) : outcome;
}

/**
 * The file changes a call would make, planned as a dry run through every gate, nothing written: what
 * an eval lays over its copy of the skills to build the "with the change" arm.
 */
export async function plannedChanges(
	ctx: CallContext,
	prepared: readonly PreparedMutation[],
	options: Pick<RunOptions, "batch" | "effects">,
): Promise<readonly FileChange[] | Refusal> {
	const outcome = await decideAndRun(ctx, prepared, { ...options, dryRun: true });
	if (!("kind" in outcome)) return outcome;
	return outcome.kind === "dry_run"
		? outcome.changes
		: refusals.invalidArguments("eval", "the plan was not a dry run");
}

async function decideAndRun(
	ctx: CallContext,
	prepared: readonly PreparedMutation[],
	options: RunOptions,
): Promise<MutationOutcome | Refusal> {
	if (prepared.length === 0) return refusals.invalidArguments("operations", "the batch is empty");
	if (ctx.signal?.aborted) return refusals.aborted();
	const first = await planAndMaybeCommit(ctx, prepared, options);
	if (!("pending" in first)) return first;
	const planned = first.pending;
	const diff = diffChanges(planned.changes);
	if (first.decision === "propose" || !options.ask) {
		// One filer at a time on this machine: two processes proposing the same change file it once.
		return withFileLocks([getProposalsDir(ctx.agentDir)], async () => propose(ctx, planned, prepared, options, diff));
	}
	const skills = skillsOf(planned);
	const answer = await options.ask({
		action: actionOf(planned, options.batch),
		skills,
		reason: reasonOf(prepared),
		diff,
		...(planned.risks.length > 0 ? { findings: findingsOf(planned) } : {}),
	});
	if ("deny" in answer)
		return refusals.denied(actionOf(planned, options.batch), skills, answer.words?.trim() || undefined);
	if (answer.allow === "session") for (const skill of skills) options.allowed?.add(skill);
	if (ctx.signal?.aborted) return refusals.aborted();
	// The person allowed what they saw: it lands only if a fresh plan is exactly that.
	const again = await planAndMaybeCommit(ctx, prepared, {
		...options,
		decided: { expect: proposalTargets(planned.changes), mark: { allowed: answer.allow } },
	});
	if ("pending" in again) return refusals.conflict("(approval)", "the person's answer could not be applied");
	return again;
}

/**
 * What a landing leaves in the session and the agent folder: the discovery cache follows it, the
 * read ledger learns the new bytes, and the audit log, the created skills and the events get theirs.
 */
function recordLanding(
	ctx: CallContext,
	planned: Planned,
	prepared: readonly PreparedMutation[],
	landed: readonly LandedChange[],
	options: RunOptions,
): { landedOps: ReturnType<typeof operationRecords>; auditError: Error | undefined } {
	ctx.discoveryCache?.noteLanded(landed);
	// The agent knows what it wrote; bytes it has not seen (a restore) make the file unread again.
	const unseen = new Set(planned.changes.filter((c) => c.unseen).map((c) => c.absPath));
	for (const change of landed) {
		if (change.newHash === null || unseen.has(change.absPath)) ctx.ledger.forget(change.absPath);
		else ctx.ledger.record(change.absPath, change.newHash);
	}
	const landedOps = operationRecords(ctx, planned, prepared, landed, options);
	const records = landedOps.map((l) => l.record);
	const auditError = appendAudit(ctx.fs, ctx.agentDir, records) ?? recordCreates(ctx, planned.plans);
	for (const { record, change } of landedOps) options.effects.onLanded(record, change);
	return { landedOps, auditError };
}

/** Commits the plan and records the landing (ledger, cache, audit, created skills, events); returns what came of it. */
async function commitPlanned(
	ctx: CallContext,
	planned: Planned,
	prepared: readonly PreparedMutation[],
	options: RunOptions,
	guard: LockGuard,
): Promise<LandedOutcome | FailedOutcome> {
	// git: "commit" needs each target's state before the write (was it as HEAD has it?).
	const git = ctx.settings.git === "commit" ? await gitBefore(ctx.fs, planned.changes) : undefined;
	const action = planned.plans.length === 1 ? planned.plans[0].action : "operations";
	const outcome = await commitPlan(commitPlanOf(planned), {
		fs: ctx.fs,
		agentDir: ctx.agentDir,
		store: ctx.store,
		backupCap: ctx.settings.backupCap,
		guard,
		checkLanded: (filePath) => checkLanded(filePath, ctx.cwd, ctx.agentDir),
		signal: ctx.signal,
		changedCode: options.batch ? "conflict" : "stale",
	});
	if (!outcome.ok) {
		return {
			kind: "failed",
			refusal: outcome.refusal,
			fates: outcome.fates,
			reports: reportOperations(planned.plans, outcome.fates, false),
			batch: options.batch,
			failedOp: planned.plans.findIndex((p) => p.changes.some((c) => c.absPath === outcome.failedPath)),
			files: planned.changes.length,
		};
	}
	const { landedOps, auditError } = recordLanding(ctx, planned, prepared, outcome.landed, options);
	const mark = options.decided?.mark;
	const gitReports = git
		? await git(
				{
					action,
					skills: [...new Set(outcome.landed.map((c) => c.skill))],
					reason: reasonOf(prepared),
					audit: landedOps[0]?.record.time ?? new Date().toISOString(),
					...(mark && "approved" in mark ? { approved: mark.approved } : {}),
				},
				controlIsOn(ctx.settings),
			)
		: [];
	const reports = reportOperations(
		planned.plans,
		outcome.landed.map((l) => ({ path: l.absPath, fate: "landed", backupPath: l.backupPath })),
		true,
	);
	return {
		kind: "landed",
		action,
		batch: options.batch,
		operations: planned.plans.length,
		landed: outcome.landed,
		reports,
		notes: planned.plans.flatMap((p) => (p.note ? [p.note] : [])),
		auditError,
		diff: diffChanges(planned.changes),
		...(git ? { git: gitReports } : {}),
		snapshots: outcome.snapshots.map((s) => s.id),
	};
}
