// The person's side of a proposal: approve plans the recorded call again against the files as they
// are now — every gate but the read gate, since the person is the reader — replaying exact-text ops
// when a target changed since, and lands it through the normal commit (backup, lock, atomic write,
// verify) with audit lines marked approved; reject drops it. Either verdict is recorded for the
// model, named once in its next injected block. A plan has a short digest (approvalDigest): what
// `show` prints and print mode's approve must name. A recorded call of the wrong shape is refused.

import { ArgumentError, normalizeArguments, type SkillManageArgs } from "./arguments.ts";
import { findingsBlock } from "./command-text.ts";
import { createCallContext, type CallContext, type PreparedMutation } from "../pipeline/call-context.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import type { FsOps } from "../base/fs-ops.ts";
import { recoverJournals } from "../store/journal.ts";
import { runMutations } from "../pipeline/mutate.ts";
import { prepareCall } from "./prepare.ts";
import {
	changedSince,
	clearApproving,
	decideProposal,
	inspectProposal,
	listProposals,
	markApproving,
	releaseApproving,
	sweepProposals,
	type Proposal,
	type ProposalTarget,
} from "../store/proposals.ts";
import type { ReadLedger } from "../store/read-ledger.ts";
import type { SessionDeps } from "../pipeline/session-state.ts";
import type { TrustContext } from "../policy/trust.ts";
import { tryHash } from "../base/hash.ts";
import { sha256 } from "../base/hash.ts";
import type { MutationResult } from "../pipeline/types.ts";

/**
 * Finishes what a killed process left, in order: a half-written commit is put back first (its files
 * may hold the new bytes before its commit point), then an approval is judged landed or not. Returns
 * one line per thing it finished, for /selfskills.
 */
export function finishInterrupted(fs: FsOps, agentDir: string): string[] {
	const journals = recoverJournals(fs, agentDir).map((report) => {
		const left = report.differs.map((d) => `${d.path} (old bytes: ${d.backupPath ?? "none"})`).join(", ");
		return `${report.journal}: ${report.restored.length} file(s) put back${left ? `; left as found: ${left}` : ""}`;
	});
	return [...journals, ...sweepProposals(fs, agentDir).map((done) => `proposal ${done}`)];
}

/**
 * The pending proposal `id` (after finishing what a killed approval left); unknown_proposal, or
 * invalid_proposal for a file this package did not write (a field of the wrong type).
 */
export function findProposal(deps: SessionDeps, id: string): Proposal | Refusal {
	deps.state.recoveries.push(...finishInterrupted(deps.fs, deps.agentDir()));
	const found = inspectProposal(deps.fs, deps.agentDir(), id);
	if (found === undefined)
		return refusals.unknownProposal(
			id,
			listProposals(deps.fs, deps.agentDir()).map((p) => p.id),
		);
	return "problem" in found ? refusals.invalidProposal(id, found.problem) : found.proposal;
}

/** The call a proposal recorded, checked like the model's own call: a forged one is invalid_proposal. */
function recordedCall(proposal: Proposal): SkillManageArgs | Refusal {
	try {
		return normalizeArguments(proposal.args);
	} catch (error) {
		if (error instanceof ArgumentError) return refusals.invalidProposal(proposal.id, error.refusal.reason);
		throw error;
	}
}

/**
 * The short digest of a change as planned: its diff and every target's path and hashes, so a change
 * that lands other bytes (past the part of the diff shown, say) never has the digest the person saw.
 */
export function approvalDigest(diff: string, targets: readonly ProposalTarget[]): string {
	return sha256(JSON.stringify({ diff, targets: targets.map((t) => [t.path, t.before, t.after]) })).slice(0, 12);
}

/** The person is the reader: every file counts as read at its bytes of this moment. */
function personLedger(fs: FsOps): ReadLedger {
	return {
		record: () => undefined,
		get: (path) => tryHash(fs, path) ?? undefined,
		forget: () => undefined,
		clear: () => undefined,
		size: 0,
	};
}

/**
 * The call's context in the proposal's own project: its trust from pi when the person reviews it
 * there, else from selfskills.trustedProjects.
 */
async function reviewContext(deps: SessionDeps, ctx: TrustContext, proposal: Proposal): Promise<CallContext> {
	const trustCtx = ctx.cwd === proposal.cwd ? ctx : { cwd: proposal.cwd };
	// The person approves: a pin added since the proposal binds the agent, not them (the dialog names it).
	const callCtx = await createCallContext({
		ctx: trustCtx,
		agentDir: deps.agentDir(),
		ledger: personLedger(deps.fs),
		fs: deps.fs,
		runtimeSkillFiles: deps.state.runtimeSkillFiles,
	});
	return { ...callCtx, byPerson: true };
}

export interface ApprovalPreview {
	readonly proposal: Proposal;
	readonly ctx: CallContext;
	readonly prepared: readonly PreparedMutation[];
	/** The change as it would land now. */
	readonly targets: readonly ProposalTarget[];
	readonly diff: string;
	/** approvalDigest of this plan: what `show` prints and print mode's `approve --yes=<digest>` names. */
	readonly digest: string;
	/** Files that changed since the proposal: the exact-text ops were replayed on their new text. */
	readonly replayedOn: readonly string[];
}

const shownTargets = (targets: readonly ProposalTarget[]) => targets.map((t) => `${t.skill}/${t.file}`);

