// Serialising writers: pi's in-process withFileMutationQueue (shared with the built-in edit and
// write tools) and a cross-process proper-lockfile lock per real file, kept in ONE private folder
// per user (not per agent dir), so every pi process on the machine meets on the same lock:
//
//   $XDG_RUNTIME_DIR/pi-selfskills/locks/<sha256(real path)[:24]>.lock/owner    (when that dir is private)
//   <os.tmpdir()>/pi-selfskills-<uid>/locks/<sha256(real path)[:24]>.lock/owner  (otherwise)
//
// `owner` records the holder (pid, host, boot, pid namespace, process start time): a holder proven
// dead on this host is taken over at once, one alive on this host never; one on another host (or
// with no record) once proper-lockfile finds its lock stale. Several paths are always taken in one
// sorted order, each once, so no two calls deadlock.

import { createHash, randomBytes } from "node:crypto";
import * as nodeFs from "node:fs";
import type { Stats } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { withFileMutationQueue } from "@mariozechner/pi-coding-agent";
import lockfile from "proper-lockfile";
import * as refusals from "./errors.ts";
import { errnoCode } from "./fs-reads.ts";
import { RefusalError, type Refusal } from "./errors.ts";
import { folderWriteError, realFs, type FsOps } from "./fs-ops.ts";
import { resolveReal } from "./paths.ts";

export interface LockGuard {
	/**
	 * Throws when a cross-process lock was lost (taken over as stale) while held: the lock of
	 * `path` (checked before each write; a batch holds up to 100), or every lock without one.
	 */
	assertHeld(path?: string): void;
}

export interface LockOptions {
	/** A lock not refreshed for this long, whose holder cannot be checked (another host), is taken over. */
	readonly stale?: number;
	/** How long to wait for a held lock before refusing with io_error ELOCKED. */
	readonly wait?: number;
	/**
	 * Every filesystem call of ours: the lock folder's checks, keys, owner records, take-overs (tests
	 * inject EACCES or a foreign owner). proper-lockfile's own mkdir and refresh use its graceful-fs.
	 */
	readonly fs?: FsOps;
	/** Where XDG_RUNTIME_DIR and TMPDIR are read (default process.env). */
	readonly env?: NodeJS.ProcessEnv;
}

const STALE_MS = 10_000;
const UPDATE_MS = 2_000;
const WAIT_MS = 30_000;
const OWNER = "owner";

/** The key pi's queue uses for a path: its realpath, or the resolved path of a missing file. */
export function queueKey(path: string, fs: FsOps = realFs): string {
	return keysOf(path, fs).key;
}

/** pi's queue key for `path` and the real path its lock is named after (one realpath when it exists). */
function keysOf(path: string, fs: FsOps): { key: string; real: string } {
	try {
		const real = fs.realpath(resolve(path));
		return { key: real, real };
	} catch {
		return { key: resolve(path), real: resolveReal(path, fs) };
	}
}

/**
 * The lock folder's name for a real path (resolveReal: a missing file's nearest existing folder's
 * real path plus the rest), so a file is keyed the same however it is named.
 */
function lockName(real: string): string {
	return `${createHash("sha256").update(real).digest("hex").slice(0, 24)}.lock`;
}

const getUid = (): number | undefined => process.getuid?.();

/** Why `dir` cannot hold our locks (a link, foreign, open to others, unwritable), or undefined. */
function privateFolderProblem(
	fs: FsOps,
	dir: string,
	stat: Stats = fs.lstat(dir),
): { problem: string; errno: string } | undefined {
	const uid = getUid();
	if (stat.isSymbolicLink()) return { problem: "is a symbolic link", errno: "ELOOP" };
	if (!stat.isDirectory()) return { problem: "is not a folder", errno: "ENOTDIR" };
	// Windows has no uid and reports every folder 0o666: its profile's temp folder is private already.
	if (uid !== undefined && stat.uid !== uid)
		return { problem: `is owned by uid ${stat.uid}, not by you (uid ${uid})`, errno: "EPERM" };
	if (uid !== undefined && (stat.mode & 0o077) !== 0)
		return {
			problem: `is open to other users (mode ${(stat.mode & 0o777).toString(8).padStart(4, "0")})`,
			errno: "EPERM",
		};
	const denied = folderWriteError(fs, dir);
	return denied ? { problem: "is not writable by you", errno: denied } : undefined;
}

