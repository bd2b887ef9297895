// Whether the current project is trusted: pi's own decision where the running pi has one
// (`ctx.isProjectTrusted()`, pi 0.79+), otherwise the GLOBAL `selfskills.trustedProjects` list.
// The reading half of trust.ts: every session reads it at start-up, so it imports no write path.

import { dirname, resolve } from "node:path";
import { expandHome, findProjectRoot, getHomeDir, isWithin, resolveReal } from "../base/paths.ts";

export type TrustSource = "pi" | "selfskills-list";

export interface ProjectTrust {
	readonly trusted: boolean;
	readonly source: TrustSource;
	readonly projectRoot: string;
}

/**
 * The entries of `trustedProjects` that trust `projectRoot`: it or an ancestor, as written in the
 * list. An entry for the filesystem root or the home folder (a hand edit) trusts nothing.
 */
export function getCoveringEntries(projectRoot: string, trustedProjects: readonly string[]): string[] {
	const root = resolveReal(projectRoot);
	return trustedProjects.filter((listed) => {
		const path = resolve(expandHome(listed));
		return getTrustRefusal(path) === undefined && isWithin(resolveReal(path), root);
	});
}

/** True when `entry` lies above `projectRoot` (and so covers other projects too), not at it. */
export function isAncestorEntry(entry: string, projectRoot: string): boolean {
	return resolveReal(resolve(expandHome(entry))) !== resolveReal(projectRoot);
}

export function isListedTrusted(projectRoot: string, trustedProjects: readonly string[]): boolean {
	return getCoveringEntries(projectRoot, trustedProjects).length > 0;
}

/** Entries that trust nothing (the filesystem root, the home folder), each with why; for `/selfskills`. */
export function getIgnoredEntries(trustedProjects: readonly string[]): string[] {
	return trustedProjects.flatMap((listed) => {
		const why = getTrustRefusal(resolve(expandHome(listed)));
		return why === undefined ? [] : [`"${listed}" trusts nothing: ${why}`];
	});
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
 * Why `projectRoot` may never be trusted: the filesystem root or the home folder itself would
 * trust every project below it at once. Undefined when it may be.
 */
export function getTrustRefusal(projectRoot: string): string | undefined {
	const real = resolveReal(projectRoot);
	if (dirname(real) === real)
		return `${projectRoot} is the filesystem root: trusting it would trust every project on this machine`;
	if (real === resolveReal(getHomeDir()))
		return `${projectRoot} is your home folder: trusting it would trust every project below it`;
	return undefined;
}
