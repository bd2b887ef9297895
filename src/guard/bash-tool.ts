// pi's `bash`, run by the package: the same tool (pi's own definition, prefix and shell), and while a
// control is on the whole of it — shellCommandPrefix and shellPath included — runs inside the sandbox
// (bwrap-args.ts), never outside it. With no control on it is exactly pi's bash.

import {
	createBashToolDefinition,
	createLocalBashOperations,
	type BashOperations,
	type ExtensionAPI,
	type ExtensionContext,
} from "@mariozechner/pi-coding-agent";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isWithin, resolveReal } from "../base/paths.ts";
import type { FsOps } from "../base/fs-ops.ts";
import { loadPolicy } from "../pipeline/call-context.ts";
import type { SessionState } from "../pipeline/session-state.ts";
import { controlIsOn, getGlobalSettingsPath, getProjectSettingsPath, readSettingsFile } from "../policy/settings.ts";
import type { Boundary } from "./boundary.ts";
import { buildBwrapArgs, type SandboxLayout, shellQuote } from "./bwrap-args.ts";
import { bashStatusLine } from "./sandbox.ts";
import { describeWritable, type WritablePlaces } from "./writable.ts";

export interface BashToolDeps {
	readonly agentDir: () => string;
	readonly fs: FsOps;
	readonly state: SessionState;
	readonly boundary: Boundary;
	/** Tells the person (a notice in the TUI, stderr in print mode). */
	readonly tellPerson: (ctx: ExtensionContext, text: string) => void;
}

/** pi's shellCommandPrefix and shellPath as pi merges them: the project's (where pi reads it) over the global. */
export function shellSettings(
	ctx: ExtensionContext,
	agentDir: string,
	fs: FsOps,
): { commandPrefix?: string; shellPath?: string } {
	const trust = (ctx as { isProjectTrusted?: () => boolean }).isProjectTrusted;
	const projectRead = typeof trust !== "function" || trust.call(ctx);
	const files = [getGlobalSettingsPath(agentDir), ...(projectRead ? [getProjectSettingsPath(ctx.cwd)] : [])];
	const out: { commandPrefix?: string; shellPath?: string } = {};
	for (const path of files) {
		const json = readSettingsFile(path, fs).json;
		if (typeof json.shellCommandPrefix === "string") out.commandPrefix = json.shellCommandPrefix || undefined;
		if (typeof json.shellPath === "string") out.shellPath = json.shellPath || undefined;
	}
	return out;
}

/**
 * Operations that run each command as `bwrap <layout> -- <shell> -c <command>`; pi's own local
 * operations start it (through the fixed /bin/sh, which only execs bwrap), so output, timeout, abort
 * and the process-group kill are pi's.
 */
export function sandboxedOperations(bwrap: string, layout: SandboxLayout, shell: string): BashOperations {
	const local = createLocalBashOperations({ shellPath: "/bin/sh" });
	const args = buildBwrapArgs(layout).map(shellQuote).join(" ");
	return {
		exec: (command, cwd, options) =>
			local.exec(
				`exec ${shellQuote(bwrap)} ${args} -- ${shellQuote(shell)} -c ${shellQuote(command)}`,
				cwd,
				options,
			),
	};
}

function defaultShell(): string {
	return existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";
}

const READ_ONLY = /Read-only file system|EROFS/;

/** The note a bash result that hit a read-only place gets: where it may write, and who can add a place. */
export function readOnlyNote(writable: WritablePlaces, agentDir: string): string {
	return (
		"selfskills: a write hit a read-only place: while the person's review is on, bash may change only " +
		`${describeWritable(writable)}. Use $TMPDIR for scratch files. Only the person can add a folder, ` +
		`to selfskills.sandbox.writable in ${getGlobalSettingsPath(agentDir)}.`
	);
}

