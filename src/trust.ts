// Whether the current project is trusted: pi's own decision where the running pi has one
// (`ctx.isProjectTrusted()`, pi 0.79+), otherwise the GLOBAL `selfskills.trustedProjects` list.
// Only the global settings file can hold that list, so a project can never trust itself.

import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { findProjectRoot, isWithin, resolveReal } from "./paths.ts";
import lockfile from "proper-lockfile";
import { getGlobalSettingsPath, isJsonObject, readSettingsFile } from "./settings.ts";

export type TrustSource = "pi" | "selfskills-list";

export interface ProjectTrust {
	readonly trusted: boolean;
	readonly source: TrustSource;
	readonly projectRoot: string;
}

export function isListedTrusted(projectRoot: string, trustedProjects: readonly string[]): boolean {
	const root = resolveReal(projectRoot);
	return trustedProjects.some((listed) => isWithin(resolveReal(listed), root));
}

export interface TrustContext {
	readonly cwd: string;
}

function nativeTrust(ctx: TrustContext): boolean | undefined {
	const candidate: unknown = (ctx as { isProjectTrusted?: unknown }).isProjectTrusted;
	if (typeof candidate !== "function") return undefined;
	try {
		return Boolean(candidate.call(ctx));
	} catch {
		return undefined;
	}
}

export function resolveProjectTrust(ctx: TrustContext, trustedProjects: readonly string[]): ProjectTrust {
	const projectRoot = findProjectRoot(ctx.cwd);
	const native = nativeTrust(ctx);
	if (native !== undefined) return { trusted: native, source: "pi", projectRoot };
	return { trusted: isListedTrusted(projectRoot, trustedProjects), source: "selfskills-list", projectRoot };
}

/**
 * Adds or removes a project root in the global `selfskills.trustedProjects`, under the same
 * lock pi's SettingsManager takes on settings.json, written through a temp file and rename.
 */
export function setListedTrust(agentDir: string, projectRoot: string, trusted: boolean): readonly string[] {
	const path = getGlobalSettingsPath(agentDir);
	mkdirSync(dirname(path), { recursive: true });
	if (!existsSync(path)) writeFileSync(path, "{}\n");
	const release = lockfile.lockSync(path, { realpath: false });
	try {
		const { json, problem } = readSettingsFile(path);
		if (problem && readFileSync(path, "utf8").trim() !== "") throw new Error(`refusing to rewrite ${problem}`);
		const block = isJsonObject(json.selfskills) ? { ...json.selfskills } : {};
		const current = Array.isArray(block.trustedProjects)
			? block.trustedProjects.filter((p): p is string => typeof p === "string")
			: [];
		const root = resolve(projectRoot);
		const next = trusted
			? [...current.filter((p) => resolve(p) !== root), root]
			: current.filter((p) => resolve(p) !== root && !isWithin(resolve(p), root));
		block.trustedProjects = next;
		const temp = `${path}.selfskills-${process.pid}.tmp`;
		writeFileSync(temp, `${JSON.stringify({ ...json, selfskills: block }, null, 2)}\n`);
		renameSync(temp, path);
		return next;
	} finally {
		release();
	}
}
