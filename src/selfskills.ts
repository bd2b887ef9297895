// pi-selfskills' entry point (package.json "pi.extensions"; pi's banner names an extension after
// its file). It loads the wiring in index.ts; when a dependency is missing (usually after `pi install
// <local path>` without `npm install`) or the wiring fails to load, it never throws, since pi 0.73
// exits on an extension load error: it registers a stand-in `/selfskills` that says what to run, and
// says it once at session start. index.ts loads most modules at first use, so the dependencies are
// looked up (resolved, not loaded) here first.

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
	let wiring: { default: (pi: ExtensionAPI) => void };
	try {
		const missing = missingDependency();
		if (missing !== undefined) return registerStandIn(pi, missingDependencyMessage(missing));
		wiring = await import("./index.ts");
	} catch (error) {
		return registerStandIn(pi, loadFailureMessage(error));
	}
	wiring.default(pi);
}
