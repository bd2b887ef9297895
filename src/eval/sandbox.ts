// The bubblewrap sandbox an eval's runs and check commands run in: the whole filesystem read-only,
// the person's home, agent folder and real temp folder hidden under empty tmpfs mounts (a skill under
// review must not read ~/.ssh and send it out), what the run needs from those places (pi, node, the
// named extension) bound back read-only, and only the run's throwaway folders writable. Its own user,
// PID, IPC and session namespaces, no capabilities; the network stays on for the model.
// (Kept apart from guard/sandbox.ts, whose bwrap options it follows, until the two are unified.)

import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { isWithin, resolveReal } from "../base/paths.ts";
import type { ProjectBind } from "./workspace.ts";

/** Namespaces and options every eval sandbox gets (guard/sandbox.ts BASE_ARGS, plus a PID namespace). */
const NAMESPACE_ARGS = [
	"--unshare-user",
	"--unshare-pid",
	"--unshare-ipc",
	"--unshare-uts",
	"--disable-userns",
	"--cap-drop",
	"ALL",
	"--die-with-parent",
	"--new-session",
];

export interface SandboxLayout {
	readonly bwrap: string;
	/** Hidden under an empty tmpfs (outermost first). */
	readonly hidden: readonly string[];
	/** Bound back read-only inside a hidden place (pi, node, the extension). */
	readonly keep: readonly string[];
	/** The run's throwaway folders: the only writable places. */
	readonly writable: readonly string[];
	/** The project's node_modules folders over their places in the copy, read-only. */
	readonly binds: readonly ProjectBind[];
	readonly cwd: string;
}

/** bwrap's arguments up to `--`; mounts in an order that cannot undo a read-only or hidden one. */
export function bwrapArgs(layout: SandboxLayout): string[] {
	return [
		...NAMESPACE_ARGS,
		"--ro-bind",
		"/",
		"/",
		"--dev",
		"/dev",
		"--proc",
		"/proc",
		...layout.hidden.flatMap((path) => ["--tmpfs", path]),
		...layout.keep.flatMap((path) => ["--ro-bind", path, path]),
		...layout.writable.flatMap((path) => ["--bind", path, path]),
		...layout.binds.flatMap((b) => ["--ro-bind", b.source, b.target]),
		"--chdir",
		layout.cwd,
	];
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