/** Makes `dir` (0700) when missing, then proves it private; throws a RefusalError otherwise. */
function ensurePrivateFolder(fs: FsOps, dir: string): void {
	try {
		let stat: Stats | undefined;
		try {
			stat = fs.lstat(dir);
		} catch (error) {
			if (errnoCode(error) !== "ENOENT") throw error;
			try {
				fs.mkdir(dir, 0o700);
			} catch (made) {
				if (errnoCode(made) !== "EEXIST") throw made;
			}
		}
		const found = privateFolderProblem(fs, dir, stat);
		if (found) throw new RefusalError(refusals.lockFolderUnusable(dir, found.problem, found.errno));
	} catch (error) {
		if (error instanceof RefusalError) throw error;
		const errno = errnoCode(error) ?? "EUNKNOWN";
		throw new RefusalError(refusals.lockFolderUnusable(dir, `cannot be made or checked (${errno})`, errno));
	}
}

/** A private XDG_RUNTIME_DIR, as the XDG spec requires it to be; anything else falls back to tmpdir. */
function privateRuntimeDir(fs: FsOps, env: NodeJS.ProcessEnv): string | undefined {
	const dir = env.XDG_RUNTIME_DIR;
	if (!dir || resolve(dir) !== dir) return undefined;
	try {
		return privateFolderProblem(fs, dir) ? undefined : dir;
	} catch {
		return undefined;
	}
}

/**
 * The per-user lock folder, made and checked on each call: a shared /tmp invites a folder planted
 * by another user (or a link to one), and a lock there would be theirs to break.
 */
export function getLockDir(options: Pick<LockOptions, "fs" | "env"> = {}): string {
	const fs = options.fs ?? realFs;
	const env = options.env ?? process.env;
	const runtime = privateRuntimeDir(fs, env);
	const base = runtime
		? join(runtime, "pi-selfskills")
		: join(env.TMPDIR ? resolve(env.TMPDIR) : tmpdir(), `pi-selfskills-${getUid() ?? "user"}`);
	const locks = join(base, "locks");
	ensurePrivateFolder(fs, base);
	ensurePrivateFolder(fs, locks);
	return locks;
}

/** The lock folder proper-lockfile makes for `path`, the same for every process and agent dir. */
export function getLockPath(path: string, options: Pick<LockOptions, "fs" | "env"> = {}): string {
	return join(getLockDir(options), lockName(resolveReal(path, options.fs ?? realFs)));
}

interface Holder {
	readonly pid: number;
	readonly host: string;
	readonly boot: string | null;
	readonly pidns: string | null;
	/** Field 22 of /proc/<pid>/stat (clock ticks after boot): a reused pid has another. */
	readonly start: string | null;
}

function readOr<T>(read: () => T, fallback: T): T {
	try {
		return read();
	} catch {
		return fallback;
	}
}

/** State (field 3) and start time (field 22) of a process, from /proc; undefined off Linux or when gone. */
function procStat(fs: FsOps, pid: number): { state: string; start: string } | undefined {
	const text = readOr(() => fs.readFile(`/proc/${pid}/stat`).toString("latin1"), "");
	// The command name (field 2) may hold spaces and parentheses: fields 3.. start after the last ")".
	const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
	return fields.length > 19 ? { state: fields[0], start: fields[19] } : undefined;
}

// This machine's identity, read once through the real filesystem: a fault injected in a test's
// FsOps must not make this process look like one on another host for the rest of the run.
const BOOT_ID = readOr(() => realFs.readFile("/proc/sys/kernel/random/boot_id").toString("utf8").trim(), null);
const PID_NS = readOr(() => realFs.readlink("/proc/self/ns/pid"), null);
/** This process's start time, which never changes: read once, on the first lock taken. */
let ownStart: string | null | undefined;

