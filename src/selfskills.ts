// pi-selfskills' entry point (package.json "pi.extensions"; pi's banner names an extension after
// its file). It loads the wiring in index.ts; when a dependency is missing (usually after `pi install
// <local path>` without `npm install`) or the wiring fails to load, it never throws, since pi 0.73
// exits on an extension load error: it registers a stand-in `/selfskills` that says what to run, and
// says it once at session start. index.ts loads most modules at first use, so the dependencies are
// looked up (resolved, not loaded) here first. The wiring comes from dist/start.ts, index.ts and what it
// imports built into one module by `npm run build`, while that matches the sources; else from src.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The bare package a failed import could not find (Node's ESM and CommonJS wordings), if that is the failure. */
export function missingPackageOf(error: unknown): string | undefined {
	const message = error instanceof Error ? error.message : String(error);
	const name = /Cannot find (?:module|package) '([^']+)'/.exec(message)?.[1];
	if (!name || name.startsWith(".") || name.startsWith("/") || name.startsWith("node:")) return undefined;
	return name.startsWith("@") ? name.split("/").slice(0, 2).join("/") : name.split("/")[0];
}

export function missingDependencyMessage(name: string, packageDir: string = PACKAGE_DIR): string {
	return (
		`pi-selfskills is not running: its dependency "${name}" is not installed. ` +
		`Run \`npm ci --omit=dev\` in ${packageDir}, then /reload (or start pi again).`
	);
}

/** The first npm dependency (package.json order) that cannot be found from the package folder, if any. */
export function missingDependency(packageDir: string = PACKAGE_DIR): string | undefined {
	const manifest = join(packageDir, "package.json");
	const { dependencies } = JSON.parse(readFileSync(manifest, "utf8")) as { dependencies?: Record<string, string> };
	const require = createRequire(manifest);
	return Object.keys(dependencies ?? {}).find((name) => {
		try {
			require.resolve(name);
			return false;
		} catch (error) {
			// Only "not found" is missing: a package without a CommonJS entry still loads by import.
			return (error as NodeJS.ErrnoException).code === "MODULE_NOT_FOUND";
		}
	});
}

/** The start-up half built into one module, relative to the package folder. */
export const BUILT_START = "dist/start.ts";

/** One digest of the named files (package-relative) and their contents; undefined when one is missing. */
export function sourcesDigest(packageDir: string, sources: readonly string[]): string | undefined {
	const hash = createHash("sha256");
	try {
		for (const source of sources) hash.update(`${source}\0`).update(readFileSync(join(packageDir, source)));
	} catch {
		return undefined;
	}
	return hash.digest("hex");
}

/**
 * The wiring's module: dist/start.ts while the sources its header names still have its digest (one
 * module to load instead of twelve), otherwise src/index.ts — an edited source is never shadowed.
 */
export function startModule(packageDir: string = PACKAGE_DIR): string {
	const source = join(packageDir, "src", "index.ts");
	let header: BuiltHeader | undefined;
	try {
		header = readBuiltHeader(readFileSync(join(packageDir, BUILT_START), "utf8"));
	} catch {
		return source;
	}
	const current = header !== undefined && sourcesDigest(packageDir, header.sources) === header.digest;
	return current ? join(packageDir, BUILT_START) : source;
}

interface BuiltHeader {
	readonly sources: string[];
	readonly digest: string;
}

/** The `// sources:` and `// digest:` lines atop dist/start.ts (test/support/build-start.ts writes them). */
export function readBuiltHeader(text: string): BuiltHeader | undefined {
	const head = text.slice(0, 4096);
	const sources = /^\/\/ sources: (.+)$/m.exec(head)?.[1].split(" ");
	const digest = /^\/\/ digest: ([0-9a-f]+)$/m.exec(head)?.[1];
	return sources && digest ? { sources, digest } : undefined;
}

/** Why the wiring did not load, as one line for the person. */
export function loadFailureMessage(error: unknown, packageDir: string = PACKAGE_DIR): string {
	const name = missingPackageOf(error);
	if (name !== undefined) return missingDependencyMessage(name, packageDir);
	const first = (error instanceof Error ? error.message : String(error)).split("\n")[0];
	return `pi-selfskills is not running: it failed to load (${first}). pi runs on without it; see ${packageDir}.`;
}

/** The stand-in: no tool, one command and one start-up notice, both saying what to run. */
function registerStandIn(pi: ExtensionAPI, message: string): void {
	let printed = false;
	const say = (ctx: ExtensionContext): void => {
		if (ctx.hasUI) {
			ctx.ui.notify(message, "error");
			return;
		}
		// print mode: once per run on stderr, where pi prints its own diagnostics
		if (!printed) process.stderr.write(`${message}\n`);
		printed = true;
	};
	pi.on("session_start", (_event, ctx) => say(ctx));
	pi.registerCommand("selfskills", {
		description: "pi-selfskills is not running; says what to run",
		handler: async (_args, ctx) => say(ctx),
	});
}

export default async function selfskillsEntry(pi: ExtensionAPI): Promise<void> {
	// A static import would fail before any code of ours runs, with Node's multi-line require stack.
	let wiring: typeof import("./index.ts");
	try {
		const missing = missingDependency();
		if (missing !== undefined) return registerStandIn(pi, missingDependencyMessage(missing));
		wiring = await import(startModule());
	} catch (error) {
		return registerStandIn(pi, loadFailureMessage(error));
	}
	wiring.default(pi);
}
