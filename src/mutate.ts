// Running prepared mutations: take the locks for every path (sorted, once each), plan inside
// them (a batch on an overlay, so op N sees ops 0..N-1), return the diff for a dry run, or
// commit and then record the landing: ledger, audit line, `selfskills:changed` event.

import type { CallContext, PreparedMutation } from "./call-context.ts";
import { appendAudit, type ChangeRecord } from "./audit.ts";
import { commitPlan, type FateReport, type LandedChange } from "./commit.ts";
import { clipDiff, diffChanges } from "./diff.ts";
import * as refusals from "./errors.ts";
import type { Refusal } from "./errors.ts";
import { withFileLocks } from "./locks.ts";
import { createDiskView, createOverlay, mergeChanges, type FileChange, type Plan } from "./plan.ts";

export const MAX_OPERATIONS = 50;

export interface MutationEffects {
	/** Called once per landed change (pi.events emit, recently-changed registry). */
	onLanded(record: ChangeRecord, change: LandedChange): void;
}

export interface MutationResult {
	readonly text: string;
	readonly details: Record<string, unknown>;
}

export interface RunOptions {
	readonly dryRun: boolean;
	readonly batch: boolean;
	readonly effects: MutationEffects;
}

interface Planned {
	readonly plans: Plan[];
	readonly changes: FileChange[];
}

function planAll(ctx: CallContext, prepared: readonly PreparedMutation[], batch: boolean): Planned | Refusal {
	const disk = createDiskView(ctx.fs);
	const overlay = createOverlay(disk);
	const touched = new Set<string>();
	const plans: Plan[] = [];
	for (const [index, op] of prepared.entries()) {
		const plan = op.plan({ view: overlay, disk, touched });
		if ("code" in plan) return batch ? refusals.forOperation(index, plan) : plan;
		for (const change of plan.changes) {
			overlay.apply(change);
			touched.add(change.absPath);
		}
		plans.push(plan);
	}
	return { plans, changes: mergeChanges(plans.flatMap((p) => p.changes)) };
}

function batchPlan(planned: Planned): Plan {
	const snapshot = planned.plans.find((p) => p.snapshot)?.snapshot;
	return {
		action: planned.plans.length === 1 ? planned.plans[0].action : "operations",
		skill: planned.plans[0]?.skill ?? "",
		changes: planned.changes,
		snapshot,
		removeDirs: planned.plans.flatMap((p) => p.removeDirs ?? []),
	};
}

function describeFates(fates: readonly FateReport[]): string {
	return fates.map((f) => `  ${f.path}: ${f.fate.replace("_", " ")}${f.fate === "rollback_failed" ? ` (old bytes in ${f.backupPath})` : ""}`).join("\n");
}

function record(ctx: CallContext, action: string, change: LandedChange): ChangeRecord {
	return { time: new Date().toISOString(), cwd: ctx.cwd, action, skill: change.skill, file: change.relPath, oldHash: change.oldHash, newHash: change.newHash, backup: change.backupId };
}

export async function runMutations(ctx: CallContext, prepared: readonly PreparedMutation[], options: RunOptions): Promise<MutationResult | Refusal> {
	if (prepared.length === 0) return refusals.invalidArguments("operations", "the batch is empty");
	if (ctx.signal?.aborted) return refusals.aborted();
	const paths = prepared.flatMap((p) => p.paths);
	return withFileLocks(ctx.agentDir, paths, async (guard) => {
		const planned = planAll(ctx, prepared, options.batch);
		if ("code" in planned) return planned;
		const diff = diffChanges(planned.changes);
		if (options.dryRun) {
			return { text: `dry run: every gate passed, nothing was written. The change would be:\n${diff}`, details: { ok: true, dryRun: true, diff, files: planned.changes.map((c) => c.absPath) } };
		}
		const plan = batchPlan(planned);
		const outcome = commitPlan(plan, { fs: ctx.fs, agentDir: ctx.agentDir, cwd: ctx.cwd, store: ctx.store, backupCap: ctx.settings.backupCap, guard, signal: ctx.signal, changedCode: options.batch ? "conflict" : "stale" });
		if (!outcome.ok) {
			const fates = outcome.fates.length > 0 ? `\nWhat happened to each file:\n${describeFates(outcome.fates)}` : "";
			return { ...outcome.refusal, message: `${outcome.refusal.message}${fates}`, data: { ...outcome.refusal.data, fates: outcome.fates } };
		}
		for (const change of outcome.landed) {
			if (change.newHash === null) ctx.ledger.forget(change.absPath);
			else ctx.ledger.record(change.absPath, change.newHash);
		}
		const records = outcome.landed.map((c) => record(ctx, plan.action, c));
		const auditError = appendAudit(ctx.fs, ctx.agentDir, records);
		outcome.landed.forEach((change, i) => options.effects.onLanded(records[i], change));
		const backups = outcome.landed.filter((c) => c.backupId).map((c) => `${c.relPath} -> ${c.backupId}`);
		const notes = planned.plans.map((p) => p.note).filter(Boolean);
		const summary = `${plan.action} landed: ${outcome.landed.length} file(s) changed in ${[...new Set(outcome.landed.map((c) => c.skill))].join(", ")}.`;
		const text = [
			summary,
			backups.length > 0 ? `Backup: ${backups.join(", ")}` : "",
			...notes,
			auditError ? `(audit log not written: ${auditError.message})` : "",
			clipDiff(diff, 40),
		].filter(Boolean).join("\n");
		return {
			text,
			details: { ok: true, action: plan.action, diff, changes: outcome.landed.map((c) => ({ skill: c.skill, file: c.relPath, path: c.absPath, oldHash: c.oldHash, newHash: c.newHash, backup: c.backupId })), snapshot: outcome.snapshot?.id },
		};
	});
}