function thisHolder(): Holder {
	ownStart ??= procStat(realFs, process.pid)?.start ?? null;
	return { pid: process.pid, host: hostname(), boot: BOOT_ID, pidns: PID_NS, start: ownStart };
}

function readHolder(fs: FsOps, lockPath: string): Holder | undefined {
	const parsed = readOr((): unknown => JSON.parse(fs.readFile(join(lockPath, OWNER)).toString("utf8")), undefined);
	if (typeof parsed !== "object" || parsed === null) return undefined;
	const h = parsed as Record<string, unknown>;
	const strOrNull = (v: unknown) => (typeof v === "string" ? v : null);
	if (typeof h.pid !== "number" || !Number.isInteger(h.pid) || h.pid <= 0 || typeof h.host !== "string")
		return undefined;
	return { pid: h.pid, host: h.host, boot: strOrNull(h.boot), pidns: strOrNull(h.pidns), start: strOrNull(h.start) };
}

/** Same host name, boot and pid namespace: only then does its pid mean a process we can see. */
function onThisMachine(holder: Holder, me: Holder): boolean {
	return holder.host === me.host && holder.boot === me.boot && holder.pidns === me.pidns;
}

/**
 * True only when the holder ran on this machine, in this boot and pid namespace, and its pid is
 * gone, a zombie, or now another process (another start time). Anything unprovable is alive.
 */
function isHolderDead(fs: FsOps, holder: Holder): boolean {
	const me = thisHolder();
	if (!onThisMachine(holder, me) || holder.pid === me.pid) return false;
	try {
		process.kill(holder.pid, 0);
	} catch (error) {
		return errnoCode(error) === "ESRCH";
	}
	const now = procStat(fs, holder.pid);
	if (!now) return false;
	return now.state === "Z" || now.state === "X" || (holder.start !== null && now.start !== holder.start);
}

/** Inode plus birth time: a folder removed and made again may get the same inode number back. */
function identity(fs: FsOps, path: string): string {
	const stat = fs.lstat(path);
	return `${stat.ino}:${stat.birthtimeMs}`;
}

function removeLockFolder(fs: FsOps, path: string): void {
	readOr(() => fs.unlink(join(path, OWNER)), undefined);
	readOr(() => fs.rmdir(path), undefined);
}

/** A take-over mutex older than this was left by a taker that died mid-way (one holds it for microseconds). */
const TAKE_OVER_STALE_MS = 5_000;

/**
 * Takes over the lock folder judged abandoned (`judged`: its identity then), under the lock's
 * take-over mutex (a folder beside it, made with mkdir): of several takers that judged the same
 * dead holder only one checks and renames at a time, so none can rename away the live lock another
 * taker made right after its own take-over. Renaming it away is atomic; a folder that is no longer
 * the judged one (released and taken again meanwhile) is put back, or its holder finds its lock gone
 * at assertHeld.
 */
export function takeOver(fs: FsOps, lockPath: string, judged: string): boolean {
	const mutex = `${lockPath}.taking`;
	try {
		fs.mkdir(mutex, 0o700);
	} catch {
		// Another taker is at it (try again after the backoff), or one died holding it: cleared once stale.
		const stat = readOr(() => fs.lstat(mutex), undefined);
		if (stat?.isDirectory() && Date.now() - stat.mtimeMs > TAKE_OVER_STALE_MS)
			readOr(() => fs.rmdir(mutex), undefined);
		return false;
	}
	try {
		return renameAway(fs, lockPath, judged);
	} finally {
		readOr(() => fs.rmdir(mutex), undefined);
	}
}

