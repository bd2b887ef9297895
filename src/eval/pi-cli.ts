// The running pi's own CLI, found through the package pi loaded (not process.argv, which under the
// SDK is a test runner or a host program): pi 1.6 exports getPackageDir; on pi 0.73 the folder of
// the module that holds withFileMutationQueue, read from the stack a call through it leaves.

import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as codingAgent from "@mariozechner/pi-coding-agent";

export interface PiCli {
	/** The pi package's folder (its package.json). */
	readonly packageDir: string;
	/** Its `bin.pi` script. */
	readonly cliPath: string;
	/** The node that runs this pi: runs use the same. */
	readonly node: string;
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

/** The nearest folder above `file` holding the manifest of a package named …/pi-coding-agent, or undefined. */
function piPackageOf(file: string): string | undefined {
	for (let dir = dirname(file); dirname(dir) !== dir; dir = dirname(dir)) {
		const manifest = join(dir, "package.json");
		if (!existsSync(manifest)) continue;
		try {
			const name = (JSON.parse(readFileSync(manifest, "utf8")) as { name?: unknown }).name;
			if (typeof name === "string" && name.endsWith("/pi-coding-agent")) return dir;
		} catch {
			// Not a manifest pi could have: the climb goes on.
		}
	}
	return undefined;
}

async function loadedPackageDir(): Promise<string | undefined> {
	const getPackageDir = Reflect.get(codingAgent, "getPackageDir");
	if (typeof getPackageDir === "function") {
		const dir = String(getPackageDir());
		if (piPackageOf(join(dir, "package.json"))) return dir;
	}
	// A path nothing else queues on: the stack is read inside pi's queue function.
	const key = join(tmpdir(), `selfskills-eval-probe-${process.pid}-${Date.now()}`);
	const stack = await codingAgent.withFileMutationQueue(key, async () => new Error("probe").stack ?? "");
	for (const file of stackFiles(stack)) {
		const dir = piPackageOf(file);
		if (dir) return dir;
	}
	return undefined;
}

/** The CLI of the pi this package runs in, or undefined when it cannot be found. */
export async function findPiCli(): Promise<PiCli | undefined> {
	const packageDir = await loadedPackageDir();
	if (!packageDir) return undefined;
	const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as {
		bin?: string | Record<string, string>;
	};
	const bin = typeof manifest.bin === "string" ? manifest.bin : manifest.bin?.pi;
	const cliPath = join(packageDir, bin ?? join("dist", "cli.js"));
	return existsSync(cliPath) ? { packageDir, cliPath, node: process.execPath } : undefined;
}
