// The `/selfskills` command for the human: status, history, restore (diff shown, confirmation
// asked), trust and untrust. Without a UI (print/RPC modes) it prints instead of asking and
// never restores without an explicit backup id.

import type { ExtensionCommandContext } from "@mariozechner/pi-coding-agent";
import { prepareRestore } from "./actions/restore.ts";
import { showHistory } from "./actions/history.ts";
import { createBackupStore, getBackupsDir } from "./backup-store.ts";
import { createCallContext, loadPolicy, type CallContext } from "./call-context.ts";
import { isRefusal } from "./errors.ts";
import { listDir, type FsOps } from "./fs-ops.ts";
import { pendingJournals } from "./journal.ts";
import { runMutations, type MutationEffects } from "./mutate.ts";
import type { SessionState } from "./session-state.ts";
import { getTrustRefusal, setListedTrust, type TrustContext } from "./trust.ts";

export const COMMAND_NAME = "selfskills";
const SUBCOMMANDS = ["status", "history", "restore", "trust", "untrust"];
const BACKUP_ID = /^\d{8}-\d{6}\.\d{3}/;

export interface CommandDeps {
	readonly agentDir: () => string;
	readonly fs: FsOps;
	readonly state: SessionState;
	readonly effects: MutationEffects;
	/** Skill names seen by the last discovery, for completions. */
	knownSkills: string[];
}

function output(ctx: ExtensionCommandContext, text: string, type: "info" | "warning" | "error" = "info"): void {
	if (ctx.hasUI) ctx.ui.notify(text, type);
	else process.stderr.write(`${text}\n`);
}

function directorySize(fs: FsOps, dir: string): { files: number; bytes: number } {
	let files = 0;
	let bytes = 0;
	const walk = (d: string) => {
		for (const name of listDir(fs, d)) {
			const stat = fs.lstat(`${d}/${name}`);
			if (stat.isDirectory()) walk(`${d}/${name}`);
			else if (stat.isFile()) {
				files++;
				bytes += stat.size;
			}
		}
	};
	walk(dir);
	return { files, bytes };
}

async function context(deps: CommandDeps, ctx: TrustContext): Promise<CallContext> {
	const callCtx = await createCallContext({ ctx, agentDir: deps.agentDir(), ledger: deps.state.ledger, fs: deps.fs, runtimeSkillFiles: deps.state.runtimeSkillFiles, discoveryCache: deps.state.discoveryCache });
	deps.knownSkills = callCtx.discovery.skills.map((s) => s.name);
	return callCtx;
}

/** One line per writable folder; a folder that is several kinds of root (agent skills and skillsDir) is listed once. */
function formatRoots(roots: ReadonlyArray<{ kind: string; path: string }>): string {
	const kinds = new Map<string, string[]>();
	for (const root of roots) kinds.set(root.path, [...(kinds.get(root.path) ?? []), root.kind]);
	return [...kinds].map(([path, names]) => `  ${path} (${names.join(", ")})`).join("\n") || "  (none)";
}

export async function formatStatus(deps: CommandDeps, ctx: ExtensionCommandContext): Promise<string> {
	const callCtx = await context(deps, ctx);
	const { trust, report } = callCtx.policy;
	const skills = callCtx.discovery.skills;
	const patchable = skills.filter((s) => s.patchable);
	const backups = directorySize(deps.fs, callCtx.store.root);
	const journals = pendingJournals(deps.fs, deps.agentDir());
	const s = report.settings;
	const lines = [
		`selfskills: enabled ${s.enabled}, inject ${s.inject}`,
		`project ${trust.projectRoot}: ${trust.trusted ? "trusted" : "untrusted"} (${trust.source === "pi" ? "pi's own trust" : "selfskills.trustedProjects"})`,
		`settings from: ${report.source ?? "defaults"}`,
		`skills dir (create): ${s.skillsDir}`,
		`writable roots:\n${formatRoots(callCtx.discovery.roots)}`,
		`skills: ${skills.length} found, ${patchable.length} patchable, ${skills.length - patchable.length} read-only`,
		...skills.map((k) => `  ${k.name}: ${k.patchable ? "patchable" : `read-only (${k.reason})`}`),
		`backups: ${backups.files} file(s), ${backups.bytes} bytes in ${callCtx.store.root}`,
	];
	if (report.problems.length > 0) lines.push(`settings problems:\n${report.problems.map((p) => `  ${p}`).join("\n")}`);
	if (journals.length > 0) lines.push(`unfinished batch journal(s): ${journals.join(", ")} (a file could not be put back; see the journal)`);
	if (deps.state.recoveries.length > 0) lines.push(`recovered interrupted batches:\n${deps.state.recoveries.map((r) => `  ${r}`).join("\n")}`);
	return lines.join("\n");
}