function renameAway(fs: FsOps, lockPath: string, judged: string): boolean {
	const grave = `${lockPath}.taken-${process.pid}-${randomBytes(4).toString("hex")}`;
	// Judged a moment ago (a /proc read and a signal since): still the same folder, or another taker
	// already replaced it and there is nothing to take.
	if (readOr(() => identity(fs, lockPath), "") !== judged) return false;
	try {
		fs.rename(lockPath, grave);
	} catch {
		return false;
	}
	if (readOr(() => identity(fs, grave), "") === judged) {
		removeLockFolder(fs, grave);
		return true;
	}
	try {
		fs.rename(grave, lockPath);
	} catch {
		removeLockFolder(fs, grave);
	}
	return false;
}

/** Whether the held lock at `lockPath` may be taken over now (holder dead here, or stale and unprovable). */
function abandoned(fs: FsOps, lockPath: string, pastStale: boolean): string | undefined {
	const id = readOr(() => identity(fs, lockPath), undefined);
	if (id === undefined) return undefined;
	const holder = readHolder(fs, lockPath);
	if (!holder) return pastStale ? id : undefined;
	if (isHolderDead(fs, holder)) return id;
	// Past the stale time a holder on another host loses the lock; one alive on this host keeps
	// it, however slow it is (it finds out at assertHeld if it is ever taken).
	return pastStale && !onThisMachine(holder, thisHolder()) ? id : undefined;
}

/**
 * Writes the owner record into a lock just taken. proper-lockfile treats any other change of the
 * folder's mtime as a lost lock, so the time it set is put back. Without a record (a failed write)
 * the lock is still valid, and only the timed stale rule can free it.
 */
function recordHolder(fs: FsOps, lockPath: string): void {
	readOr(() => {
		const { atime, mtime } = fs.lstat(lockPath);
		writeNewFile(fs, join(lockPath, OWNER), Buffer.from(JSON.stringify(thisHolder())));
		fs.utimes(lockPath, atime, mtime);
	}, undefined);
}

/** A new file (0600) holding `bytes`, as writeFileSync's flag "wx" makes it: it never replaces one. */
function writeNewFile(fs: FsOps, path: string, bytes: Uint8Array): void {
	const { O_WRONLY, O_CREAT, O_EXCL, O_TRUNC } = nodeFs.constants;
	const fd = fs.open(path, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC, 0o600);
	try {
		for (let offset = 0; offset < bytes.length; ) {
			const written = fs.write(fd, bytes, offset);
			if (written <= 0) throw Object.assign(new Error(`${path}: write made no progress`), { code: "EIO" });
			offset += written;
		}
	} finally {
		fs.close(fd);
	}
}

/**
 * The calls proper-lockfile makes on the fs it is given (its sync API wraps the *Sync ones, and
 * removes its locks with rmdirSync at exit). It copies that object on every lock: its default,
 * graceful-fs with a hundred methods, made the copy two thirds of taking a free lock.
 */
const LOCKFILE_FS = {
	mkdirSync: nodeFs.mkdirSync,
	realpathSync: nodeFs.realpathSync,
	statSync: nodeFs.statSync,
	rmdirSync: nodeFs.rmdirSync,
	utimesSync: nodeFs.utimesSync,
};

type Timing = Required<Pick<LockOptions, "stale" | "wait">>;

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

interface Held {
	readonly path: string;
	readonly id: string;
	release(): void;
}

/**
 * Takes the lock of `key`: synchronously when free (one mkdir, no thread-pool round trips), else
 * retrying with backoff until its holder is done, is proven dead, or `wait` runs out.
 */
