// Durable, atomic file replacement: a temp file opened O_EXCL|O_NOFOLLOW in the target's own
// folder, every byte written and fsynced, renamed over the target, then the folder fsynced so
// the rename survives a power loss. Cleanup never hides the first error. Modelled on npm
// write-file-atomic, plus the directory sync and symlink refusal it lacks.

import { constants, type Stats } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import { failedAt, nonRegularKind, NotRegularFileError, noteFailedAt, type FsOps } from "./fs-ops.ts";
import { isMissing, listDir, lstatIfExists } from "./fs-reads.ts";

/** Temp files start with a dot so pi's skill loader never picks one up. */
export const TEMP_MARK = ".selfskills-tmp-";
const TEMP_PATTERN = /^\..*\.selfskills-tmp-(\d+)-[0-9a-f]+$/;

let counter = 0;

export class SymlinkTargetError extends Error {
	readonly code = "ESYMLINK";
	constructor(readonly path: string) {
		super(`${path} is a symbolic link`);
	}
}

/** A folder opened to be fsynced. */
const openDir = (fs: FsOps, dir: string): number => fs.open(dir, constants.O_RDONLY | constants.O_DIRECTORY, 0);

/** The mode of an existing regular file, or undefined when there is none; refuses symlinks. */
export function existingMode(fs: FsOps, path: string): number | undefined {
	try {
		const stat = fs.lstat(path);
		if (stat.isSymbolicLink()) throw new SymlinkTargetError(path);
		return stat.mode & 0o7777;
	} catch (error) {
		if (isMissing(error)) return undefined;
		throw error;
	}
}

export function syncDir(fs: FsOps, dir: string): void {
	const fd = openDir(fs, dir);
	withFd(fs, fd, () => fs.fsync(fd));
}

/** Runs `fn`, then closes `fd`; a close error is thrown only when `fn` succeeded (the first error wins). */
function withFd(fs: FsOps, fd: number, fn: () => void): void {
	try {
		fn();
	} catch (error) {
		closeQuietly(fs, fd);
		throw error;
	}
	fs.close(fd);
}

/**
 * A symlink inside the package's own store (backups, journal, audit...), which is never followed:
 * one planted there would redirect the next backup, or feed a restore someone else's file.
 */
export class StoreLinkError extends Error {
	readonly code = "ESYMLINK";
	constructor(readonly path: string) {
		super(
			`${path} is a symbolic link inside selfskills' own store, which never follows links; ` +
				`remove it (rm ${path}) and retry`,
		);
	}
}

/** Each existing step from `base` (exclusive) down to `path` (inclusive), stopping at the first missing one. */
function eachStepBelow(fs: FsOps, base: string, path: string, visit: (step: string, stat: Stats) => void): void {
	const rel = relative(base, path);
	if (rel.startsWith("..") || isAbsolute(rel)) throw new Error(`${path} is not inside ${base}`);
	let step = base;
	for (const part of rel === "" ? [] : rel.split(sep)) {
		step = join(step, part);
		let stat: Stats;
		try {
			stat = fs.lstat(step);
		} catch (error) {
			if (isMissing(error)) return;
			throw error;
		}
		visit(step, stat);
	}
}

/** Throws StoreLinkError for the first symlink on the way from `base` down to `path`. */
export function assertNoLinkBelow(fs: FsOps, base: string, path: string): void {
	eachStepBelow(fs, base, path, (step, stat) => {
		if (stat.isSymbolicLink()) throw new StoreLinkError(step);
	});
}

/**
 * mkdir -p for a folder of the package's private store below `base` (the agent dir): every folder
 * below `base` is owner-only (made 0700, or set to it), and a symlink at any level is refused.
 */
export function mkdirPrivate(fs: FsOps, base: string, dir: string): void {
	createPrivateDirs(fs, base).ensure(dir);
}

/**
 * The folders of the private store below `base` that one operation has made sure of (see
 * mkdirPrivate): each step is lstat'ed once, so the files of one commit walk their shared folders
 * once. Scoped to that one operation: a link planted before the next one is found by it.
 */
export interface PrivateDirs {
	/** mkdir -p of `dir` with mkdirPrivate's checks, for each step this operation has not checked yet. */
	ensure(dir: string): void;
	/** The real path of a folder ensured: no step below the base is a link, so only the base is resolved (once). */
	realPath(dir: string): string;
}

