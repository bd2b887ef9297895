// The one content hash of the package: sha256 in hex, for the read ledger, backup names, journals,
// proposals and audit lines; hashed once per buffer where the bytes never change.

import { createHash } from "node:crypto";
import type { FsOps } from "./fs-ops.ts";
import { readIfExists } from "./fs-reads.ts";

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
	if (hash === undefined) {
		hash = sha256(bytes);
		hashed.set(bytes, hash);
	}
	return hash;
}

/** The bytes' sha256 (null: absent), hashed once per buffer (see sha256Once). */
export function hashOrNull(bytes: Buffer | null): string | null {
	return bytes === null ? null : sha256Once(bytes);
}

/** A file's sha256 on disk: null when it does not exist, undefined when it cannot be read. */
export function tryHash(fs: FsOps, path: string): string | null | undefined {
	try {
		return hashOrNull(readIfExists(fs, path));
	} catch {
		return undefined;
	}
}