async function acquire(
	fs: FsOps,
	key: string,
	lockPath: string,
	timing: Timing,
	onCompromised: (error: Error) => void,
): Promise<Held> {
	const started = Date.now();
	let delay = 5;
	for (;;) {
		let pastStale = false;
		try {
			const release = lockfile.lockSync(key, {
				fs: LOCKFILE_FS,
				realpath: false,
				lockfilePath: lockPath,
				stale: timing.stale,
				update: UPDATE_MS,
				onCompromised,
			});
			recordHolder(fs, lockPath);
			const id = identity(fs, lockPath);
			return {
				path: lockPath,
				id,
				release() {
					// A lock taken over meanwhile is its new holder's: its folder and record stay.
					if (takenAway(fs, lockPath, id)) return;
					// The record goes first: proper-lockfile removes the folder with rmdir.
					readOr(() => fs.unlink(join(lockPath, OWNER)), undefined);
					readOr(release, undefined);
				},
			};
		} catch (error) {
			const code = errnoCode(error);
			// proper-lockfile found the lock stale and could not rmdir it: it holds an owner record.
			if (code === "ENOTEMPTY" || code === "EEXIST") pastStale = true;
			else if (code !== "ELOCKED") {
				const errno = code ?? "EUNKNOWN";
				throw new RefusalError(
					refusals.lockFolderUnusable(
						dirname(lockPath),
						`refused the lock ${basename(lockPath)} (${errno})`,
						errno,
					),
				);
			}
		}
		const judged = abandoned(fs, lockPath, pastStale);
		if (judged !== undefined && takeOver(fs, lockPath, judged)) continue;
		const waited = Date.now() - started;
		if (waited >= timing.wait) throw new RefusalError(refusals.lockBusy(key, waited));
		await sleep(delay + Math.random() * delay);
		delay = Math.min(delay * 1.5, 100);
	}
}

function takenAway(fs: FsOps, path: string, id: string): Error | undefined {
	try {
		return identity(fs, path) === id ? undefined : new Error(`${path} was taken over by another process`);
	} catch {
		return new Error(`${path} was removed`);
	}
}

async function withCrossProcessLocks<T>(
	keys: ReadonlyMap<string, string>,
	fn: (guard: LockGuard) => Promise<T>,
	options: LockOptions,
): Promise<T> {
	const fs = options.fs ?? realFs;
	const dir = getLockDir(options);
	const timing = { stale: options.stale ?? STALE_MS, wait: options.wait ?? WAIT_MS };
	let lost: Error | undefined;
	// proper-lockfile notices a lost lock only on its update timer, which cannot run during a
	// synchronous commit; so assertHeld also checks each lock folder is still the one we made.
	const held = new Map<string, Held>();
	try {
		for (const [key, real] of keys) {
			const lockPath = join(dir, lockName(real));
			held.set(
				key,
				await acquire(fs, key, lockPath, timing, (error) => {
					lost = error;
				}),
			);
		}
		return await fn({
			assertHeld(path) {
				const one = path === undefined ? undefined : held.get(queueKey(path, fs));
				if (!lost)
					lost = (one ? [one] : [...held.values()])
						.map((lock) => takenAway(fs, lock.path, lock.id))
						.find((error) => error !== undefined);
				if (lost) throw Object.assign(new Error(`lock lost: ${lost.message}`), { code: "ECOMPROMISED" });
			},
		});
	} finally {
		for (const lock of [...held.values()].reverse()) lock.release();
	}
}

/**
 * Runs `fn` holding pi's mutation queue and a cross-process lock for every path; a lock that
 * cannot be had (unusable lock folder, held past `wait`) comes back as an io_error refusal, before
 * `fn` ran.
 */
export async function withFileLocks<T>(
	paths: readonly string[],
	fn: (guard: LockGuard) => Promise<T>,
	options: LockOptions = {},
): Promise<T | Refusal> {
	const fs = options.fs ?? realFs;
	// Each key once, in sorted order (the real path its lock is named after beside it).
	const reals = new Map(paths.map((path) => keysOf(path, fs)).map(({ key, real }) => [key, real]));
	const keys = [...reals.keys()].sort();
	const sorted = new Map(keys.map((key) => [key, reals.get(key) ?? key]));
	const nest = (index: number): Promise<T> =>
		index === keys.length
			? withCrossProcessLocks(sorted, fn, options)
			: withFileMutationQueue(keys[index], () => nest(index + 1));
	try {
		return await nest(0);
	} catch (error) {
		if (error instanceof RefusalError) return error.refusal;
		throw error;
	}
}
