// Whether pi's bash can run in the sandbox here: bubblewrap found by absolute path outside every place
// the agent may write (programs.ts), then proven the first time it is needed — a write to a read-only
// place must fail inside it and its PID namespace must not be pi's; a bwrap that only exits 0 is none.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readlinkSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findProgram, programPath } from "../base/programs.ts";
import { buildBwrapArgs } from "./bwrap-args.ts";

/** Whether bash can be sandboxed here: the bwrap found and proven to work, or why not and what to change. */
export type SandboxProbe =
	| { readonly available: true; readonly bwrap: string }
	| { readonly available: false; readonly reason: string; readonly fix: string };

const INSTALL = "apt-get install bubblewrap (or your distribution's bubblewrap package)";
const USERNS =
	"allow unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1, and on Ubuntu 23.10 and " +
	"later sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for bwrap); " +
	"in a container, run it with user namespaces allowed";

/**
 * Finds bwrap (absolute PATH entries outside `untrusted`, default: the process's lookup) and proves it.
 * Spawns bwrap once: call it at first need, never at pi's start.
 */
export function probeSandbox(
	options: { path?: string; platform?: NodeJS.Platform; untrusted?: readonly string[] } = {},
): SandboxProbe {
	if ((options.platform ?? process.platform) !== "linux")
		return { available: false, reason: "bubblewrap sandboxing is Linux only", fix: "none on this system" };
	const bwrap =
		options.untrusted === undefined && options.path === undefined
			? programPath("bwrap")
			: findProgram("bwrap", { path: options.path ?? process.env.PATH, untrusted: options.untrusted ?? [] });
	if (!bwrap)
		return {
			available: false,
			reason: "bwrap was not found in a PATH folder outside the places the agent may write",
			fix: INSTALL,
		};
	return proveSandbox(bwrap);
}

/** Runs `bwrap` once in a sandbox of its own and checks that it is one. */
export function proveSandbox(bwrap: string): SandboxProbe {
	const root = realpathSync(mkdtempSync(join(tmpdir(), "selfskills-probe-")));
	try {
		const readOnly = join(root, "ro");
		const writable = join(root, "rw");
		mkdirSync(readOnly);
		mkdirSync(writable);
		const args = buildBwrapArgs({
			readOnlyRoot: "/",
			writable: [writable],
			protected: [],
			hide: [],
			network: true,
			tmpdir: writable,
		});
		const script =
			'readlink /proc/self/ns/pid; (: > "$1/x") 2>/dev/null && echo WROTE-RO; : > "$2/y" && echo WROTE-RW';
		const run = spawnSync(bwrap, [...args, "--", "/bin/sh", "-c", script, "sh", readOnly, writable], {
			encoding: "utf8",
			timeout: 10_000,
			stdio: ["ignore", "pipe", "pipe"],
		});
		if (run.status !== 0) {
			const why = (run.stderr || run.error?.message || `exit ${run.status ?? run.signal}`).trim().split("\n")[0];
			const userns = /namespace|uid map|permission|not permitted/i.test(why);
			return {
				available: false,
				reason: `${bwrap} cannot create its sandbox here (${why})`,
				fix: userns ? USERNS : INSTALL,
			};
		}
		const [ns, ...rest] = run.stdout.trim().split("\n");
		const faults: string[] = [];
		if (ns === readlinkSync("/proc/self/ns/pid")) faults.push("its PID namespace is pi's");
		if (rest.includes("WROTE-RO") || existsSync(join(readOnly, "x"))) faults.push("a read-only place was written");
		if (!rest.includes("WROTE-RW") || !existsSync(join(writable, "y"))) faults.push("a writable place was not");
		if (faults.length === 0) return { available: true, bwrap };
		return {
			available: false,
			reason: `${bwrap} is no sandbox: it ran the proof, but ${faults.join(", ")}`,
			fix: `remove or replace ${bwrap}, then ${INSTALL}`,
		};
	} finally {
		rmSync(root, { recursive: true, force: true });
	}
}

/** One line for /selfskills: whether pi's bash is sandboxed, by which programs, and if not, how to make it so. */
export function bashStatusLine(probe: SandboxProbe, control: boolean): string {
	const bwrap = probe.available ? probe.bwrap : "none";
	const programs = `programs run by absolute path: bwrap ${bwrap}, git ${programPath("git") ?? "none"}`;
	if (probe.available)
		return control
			? `bash: sandboxed (${probe.bwrap}): while a control is on pi's edit, write and bash change only the ` +
					`project, the session's temp folder and selfskills.sandbox.writable. ${programs}`
			: `bash: not sandboxed now (no control is on); sandboxed by ${probe.bwrap} once one is. ${programs}`;
	return (
		`bash: NOT sandboxed: ${probe.reason}. ` +
		(control ? "While a control is on only a text matcher guards bash (best effort). " : "") +
		`To sandbox it: ${probe.fix}. ${programs}`
	);
}