export function createPrivateDirs(fs: FsOps, base: string): PrivateDirs {
	const checked = new Set<string>();
	let realBase: string | undefined;
	return {
		realPath(dir) {
			if (!checked.has(dir)) return fs.realpath(dir);
			realBase ??= fs.realpath(base);
			return join(realBase, relative(base, dir));
		},
		ensure(dir) {
			if (checked.has(dir)) return;
			const rel = relative(base, dir);
			if (rel.startsWith("..") || isAbsolute(rel)) throw new Error(`${dir} is not inside ${base}`);
			if (rel === "" && !checked.has(base) && !lstatIfExists(fs, base)) mkdirDurable(fs, base);
			checked.add(base);
			let step = base;
			for (const part of rel === "" ? [] : rel.split(sep)) {
				step = join(step, part);
				if (checked.has(step)) continue;
				ensurePrivateStep(fs, base, step);
				checked.add(step);
			}
		},
	};
}

/** One folder of the private store: made 0700 when missing (its parent synced), set to 0700, never a link. */
function ensurePrivateStep(fs: FsOps, base: string, step: string): void {
	let stat = lstatIfExists(fs, step);
	if (stat === undefined) {
		// The steps above were made sure of already; only the base (the user's own, not 0700) may be missing.
		if (dirname(step) === base && !lstatIfExists(fs, base)) mkdirDurable(fs, base);
		mkdirDurable(fs, step, 0o700);
		stat = fs.lstat(step);
	}
	if (stat.isSymbolicLink()) throw new StoreLinkError(step);
	if (!stat.isDirectory()) throw new Error(`${step} exists and is not a folder`);
	if ((stat.mode & 0o777) !== 0o700) chmodNoFollow(fs, step, 0o700, constants.O_DIRECTORY);
}

/** Refuses a file of the private store that is a symlink (a missing one is fine: it is about to be made). */
export function assertNotLink(fs: FsOps, path: string): void {
	if (lstatIfExists(fs, path)?.isSymbolicLink()) throw new StoreLinkError(path);
}

/**
 * Writes `bytes` atomically as the owner-only file `path` of the private store: its folders made
 * sure of through `dirs`, the file itself never a symlink.
 */
export function writePrivate(fs: FsOps, dirs: PrivateDirs, path: string, bytes: Uint8Array): void {
	dirs.ensure(dirname(path));
	assertNotLink(fs, path);
	writeFileAtomic(fs, path, bytes, { mode: 0o600, dirs });
}

/** Sets the mode of a file or folder through a descriptor opened without following a symlink. */
function chmodNoFollow(fs: FsOps, path: string, mode: number, flags = 0): void {
	const fd = fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | flags, 0);
	withFd(fs, fd, () => fs.fchmod(fd, mode));
}

/** mkdir -p that fsyncs each parent whose entry list it changed; `mode` for the folders it makes. */
export function mkdirDurable(fs: FsOps, dir: string, mode?: number): void {
	const missing: string[] = [];
	let current = dir;
	for (;;) {
		try {
			const stat = fs.lstat(current);
			if (!stat.isDirectory()) throw new Error(`${current} exists and is not a folder`);
			break;
		} catch (error) {
			if (!isMissing(error)) throw error;
			missing.push(current);
			const parent = dirname(current);
			if (parent === current) break;
			current = parent;
		}
	}
	for (const path of missing.reverse()) {
		try {
			fs.mkdir(path, mode);
		} catch (error) {
			if (!(typeof error === "object" && error !== null && "code" in error && error.code === "EEXIST")) throw error;
		}
		syncDir(fs, dirname(path));
	}
}

function writeAll(fs: FsOps, fd: number, bytes: Uint8Array): void {
	let offset = 0;
	while (offset < bytes.length) {
		const written = fs.write(fd, bytes, offset);
		if (written <= 0) throw Object.assign(new Error("short write"), { code: "EIO" });
		offset += written;
	}
}

export interface AtomicWriteOptions {
	/** Mode for the file; default: keep the existing file's mode, or 0o644 for a new file. */
	readonly mode?: number;
	/** Called right before the rename; throwing aborts the write and leaves the target untouched. */
	readonly beforeRename?: () => void;
	/** The file lies in the package's own store below this folder: no step below it may be a symlink. */
	readonly storeBase?: string;
	/** The folders the file lies in, made sure of in this operation: its folder's real path is known. */
	readonly dirs?: PrivateDirs;
	/**
	 * prepareWrite leaves the temp file open and not synced, for syncWrites to sync with others at
	 * once; finishWrite refuses it until then.
	 */
	readonly deferSync?: boolean;
}

