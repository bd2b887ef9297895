// Everything one skill_manage call needs, gathered once per call by the tool wiring: where pi
// lives, the project's trust, settings, the discovered skills with their writable roots, the
// session's read ledger and the (replaceable) filesystem and backup store.

import { createBackupStore, type BackupStore } from "../store/backup-store.ts";
import type { DiscoveryCache } from "../policy/discovery-cache.ts";
import { discoverSkills, type Discovery } from "../policy/discovery.ts";
import type { Refusal } from "../base/errors.ts";
import type { Finding } from "../checks/risk-scan.ts";
import type { FsOps } from "../base/fs-ops.ts";
import { getPiPlaces, type PiPlaces } from "../base/paths.ts";
import { loadPolicy, type Policy } from "../policy/load-policy.ts";
import type { ReadLedger } from "../store/read-ledger.ts";
import type { ApprovalMode, SelfSkillsSettings } from "../policy/settings.ts";
import type { TrustContext } from "../policy/trust.ts";
import type { FileView, Plan } from "./types.ts";

export { loadPolicy, type Policy };

export interface CallContext {
	readonly cwd: string;
	readonly agentDir: string;
	readonly trusted: boolean;
	readonly settings: SelfSkillsSettings;
	/** Where trust and settings came from, and the settings problems, for /selfskills status. */
	readonly policy: Policy;
	readonly discovery: Discovery;
	/** Where the discovery came from; a landed commit is reported back to it. */
	readonly discoveryCache?: DiscoveryCache;
	readonly ledger: ReadLedger;
	readonly fs: FsOps;
	readonly store: BackupStore;
	readonly signal?: AbortSignal;
	/** pi's places, resolved once per call (the settings and gate 4 both ask). */
	readonly places: () => PiPlaces;
	/**
	 * The person acts through /selfskills (restore, approve): pins and approval modes bind the agent,
	 * not them; their confirmation is the decision. None: the agent's call.
	 */
	readonly byPerson?: boolean;
}

/** A finished non-mutating call: text for the model and details for renderers and tests. */
export interface ActionResult {
	readonly text: string;
	readonly details: Record<string, unknown>;
}

export interface PlanInput {
	/** Files as they will be when this op runs (the disk, or a batch's overlay). */
	readonly view: FileView;
	/** Files on disk, for the "unchanged since read" gate. */
	readonly disk: FileView;
	/** Paths changed by earlier ops of the same batch (they compose without a re-read). */
	readonly touched: ReadonlySet<string>;
	/** A dry run: every gate runs; the approval gate notes its need, but nobody is asked. */
	readonly dryRun?: boolean;
	/** Where the approval gate notes each skill whose change the person must allow (mode ask/propose). */
	readonly approvals?: ApprovalNeed[];
	/** Where the risk gate notes each file whose change adds risky lines (contentReview "escalate"). */
	readonly risks?: RiskNote[];
}

/** A file whose change adds findings of the risk scan: the person decides, whatever the approval mode. */
export interface RiskNote {
	readonly skill: string;
	readonly file: string;
	readonly findings: readonly Finding[];
}

/** A skill whose change needs the person: the mode its origin's setting asks for. */
export interface ApprovalNeed {
	readonly skill: string;
	readonly mode: ApprovalMode;
	readonly origin: "own" | "others";
}

/** A mutation resolved outside the locks: the paths to lock, and the planner to run inside them. */
export interface PreparedMutation {
	readonly action: string;
	readonly skill: string;
	readonly file: string;
	readonly paths: readonly string[];
	/** The agent's one sentence on why (shown to the person, kept in the audit line and a proposal). */
	readonly reason?: string;
	/** Skills a create (or a renaming patch) says it differs from, with the reason (kept in the audit line). */
	readonly distinctFrom?: readonly string[];
	plan(input: PlanInput): Plan | Refusal;
}

export interface CallContextInput {
	readonly ctx: TrustContext;
	readonly agentDir: string;
	readonly ledger: ReadLedger;
	readonly fs: FsOps;
	readonly runtimeSkillFiles: readonly string[];
	/** Reuses the session's last discovery while the disk proves it current; none: always fresh. */
	readonly discoveryCache?: DiscoveryCache;
	/** Trust and settings read for this call already (index.ts checks `enabled` with them); none: read here. */
	readonly policy?: Policy;
	readonly signal?: AbortSignal;
}

export async function createCallContext(input: CallContextInput): Promise<CallContext> {
	let resolved: PiPlaces | undefined;
	const places = () => (resolved ??= getPiPlaces(input.agentDir, input.fs));
	const policy = input.policy ?? loadPolicy(input.ctx, input.agentDir, input.fs, places);
	const { trust, report } = policy;
	const cwd = input.ctx.cwd;
	const options = {
		cwd,
		agentDir: input.agentDir,
		trusted: trust.trusted,
		settings: report.settings,
		runtimeSkillFiles: input.runtimeSkillFiles,
		fs: input.fs,
	};
	const discovery = await (input.discoveryCache ? input.discoveryCache.discover(options) : discoverSkills(options));
	return {
		cwd,
		agentDir: input.agentDir,
		trusted: trust.trusted,
		settings: report.settings,
		policy,
		discovery,
		discoveryCache: input.discoveryCache,
		ledger: input.ledger,
		fs: input.fs,
		store: createBackupStore(input.fs, input.agentDir),
		signal: input.signal,
		places,
	};
}

/** What a session's tool and command share for every call: where pi lives, the filesystem, the session's state. */
export interface SessionDeps {
	readonly agentDir: () => string;
	readonly fs: FsOps;
	readonly state: {
		readonly ledger: ReadLedger;
		readonly runtimeSkillFiles: readonly string[];
		readonly discoveryCache: DiscoveryCache;
	};
}

/** A call made in a session: its read ledger, the skill files pi was handed, its discovery cache. */
export function createSessionCallContext(
	deps: SessionDeps,
	ctx: TrustContext,
	call: Pick<CallContextInput, "policy" | "signal"> = {},
): Promise<CallContext> {
	return createCallContext({
		ctx,
		agentDir: deps.agentDir(),
		ledger: deps.state.ledger,
		fs: deps.fs,
		runtimeSkillFiles: deps.state.runtimeSkillFiles,
		discoveryCache: deps.state.discoveryCache,
		...call,
	});
}