async function history(deps: CommandDeps, ctx: ExtensionCommandContext, args: string[]): Promise<void> {
	if (!args[0]) return output(ctx, "usage: /selfskills history <skill> [file]", "warning");
	const result = showHistory(await context(deps, ctx), { skill: args[0], file: args[1] });
	output(ctx, isRefusal(result) ? result.message : result.text, isRefusal(result) ? "error" : "info");
}

async function restore(deps: CommandDeps, ctx: ExtensionCommandContext, args: string[]): Promise<void> {
	const [skill, second, third] = args;
	if (!skill) return output(ctx, "usage: /selfskills restore <skill> [file] [backup]", "warning");
	const backup = third ?? (second && BACKUP_ID.test(second) ? second : undefined);
	const file = second && second !== backup ? second : undefined;
	const callCtx = await context(deps, ctx);
	const prepared = prepareRestore(callCtx, { skill, file, backup });
	if (isRefusal(prepared)) return output(ctx, prepared.message, "error");
	const preview = await runMutations(callCtx, [prepared], { dryRun: true, batch: false, effects: deps.effects });
	if (isRefusal(preview)) return output(ctx, preview.message, "error");
	const diff = String(preview.details.diff ?? "");
	if (!ctx.hasUI && !backup) {
		return output(ctx, `Would restore ${skill}${file ? `/${file}` : ""} (latest backup):\n${diff}\nWithout a UI nothing is restored unless you name the backup id: /selfskills restore ${skill}${file ? ` ${file}` : ""} <backup> (ids: /selfskills history ${skill})`);
	}
	if (ctx.hasUI && !(await ctx.ui.confirm(`Restore ${skill}${file ? `/${file}` : ""}?`, diff))) return output(ctx, "restore cancelled; nothing changed");
	const done = await runMutations(callCtx, [prepared], { dryRun: false, batch: false, effects: deps.effects });
	output(ctx, isRefusal(done) ? done.message : done.text, isRefusal(done) ? "error" : "info");
}

/** `--yes`: the explicit confirmation print mode needs, where nobody can be asked. */
const CONFIRM_FLAG = "--yes";

async function trust(deps: CommandDeps, ctx: ExtensionCommandContext, trusted: boolean, args: readonly string[]): Promise<void> {
	const { trust: current } = loadPolicy(ctx, deps.agentDir());
	if (current.source === "pi") {
		return output(ctx, `This pi decides project trust itself (now: ${current.trusted ? "trusted" : "untrusted"}); change it with pi's own trust settings.`, "warning");
	}
	const refusal = trusted ? getTrustRefusal(current.projectRoot) : undefined;
	if (refusal) return output(ctx, `Not trusted: ${refusal}. Start pi in the project's own folder and run /selfskills trust there.`, "error");
	const verb = trusted ? "Trust" : "Stop trusting";
	const effect = trusted
		? "Its .pi/settings.json then configures selfskills, and the .pi/skills and .agents/skills folders of it and of every folder below it become writable by the agent."
		: "The agent can then no longer change its .pi/skills and .agents/skills, nor those of any folder below it.";
	const question = `${verb} ${current.projectRoot} and every folder below it? ${effect}`;
	if (ctx.hasUI) {
		if (!(await ctx.ui.confirm(`${verb} this project?`, question))) return output(ctx, "nothing changed");
	} else if (!args.includes(CONFIRM_FLAG)) {
		return output(ctx, `${question}\nNothing changed: without a UI nobody can be asked. To confirm, run: /selfskills ${trusted ? "trust" : "untrust"} ${CONFIRM_FLAG}`, "warning");
	}
	const list = setListedTrust(deps.agentDir(), current.projectRoot, trusted, deps.fs);
	output(ctx, `${trusted ? "trusted" : "untrusted"}: ${current.projectRoot}\nselfskills.trustedProjects: ${list.join(", ") || "(empty)"}`);
}

