// Everything one skill_manage call needs, gathered once per call by the tool wiring: where pi
// lives, the project's trust, settings, the discovered skills with their writable roots, the
// session's read ledger and the (replaceable) filesystem and backup store.

import { createBackupStore, type BackupStore } from "./backup-store.ts";
import type { DiscoveryCache } from "./discovery-cache.ts";
import { discoverSkills, type Discovery } from "./discovery.ts";
import type { Refusal } from "./errors.ts";
import type { FsOps } from "./fs-ops.ts";
import type { FileView, Plan } from "./plan.ts";
import type { ReadLedger } from "./read-ledger.ts";
import { loadSettings, type SelfSkillsSettings, type SettingsReport } from "./settings.ts";
import { resolveProjectTrust, type ProjectTrust, type TrustContext } from "./trust.ts";

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
}

/** A mutation resolved outside the locks: the paths to lock, and the planner to run inside them. */
export interface PreparedMutation {
	readonly action: string;
	readonly skill: string;
	readonly file: string;
	readonly paths: readonly string[];
	plan(input: PlanInput): Plan | Refusal;
}

export interface Policy {
	readonly trust: ProjectTrust;
	readonly report: SettingsReport;
}

/** Trust first (from the global list or pi), then the settings that trust allows. */
export function loadPolicy(ctx: TrustContext, agentDir: string): Policy {
	const global = loadSettings({ cwd: ctx.cwd, agentDir, trusted: false });
	const trust = resolveProjectTrust(ctx, global.settings.trustedProjects);
	const report = trust.trusted ? loadSettings({ cwd: ctx.cwd, agentDir, trusted: true }) : global;
	return { trust, report };
}

export interface CallContextInput {
	readonly ctx: TrustContext;
	readonly agentDir: string;
	readonly ledger: ReadLedger;
	readonly fs: FsOps;
	readonly runtimeSkillFiles: readonly string[];
	/** Reuses the session's last discovery while the disk proves it current; none: always fresh. */
	readonly discoveryCache?: DiscoveryCache;
	readonly signal?: AbortSignal;
}

export async function createCallContext(input: CallContextInput): Promise<CallContext> {
	const policy = loadPolicy(input.ctx, input.agentDir);
	const { trust, report } = policy;
	const cwd = input.ctx.cwd;
	const options = { cwd, agentDir: input.agentDir, trusted: trust.trusted, settings: report.settings, runtimeSkillFiles: input.runtimeSkillFiles, fs: input.fs };
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
	};
}
