// bubblewrap's arguments for one sandbox, as data: a read-only root, the hidden places under empty
// tmpfs mounts, what is kept of them bound back read-only, the writable places bound read-write, then
// the protected set (and read-only binds into the writable places) read-only again — an order in which
// no later mount can undo a read-only or hidden one; its own user, PID, IPC and session namespaces, no
// capabilities, its own $TMPDIR, no desktop or agent sockets. The one builder for every sandbox the
// package starts: pi's bash (bash-tool.ts), the sandbox's proof (sandbox.ts) and eval's runs (eval/).

import { dirname } from "node:path";
import { isWithin } from "../base/paths.ts";

/** What one sandbox may see and change; every path is a real (symlink-free) absolute path. */
export interface SandboxLayout {
	/** Mounted read-only at `/`: normally `/` itself. */
	readonly readOnlyRoot: string;
	/** Bound read-write, outermost first (inner ones become mount points of their own). */
	readonly writable: readonly string[];
	/** Existing places bound read-only again, after the writable ones. */
	readonly protected: readonly string[];
	/** Folders replaced by an empty tmpfs (the desktop's and agent's sockets under /run/user/<uid>). */
	readonly hide: readonly string[];
	/** Places inside a hidden folder bound back read-only at the same path (what a command needs from it). */
	readonly keep?: readonly string[];
	/** Read-only binds of `source` over `target` (a place inside a writable one), mounted after the writable places. */
	readonly readOnlyBinds?: readonly { readonly source: string; readonly target: string }[];
	/** false: no network (and no abstract sockets) inside. */
	readonly network: boolean;
	/** The session's own temp folder: $TMPDIR inside, with the caches of common tools under it. */
	readonly tmpdir: string;
	/** The folder the command starts in. */
	readonly cwd?: string;
}

/** Handed to no sandboxed command: the person's desktop, session bus, ssh agent and terminal multiplexer. */
export const UNSET_ENV = ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "TMUX"] as const;

/** $TMPDIR (TMP, TEMP) at `tmp`, and the caches of npm, pip and XDG tools under it. */
export function tmpdirEnv(tmp: string): Record<string, string> {
	return {
		TMPDIR: tmp,
		TMP: tmp,
		TEMP: tmp,
		npm_config_cache: `${tmp}/npm-cache`,
		XDG_CACHE_HOME: `${tmp}/cache`,
		PIP_CACHE_DIR: `${tmp}/pip-cache`,
	};
}

const depth = (path: string): number => (path === "/" ? 0 : path.split("/").length - 1);
const byDepth = (paths: Iterable<string>): string[] => [...new Set(paths)].sort((a, b) => depth(a) - depth(b));

/**
 * The writable folders between each protected place and the writable place holding it: each is bound
 * onto itself too, so renaming one (which would carry the read-only mount away) fails with EBUSY.
 */
export function pinningBinds(writable: readonly string[], protectedPlaces: readonly string[]): string[] {
	const out: string[] = [];
	for (const place of protectedPlaces) {
		const holder = writable.filter((w) => w !== place && isWithin(w, place)).sort((a, b) => depth(b) - depth(a))[0];
		if (holder === undefined) continue;
		for (let dir = dirname(place); dir !== holder && isWithin(holder, dir); dir = dirname(dir)) out.push(dir);
	}
	return out;
}

/** bwrap's options (no `--` and no command) for `layout`. */
export function buildBwrapArgs(layout: SandboxLayout): string[] {
	const args = ["--ro-bind", layout.readOnlyRoot, "/", "--dev", "/dev", "--proc", "/proc"];
	for (const dir of layout.hide) args.push("--tmpfs", dir);
	for (const place of layout.keep ?? []) args.push("--ro-bind", place, place);
	const writable = byDepth([...layout.writable, ...pinningBinds(layout.writable, layout.protected)]);
	for (const dir of writable) args.push("--bind", dir, dir);
	for (const place of byDepth(layout.protected)) args.push("--ro-bind", place, place);
	for (const bind of layout.readOnlyBinds ?? []) args.push("--ro-bind", bind.source, bind.target);
	args.push(
		"--unshare-user",
		"--unshare-pid",
		"--unshare-ipc",
		"--unshare-uts",
		"--unshare-cgroup-try",
		...(layout.network ? [] : ["--unshare-net"]),
		"--new-session",
		"--die-with-parent",
		"--disable-userns",
		"--cap-drop",
		"ALL",
	);
	for (const name of UNSET_ENV) args.push("--unsetenv", name);
	for (const [name, value] of Object.entries(tmpdirEnv(layout.tmpdir))) args.push("--setenv", name, value);
	if (layout.cwd !== undefined) args.push("--chdir", layout.cwd);
	return args;
}

/** `'text'` for a POSIX shell, whatever the text holds. */
export function shellQuote(text: string): string {
	return `'${text.replace(/'/g, "'\\''")}'`;
}
