// A call's policy: the project's trust, then the settings that trust allows. Kept apart from the call
// context so that pi's start-up (index.ts: is the package on, does it inject) reads it without the rest.

import { type FsOps, realFs } from "../base/fs-ops.ts";
import type { PiPlaces } from "../base/paths.ts";
import { readSettings, type SettingsReport } from "./settings.ts";
import { resolveProjectTrust, type ProjectTrust, type TrustContext } from "./project-trust.ts";

export interface Policy {
	readonly trust: ProjectTrust;
	readonly report: SettingsReport;
}

/** Trust first (from the global list or pi), then the settings that trust allows. */
export function loadPolicy(ctx: TrustContext, agentDir: string, fs: FsOps = realFs, places?: () => PiPlaces): Policy {
	const settings = readSettings({ cwd: ctx.cwd, agentDir, fs, places });
	const global = settings(false);
	const trust = resolveProjectTrust(ctx, global.settings.trustedProjects);
	const report = trust.trusted ? settings(true) : global;
	return { trust, report };
}
