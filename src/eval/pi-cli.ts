// The running pi's own CLI, found through the package pi loaded (not process.argv, which under the
// SDK is a test runner or a host program): base/pi-package.ts names its folder.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { findPiPackageDir } from "../base/pi-package.ts";

export interface PiCli {
	/** The pi package's folder (its package.json). */
	readonly packageDir: string;
	/** Its `bin.pi` script. */
	readonly cliPath: string;
	/** The node that runs this pi: runs use the same. */
	readonly node: string;
}

/** The CLI of the pi this package runs in, or undefined when it cannot be found. */
export function findPiCli(): PiCli | undefined {
	const packageDir = findPiPackageDir();
	if (!packageDir) return undefined;
	const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as {
		bin?: string | Record<string, string>;
	};
	const bin = typeof manifest.bin === "string" ? manifest.bin : manifest.bin?.pi;
	const cliPath = join(packageDir, bin ?? join("dist", "cli.js"));
	return existsSync(cliPath) ? { packageDir, cliPath, node: process.execPath } : undefined;
}
