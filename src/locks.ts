// Serialising writers: pi's in-process withFileMutationQueue (shared with the built-in edit and
// write tools) and a cross-process proper-lockfile lock per file, kept in a private folder
// under <agentDir>/selfskills/locks (never next to the skill). Several paths are always taken
// in one sorted order, each once, so two calls can never deadlock.

import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import { withFileMutationQueue } from "@mariozechner/pi-coding-agent";
import lockfile from "proper-lockfile";
import { getSelfSkillsDir } from "./backup-store.ts";

export interface LockGuard {
	/**
	 * Throws when a cross-process lock was lost (taken over as stale) while held: the lock of
	 * `path` (checked before each write; a batch holds up to 100), or every lock without one.
	 */
	assertHeld(path?: string): void;
}

/** The key pi's queue uses for a path: its realpath, or the resolved path of a missing file. */
export function queueKey(path: string): string {
	try {
		return realpathSync.native(resolve(path));
	} catch {
		return resolve(path);
	}
}

function lockPathFor(agentDir: string, key: string): string {
	return join(getSelfSkillsDir(agentDir), "locks", `${createHash("sha256").update(key).digest("hex").slice(0, 24)}.lock`);
}

async function withCrossProcessLocks<T>(agentDir: string, keys: readonly string[], fn: (guard: LockGuard) => Promise<T>): Promise<T> {
	mkdirSync(join(getSelfSkillsDir(agentDir), "locks"), { recursive: true });
	let lost: Error | undefined;
	const releases: Array<() => Promise<void>> = [];
	// proper-lockfile notices a lost lock only on its update timer, which cannot run during a
	// synchronous commit; so assertHeld also checks each lock folder is still the one we made.
	const held = new Map<string, { path: string; id: string }>();
	try {
		for (const key of keys) {
			const lockPath = lockPathFor(agentDir, key);
			const release = await acquire(key, {
				realpath: false,
				lockfilePath: lockPath,
				stale: 10_000,
				update: 2_000,
				onCompromised: (error) => {
					lost = error;
				},
			});
			releases.push(release);
			held.set(key, { path: lockPath, id: identity(lockPath) });
		}
		return await fn({
			assertHeld(path) {
				const one = path === undefined ? undefined : held.get(queueKey(path));
				if (!lost) lost = (one ? [one] : [...held.values()]).map((lock) => takenAway(lock.path, lock.id)).find((error) => error !== undefined);
				if (lost) throw Object.assign(new Error(`lock lost: ${lost.message}`), { code: "ECOMPROMISED" });
			},
		});
	} finally {
		for (const release of releases.reverse()) await release().catch(() => undefined);
	}
}

type LockOptions = NonNullable<Parameters<typeof lockfile.lock>[1]>;

/**
 * An uncontended lock is taken synchronously (one mkdir, no thread-pool round trips); only a
 * held lock falls back to the async API, which retries with backoff until the holder is done.
 */
async function acquire(key: string, options: LockOptions): Promise<() => Promise<void>> {
	try {
		const release = lockfile.lockSync(key, options);
		return async () => release();
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code !== "ELOCKED") throw error;
	}
	return lockfile.lock(key, { ...options, retries: { retries: 200, factor: 1.2, minTimeout: 5, maxTimeout: 100, randomize: true } });
}

/** Inode plus birth time: a folder removed and made again may get the same inode number back. */
function identity(path: string): string {
	const stat = lstatSync(path);
	return `${stat.ino}:${stat.birthtimeMs}`;
}

function takenAway(path: string, id: string): Error | undefined {
	try {
		return identity(path) === id ? undefined : new Error(`${path} was taken over by another process`);
	} catch {
		return new Error(`${path} was removed`);
	}
}

/** Runs `fn` holding pi's mutation queue and a cross-process lock for every path. */
export async function withFileLocks<T>(agentDir: string, paths: readonly string[], fn: (guard: LockGuard) => Promise<T>): Promise<T> {
	const keys = [...new Set(paths.map(queueKey))].sort();
	const nest = (index: number): Promise<T> =>
		index === keys.length ? withCrossProcessLocks(agentDir, keys, fn) : withFileMutationQueue(keys[index], () => nest(index + 1));
	return nest(0);
}
