// A fresh temp folder per test with agent/, home/, project/ and run/, and the env pi reads for isolation
// (HOME, PI_CODING_AGENT_DIR, PI_OFFLINE=1, XDG_RUNTIME_DIR: the per-user lock folder is made there,
// so one test's locks never meet another's). `useTempEnv()` wires create/cleanup into mocha hooks.
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TempEnv {
	root: string;
	/** `PI_CODING_AGENT_DIR`: settings.json, skills/, trust.json (1.6) live here. */
	agentDir: string;
	/** `HOME`: `~/.agents/skills` is read from here. */
	home: string;
	/** The session cwd. */
	projectDir: string;
	/** `XDG_RUNTIME_DIR` (0700): the cross-process locks live in its pi-selfskills/locks. */
	runtimeDir: string;
	/** Restores the env and deletes the folder (`keep` leaves the folder for debugging). */
	cleanup(options?: { keep?: boolean }): void;
}

const ENV_KEYS = ["HOME", "PI_CODING_AGENT_DIR", "PI_OFFLINE", "XDG_RUNTIME_DIR"] as const;

/** `base`: where the env is made (default: the temp folder; a world outside it shows what a read-only home breaks). */
export function createTempEnv(options: { prefix?: string; base?: string } = {}): TempEnv {
	// realpath: macOS-style /tmp symlinks would otherwise make pi's canonical paths differ from ours
	const root = realpathSync(mkdtempSync(join(options.base ?? tmpdir(), options.prefix ?? "selfskills-test-")));
	const [agentDir, home, projectDir] = ["agent", "home", "project"].map((name) => join(root, name));
	for (const dir of [agentDir, home, projectDir]) mkdirSync(dir, { recursive: true });
	const runtimeDir = join(root, "run");
	mkdirSync(runtimeDir, { mode: 0o700 });
	const saved = new Map(ENV_KEYS.map((key) => [key, process.env[key]]));
	Object.assign(process.env, {
		HOME: home,
		PI_CODING_AGENT_DIR: agentDir,
		PI_OFFLINE: "1",
		XDG_RUNTIME_DIR: runtimeDir,
	});
	const cleanup = (cleanupOptions: { keep?: boolean } = {}): void => {
		for (const [key, value] of saved) restoreEnv(key, value);
		if (!cleanupOptions.keep) removeRoot(root);
	};
	return { root, agentDir, home, projectDir, runtimeDir, cleanup };
}

/**
 * Roots removed so far, removed once more as the process exits: pi 1.6 reads its model store and
 * auth.json through a lock that first creates the file (and its folder), and such a read can still be
 * under way when a test has ended and removed the env.
 */
const removedRoots = new Set<string>();

function removeRoot(root: string): void {
	rmSync(root, { recursive: true, force: true });
	if (removedRoots.size === 0)
		process.once("exit", () => {
			for (const removed of removedRoots) rmSync(removed, { recursive: true, force: true });
		});
	removedRoots.add(root);
}

function restoreEnv(key: string, value: string | undefined): void {
	if (value === undefined) delete process.env[key];
	else process.env[key] = value;
}

/** Mocha helper: a new TempEnv before each test, cleaned after it. Call inside `describe`. */
export function useTempEnv(options: { prefix?: string; base?: string } = {}): () => TempEnv {
	let current: TempEnv | undefined;
	beforeEach(() => {
		current = createTempEnv(options);
	});
	afterEach(() => {
		current?.cleanup({ keep: process.env.SELFSKILLS_KEEP_TMP === "1" });
		current = undefined;
	});
	return () => {
		if (!current) throw new Error("useTempEnv(): no temp env outside a test");
		return current;
	};
}
