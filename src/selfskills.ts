// pi-selfskills' entry point (package.json "pi.extensions"; pi's banner names an extension after
// its file). It loads the wiring in index.ts and turns a missing npm dependency, the usual result of
// `pi install <local path>` without `npm install --omit=dev`, into one line that names the fix.

import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

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
		`pi-selfskills cannot start: its dependency "${name}" is not installed. ` +
		`Run \`npm install --omit=dev\` in ${packageDir}, then /reload (or restart pi).`
	);
}

export default async function selfskillsEntry(pi: ExtensionAPI): Promise<void> {
	// A static import would fail before any code of ours runs, with Node's multi-line require stack.
	let wiring: { default: (pi: ExtensionAPI) => void };
	try {
		wiring = await import("./index.ts");
	} catch (error) {
		const name = missingPackageOf(error);
		if (name === undefined) throw error;
		throw new Error(missingDependencyMessage(name));
	}
	wiring.default(pi);
}
