// What the package remembers for one pi session: the read ledger, the skills created or changed
// so far (named in the injected block until pi rescans on /reload), and the skill files pi itself
// loaded (from before_agent_start), so `--skill` skills show up in `list` as read-only.

import { createDiscoveryCache, type DiscoveryCache } from "../policy/discovery-cache.ts";
import type { FsOps } from "../base/fs-ops.ts";
import { createReadLedger, type ReadLedger } from "../store/read-ledger.ts";
import type { MutationEffects } from "./types.ts";

export interface ChangedSkill {
	readonly name: string;
	readonly description: string;
	readonly path: string;
	readonly action: string;
}

export interface SessionState {
	readonly ledger: ReadLedger;
	readonly changed: Map<string, ChangedSkill>;
	/** The last discovery, reused while its fingerprint holds. */
	readonly discoveryCache: DiscoveryCache;
	runtimeSkillFiles: string[];
	/** pi's name for each of those files (the side-door guard keys backups by it, as skill_manage does). */
	runtimeSkillNames: ReadonlyMap<string, string>;
	/** Journals found and rolled back when the session started, for /selfskills. */
	recoveries: string[];
	/** Skills the person allowed for the rest of the session when asked (approval "ask"). */
	readonly allowedSkills: Set<string>;
}

/** What the tool, /selfskills and a proposal's review run on: pi's agent folder, the filesystem, this session. */
export interface SessionDeps {
	readonly agentDir: () => string;
	readonly fs: FsOps;
	readonly state: SessionState;
	readonly effects: MutationEffects;
}

export function createSessionState(): SessionState {
	return {
		ledger: createReadLedger(),
		changed: new Map(),
		discoveryCache: createDiscoveryCache(),
		runtimeSkillFiles: [],
		runtimeSkillNames: new Map(),
		recoveries: [],
		allowedSkills: new Set(),
	};
}

export function resetSessionState(state: SessionState): void {
	state.ledger.clear();
	state.changed.clear();
	state.discoveryCache.clear();
	state.runtimeSkillFiles = [];
	state.runtimeSkillNames = new Map();
	state.allowedSkills.clear();
}