/** A new content written and synced in a temp file beside its target, not renamed over it yet. */
export interface PreparedWrite {
	readonly path: string;
	/** The target's folder as it resolved when the temp file was made (the folder to sync). */
	readonly realDir: string;
	readonly temp: string;
	/** The temp file while its fsync is deferred (see AtomicWriteOptions.deferSync); closed by syncWrites. */
	fd?: number;
}

/**
 * The first half of writeFileAtomic: the bytes in a temp file (O_EXCL|O_NOFOLLOW) of the target's
 * folder, written, given their mode and fsynced. Nothing of the target is touched; on failure no
 * temp file is left.
 */
export function prepareWrite(
	fs: FsOps,
	path: string,
	bytes: Uint8Array,
	options: AtomicWriteOptions = {},
): PreparedWrite {
	const dir = dirname(path);
	if (options.storeBase !== undefined) assertNoLinkBelow(fs, options.storeBase, path);
	const realDir = options.dirs?.realPath(dir) ?? fs.realpath(dir);
	const mode = options.mode ?? existingMode(fs, path) ?? 0o644;
	const temp = join(
		realDir,
		`.${basename(path)}${TEMP_MARK}${process.pid}-${(counter++).toString(16)}${Date.now().toString(16)}`,
	);
	const fd = fs.open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
	try {
		if (options.deferSync) {
			try {
				writeAll(fs, fd, bytes);
				fs.fchmod(fd, mode);
			} catch (error) {
				closeQuietly(fs, fd);
				throw error;
			}
			return { path, realDir, temp, fd };
		}
		withFd(fs, fd, () => {
			writeAll(fs, fd, bytes);
			fs.fchmod(fd, mode);
			fs.fsync(fd);
		});
	} catch (error) {
		unlinkQuietly(fs, temp);
		throw error;
	}
	return { path, realDir, temp };
}

/**
 * The deferred fsyncs of prepared writes, issued at once (fsyncAll), then each temp file closed.
 * The first error is thrown once every sync has settled and every file is closed; the temp files
 * stay for finishWrite or discardWrite.
 */
export async function syncWrites(fs: FsOps, writes: ReadonlyArray<PreparedWrite | undefined>): Promise<void> {
	const open = writes.filter((w): w is PreparedWrite => w?.fd !== undefined);
	const fds = open.flatMap((w) => (w.fd === undefined ? [] : [w.fd]));
	try {
		await closingAfter(fs, fds, () => fs.fsyncAll(fds));
	} catch (error) {
		// Which of `writes` failed (failedAt), for the refusal to name its file.
		const at = failedAt(error);
		throw at === undefined ? error : noteFailedAt(error, writes.indexOf(open[at]));
	} finally {
		// Closed either way: a failed write is discarded (its temp file unlinked), never closed twice.
		for (const w of open) w.fd = undefined;
	}
}

/**
 * syncDir for many folders at once: each opened, all fsynced together (fsyncAll), each closed. A
 * failed sync names its folder's place in `dirs` (failedAt).
 */
export async function syncDirs(fs: FsOps, dirs: readonly string[]): Promise<void> {
	const fds: number[] = [];
	try {
		for (const dir of dirs) fds.push(openDir(fs, dir));
	} catch (error) {
		for (const fd of fds) closeQuietly(fs, fd);
		throw error;
	}
	await closingAfter(fs, fds, () => fs.fsyncAll(fds));
}

/** Awaits `sync`, then closes every fd; the first error (the sync's, else a close's) is thrown after all are closed. */
async function closingAfter(fs: FsOps, fds: readonly number[], sync: () => Promise<void>): Promise<void> {
	let failure: { error: unknown } | undefined;
	try {
		await sync();
	} catch (error) {
		failure = { error };
	}
	for (const fd of fds) {
		try {
			fs.close(fd);
		} catch (error) {
			failure ??= { error };
		}
	}
	if (failure) throw failure.error;
}

function closeQuietly(fs: FsOps, fd: number): void {
	try {
		fs.close(fd);
	} catch {
		// Keep the error that happened first.
	}
}

/**
 * The second half: the folder checked to resolve where it did, `beforeRename` (the caller's check
 * of the file being replaced), then the rename. The folder is not synced: the caller syncs
 * `realDir` (once for all the files a commit renamed there). A failure leaves the temp file to
 * discardWrite.
 */