/**
 * Why the proposal cannot be replayed on the files that `changed` since it was made, before it is
 * planned again; undefined when it can be.
 */
function unreplayable(
	fs: FsOps,
	proposal: Proposal,
	changed: readonly ProposalTarget[],
	prepared: readonly PreparedMutation[],
): Refusal | undefined {
	// A changed file that holds the proposed bytes took the change since (made again by hand, say): a
	// replay would apply it a second time wherever the new text still holds the old (`a` -> `ab`).
	const taken = changed.filter((t) => t.after !== null && tryHash(fs, t.path) === t.after);
	if (taken.length > 0) {
		return refusals.proposalStale(
			proposal.id,
			shownTargets(taken),
			"it already holds the proposed change (made since the proposal), so approving would apply it twice",
		);
	}
	// Only an exact-text op (patch) can be replayed on new text; a write, delete or restore would land
	// over bytes the person never saw proposed.
	const notReplayable = changed.filter((t) => prepared.some((p) => p.action !== "patch" && p.paths.includes(t.path)));
	if (notReplayable.length > 0) {
		return refusals.proposalStale(
			proposal.id,
			shownTargets(notReplayable),
			"it changed since the proposal, and only a patch can be replayed on a changed file",
		);
	}
	return undefined;
}

/**
 * Where no file changed, the change must be the proposed one to the byte (a restore without a backup
 * id, say, would now pick a newer backup): the person approves what was proposed, not something else.
 */
function drifted(
	proposal: Proposal,
	changed: readonly ProposalTarget[],
	targets: readonly ProposalTarget[],
): Refusal | undefined {
	const replayed = new Set(changed.map((t) => t.path));
	const off =
		targets.length !== proposal.targets.length
			? targets
			: targets.filter(
					(t) =>
						!replayed.has(t.path) &&
						!proposal.targets.some((p) => p.path === t.path && p.before === t.before && p.after === t.after),
				);
	if (off.length === 0) return undefined;
	return refusals.proposalStale(
		proposal.id,
		shownTargets(off),
		"the change it would make now is not the one proposed (a restore would now put back another backup, say)",
	);
}

/** Plans the proposal again on the files as they are now; stale when a changed file cannot take it. */
export async function previewApproval(
	deps: SessionDeps,
	ctx: TrustContext,
	proposal: Proposal,
): Promise<ApprovalPreview | Refusal> {
	const call = recordedCall(proposal);
	if (refusals.isRefusal(call)) return call;
	const callCtx = await reviewContext(deps, ctx, proposal);
	const prepared = prepareCall(callCtx, call);
	const changed = changedSince(deps.fs, proposal);
	const shown = shownTargets(changed);
	// A refusal where a file changed is the proposal gone stale, with the reason it gives.
	const stale = (refusal: Refusal, why: string) =>
		changed.length > 0 ? refusals.proposalStale(proposal.id, shown, why) : refusal;
	if ("code" in prepared)
		return stale(prepared, `it changed since the proposal, and the call no longer resolves (${prepared.code})`);
	const cannot = unreplayable(deps.fs, proposal, changed, prepared);
	if (cannot) return cannot;
	const preview = await runMutations(callCtx, prepared, {
		dryRun: true,
		batch: proposal.action === "operations",
		effects: deps.effects,
	});
	if (refusals.isRefusal(preview)) {
		const why = "it changed since the proposal, and the change does not apply to the new text";
		return stale(preview, `${why} (${preview.code}: ${preview.reason})`);
	}
	const targets = (preview.details.targets ?? []) as ProposalTarget[];
	const off = drifted(proposal, changed, targets);
	if (off) return off;
	const diff = String(preview.details.diff ?? "");
	// Scanned again now: the findings of the change as it would land are shown above its diff.
	const findings = findingsBlock(preview.details.findings as Proposal["findings"]);
	const withFindings = findings ? `${findings}\n${diff}` : diff;
	return {
		proposal,
		ctx: callCtx,
		prepared,
		targets,
		diff: withFindings,
		digest: approvalDigest(withFindings, targets),
		replayedOn: shown,
	};
}

/**
 * Lands an approval the person confirmed: marked `approving` first (a kill from here on is finished
 * or undone by the sweep), committed only if the plan is still the previewed one, then decided.
 */
export async function landApproval(
	deps: SessionDeps,
	preview: ApprovalPreview,
	words: string | undefined,
): Promise<MutationResult | Refusal> {
	const { proposal } = preview;
	const marked = markApproving(deps.fs, deps.agentDir(), proposal, preview.targets, words);
	let result: MutationResult | Refusal;
	try {
		result = await runMutations(preview.ctx, preview.prepared, {
			dryRun: false,
			batch: proposal.action === "operations",
			effects: deps.effects,
			decided: { expect: preview.targets, mark: { approved: proposal.id } },
		});
	} catch (error) {
		clearApproving(deps.fs, deps.agentDir(), marked);
		throw error;
	}
	if (refusals.isRefusal(result)) {
		clearApproving(deps.fs, deps.agentDir(), marked);
		return result;
	}
	try {
		decideProposal(deps.fs, deps.agentDir(), marked, "approved", words);
	} catch {
		// The change landed; the next sweep finds every target new and records the verdict.
		releaseApproving(proposal.id);
	}
	return result;
}

export function rejectProposal(deps: SessionDeps, proposal: Proposal, words: string | undefined): void {
	decideProposal(deps.fs, deps.agentDir(), proposal, "rejected", words);
}
