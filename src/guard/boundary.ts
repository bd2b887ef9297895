// One session's boundary while a control is on: its own temp folder, the sandbox (proven at first
// need), the layout of each sandboxed call, the protected folders pinned by device and inode, and the
// missing protected places held open as empty read-only folders (removed, and swept, afterwards).

import { randomBytes } from "node:crypto";
import { cpSync, mkdirSync, readdirSync, realpathSync, renameSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FsOps, realFs } from "../base/fs-ops.ts";
import { resolveReal } from "../base/paths.ts";
import { distrustFolders, programPath } from "../base/programs.ts";
import { pathExists } from "../base/fs-reads.ts";
import { findPiPackageDir } from "../base/pi-package.ts";
import type { SelfSkillsSettings } from "../policy/settings.ts";
import type { SandboxLayout } from "./bwrap-args.ts";
import { getProtectedSet, type ProtectedSet } from "./protected-set.ts";
import { probeSandbox, type SandboxProbe } from "./sandbox.ts";
import { getWritablePlaces, type WritablePlaces } from "./writable.ts";

/** What one call is judged against: the protected set and the writable places. */
export interface CallPlaces {
	readonly set: ProtectedSet;
	readonly writable: WritablePlaces;
}

export interface CallInput {
	readonly cwd: string;
	readonly agentDir: string;
	readonly settings: SelfSkillsSettings;
	readonly runtimeSkillFiles?: readonly string[];
}

export interface Boundary {
	/** The sandbox, found and proven at first call (spawns bwrap once); kept once it works. */
	probe(): SandboxProbe;
	/** The session's own temp folder, created at first need (a sandboxed call). */
	tmpdir(): string;
	/** Its path, chosen once per session without creating it (what edit and write are judged by). */
	tmpdirPath(): string;
	/**
	 * The places one call is judged by. `call.keep`: kept for that tool call id (the tool_call hook);
	 * `call.take`: the places kept for that id with the same input, taken once (the sandboxed bash
	 * builds its layout from the very places its hook judged, not from a second reading).
	 */
	places(input: CallInput, call?: { keep?: string; take?: string }): CallPlaces;
	/** The layout of one sandboxed call; missing protected places inside writable ones are held open first. */
	layout(input: CallInput, places: CallPlaces): SandboxLayout;
	/** Why a protected folder is no longer the one pinned at session start, or undefined. */
	movedPlace(set: ProtectedSet): string | undefined;
	/** After a sandboxed call: what appeared at a missing protected place, moved into the store. */
	sweep(agentDir: string): string[];
	/** At session start: pi's own folder noted, programs looked up, and (under a control) the pins taken. */
	start(input: CallInput & { control: boolean }): void;
	/** At session end: the temp folder and the empty held-open folders removed. */
	end(): void;
}

const SKILL_FOLDER = "the folder of a skill pi loaded";

/** At most this many calls' places are kept between their hook and their run (a blocked call never runs). */
const KEPT_CALLS = 16;

/** Whether two calls are judged by the same input: same folders, same settings, same loaded skills. */
function sameInput(a: CallInput, b: CallInput): boolean {
	return (
		a.cwd === b.cwd &&
		a.agentDir === b.agentDir &&
		a.runtimeSkillFiles === b.runtimeSkillFiles &&
		JSON.stringify(a.settings) === JSON.stringify(b.settings)
	);
}

