// The pipeline's types, shared by the planners, the commit and what runs them: a plan and its file
// changes, the views planned against, what a commit lands and reports, and how a mutation is run.

import type { Refusal } from "../base/errors.ts";
import type { LandedCheck } from "../checks/validation.ts";
import type { Finding } from "../checks/risk-scan.ts";
import type { ChangeRecord } from "../store/audit.ts";
import type { GitReport } from "./git-commit.ts";
import type { ProposalTarget } from "../store/proposals.ts";

export interface FileChange {
	readonly skill: string;
	readonly relPath: string;
	readonly absPath: string;
	/** Content on disk when planned; null when the file did not exist. */
	readonly before: Buffer | null;
	readonly after: Buffer | null;
	/** Mode for a new file (an overwrite keeps the file's own mode, unless restoreMode says otherwise). */
	readonly mode?: number;
	/** A restore over an existing file: the mode recorded with the backup goes back too (undoing, not granting). */
	readonly restoreMode?: number;
	/** Set for SKILL.md changes: the name pi must load it under after the write. */
	readonly expectName?: string;
	/** Bytes the agent has not seen (a restore): the file no longer counts as read once they land. */
	readonly unseen?: boolean;
}

export interface SnapshotPlan {
	readonly skill: string;
	readonly dir: string;
	readonly files: ReadonlyArray<{ relPath: string; bytes: Buffer; mode: number }>;
}

export interface Plan {
	readonly action: string;
	readonly skill: string;
	readonly changes: readonly FileChange[];
	/** Whole-skill delete: the full tree is snapshotted first, then the folder removed. */
	readonly snapshot?: SnapshotPlan;
	/** Folders to remove once empty (deepest first), after a whole-skill delete. */
	readonly removeDirs?: readonly string[];
	/** Extra text for the tool result (e.g. "run /reload"). */
	readonly note?: string;
}

/**
 * What became of a change, one word for a file, an op of a batch and a journal entry alike: it
 * landed, was rolled back, could not be rolled back (the file differs from before), or was never written.
 */
export type Fate = "landed" | "rolled_back" | "rollback_failed" | "not_written";

export interface FileView {
	read(absPath: string): Buffer | null;
	mode(absPath: string): number | undefined;
	/** The earlier op of a batch that deleted this file (it is absent now), or undefined. */
	deletedBy(absPath: string): number | undefined;
	/** The earlier op of a batch that deleted the whole skill folder holding this path, or undefined. */
	skillDeletedBy(absPath: string): number | undefined;
}

/** What one commit lands: each file once, whole-skill snapshots, folders emptied by deletes. */
export interface CommitPlan {
	readonly changes: readonly FileChange[];
	/** Whole-skill deletes: each tree is snapshotted before any file is touched. */
	readonly snapshots: readonly SnapshotPlan[];
	/** Folders to remove once empty (deepest first), after the commit. */
	readonly removeDirs: readonly string[];
}

export interface LandedChange {
	readonly skill: string;
	readonly relPath: string;
	readonly absPath: string;
	readonly oldHash: string | null;
	readonly newHash: string | null;
	readonly backupId: string | null;
	readonly backupPath: string | null;
	/** pi's loader on a written skill file at its place (verify-after-write), passed on to who needs it. */
	readonly loaded?: LandedCheck;
}

export interface FateReport {
	readonly path: string;
	readonly fate: Fate;
	/** The backup holding the file's bytes from before the commit (null: it did not exist). */
	readonly backupPath: string | null;
}

export interface MutationEffects {
	/** Called once per file change of each landed op (pi.events emit, recently-changed registry). */
	onLanded(record: ChangeRecord, change: LandedChange): void;
}

export interface MutationResult {
	readonly text: string;
	readonly details: Record<string, unknown>;
}

