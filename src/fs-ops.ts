// The filesystem calls the writer and the backup store make, as one replaceable object, so tests
// can inject faults (failing rename, ENOSPC on write, EIO on fsync) the way write-file-atomic's
// own tests do. Production code uses `realFs`.

import * as fs from "node:fs";

export interface FsOps {
	open(path: string, flags: number, mode: number): number;
	write(fd: number, bytes: Uint8Array, offset: number): number;
	fsync(fd: number): void;
	fchmod(fd: number, mode: number): void;
	close(fd: number): void;
	rename(from: string, to: string): void;
	link(existing: string, newPath: string): void;
	unlink(path: string): void;
	rmdir(path: string): void;
	mkdir(path: string): void;
	readFile(path: string): Buffer;
	lstat(path: string): fs.Stats;
	readdir(path: string): string[];
	appendFile(path: string, text: string): void;
}

/** The names in `dir`, or none when it cannot be listed (missing, not a folder, unreadable). */
export function listDir(fs: FsOps, dir: string): string[] {
	try {
		return fs.readdir(dir);
	} catch {
		return [];
	}
}

export const realFs: FsOps = {
	open: (path, flags, mode) => fs.openSync(path, flags, mode),
	write: (fd, bytes, offset) => fs.writeSync(fd, bytes, offset, bytes.length - offset),
	fsync: (fd) => fs.fsyncSync(fd),
	fchmod: (fd, mode) => fs.fchmodSync(fd, mode),
	close: (fd) => fs.closeSync(fd),
	rename: (from, to) => fs.renameSync(from, to),
	link: (existing, newPath) => fs.linkSync(existing, newPath),
	unlink: (path) => fs.unlinkSync(path),
	rmdir: (path) => fs.rmdirSync(path),
	mkdir: (path) => void fs.mkdirSync(path),
	readFile: (path) => fs.readFileSync(path),
	lstat: (path) => fs.lstatSync(path),
	readdir: (path) => fs.readdirSync(path),
	appendFile: (path, text) => fs.appendFileSync(path, text),
};