/** This package's folder: the `bash` pi runs must come from an extension file in it. */
const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * While a control is on and the sandbox works, a `bash` that another extension registered first (pi
 * runs the first one) is not held to the boundary: it does not run.
 */
function foreignBashBlock(pi: ExtensionAPI, deps: BashToolDeps, ctx: ExtensionContext): string | undefined {
	const source = pi.getAllTools().find((t) => t.name === "bash")?.sourceInfo?.path;
	if (source !== undefined && isWithin(resolveReal(PACKAGE_DIR), resolveReal(source))) return undefined;
	const { settings } = loadPolicy(ctx, deps.agentDir()).report;
	if (!controlIsOn(settings) || !deps.boundary.probe().available) return undefined;
	return (
		`selfskills: foreign_bash: the bash tool here comes from ${source ?? "an unknown source"}, not from ` +
		"pi-selfskills, so it cannot be held to the sandbox while the person's review is on; it does not run. " +
		"Tell the person: they can remove that extension or turn the review off."
	);
}

/** The package's `bash`: what index.ts registers runs `execute`; the side-door hook asks `foreignBlock`. */
export interface PackageBash {
	execute: ReturnType<typeof createBashToolDefinition>["execute"];
	/** Why the `bash` pi runs (another extension's) may not run now, or undefined. */
	foreignBlock(event: { toolName: string }, ctx: ExtensionContext): { block: true; reason: string } | undefined;
	/** A session starts: the once-per-session notice may be said again. */
	reset(): void;
}

export function createPackageBash(pi: ExtensionAPI, deps: BashToolDeps): PackageBash {
	// Once per session, at the first bash call under a control: bash is not sandboxed here, and why.
	let warned = false;
	return {
		reset: () => {
			warned = false;
		},
		foreignBlock(event, ctx) {
			if (event.toolName !== "bash") return undefined;
			const reason = foreignBashBlock(pi, deps, ctx);
			return reason === undefined ? undefined : { block: true, reason };
		},
		async execute(id, params, signal, onUpdate, ctx) {
			const agentDir = deps.agentDir();
			const shell = shellSettings(ctx, agentDir, deps.fs);
			const { settings } = loadPolicy(ctx, agentDir).report;
			const probe = controlIsOn(settings) ? deps.boundary.probe() : undefined;
			if (probe && !probe.available && !warned) {
				warned = true;
				deps.tellPerson(ctx, `selfskills: ${bashStatusLine(probe, true)}`);
			}
			if (!probe?.available)
				return createBashToolDefinition(ctx.cwd, shell).execute(id, params, signal, onUpdate, ctx);
			const input = { cwd: ctx.cwd, agentDir, settings, runtimeSkillFiles: deps.state.runtimeSkillFiles };
			const places = deps.boundary.places(input, { take: id });
			const layout = deps.boundary.layout(input, places);
			const operations = sandboxedOperations(probe.bwrap, layout, shell.shellPath ?? defaultShell());
			const tool = createBashToolDefinition(ctx.cwd, { commandPrefix: shell.commandPrefix, operations });
			const notes = (text: string): string[] => {
				const moved = deps.boundary.sweep(agentDir);
				const out = READ_ONLY.test(text) ? [readOnlyNote(places.writable, agentDir)] : [];
				if (moved.length > 0) {
					const said =
						"selfskills: this bash call created files at protected places; they were moved into the " +
						`store:\n${moved.join("\n")}`;
					deps.tellPerson(ctx, said);
					out.push(said);
				}
				return out;
			};
			try {
				const result = await tool.execute(id, params, signal, onUpdate, ctx);
				const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
				const added = notes(text);
				if (added.length === 0) return result;
				return { ...result, content: [...result.content, { type: "text" as const, text: added.join("\n") }] };
			} catch (error) {
				const message = error instanceof Error ? error.message : String(error);
				const added = notes(message);
				if (added.length === 0) throw error;
				throw new Error(`${message}\n\n${added.join("\n")}`);
			}
		},
	};
}
