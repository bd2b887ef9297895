// The per-session record of what the agent has read: resolved path -> sha256 of the whole file
// as read. Gates 2 and 3 use it (read first; unchanged since). A new pi session starts empty.

import { resolve } from "node:path";

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
