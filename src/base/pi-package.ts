// The running pi's package folder, the one answer the boundary, /selfskills status and eval share. The
// package imports @mariozechner/pi-coding-agent, which pi's loader aliases to the pi that runs, so that
// module speaks for it: its getPackageDir (pi 1.6), else a frame of its own code, else the caller's
// stack, else the CLI path. Synchronous: the boundary asks at its first call, from any continuation.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as codingAgent from "@mariozechner/pi-coding-agent";
import { resolveReal } from "./paths.ts";

/** Where the answer is read from; the running pi's by default (tests give their own). */
export interface PiSources {
	/** The loaded pi module's exports. */
	readonly exports: object;
	/** A stack taken in the caller (used when the module shows nothing). */
	readonly stack: string;
	/** `process.argv[1]`: pi's CLI script when pi runs as the CLI. */
	readonly argv1: string | undefined;
	/** `PI_PACKAGE_DIR`, which pi's getPackageDir returns instead of its own folder. */
	readonly packageDirEnv: string | undefined;
}

function runningSources(): PiSources {
	return {
		exports: codingAgent,
		stack: new Error().stack ?? "",
		argv1: process.argv[1],
		packageDirEnv: process.env.PI_PACKAGE_DIR,
	};
}

/** The running pi's package folder (real path), or undefined when nothing shows it. */
export function findPiPackageDir(sources: PiSources = runningSources()): string | undefined {
	const found =
		fromGetPackageDir(sources) ??
		fromStack(moduleFrames(sources.exports)) ??
		fromStack(sources.stack) ??
		(sources.argv1 ? piPackageOf(resolveReal(sources.argv1)) : undefined);
	return found === undefined ? undefined : resolveReal(found);
}

/** pi's getPackageDir, unless PI_PACKAGE_DIR overrides it: that names pi's assets, not the code that runs. */
function fromGetPackageDir({ exports, packageDirEnv }: PiSources): string | undefined {
	const getPackageDir = Reflect.get(exports, "getPackageDir");
	if (typeof getPackageDir !== "function" || packageDirEnv) return undefined;
	const dir = getPackageDir();
	return typeof dir === "string" ? piPackageOf(join(dir, "package.json")) : undefined;
}

/** The stack inside pi's own code: its exported isToolCallEventType reads the event's toolName synchronously. */
function moduleFrames(exports: object): string {
	const isToolCallEventType = Reflect.get(exports, "isToolCallEventType");
	if (typeof isToolCallEventType !== "function") return "";
	let stack = "";
	const event = {
		get toolName() {
			stack = new Error().stack ?? "";
			return "";
		},
	};
	try {
		isToolCallEventType("bash", event);
	} catch {
		// A pi that reads the event otherwise: the caller's stack and the CLI path remain.
	}
	return stack;
}

function fromStack(stack: string): string | undefined {
	for (const file of stackFiles(stack)) {
		const dir = piPackageOf(file);
		if (dir) return dir;
	}
	return undefined;
}

/** The file paths in a stack (`file:///…/x.js:1:2`, `/…/x.js:1:2`, or a source-mapped `/…/x.ts:1:2`). */
function stackFiles(stack: string): string[] {
	const files: string[] = [];
	for (const match of stack.matchAll(/(file:\/\/\/[^\s:)]+|\/[^\s:()]+\.[cm]?[jt]s):\d+:\d+/g)) {
		const raw = match[1];
		files.push(raw.startsWith("file:") ? fileURLToPath(raw) : raw);
	}
	return files;
}

/**
 * The package that owns `file` (its nearest manifest with a name) when that is a …/pi-coding-agent, else
 * undefined: a file of another package, even one installed inside pi's folder, does not speak for pi.
 */
function piPackageOf(file: string): string | undefined {
	for (let dir = dirname(file); dirname(dir) !== dir; dir = dirname(dir)) {
		let name: unknown;
		try {
			name = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown }).name;
		} catch {
			continue;
		}
		if (typeof name !== "string") continue;
		return name.endsWith("/pi-coding-agent") ? dir : undefined;
	}
	return undefined;
}