export function finishWrite(fs: FsOps, write: PreparedWrite, beforeRename?: () => void): void {
	// Never renamed before its bytes are durable.
	if (write.fd !== undefined) throw new Error(`${write.temp} is not synced yet (syncWrites)`);
	const dir = dirname(write.path);
	if (fs.realpath(dir) !== write.realDir) throw new SymlinkTargetError(dir);
	// Last, right before the rename: the caller's check of the file being replaced.
	beforeRename?.();
	fs.rename(write.temp, join(write.realDir, basename(write.path)));
}

/** Removes the temp file of a write that will not be finished; never throws. */
export function discardWrite(fs: FsOps, write: PreparedWrite): void {
	if (write.fd !== undefined) closeQuietly(fs, write.fd);
	write.fd = undefined;
	unlinkQuietly(fs, write.temp);
}

/**
 * Replaces `path` with `bytes` atomically and durably. Refuses a symlinked target. The folder is
 * pinned to its real path first and checked again right before the rename, so a folder swapped
 * for a symlink while the bytes are written and synced aborts the write instead of following it.
 */
export function writeFileAtomic(fs: FsOps, path: string, bytes: Uint8Array, options: AtomicWriteOptions = {}): void {
	const write = prepareWrite(fs, path, bytes, options);
	try {
		finishWrite(fs, write, options.beforeRename);
	} catch (error) {
		discardWrite(fs, write);
		throw error;
	}
	syncDir(fs, write.realDir);
}

/**
 * Appends `text` to a file of the private store below `base`, made 0600 (and set to it, were it
 * older and looser); a symlink at any step, the file itself included, is refused, never followed,
 * and so is anything but a regular file (a FIFO would block the open until a reader came).
 */
export function appendPrivate(
	fs: FsOps,
	base: string,
	path: string,
	text: string,
	options: { sync?: boolean } = {},
): void {
	mkdirPrivate(fs, base, dirname(path));
	const stat = lstatIfExists(fs, path);
	if (stat?.isSymbolicLink()) throw new StoreLinkError(path);
	const kind = stat && nonRegularKind(stat);
	if (kind) throw new NotRegularFileError(path, kind);
	const flags =
		constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
	const fd = fs.open(path, flags, 0o600);
	withFd(fs, fd, () => {
		// Set when new (the umask may have taken bits) or looser; a log already 0600 is left as it is.
		if (stat === undefined || (stat.mode & 0o777) !== 0o600) fs.fchmod(fd, 0o600);
		writeAll(fs, fd, Buffer.from(text));
		if (options.sync) fs.fsync(fd);
	});
}

/** Removes a name this module just made; cleanup never hides the error that happened first. */
function unlinkQuietly(fs: FsOps, path: string): void {
	try {
		fs.unlink(path);
	} catch {
		// A leftover temp file is swept later.
	}
}

/** Removes a file (never a symlink's target) and syncs its folder; `beforeUnlink` throwing keeps it. */
export function removeFileDurable(fs: FsOps, path: string, beforeUnlink?: () => void): void {
	removeFile(fs, path, beforeUnlink);
	syncDir(fs, dirname(path));
}

/** removeFileDurable without the folder sync, for a caller that syncs the folder itself (once for many files). */
export function removeFile(fs: FsOps, path: string, beforeUnlink?: () => void): void {
	existingMode(fs, path);
	beforeUnlink?.();
	fs.unlink(path);
}

/** Deletes temp files that a killed process left in `dir` (their pid no longer runs). */
export function sweepTempFiles(fs: FsOps, dir: string): string[] {
	return sweepTempNames(fs, dir, listDir(fs, dir));
}

/** sweepTempFiles for a folder already listed (`names`, its entries). */
export function sweepTempNames(fs: FsOps, dir: string, names: readonly string[]): string[] {
	const swept: string[] = [];
	for (const name of names) {
		const match = TEMP_PATTERN.exec(name);
		if (!match || isProcessAlive(Number(match[1]))) continue;
		try {
			fs.unlink(join(dir, name));
			swept.push(name);
		} catch {
			// Gone already, or not ours to remove.
		}
	}
	return swept;
}

/** Our own pid counts as alive: its temp files and journals belong to work still running here. */
export function isProcessAlive(pid: number): boolean {
	if (pid === process.pid) return true;
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		return typeof error === "object" && error !== null && "code" in error && error.code === "EPERM";
	}
}
