// The sandbox for pi's bash while a control is on: the command runs inside bubblewrap (`bwrap`) with the
// protected set mounted read-only, in its own user namespace with no capabilities, so no shell form
// (interpreters, archives, git, a nested pi) can change it, not even as root. Everything else is as before.

import { spawnSync } from "node:child_process";
import { accessSync, constants, mkdirSync } from "node:fs";
import { delimiter, join } from "node:path";
import { findProjectRoot, getHomeDir, isWithin, resolveReal } from "../base/paths.ts";
import type { ProtectedPlace, ProtectedSet } from "./protected-set.ts";

/** Whether bash can be sandboxed here: the bwrap found and proven to work, or why not. */
export type SandboxProbe =
	| { readonly available: true; readonly bwrap: string }
	| { readonly available: false; readonly reason: string };

/**
 * The namespace and mount options every sandboxed command gets: the whole filesystem as before, a
 * fresh /dev (no raw disks: root could write a protected file's blocks through one) and /proc, no
 * capabilities and no nested user namespace (so no remount, not even as root).
 */
const BASE_ARGS = [
	"--unshare-user",
	"--disable-userns",
	"--cap-drop",
	"ALL",
	"--bind",
	"/",
	"/",
	"--dev",
	"/dev",
	"--proc",
	"/proc",
];

function findOnPath(name: string, path: string | undefined): string | undefined {
	for (const dir of (path ?? "").split(delimiter)) {
		if (!dir) continue;
		const candidate = join(dir, name);
		try {
			accessSync(candidate, constants.X_OK);
			return candidate;
		} catch {
			// not here
		}
	}
	return undefined;
}

/**
 * Finds bwrap on PATH and runs it once with the sandbox's own options: bwrap that cannot create its
 * namespaces (a container without user namespaces, a kernel that forbids them) counts as absent.
 */
export function probeSandbox(options: { path?: string; platform?: NodeJS.Platform } = {}): SandboxProbe {
	if ((options.platform ?? process.platform) !== "linux")
		return { available: false, reason: "bubblewrap sandboxing is Linux only" };
	const bwrap = findOnPath("bwrap", options.path ?? process.env.PATH);
	if (!bwrap) return { available: false, reason: "bwrap was not found on PATH" };
	const run = spawnSync(bwrap, [...BASE_ARGS, "--", "/bin/sh", "-c", "exit 0"], {
		encoding: "utf8",
		timeout: 5000,
		stdio: ["ignore", "pipe", "pipe"],
	});
	if (run.status === 0) return { available: true, bwrap };
	const why = (run.stderr || run.error?.message || `exit ${run.status ?? run.signal}`).trim().split("\n")[0];
	return { available: false, reason: `${bwrap} cannot create its sandbox here (${why})` };
}

/** `'text'` for a POSIX shell, whatever the text holds. */
export function shellQuote(text: string): string {
	return `'${text.replace(/'/g, "'\\''")}'`;
}

/** The places a read-only mount covers, after creating the missing ones that may be created. */
export interface SandboxMounts {
	readonly readOnly: readonly string[];
	/** Missing places inside the person's project: not created, so not mounted (the matcher covers them). */
	readonly uncovered: readonly ProtectedPlace[];
}

/**
 * Existing places are mounted as they are. A missing place is covered by a protected place around
 * it; else, when it lies outside the person's project (in the home folder or pi's folder), it is
 * created empty and mounted; inside the project nothing is created: it stays uncovered.
 */
export function planMounts(set: ProtectedSet, cwd: string): SandboxMounts {
	const project = resolveReal(findProjectRoot(cwd));
	const home = resolveReal(getHomeDir());
	const readOnly: string[] = [];
	const uncovered: ProtectedPlace[] = [];
	for (const place of set.places) {
		if (place.exists) {
			readOnly.push(place.real);
			continue;
		}
		if (isWithin(home, place.real) && !isWithin(project, place.real)) {
			try {
				mkdirSync(place.real, { recursive: true });
				readOnly.push(place.real);
				continue;
			} catch {
				// Left uncovered below.
			}
		}
		uncovered.push(place);
	}
	return { readOnly, uncovered };
}

/**
 * The command pi's bash runs instead of `command`: bwrap with the places read-only, then the same
 * shell pi chose (`$0`) on the same text, in the same folder (`$PWD`), with the same environment.
 * `prefix` (pi's shellCommandPrefix) runs inside again, so its aliases and options hold there too.
 */
export function sandboxCommand(
	command: string,
	options: { bwrap: string; readOnly: readonly string[]; prefix?: string },
): string {
	const mounts = options.readOnly.flatMap((path) => ["--ro-bind", shellQuote(path), shellQuote(path)]);
	const inner = options.prefix ? `${options.prefix}\n${command}` : command;
	return [
		"exec",
		shellQuote(options.bwrap),
		...BASE_ARGS,
		...mounts,
		"--chdir",
		'"$PWD"',
		"--",
		'"$0"',
		"-c",
		shellQuote(inner),
	].join(" ");
}

/** One line for /selfskills: whether pi's bash is sandboxed, and if not, how to make it so. */
export function bashStatusLine(probe: SandboxProbe, control: boolean): string {
	if (probe.available)
		return control
			? `bash: sandboxed (${probe.bwrap}): the protected set is read-only to pi's bash while a control is on`
			: `bash: not sandboxed now (no control is on); sandboxed by ${probe.bwrap} once one is`;
	return (
		`bash: NOT sandboxed: ${probe.reason}. ` +
		(control ? "While a control is on only a text matcher guards bash (best effort). " : "") +
		"To sandbox it: apt-get install bubblewrap"
	);
}
