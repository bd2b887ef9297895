// The filesystem calls the package makes (the writer, the backup store, the locks, the settings
// reads, the path resolution), as one replaceable object, so tests can inject faults (failing
// rename, ENOSPC on write, EIO on fsync) the way write-file-atomic's own tests do. Production code
// uses `realFs`, whose reads take regular files only (readRegularFile): a FIFO or device in a skill
// folder is refused, never opened for reading.

import * as fs from "node:fs";

export interface FsOps {
	open(path: string, flags: number, mode: number): number;
	write(fd: number, bytes: Uint8Array, offset: number): number;
	fsync(fd: number): void;
	/**
	 * fsyncs every fd at once (on the thread pool), so the file system can commit them together; rejects
	 * with the first failure in `fds` order once all have settled (no fd is closed while a sync on it runs),
	 * its place in `fds` noted (`failedAt`).
	 */
	fsyncAll(fds: readonly number[]): Promise<void>;
	fchmod(fd: number, mode: number): void;
	close(fd: number): void;
	rename(from: string, to: string): void;
	link(existing: string, newPath: string): void;
	unlink(path: string): void;
	rmdir(path: string): void;
	/** `mode` (default 0o777 less the umask): the lock folder is made 0700 from the start. */
	mkdir(path: string, mode?: number): void;
	readFile(path: string): Buffer;
	lstat(path: string): fs.Stats;
	/** stat (symlinks followed); undefined for a path that does not exist. */
	stat(path: string): fs.Stats | undefined;
	readdir(path: string): string[];
	/** A folder's entries with their types, as the listing gives them (no stat per entry). */
	readdirEntries(path: string): fs.Dirent[];
	appendFile(path: string, text: string): void;
	/** Throws (EACCES) when this user may not use `path` as `mode` asks (fs.constants.W_OK, ...). */
	access(path: string, mode: number): void;
	/** Every symlink of an existing path resolved (the settings write follows a symlinked settings.json). */
	realpath(path: string): string;
	/** The target a symbolic link names, unresolved. */
	readlink(path: string): string;
	/** Sets a path's times (a lock folder's mtime is put back after its owner record is written). */
	utimes(path: string, atime: Date, mtime: Date): void;
}

const failedPlaces = new WeakMap<object, number>();

/** Notes that `error` is the failure of the `index`-th of several calls made together; returns it. */
export function noteFailedAt<T>(error: T, index: number): T {
	if (typeof error === "object" && error !== null) failedPlaces.set(error, index);
	return error;
}

/** Which of several calls made together (fsyncAll, syncWrites, syncDirs) `error` is the failure of. */
export function failedAt(error: unknown): number | undefined {
	return typeof error === "object" && error !== null ? failedPlaces.get(error) : undefined;
}

/** What a path names when it is not a regular file ("a FIFO", "a folder"...), after following symlinks. */
export function nonRegularKind(stat: fs.Stats): string | undefined {
	if (stat.isFile()) return undefined;
	if (stat.isDirectory()) return "a folder";
	if (stat.isFIFO()) return "a FIFO (named pipe)";
	if (stat.isSocket()) return "a socket";
	if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
	return "not a regular file";
}

/** Thrown for a path that exists but is no regular file; `kind` says what it is. */
export class NotRegularFileError extends Error {
	readonly code = "ENOTREG";
	constructor(
		readonly path: string,
		readonly kind: string,
	) {
		super(`${path} is ${kind}, not a regular file`);
	}
}

/**
 * The kind of a path that exists and is no regular file (symlinks followed); undefined for a file
 * or a missing path.
 */
export function describeNonRegular(path: string): string | undefined {
	try {
		return nonRegularKind(fs.statSync(path));
	} catch {
		return undefined;
	}
}

/**
 * Reads a regular file and nothing else. Opening a FIFO for reading blocks until a writer comes
 * (forever, in pi's event loop), and a device may never end: so the path is stat'ed first and
 * such a thing is never opened; the descriptor is then opened non-blocking and fstat'ed, which
 * catches a swap between the stat and the open.
 */
export function readRegularFile(path: string): Buffer {
	const kind = nonRegularKind(fs.statSync(path));
	if (kind) throw new NotRegularFileError(path, kind);
	const fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
	try {
		const opened = nonRegularKind(fs.fstatSync(fd));
		if (opened) throw new NotRegularFileError(path, opened);
		return fs.readFileSync(fd);
	} finally {
		fs.closeSync(fd);
	}
}

export const realFs: FsOps = {
	open: (path, flags, mode) => fs.openSync(path, flags, mode),
	write: (fd, bytes, offset) => fs.writeSync(fd, bytes, offset, bytes.length - offset),
	fsync: (fd) => fs.fsyncSync(fd),
	fsyncAll: async (fds) => {
		// One fd gains nothing from the thread pool: synced in place, without the round trip to it.
		if (fds.length === 1) {
			try {
				return fs.fsyncSync(fds[0]);
			} catch (error) {
				throw noteFailedAt(error, 0);
			}
		}
		const settled = await Promise.allSettled(
			fds.map((fd) => new Promise<void>((done, fail) => fs.fsync(fd, (error) => (error ? fail(error) : done())))),
		);
		const failed = settled.findIndex((result) => result.status === "rejected");
		if (failed !== -1) throw noteFailedAt((settled[failed] as PromiseRejectedResult).reason, failed);
	},
	fchmod: (fd, mode) => fs.fchmodSync(fd, mode),
	close: (fd) => fs.closeSync(fd),
	rename: (from, to) => fs.renameSync(from, to),
	link: (existing, newPath) => fs.linkSync(existing, newPath),
	unlink: (path) => fs.unlinkSync(path),
	rmdir: (path) => fs.rmdirSync(path),
	mkdir: (path, mode) => void fs.mkdirSync(path, mode === undefined ? undefined : { mode }),
	readFile: readRegularFile,
	lstat: (path) => fs.lstatSync(path),
	stat: (path) => fs.statSync(path, { throwIfNoEntry: false }),
	readdir: (path) => fs.readdirSync(path),
	readdirEntries: (path) => fs.readdirSync(path, { withFileTypes: true }),
	appendFile: (path, text) => fs.appendFileSync(path, text),
	access: (path, mode) => fs.accessSync(path, mode),
	realpath: (path) => fs.realpathSync.native(path),
	readlink: (path) => fs.readlinkSync(path),
	utimes: (path, atime, mtime) => fs.utimesSync(path, atime, mtime),
};

/**
 * The errno code when this user cannot create or rename entries in `dir` (write and search
 * permission), or undefined. Through `fs` so tests running as root can inject EACCES.
 */
export function folderWriteError(ops: FsOps, dir: string): string | undefined {
	try {
		ops.access(dir, fs.constants.W_OK | fs.constants.X_OK);
		return undefined;
	} catch (error) {
		const code = (error as NodeJS.ErrnoException).code;
		return typeof code === "string" ? code : "EACCES";
	}
}