export async function handleCommand(deps: CommandDeps, rawArgs: string, ctx: ExtensionCommandContext): Promise<void> {
	const [sub, ...rest] = rawArgs.trim().split(/\s+/).filter(Boolean);
	try {
		switch (sub ?? "status") {
			case "status":
				return output(ctx, await formatStatus(deps, ctx));
			case "history":
				return await history(deps, ctx, rest);
			case "restore":
				return await restore(deps, ctx, rest);
			case "trust":
				return await trust(deps, ctx, true, rest);
			case "untrust":
				return await trust(deps, ctx, false, rest);
			default:
				return output(ctx, `unknown subcommand "${sub}"; use one of ${SUBCOMMANDS.join(", ")}`, "warning");
		}
	} catch (error) {
		output(ctx, `selfskills: ${error instanceof Error ? error.message : String(error)}`, "error");
	}
}

export interface Completion {
	readonly value: string;
	readonly label: string;
}

/** Backup ids of one file of a skill, newest first (`restore` takes them with or without the extension). */
export type BackupLister = (skill: string, file: string) => string[];

/** Skills to offer: the last discovery (run one if none ran yet) and those with backups, deleted ones included. */
async function skillNames(deps: CommandDeps): Promise<string[]> {
	if (deps.knownSkills.length === 0) {
		try {
			await context(deps, { cwd: process.cwd() });
		} catch {
			// Completions are a convenience; a failing discovery offers what the backups know.
		}
	}
	const backedUp = listDir(deps.fs, getBackupsDir(deps.agentDir()));
	return [...new Set([...deps.knownSkills, ...backedUp])];
}

/**
 * Completions, each the whole argument text: subcommands, then skill names, then (restore) the
 * backup ids of SKILL.md and the bundled files that have backups, then that file's backup ids.
 */
export async function completeArguments(deps: CommandDeps, prefix: string, backupIds?: BackupLister): Promise<Completion[] | null> {
	const words = prefix.trimStart().split(/\s+/);
	const last = words.at(-1) ?? "";
	const head = words.slice(0, -1).join(" ");
	const withHead = (v: string) => (head ? `${head} ${v}` : v);
	const store = createBackupStore(deps.fs, deps.agentDir());
	const ids = backupIds ?? ((skill: string, file: string) => store.list(skill, file).map((b) => b.id));
	const [sub, skill, file] = words;
	let options: string[] = [];
	if (words.length === 1) options = SUBCOMMANDS;
	else if (words.length === 2 && (sub === "history" || sub === "restore")) options = await skillNames(deps);
	else if (words.length === 3 && sub === "history") options = store.trackedFiles(skill).filter((f) => f !== "SKILL.md");
	else if (words.length === 3 && sub === "restore") {
		options = [...ids(skill, "SKILL.md"), ...store.listSnapshots(skill).map((s) => s.id), ...store.trackedFiles(skill).filter((f) => f !== "SKILL.md")];
	} else if (words.length === 4 && sub === "restore" && !BACKUP_ID.test(file)) options = ids(skill, file);
	const hits = options.filter((o) => o.startsWith(last));
	return hits.length > 0 ? hits.map((o) => ({ value: withHead(o), label: o })) : null;
}
