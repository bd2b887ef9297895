// The per-session record of what the agent has read: resolved path -> sha256 of the whole file
// as read. Gates 2 and 3 use it (read first; unchanged since). A new pi session starts empty.

import { createHash } from "node:crypto";
import { resolve } from "node:path";

export function sha256(bytes: Uint8Array | string): string {
	return createHash("sha256").update(bytes).digest("hex");
}

const hashed = new WeakMap<Uint8Array, string>();

/**
 * sha256 of bytes that are never changed once read or built (a plan's before and after): hashed
 * once, however many steps ask (gate 3, the backup's name, the audit line). Fresh reads are new
 * buffers, so a re-check on disk always hashes what it read.
 */
export function sha256Once(bytes: Uint8Array): string {
	let hash = hashed.get(bytes);
	if (hash === undefined) hashed.set(bytes, (hash = sha256(bytes)));
	return hash;
}

export interface ReadLedger {
	record(path: string, hash: string): void;
	get(path: string): string | undefined;
	forget(path: string): void;
	clear(): void;
	readonly size: number;
}

export function createReadLedger(): ReadLedger {
	const reads = new Map<string, string>();
	return {
		record: (path, hash) => void reads.set(resolve(path), hash),
		get: (path) => reads.get(resolve(path)),
		forget: (path) => void reads.delete(resolve(path)),
		clear: () => reads.clear(),
		get size() {
			return reads.size;
		},
	};
}
