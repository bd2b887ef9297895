// The one fault-injecting FsOps of the suite: a rule runs before each call and may fail it, plant
// something on disk first, or kill the process; every call is logged. Imports only src/ and node
// built-ins, so the crash children can load it as plain transpiled JS (test/crash/transpile.ts).
import { constants } from "node:fs";
import { type FsOps, noteFailedAt, realFs } from "../../src/base/fs-ops.ts";

/** The ops a rule sees: fsyncAll is seen as its single fsyncs, one per fd. */
export type FsOp = Exclude<keyof FsOps, "fsyncAll">;

/** One filesystem call as a rule sees it. */
export interface FsCall {
	readonly op: FsOp;
	readonly args: readonly unknown[];
	/** Calls of this op made before this one (the first rename is index 0). */
	readonly index: number;
	/** Calls of any op made before this one. */
	readonly seq: number;
}

/** Returns (or throws) the Error the call must throw; returning nothing lets the call run. */
// biome-ignore lint/suspicious/noConfusingVoidType: a fault that only watches the calls returns nothing
export type Fault = (call: FsCall) => Error | undefined | void;

/** One rule for every call, or one rule per op (ops without a rule just run). */
export type FaultPlan = Fault | Partial<Record<FsOp, Fault>>;

export interface FaultyFs extends FsOps {
	/** Every call, in order, whether it failed or not; tests may empty it between phases. */
	readonly log: FsCall[];
}

/**
 * `base` with `plan` run before every call. `base` (default realFs) is where a test replaces an
 * op's implementation outright (a short write, a garbled write) rather than failing it.
 */
export function faultyFs(plan: FaultPlan = {}, base: FsOps = realFs): FaultyFs {
	const log: FsCall[] = [];
	const counts = new Map<FsOp, number>();
	let seq = 0;
	const wrapped: Record<string, unknown> = { log };
	for (const op of Object.keys(realFs) as Array<keyof FsOps>) {
		if (op === "fsyncAll") continue;
		const original = base[op] as (...args: unknown[]) => unknown;
		const rule = typeof plan === "function" ? plan : plan[op];
		wrapped[op] = (...args: unknown[]) => {
			const index = counts.get(op) ?? 0;
			counts.set(op, index + 1);
			const call: FsCall = { op, args, index, seq: seq++ };
			log.push(call);
			const fault = rule?.(call);
			if (fault) throw fault;
			return original(...args);
		};
	}
	// One call point per fd, in order, exactly as the same fsyncs made one after the other: each is
	// logged and run by the fsync rule (and base.fsync), and the first failure ends the rest.
	const fsync = wrapped.fsync as FsOps["fsync"];
	wrapped.fsyncAll = async (fds: readonly number[]) => {
		for (const [i, fd] of fds.entries()) {
			try {
				fsync(fd);
			} catch (error) {
				throw noteFailedAt(error, i);
			}
		}
	};
	return wrapped as unknown as FaultyFs;
}

/** Calls that may change what is on disk; reads and fsyncs change nothing a later process sees. */
const MUTATING: ReadonlySet<FsOp> = new Set([
	"open",
	"write",
	"fchmod",
	"rename",
	"link",
	"unlink",
	"rmdir",
	"mkdir",
	"appendFile",
]);

/**
 * An fs on which another process's `change` lands right before the first rename (while the tool
 * writes: its new bytes are in a temp file, not yet in place); `changed()` says whether it ran.
 */
export function changedBeforeFirstRename(change: () => void): FaultyFs & { changed(): boolean } {
	let ran = false;
	const fs = faultyFs({
		rename: (call) => {
			if (call.index > 0) return;
			ran = true;
			change();
		},
	});
	return Object.assign(fs, { changed: () => ran });
}

/**
 * Whether a call changes what is on disk, as the crash children count their kill points: an open()
 * that creates, never a folder's open for its fsync.
 */
export function changesDisk(call: Pick<FsCall, "op" | "args">): boolean {
	return MUTATING.has(call.op) && (call.op !== "open" || (Number(call.args[1]) & constants.O_CREAT) !== 0);
}

/** An Error shaped like Node's (`code`, message starting with the code), for a rule to return. */
export function errno(code: string, message = code): NodeJS.ErrnoException {
	return Object.assign(new Error(`${code}: ${message}`), { code });
}

/** A filesystem on which a rename onto `target` fails with EPERM, as for an immutable file; all else passes. */
export function immutableFile(target: string): FaultyFs {
	return faultyFs({
		rename: ({ args }) =>
			String(args[1]) === target ? errno("EPERM", "operation not permitted (immutable)") : undefined,
	});
}