export function createBoundary(fs: FsOps = realFs): Boundary {
	let probe: SandboxProbe | undefined;
	let temp: string | undefined;
	let piDir: string | undefined;
	const pins = new Map<string, string>();
	const held = new Set<string>();
	const kept = new Map<string, { input: CallInput; places: CallPlaces }>();
	// Started at session start when a control is on then; else by the first call that needs places
	// (a control turned on mid-session), so pi's folder and the program lookups are never skipped.
	let started = false;
	const places = (input: CallInput, temp = boundary.tmpdirPath()): CallPlaces => {
		if (!started) boundary.start({ ...input, control: true });
		const set = getProtectedSet({ ...input, piDir, fs });
		return { set, writable: getWritablePlaces({ ...input, tmpdir: temp, protectedSet: set, fs }) };
	};
	const boundary: Boundary = {
		probe: () => {
			if (probe?.available !== true) probe = probeSandbox();
			return probe;
		},
		tmpdir: () => {
			const path = boundary.tmpdirPath();
			if (!pathExists(fs, path)) mkdirSync(path, { mode: 0o700 });
			return path;
		},
		tmpdirPath: () => {
			temp ??= join(realpathSync(tmpdir()), `pi-selfskills-session-${randomBytes(8).toString("hex")}`);
			return temp;
		},
		places: (input, call) => {
			const given = call?.take === undefined ? undefined : kept.get(call.take);
			if (call?.take !== undefined) kept.delete(call.take);
			if (given && sameInput(given.input, input)) return given.places;
			const out = places(input);
			if (call?.keep !== undefined) {
				kept.set(call.keep, { input, places: out });
				for (const id of kept.keys()) if (kept.size > KEPT_CALLS) kept.delete(id);
			}
			return out;
		},
		layout: (input, { set, writable }) => {
			const inside: string[] = [];
			for (const place of set.places) {
				if (!writable.find(place.real)) continue;
				if (!place.exists && !pathExists(fs, place.real)) holdOpen(place.real, held);
				if (pathExists(fs, place.real)) inside.push(place.real);
			}
			return {
				readOnlyRoot: "/",
				writable: writable.places.map((p) => p.real),
				protected: inside,
				hide: hiddenFolders(fs),
				network: input.settings.sandbox.network,
				tmpdir: boundary.tmpdir(),
				cwd: resolveReal(input.cwd, fs),
			};
		},
		movedPlace: (set) => checkPins(set, pins, held, fs),
		sweep: (agentDir) => sweepHeld(held, agentDir),
		start: (input) => {
			started = true;
			piDir ??= findPiPackageDir();
			try {
				// The whole real temp folder is distrusted here: the session's own is made at first need.
				const { set, writable } = places(input, realpathSync(tmpdir()));
				distrustFolders(writable.places.map((p) => p.real));
				programPath("git");
				programPath("bwrap");
				if (input.control) checkPins(set, pins, held, fs);
			} catch {
				// Never stops pi's start: the lookups and pins are made again at first need.
			}
		},
		end: () => {
			started = false;
			for (const dir of held) {
				try {
					rmdirSync(dir);
				} catch {
					// Not empty (the sweep moves what appeared) or already gone.
				}
			}
			held.clear();
			pins.clear();
			kept.clear();
			if (temp !== undefined) rmSync(temp, { recursive: true, force: true });
			temp = undefined;
		},
	};
	return boundary;
}

/** A missing protected place inside a writable one, made an empty folder so the sandbox can mount it read-only. */
function holdOpen(real: string, held: Set<string>): void {
	try {
		const first = mkdirSync(real, { recursive: true });
		if (first !== undefined) held.add(first);
	} catch {
		// Left unmounted: the sweep after the call still moves anything that appeared there.
	}
	held.add(real);
}

/**
 * Each protected folder's device and inode, pinned the first time it is seen; a different one now is a
 * move. Folders held open by a pi are not pinned (a second pi may end and remove one): the sweep covers them.
 */
function checkPins(
	set: ProtectedSet,
	pins: Map<string, string>,
	held: ReadonlySet<string>,
	fs: FsOps,
): string | undefined {
	for (const place of set.places) {
		if (place.why === SKILL_FOLDER || held.has(place.real)) continue;
		let id: string;
		try {
			const stat = fs.lstat(place.real);
			id = `${stat.dev}:${stat.ino}`;
		} catch {
			continue;
		}
		const pinned = pins.get(place.real);
		if (pinned === undefined) pins.set(place.real, id);
		else if (pinned !== id)
			return `${place.path} (${place.why}) is not the folder it was at session start: it was moved or replaced`;
	}
	return undefined;
}

/** Anything inside a held-open folder appeared there despite the mount: moved into the store, one line each. */
function sweepHeld(held: ReadonlySet<string>, agentDir: string): string[] {
	const moved: string[] = [];
	for (const dir of held) {
		let names: string[];
		try {
			names = readdirSync(dir);
		} catch {
			continue;
		}
		if (names.length === 0) continue;
		const stamp = new Date().toISOString().replace(/[:.]/g, "-");
		const into = join(agentDir, "selfskills", "appeared", stamp, dir.replace(/\//g, "_"));
		mkdirSync(into, { recursive: true });
		for (const name of names) {
			const from = join(dir, name);
			try {
				renameSync(from, join(into, name));
			} catch {
				cpSync(from, join(into, name), { recursive: true, verbatimSymlinks: true });
				rmSync(from, { recursive: true, force: true });
			}
			moved.push(`${from} → ${join(into, name)}`);
		}
	}
	return moved;
}

/** /run/user/<uid> and $XDG_RUNTIME_DIR: the desktop's, the session bus's and the agents' sockets. */
function hiddenFolders(fs: FsOps): string[] {
	const out: string[] = [];
	const uid = process.getuid?.();
	for (const dir of [uid === undefined ? undefined : `/run/user/${uid}`, process.env.XDG_RUNTIME_DIR]) {
		if (dir?.startsWith("/") && pathExists(fs, dir)) out.push(resolveReal(dir, fs));
	}
	return [...new Set(out)];
}