/** What the person is shown under "ask": the call, the agent's reason, the diff. */
export interface AskRequest {
	readonly action: string;
	readonly skills: readonly string[];
	readonly reason: string | undefined;
	readonly diff: string;
	/** Lines the change adds that the risk scan flags (shown above the diff); none: an ordinary change. */
	readonly findings?: readonly Finding[];
}

/** The person's answer: allow this call, allow these skills for the session, or deny (with their words). */
export type AskAnswer = { readonly allow: "once" | "session" } | { readonly deny: true; readonly words?: string };

export interface RunOptions {
	readonly dryRun: boolean;
	readonly batch: boolean;
	readonly effects: MutationEffects;
	/** Asks the person (a session with a UI); without it "ask" files a proposal like "propose". */
	readonly ask?: (request: AskRequest) => Promise<AskAnswer>;
	/** Skills the person allowed for the rest of the session ("ask" is skipped for them; added to on "session"). */
	readonly allowed?: Set<string>;
	/** The call as the model made it, kept in a proposal so an approval can plan it again. */
	readonly args?: Record<string, unknown>;
	/** The person already decided for this call: nobody is asked, and it lands only if the plan is `expect`. */
	readonly decided?: Decided;
}

/** A call the person allowed (asked) or approved (a proposal), and the plan they saw. */
export interface Decided {
	readonly expect: readonly ProposalTarget[];
	/** Kept in each audit line of the change. */
	readonly mark:
		| { readonly approved: string }
		| { readonly allowed: "once" | "session" }
		| { readonly byPerson: "restore" };
}

/** What became of each op of a call, from its files' fates. */
export interface OperationReport {
	readonly index: number;
	readonly action: string;
	readonly skill: string;
	readonly files: readonly FateReport[];
	/** Landed when all its files did, else the worst of its files' fates. */
	readonly fate: Fate;
}

/** What a run of mutations came to, as data; mutation-text.ts renders it for the model. */
export type MutationOutcome = DryRunOutcome | ProposedOutcome | LandedOutcome | FailedOutcome;

/** Every gate passed and nothing was written; `review`: what would happen without dry_run. */
export interface DryRunOutcome {
	readonly kind: "dry_run";
	readonly diff: string;
	readonly changes: readonly FileChange[];
	readonly targets: readonly ProposalTarget[];
	readonly review: "auto" | "ask" | "propose";
	/** Lines the change adds that the risk scan flags. */
	readonly findings: readonly Finding[];
}

/** The call was filed as a proposal for the person (or found already pending), not written. */
export interface ProposedOutcome {
	readonly kind: "proposed";
	readonly action: string;
	readonly skills: readonly string[];
	readonly mode: "ask" | "propose";
	readonly proposal: string;
	readonly alreadyPending: boolean;
	readonly diff: string;
	readonly findings: readonly Finding[];
	/** Filed only because of its findings: no approval mode asked for the person. */
	readonly riskOnly: boolean;
}

/** The commit landed: each file changed, its backup, each op's report, what could not be recorded. */
export interface LandedOutcome {
	readonly kind: "landed";
	readonly action: string;
	readonly batch: boolean;
	readonly operations: number;
	readonly landed: readonly LandedChange[];
	readonly reports: readonly OperationReport[];
	/** The plans' own notes for the model (e.g. "run /reload"). */
	readonly notes: readonly string[];
	readonly auditError: Error | undefined;
	/** What git made of the change, with selfskills.git "commit" (absent otherwise). */
	readonly git?: readonly GitReport[];
	readonly diff: string;
	readonly snapshots: readonly string[];
}

/** The commit failed: the refusal, each file's and op's fate, the op that failed (-1: none in particular). */
export interface FailedOutcome {
	readonly kind: "failed";
	readonly refusal: Refusal;
	readonly fates: readonly FateReport[];
	readonly reports: readonly OperationReport[];
	readonly batch: boolean;
	readonly failedOp: number;
	/** How many files the commit changes (more than one: the journal retries a rollback). */
	readonly files: number;
}
