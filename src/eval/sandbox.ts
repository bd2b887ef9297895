// The sandbox an eval's runs and check commands run in, built by the boundary's one builder
// (guard/bwrap-args.ts): the whole filesystem read-only, the person's home, agent folder and real temp
// folder hidden under empty tmpfs mounts (a skill under review must not read ~/.ssh and send it out),
// what the run needs from those places (pi, node, the named extension) bound back read-only, only the
// run's throwaway folder writable with its own $TMPDIR inside it, no desktop or agent sockets. Its own
// user, PID, IPC and session namespaces, no capabilities; the network stays on for the model.

import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { isWithin, resolveReal } from "../base/paths.ts";
import { buildBwrapArgs, type SandboxLayout } from "../guard/bwrap-args.ts";
import type { ProjectBind } from "./workspace.ts";

/** What every sandboxed run of one eval shares: the proven bwrap (by absolute path) and the hidden places. */
export interface EvalSandbox {
	/** bwrap's absolute path, as the boundary's lookup found it and its probe proved it. */
	readonly bwrap: string;
	/** Hidden under an empty tmpfs (outermost first). */
	readonly hidden: readonly string[];
	/** Bound back read-only inside a hidden place (pi, node, the extension). */
	readonly keep: readonly string[];
}

/** One run's own places: its throwaway folder (the only writable place), its temp folder inside it, where it starts. */
export interface RunPlaces {
	readonly dir: string;
	readonly tmpdir: string;
	readonly cwd: string;
	/** The project's node_modules folders over their places in the copy, read-only. */
	readonly binds: readonly ProjectBind[];
}

/** The layout of one run in the shared builder's terms. */
export function evalLayout(sandbox: EvalSandbox, run: RunPlaces): SandboxLayout {
	return {
		readOnlyRoot: "/",
		hide: sandbox.hidden,
		keep: sandbox.keep,
		writable: [run.dir],
		protected: [],
		readOnlyBinds: run.binds,
		network: true,
		tmpdir: run.tmpdir,
		cwd: run.cwd,
	};
}

/** `argv` run in the sandbox: bwrap by its absolute path, its options, `--`, the command. */
export function sandboxedArgv(sandbox: EvalSandbox, run: RunPlaces, argv: readonly string[]): string[] {
	return [sandbox.bwrap, ...buildBwrapArgs(evalLayout(sandbox, run)), "--", ...argv];
}

/**
 * The places hidden from a run, by real path, outermost first, none inside another: the home
 * folder, pi's agent folder (auth.json, sessions), the real temp folder and the person's runtime
 * folder (agent and desktop sockets). The filesystem root is never one.
 */
export function hiddenPlaces(places: readonly string[]): string[] {
	const real = [...new Set(places.filter((p) => p && existsSync(p)).map((p) => resolveReal(resolve(p))))]
		.filter((p) => p !== "/")
		.sort((a, b) => a.length - b.length);
	return real.filter((p, i) => !real.slice(0, i).some((outer) => isWithin(outer, p)));
}

/**
 * What a run needs that lies inside a hidden place, to bind back read-only: for each needed path,
 * itself (a folder) when it lies in one. Paths outside every hidden place are visible anyway.
 */
export function keptPlaces(needed: readonly string[], hidden: readonly string[]): string[] {
	const real = needed.filter((p) => existsSync(p)).map((p) => resolveReal(resolve(p)));
	return [...new Set(real)].filter((p) => hidden.some((h) => isWithin(h, p) && p !== h)).sort();
}

/** The folder `node` was installed under (its bin's parent): libraries it loads live beside it. */
export function nodePrefix(execPath: string): string {
	return dirname(dirname(resolveReal(execPath)));
}
