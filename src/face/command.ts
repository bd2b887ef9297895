// The `/selfskills` command for the human: status, help, history, restore (diff shown, confirmation
// asked), trust and untrust, the review of proposals (pending, show, approve, reject, export), pins,
// unused and doctor — one table (SUBCOMMAND_INFO) for help, completion and argument checks. A change
// the person makes here is theirs: it lands after their confirmation whatever the approval mode and
// pins (those bind the agent). With a UI each output stays in the conversation as a message of its
// own; without one (print mode) it prints, restores only a named backup with `--yes`, trusts, rejects
// or pins only with `--yes`, and approves only with `--yes=<digest>` of the change `show` printed.

import type { ExtensionCommandContext } from "@mariozechner/pi-coding-agent";
import { newestDiffering, pickBackup, prepareRestore, restoreCandidates } from "../actions/restore.ts";
import { showHistory } from "../actions/history.ts";
import { createBackupStore, type BackupEntry, type SnapshotEntry } from "../store/backup-store.ts";
import { createSessionCallContext, loadPolicy, type CallContext } from "../pipeline/call-context.ts";
import {
	approveBody,
	approvePreviewText,
	approveQuestion,
	decidedText,
	findingsBlock,
	historyText,
	pendingText,
	proposalText,
	piTrustText,
	refusalForHuman,
	RESTORE_CANCELLED,
	restoreDoneText,
	restoreNoteForModel,
	restorePreviewText,
	restoreQuestion,
	trustNoteForModel,
	type ProposalView,
	type RestoreView,
} from "./command-text.ts";
import { countChanges } from "../store/audit.ts";
import { shownDiff, shownName } from "../checks/agent-text.ts";
import { digestMismatch, isRefusal, type Refusal } from "../base/errors.ts";
import { pendingJournals } from "../store/journal.ts";
import { bashStatusLine, type SandboxProbe } from "../guard/sandbox.ts";
import { findPiPackageDir } from "../base/pi-package.ts";
import { refusedWritableSettings } from "../guard/writable.ts";
import { runMutations } from "../pipeline/mutate.ts";
import type { SessionDeps } from "../pipeline/session-state.ts";
import { findSkill, resolveFileTarget } from "../policy/target.ts";
import { findProposal, finishInterrupted, landApproval, previewApproval, rejectProposal } from "./review.ts";
import { exportProposal, exportText, formatGitStatus } from "./export.ts";
import {
	controlIsOn,
	findPin,
	getGlobalSettingsPath,
	isJsonObject,
	pinProblem,
	readSettingsFile,
} from "../policy/settings.ts";
import {
	invalidProposals,
	listProposals,
	readDecision,
	type Proposal,
	type ProposalTarget,
} from "../store/proposals.ts";
import {
	getCoveringEntries,
	getIgnoredEntries,
	getTrustRefusal,
	isAncestorEntry,
	setGlobalPin,
	setListedTrust,
	type TrustContext,
} from "../policy/trust.ts";
import { readUsage, type SkillUsage } from "../store/usage.ts";
import { tryRead } from "../base/fs-reads.ts";
import { doctorReport, findPrunable } from "./doctor.ts";
import { runEvalCommand } from "./eval-command.ts";
import { readSkillEvals } from "../store/evals.ts";

import { COMMAND_NAME, OUTPUT_MESSAGE_TYPE } from "./names.ts";

export { COMMAND_NAME, OUTPUT_MESSAGE_TYPE };

/**
 * A subcommand as the person sees it in `/selfskills help` and tab completion. `words` is how many
 * plain words it takes at most ("free": a reason or its own parsing), `flags` the flags it accepts
 * ("--yes=" takes a value); anything else is refused with the usage, never ignored.
 */
interface SubcommandInfo {
	readonly name: string;
	readonly usage: string;
	readonly summary: string;
	readonly example: string;
	readonly words: number | "free";
	readonly flags?: readonly string[];
}

/** Every subcommand, in the order help lists them; a new one adds its line here and its handler below. */
export const SUBCOMMAND_INFO: readonly SubcommandInfo[] = [
	{ name: "status", usage: "", summary: "settings, trust, writable folders, skills, backups", example: "", words: 0 },
	{ name: "help", usage: "", summary: "this list", example: "", words: 0 },
	{
		name: "history",
		usage: "<skill> [file]",
		summary: "the backups a restore can put back, and git commits",
		example: "deploy-checks",
		words: 2,
	},
	{
		name: "restore",
		usage: "<skill> [file] [backup id] [--yes]",
		summary: "put a backup back (shows the change, asks first; print mode needs a backup id and --yes)",
		example: "deploy-checks",
		words: 3,
		flags: ["--yes"],
	},
	{ name: "pending", usage: "", summary: "the agent's proposals waiting for you", example: "", words: 0 },
	{
		name: "show",
		usage: "<proposal id>",
		summary: "a proposal's change and its digest",
		example: "p-1a2b3c4d",
		words: 1,
	},
	{
		name: "approve",
		usage: "<proposal id> [reason] [--yes=<digest>]",
		summary: "land a proposal after you saw it (print mode: the digest show printed)",
		example: "p-1a2b3c4d",
		words: "free",
		// A plain --yes approves nothing: it gets the change and the command with its digest.
		flags: ["--yes=", "--yes"],
	},
	{
		name: "reject",
		usage: "<proposal id> [reason] [--yes]",
		summary: "drop a proposal; the agent reads your reason",
		example: "p-1a2b3c4d the old step is still right",
		words: "free",
		flags: ["--yes"],
	},
	{
		name: "export",
		usage: "<proposal id> [--branch]",
		summary: "a proposal as a git patch, or as the branch selfskills/<id>",
		example: "p-1a2b3c4d --branch",
		words: 1,
		flags: ["--branch"],
	},
	{
		name: "pin",
		usage: "<skill or prefix*> [--yes]",
		summary: "the agent may read the skill but never change it",
		example: "deploy-checks",
		words: 1,
		flags: ["--yes"],
	},
	{
		name: "unpin",
		usage: "<pin> [--yes]",
		summary: "remove a pin",
		example: "deploy-checks",
		words: 1,
		flags: ["--yes"],
	},
	{
		name: "trust",
		usage: "[--yes]",
		summary: "let the agent write this project's .pi/skills and .agents/skills (pi 0.73)",
		example: "",
		// trust says itself why it takes no path.
		words: "free",
		flags: ["--yes"],
	},
	{
		name: "untrust",
		usage: "[--yes]",
		summary: "stop trusting this project",
		example: "",
		words: "free",
		flags: ["--yes"],
	},
	{ name: "unused", usage: "[days]", summary: "skills not used for 30 (or N) days", example: "90", words: 1 },
	{
		name: "doctor",
		usage: "",
		summary: "duplicates, rule breaks, long files, broken links, old proposals",
		example: "",
		words: 0,
	},
	{
		name: "eval",
		usage:
			"<proposal id | skill> --task <text|@file> (--check <command> | --expect <text>) " +
			"[--runs N] [--extension <path>] [--yes]",
		summary: "measure whether a change helps: runs a task with and without it on your model (costs money)",
		example: 'p-1a2b3c4d --task @task.md --check "npm test"',
		words: "free",
	},
];

/** The help text: every subcommand with one line and an example. */
export function helpText(available: ReadonlySet<string>): string {
	const rows = SUBCOMMAND_INFO.filter((c) => available.has(c.name)).map((c) => {
		const command = ["/selfskills", c.name === "status" ? "" : c.name, c.usage].filter(Boolean).join(" ");
		const example = c.example ? ` (e.g. /selfskills ${c.name} ${c.example})` : "";
		return `  ${command} — ${c.summary}${example}`;
	});
	return [
		"/selfskills subcommands (the agent changes skills with its own tool; these are yours):",
		...rows,
		"Without a UI (pi -p) nothing changes without --yes (approve: --yes=<digest>, the digest show printed).",
	].join("\n");
}

/** Why `args` do not fit `info` (a word too many, an unknown flag), with its usage; undefined when they fit. */
export function argumentProblem(info: SubcommandInfo, args: readonly string[]): string | undefined {
	const usage = `usage: /selfskills ${info.name}${info.usage ? ` ${info.usage}` : ""} (/selfskills help lists all)`;
	const accepts = (flag: string) =>
		(info.flags ?? []).some((f) => (f.endsWith("=") ? flag.startsWith(f) : flag === f));
	if (info.words !== "free" && args.some((a) => /["'`]/.test(a)))
		return (
			`Nothing changed: /selfskills ${info.name} takes plain words, not quotes ` +
			`(a skill name has no spaces). ${usage}`
		);
	const flags = args.filter((a) => a.startsWith("--"));
	const words = args.filter((a) => !a.startsWith("--"));
	const unknown = info.words === "free" && info.flags === undefined ? [] : flags.filter((f) => !accepts(f));
	const extra = info.words === "free" ? [] : words.slice(info.words);
	const wrong = [...extra, ...unknown];
	if (wrong.length === 0) return undefined;
	const shown = wrong.map((w) => `"${shownName(w)}"`).join(" ");
	return `Nothing changed: /selfskills ${info.name} does not take ${shown}. ${usage}`;
}

/** `/selfskills unused` without a number: skills not used for this many days. */
const UNUSED_DAYS = 30;
/** The most days `/selfskills unused` takes (a hundred years): more is no date. */
const MAX_UNUSED_DAYS = 36_500;
const BACKUP_ID = /^\d{8}-\d{6}\.\d{3}/;
/** A backup id as restore takes it: a file's backup, a whole-skill snapshot, a snapshot copy, or git:<rev>. */
const isBackupId = (word: string) => BACKUP_ID.test(word) || word.startsWith("git:") || word.startsWith("__deleted__/");

/** customType of a note only the model sees: a change the human made to what it may write or has read. */
export const MODEL_NOTE_TYPE = "selfskills-note";

export type OutputLevel = "info" | "warning" | "error";

export interface OutputDetails {
	/** The command line after `/selfskills`. */
	readonly command: string;
	readonly level: OutputLevel;
}

export interface OutputMessage {
	readonly customType: string;
	readonly content: string;
	readonly display: boolean;
	readonly details: OutputDetails;
}

export interface CommandDeps extends SessionDeps {
	/** pi.sendMessage; without it (a test's deps) outputs fall back to notify. */
	readonly send?: (message: OutputMessage) => void;
	/** Skill names seen by the last discovery, for completions. */
	knownSkills: string[];
	/** Whether pi's bash runs in the sandbox while a control is on (status says so); none: not said. */
	readonly sandbox?: () => SandboxProbe;
}

interface CommandCall {
	readonly send?: (message: OutputMessage) => void;
	readonly command: string;
}

/** The running command of each ctx, so every subcommand writes with output(ctx, text) alone. */
const calls = new WeakMap<ExtensionCommandContext, CommandCall>();

/**
 * Status-line notifications replace one another, so with a UI an output is a message of the
 * conversation (rendered by render.ts). A status dump or history is for the human only: the model
 * would take it as the user speaking and gains nothing it cannot ask the tool for.
 */
function output(ctx: ExtensionCommandContext, text: string, type: OutputLevel = "info"): void {
	const call = calls.get(ctx);
	if (!ctx.hasUI) process.stderr.write(`${text}\n`);
	else if (call?.send)
		call.send({
			customType: OUTPUT_MESSAGE_TYPE,
			content: text,
			display: true,
			details: { command: call.command, level: type },
		});
	else ctx.ui.notify(text, type);
}

/**
 * A human restore or trust change the model must know of: the file it read is gone, or the folders it
 * may write changed. Hidden in the TUI (the human saw the command's own output), sent in print mode too.
 */
function tellModel(ctx: ExtensionCommandContext, text: string): void {
	const call = calls.get(ctx);
	call?.send?.({
		customType: MODEL_NOTE_TYPE,
		content: text,
		display: false,
		details: { command: call.command, level: "info" },
	});
}

function refused(ctx: ExtensionCommandContext, refusal: Refusal): void {
	output(ctx, refusalForHuman(refusal), "error");
}

async function context(deps: CommandDeps, ctx: TrustContext): Promise<CallContext> {
	const callCtx = await createSessionCallContext(deps, ctx);
	deps.knownSkills = callCtx.discovery.skills.map((s) => s.name);
	return callCtx;
}

/** One line per writable folder; a folder that is several kinds of root (agent skills and skillsDir) is listed once. */
function formatRoots(roots: ReadonlyArray<{ kind: string; path: string }>): string {
	const kinds = new Map<string, string[]>();
	for (const root of roots) kinds.set(root.path, [...(kinds.get(root.path) ?? []), root.kind]);
	return [...kinds].map(([path, names]) => `  ${path} (${names.join(", ")})`).join("\n") || "  (none)";
}

/** ` — last used <date> (N uses), M changes` for a skill's status line. */
function useLine(use: SkillUsage | undefined, changes: number | undefined): string {
	const used = use
		? `last used ${use.last.slice(0, 10)} (${use.count} use${use.count === 1 ? "" : "s"})`
		: "never used";
	return ` — ${used}, ${changes ?? 0} change${changes === 1 ? "" : "s"}`;
}

/** Skills not used for `days` (default 30), to help the person prune; nothing is moved or archived. */
async function unused(deps: CommandDeps, ctx: ExtensionCommandContext, args: readonly string[]): Promise<void> {
	const days = args[0] === undefined ? UNUSED_DAYS : /^\d{1,5}$/.test(args[0]) ? Number(args[0]) : Number.NaN;
	if (!(days <= MAX_UNUSED_DAYS))
		return output(
			ctx,
			`"${shownName(args[0] ?? "")}" is not a number of days (a whole number from 0 to ${MAX_UNUSED_DAYS}); ` +
				`try /selfskills unused ${UNUSED_DAYS}`,
			"error",
		);
	const callCtx = await context(deps, ctx);
	const names = new Set(callCtx.discovery.skills.map((s) => s.name));
	const stale = findPrunable(callCtx, days);
	if (stale.length === 0)
		return output(
			ctx,
			`No skill to prune: of the ${names.size} skills, every one was used in the last ${days} days, ` +
				"is newer than that, or is this package's own or an npm package's.",
		);
	const lines = stale.map(
		(s) =>
			`  ${s.skill.name}: ${s.last ? `last used ${s.last.slice(0, 10)}` : "never used (since usage is counted)"}` +
			` — ${s.skill.dir ?? s.skill.filePath}`,
	);
	output(
		ctx,
		`${stale.length} of ${names.size} skills not used in the last ${days} days:\n${lines.join("\n")}\n` +
			"Nothing is moved or archived. To drop one you no longer want, delete its folder (shown); " +
			`to keep the agent from changing one, pin it (e.g. /selfskills pin ${stale[0].skill.name}).`,
	);
}

export async function formatStatus(deps: CommandDeps, ctx: ExtensionCommandContext): Promise<string> {
	const piDir = findPiPackageDir();
	const callCtx = await context(deps, ctx);
	const { trust, report } = callCtx.policy;
	const skills = callCtx.discovery.skills;
	const patchable = skills.filter((s) => s.patchable);
	const backups = callCtx.store.usage();
	const usage = readUsage(deps.fs, deps.agentDir());
	const changes = countChanges(deps.fs, deps.agentDir());
	const journals = pendingJournals(deps.fs, deps.agentDir());
	const proposals = listProposals(deps.fs, deps.agentDir());
	const s = report.settings;
	const lines = [
		`selfskills: enabled ${s.enabled}, inject ${s.inject}`,
		`project ${trust.projectRoot}: ${trust.trusted ? "trusted" : "untrusted"} ` +
			`(${trust.source === "pi" ? "pi's own trust" : "selfskills.trustedProjects"})`,
		...(trust.source === "pi" ? [] : getIgnoredEntries(s.trustedProjects)).map(
			(entry) =>
				`  selfskills.trustedProjects entry ${entry}; remove it from ${getGlobalSettingsPath(deps.agentDir())}`,
		),
		`settings from: ${report.source ?? "defaults"}`,
		`skills dir (create): ${s.skillsDir}`,
		`writable roots:\n${formatRoots(callCtx.discovery.roots)}`,
		formatGitStatus(
			deps.fs,
			callCtx.discovery.roots.map((r) => r.path),
			s.git,
		),
		`skills: ${skills.length} found, ${patchable.length} patchable, ${skills.length - patchable.length} read-only`,
		...skills.map((k) => {
			const pin = k.patchable ? findPin(s.pinned, k.name) : undefined;
			const state =
				pin !== undefined
					? `read-only (pinned by "${pin}")`
					: k.patchable
						? "patchable"
						: `read-only (${k.reason})`;
			return `  ${k.name}: ${state}${useLine(usage.get(k.name), changes.get(k.name))}`;
		}),
		`backups: ${backups.files} file(s), ${backups.bytes} bytes in ${callCtx.store.root}`,
		"approval: " +
			`${typeof s.approval === "string" ? s.approval : `own ${s.approval.own}, others ${s.approval.others}`}; ` +
			`pinned: ${s.pinned.join(", ") || "(none)"}; ` +
			`pending proposals: ${proposals.length}${proposals.length > 0 ? " (/selfskills pending)" : ""}`,
	];
	if (deps.sandbox) lines.push(bashStatusLine(deps.sandbox(), controlIsOn(s)));
	const problems = [
		...report.problems,
		...refusedWritableSettings({ cwd: ctx.cwd, agentDir: deps.agentDir(), settings: s, piDir, fs: deps.fs }),
	];
	if (problems.length > 0) lines.push(`settings problems:\n${problems.map((p) => `  ${p}`).join("\n")}`);
	if (journals.length > 0)
		lines.push(`unfinished batch journal(s): ${journals.join(", ")} (a file could not be put back; see the journal)`);
	if (deps.state.recoveries.length > 0)
		lines.push(`recovered interrupted batches:\n${deps.state.recoveries.map((r) => `  ${r}`).join("\n")}`);
	return lines.join("\n");
}

/**
 * The id a restore of `file` puts back, chosen by restore.ts's own rules: the named backup, else the
 * newest that differs from the file now; a deleted skill's snapshot. The human sees it before saying yes.
 */
function chosenBackup(
	callCtx: CallContext,
	skillName: string,
	file: string,
	backup: string | undefined,
): string | undefined {
	const skill = findSkill(callCtx.discovery.skills, { skill: skillName }, callCtx.cwd);
	if (isRefusal(skill)) return pickBackup(callCtx.store.listSnapshots(skillName), backup)?.id;
	const entries = restoreCandidates(callCtx, skill, file);
	if (backup !== undefined) return pickBackup(entries, backup)?.id;
	const target = resolveFileTarget(skill, file);
	// An absent or unreadable file differs from every backup.
	const current = isRefusal(target) ? null : (tryRead(callCtx.fs, target.absPath) ?? null);
	return (newestDiffering(entries, current) ?? entries[0])?.id;
}

async function history(deps: CommandDeps, ctx: ExtensionCommandContext, args: string[]): Promise<void> {
	if (!args[0]) return output(ctx, "usage: /selfskills history <skill> [file]", "warning");
	const callCtx = await context(deps, ctx);
	const result = showHistory(callCtx, { skill: args[0], file: args[1] });
	if (isRefusal(result)) return refused(ctx, result);
	const d = result.details;
	const skill = String(d.skill);
	const file = String(d.file);
	const backups = d.backups as BackupEntry[];
	// A skill deleted as a whole comes back from its snapshot (its own line), never one file at a time.
	const deleted = isRefusal(findSkill(callCtx.discovery.skills, { skill }, callCtx.cwd));
	const next = backups.length > 0 && !deleted ? chosenBackup(callCtx, skill, file, undefined) : undefined;
	output(
		ctx,
		historyText({
			skill,
			file,
			backups,
			next,
			snapshots: d.snapshots as SnapshotEntry[],
			otherFiles: d.otherFiles as string[],
			evals: readSkillEvals(deps.fs, deps.agentDir(), skill),
		}),
	);
}

async function restore(deps: CommandDeps, ctx: ExtensionCommandContext, args: string[]): Promise<void> {
	const usage = "usage: /selfskills restore <skill> [file] [backup id] (ids: /selfskills history <skill>)";
	const positional = args.filter((a) => a !== CONFIRM_FLAG);
	const [skill, second, third] = positional;
	if (!skill) return output(ctx, usage, "warning");
	const backup = third ?? (second && isBackupId(second) ? second : undefined);
	const file = second && second !== backup ? second : undefined;
	// The person is not the agent: pins and approval modes bind the agent; the confirmation decides.
	const callCtx: CallContext = { ...(await context(deps, ctx)), byPerson: true };
	const prepared = prepareRestore(callCtx, { skill, file, backup });
	if (isRefusal(prepared)) return refused(ctx, prepared);
	const view: RestoreView = {
		skill: prepared.skill,
		file: prepared.file ?? "",
		backup: chosenBackup(callCtx, prepared.skill, prepared.file || "SKILL.md", backup) ?? backup ?? "(newest)",
		named: backup !== undefined,
		pin: findPin(callCtx.settings.pinned, prepared.skill),
	};
	const preview = await runMutations(callCtx, [prepared], { dryRun: true, batch: false, effects: deps.effects });
	if (isRefusal(preview)) return refused(ctx, preview);
	const findings = findingsBlock(preview.details.findings as ProposalView["findings"]);
	const diff = [findings, String(preview.details.diff ?? "")].filter(Boolean).join("\n");
	if (!ctx.hasUI && !(backup && args.includes(CONFIRM_FLAG))) return output(ctx, restorePreviewText(view, diff));
	if (ctx.hasUI && !(await ctx.ui.confirm(restoreQuestion(view), diff))) return output(ctx, RESTORE_CANCELLED);
	// What lands is the change the person saw, or nothing (the files changed since: conflict).
	const expect = (preview.details.targets ?? []) as ProposalTarget[];
	const done = await runMutations(callCtx, [prepared], {
		dryRun: false,
		batch: false,
		effects: deps.effects,
		decided: { expect, mark: { byPerson: "restore" } },
	});
	if (isRefusal(done)) return refused(ctx, done);
	const changes = (done.details.changes ?? []) as Array<{ backup?: string }>;
	if (done.details.proposed || changes.length === 0)
		return output(ctx, `restore not landed: nothing was written.\n${done.text}`, "error");
	output(ctx, restoreDoneText(view, view.file === "" ? undefined : changes[0]?.backup, diff));
	tellModel(ctx, restoreNoteForModel(view));
}

/** `--yes`: the explicit confirmation print mode needs, where nobody can be asked. */
const CONFIRM_FLAG = "--yes";

interface Confirmation {
	readonly title: string;
	readonly question: string;
	/** Said where nobody can be asked, before "Nothing changed"; none: nothing. */
	readonly said?: string;
	/** How to confirm in print mode: "To confirm, run: /selfskills … --yes". */
	readonly rerun: string;
	/** Said when the person declines; none: "nothing changed". */
	readonly declined?: string;
}

/**
 * Whether the person confirmed: the dialog where there is a UI, else `--yes` among `args`. When
 * not, says so (where nobody can be asked, with the command that confirms) and changes nothing.
 */
async function confirmed(ctx: ExtensionCommandContext, args: readonly string[], c: Confirmation): Promise<boolean> {
	if (ctx.hasUI) {
		if (await ctx.ui.confirm(c.title, c.question)) return true;
		output(ctx, c.declined ?? "nothing changed");
		return false;
	}
	if (args.includes(CONFIRM_FLAG)) return true;
	const said = c.said === undefined ? "" : `${c.said}\n`;
	output(ctx, `${said}Nothing changed: without a UI nobody can be asked. ${c.rerun}`, "warning");
	return false;
}

/**
 * Trust or untrust the project pi runs in. Takes no path: the project is the one whose skills this
 * session's agent writes, and the person sees that root named in the question. Untrust names each
 * entry that covers the project (an ancestor covers every project under it) before removing any.
 */
async function trust(
	deps: CommandDeps,
	ctx: ExtensionCommandContext,
	trusted: boolean,
	args: readonly string[],
): Promise<void> {
	const { trust: current, report } = loadPolicy(ctx, deps.agentDir());
	if (current.source === "pi") {
		return output(ctx, piTrustText(current.trusted), "warning");
	}
	const sub = trusted ? "trust" : "untrust";
	const root = current.projectRoot;
	const extra = args.filter((a) => a !== CONFIRM_FLAG);
	if (extra.length > 0)
		return output(
			ctx,
			`/selfskills ${sub} takes no path; it acts on the project pi runs in, ${root}. Nothing changed. ` +
				`For another folder, start pi there and run /selfskills ${sub}.`,
			"warning",
		);
	const refusal = trusted ? getTrustRefusal(root) : undefined;
	if (refusal)
		return output(
			ctx,
			`Not trusted: ${refusal}. Start pi in the project's own folder and run /selfskills trust there.`,
			"error",
		);
	const covering = getCoveringEntries(root, report.settings.trustedProjects);
	if (trusted && covering.length > 0)
		return output(ctx, `Nothing changed: ${root} is already trusted by selfskills.trustedProjects "${covering[0]}".`);
	if (!trusted && covering.length === 0)
		return output(ctx, `Nothing changed: ${root} is not trusted; no selfskills.trustedProjects entry covers it.`);
	const question = trusted
		? `Trust ${root} and every folder below it? Its .pi/settings.json then configures selfskills, and the ` +
			".pi/skills and .agents/skills folders of it and of every folder below it become writable by the agent."
		: `Stop trusting ${root}? ${coveringText(root, covering)} The agent can then no longer change the ` +
			".pi/skills and .agents/skills of any project under the removed entries.";
	const title = trusted ? "Trust this project?" : "Stop trusting this project?";
	const rerun = `To confirm, run: /selfskills ${sub} ${CONFIRM_FLAG}`;
	if (!(await confirmed(ctx, args, { title, question, said: question, rerun }))) return;
	const list = setListedTrust(deps.agentDir(), root, trusted, deps.fs);
	output(
		ctx,
		`${trusted ? "trusted" : "untrusted"}: ${root}\n` +
			(trusted ? "" : `removed: ${covering.map((e) => `"${e}"`).join(", ")}\n`) +
			`selfskills.trustedProjects: ${list.join(", ") || "(empty)"}`,
	);
}

/** The entries untrust removes, each named; an ancestor is said to cover every project under it. */
function coveringText(root: string, covering: readonly string[]): string {
	const removed = covering.map((entry) =>
		isAncestorEntry(entry, root)
			? `the selfskills.trustedProjects entry "${entry}", which covers every project under it, not only this one`
			: `the selfskills.trustedProjects entry "${entry}" (this project)`,
	);
	return `This removes ${removed.join(", and ")}.`;
}

/** Runs trust/untrust and tells the model when the project's trust (what it may write) really changed. */
async function changeTrust(
	deps: CommandDeps,
	ctx: ExtensionCommandContext,
	trusted: boolean,
	args: readonly string[],
): Promise<void> {
	const before = loadPolicy(ctx, deps.agentDir()).trust.trusted;
	await trust(deps, ctx, trusted, args);
	const after = loadPolicy(ctx, deps.agentDir()).trust;
	if (after.trusted !== before) tellModel(ctx, trustNoteForModel(after.projectRoot, after.trusted));
}

/** The words after the id of approve/reject, without the flags: the person's reason. */
function wordsOf(args: readonly string[]): string | undefined {
	const words = args
		.filter((a) => !a.startsWith("--"))
		.join(" ")
		.trim();
	return words === "" ? undefined : words;
}

/**
 * The pending proposal `id`; else says why not — already approved or rejected (when, with the
 * person's words), or unknown (with how to list them) — and returns undefined.
 */
function pendingProposal(deps: CommandDeps, ctx: ExtensionCommandContext, id: string): Proposal | undefined {
	const proposal = findProposal(deps, id);
	if (!isRefusal(proposal)) return proposal;
	const decision = proposal.code === "unknown_proposal" ? readDecision(deps.fs, deps.agentDir(), id) : undefined;
	if (decision) output(ctx, `${decidedText(decision)}\nIt is no longer pending.`, "warning");
	else refused(ctx, proposal);
	return undefined;
}

/** "patch of deploy-checks": what a proposal changes, as the agent named it (escaped). */
const subjectOf = (p: Proposal) => `${shownName(p.action)} of ${p.skills.map(shownName).join(", ")}`;

function pending(deps: CommandDeps, ctx: ExtensionCommandContext): void {
	deps.state.recoveries.push(...finishInterrupted(deps.fs, deps.agentDir()));
	const agentDir = deps.agentDir();
	output(ctx, pendingText(listProposals(deps.fs, agentDir), Date.now(), invalidProposals(deps.fs, agentDir)));
}

/**
 * The proposal with its change planned again on the files as they are now — what an approval lands —
 * and that change's digest; for a decided one, the verdict.
 */
async function show(deps: CommandDeps, ctx: ExtensionCommandContext, args: readonly string[]): Promise<void> {
	if (!args[0]) return output(ctx, "usage: /selfskills show <id> (ids: /selfskills pending)", "warning");
	const proposal = pendingProposal(deps, ctx, args[0]);
	if (proposal === undefined) return;
	const preview = await previewApproval(deps, ctx, proposal);
	output(ctx, proposalText(proposal, isRefusal(preview) ? { refusal: preview } : preview));
}

/** `--yes=<digest>`: print mode's approval of the change `show` displayed (that change's digest). */
const DIGEST_FLAG = "--yes=";

async function approve(deps: CommandDeps, ctx: ExtensionCommandContext, args: readonly string[]): Promise<void> {
	if (!args[0]) return output(ctx, "usage: /selfskills approve <id> (ids: /selfskills pending)", "warning");
	const proposal = pendingProposal(deps, ctx, args[0]);
	if (proposal === undefined) return;
	const preview = await previewApproval(deps, ctx, proposal);
	if (isRefusal(preview)) return refused(ctx, preview);
	const { replayedOn } = preview;
	if (ctx.hasUI) {
		// A pin binds the agent; the person's approval lands, and the dialog says so.
		const pins = proposal.skills.flatMap((skill) => {
			const pin = findPin(preview.ctx.settings.pinned, skill);
			return pin === undefined ? [] : [`${shownName(skill)} is pinned (selfskills.pinned "${shownName(pin)}")`];
		});
		const pinned = pins.length > 0 ? `${pins.join("; ")}: the pin holds the agent back; your approval lands.\n` : "";
		const body = pinned + approveBody(proposal.reason, preview.diff, preview.digest, proposal.eval);
		if (!(await ctx.ui.confirm(approveQuestion(proposal.id, replayedOn), body)))
			return output(ctx, `nothing changed; ${proposal.id} is still pending`);
	} else {
		// Without a UI the person saw the change in `show`: it lands only while the plan has that digest.
		const given = args.find((a) => a.startsWith(DIGEST_FLAG))?.slice(DIGEST_FLAG.length);
		if (given === undefined)
			return output(
				ctx,
				approvePreviewText(proposal.id, proposal.reason, preview.diff, preview.digest, proposal.eval),
				"warning",
			);
		if (given !== preview.digest) return refused(ctx, digestMismatch(proposal.id, given, preview.digest));
	}
	const words = wordsOf(args.slice(1));
	const done = await landApproval(deps, preview, words);
	if (isRefusal(done)) return refused(ctx, done);
	const changes = (done.details.changes ?? []) as Array<{ file?: string; backup?: string | null }>;
	const backups = changes.filter((c) => c.backup).map((c) => `${c.file} -> ${c.backup}`);
	output(
		ctx,
		`approved ${proposal.id}: ${subjectOf(proposal)} landed` +
			`${replayedOn.length > 0 ? " (replayed on the changed files)" : ""}.` +
			`${backups.length > 0 ? ` Backup: ${backups.join(", ")}` : ""}\n${shownDiff(preview.diff).trimEnd()}`,
	);
}

async function exportCommand(deps: CommandDeps, ctx: ExtensionCommandContext, args: readonly string[]): Promise<void> {
	const id = args.find((a) => !a.startsWith("--"));
	if (!id) return output(ctx, "usage: /selfskills export <id> [--branch] (ids: /selfskills pending)", "warning");
	if (pendingProposal(deps, ctx, id) === undefined) return;
	const done = await exportProposal(deps, ctx, id, { branch: args.includes("--branch") });
	if (isRefusal(done)) return refused(ctx, done);
	output(ctx, exportText(id, done));
}

async function reject(deps: CommandDeps, ctx: ExtensionCommandContext, args: readonly string[]): Promise<void> {
	if (!args[0]) return output(ctx, "usage: /selfskills reject <id> [reason] (ids: /selfskills pending)", "warning");
	const proposal = pendingProposal(deps, ctx, args[0]);
	if (proposal === undefined) return;
	const asked = await confirmed(ctx, args, {
		title: `Reject proposal ${proposal.id}?`,
		question: `${subjectOf(proposal)}; the agent is told, with your reason.`,
		rerun: `To reject ${proposal.id}, run: /selfskills reject ${proposal.id} [reason] ${CONFIRM_FLAG}`,
		declined: `nothing changed; ${proposal.id} is still pending`,
	});
	if (!asked) return;
	let words = wordsOf(args.slice(1));
	if (ctx.hasUI) words ??= (await ctx.ui.input("Why? The agent reads this (optional)", ""))?.trim() || undefined;
	rejectProposal(deps, proposal, words);
	output(
		ctx,
		`rejected ${proposal.id} (${subjectOf(proposal)})${words ? `: "${words}"` : ""}; ` +
			"nothing was written. The agent is told at its next prompt.",
	);
}

async function pin(
	deps: CommandDeps,
	ctx: ExtensionCommandContext,
	pinned: boolean,
	args: readonly string[],
): Promise<void> {
	const entry = args.find((a) => !a.startsWith("--"));
	const verb = pinned ? "pin" : "unpin";
	if (!entry)
		return output(
			ctx,
			`usage: /selfskills ${verb} <skill> (a trailing * pins every skill whose name starts so)`,
			"warning",
		);
	const problem = pinProblem(entry);
	if (problem !== undefined)
		return output(ctx, `Nothing changed: "${shownName(entry)}" is not a pin (${problem}).`, "error");
	const settings = loadPolicy(ctx, deps.agentDir()).report.settings;
	const holder = findPin(settings.pinned, entry.replace(/\*$/, ""));
	if (!pinned && holder !== undefined && holder !== entry) {
		return output(
			ctx,
			`${entry} is pinned by "${holder}"; unpin that entry instead (/selfskills unpin ${holder}).`,
			"warning",
		);
	}
	if (!pinned && !globalPins(deps).includes(entry)) {
		return output(
			ctx,
			`Nothing changed: ${entry} is not in the global selfskills.pinned ` +
				`(${globalPins(deps).join(", ") || "empty"}).`,
			"warning",
		);
	}
	// A pin may name a skill that is not there yet; the person is told, in case it is a typo.
	const known = pinned ? (await context(deps, ctx)).discovery.skills.map((s) => s.name) : [];
	const matchesNone = pinned && !known.some((name) => findPin([entry], name) !== undefined);
	const none = matchesNone
		? ` No skill found now is named ${entry}: check the spelling (/selfskills lists them).`
		: "";
	const effect = pinned
		? `The agent may then read ${entry} but never change it.${none}`
		: `The agent may then change ${entry} again (within its writable folders and approval mode).`;
	const asked = await confirmed(ctx, args, {
		title: `${pinned ? "Pin" : "Unpin"} ${entry}?`,
		question: `${effect} This edits selfskills.pinned in ${getGlobalSettingsPath(deps.agentDir())}.`,
		said: effect,
		rerun: `To confirm, run: /selfskills ${verb} ${entry} ${CONFIRM_FLAG}`,
	});
	if (!asked) return;
	const list = setGlobalPin(deps.agentDir(), entry, pinned, deps.fs);
	const still = pinned
		? undefined
		: findPin(loadPolicy(ctx, deps.agentDir()).report.settings.pinned, entry.replace(/\*$/, ""));
	const project = still
		? ` It is still pinned by "${still}" in this project's .pi/settings.json, which only the project can change.`
		: "";
	output(
		ctx,
		`${pinned ? "pinned" : "unpinned"}: ${entry}\n` +
			`selfskills.pinned: ${list.join(", ") || "(empty)"}${project}${none}`,
		matchesNone ? "warning" : "info",
	);
	tellModel(
		ctx,
		pinned ? `The person pinned ${entry}: you may read it but not change it.` : `The person unpinned ${entry}.`,
	);
}

/** The global selfskills.pinned as the file holds it (unpin edits that list only). */
function globalPins(deps: CommandDeps): string[] {
	const block = readSettingsFile(getGlobalSettingsPath(deps.agentDir()), deps.fs).json.selfskills;
	return isJsonObject(block) && Array.isArray(block.pinned)
		? block.pinned.filter((p): p is string => typeof p === "string")
		: [];
}

/** `raw` is the text after the subcommand as typed, for a subcommand that parses its own quoting (eval). */
type Handler = (deps: CommandDeps, ctx: ExtensionCommandContext, args: string[], raw: string) => Promise<void> | void;

/** What each subcommand runs; a subcommand of SUBCOMMAND_INFO without one is not offered. */
const HANDLERS: Record<string, Handler> = {
	status: async (deps, ctx) => output(ctx, await formatStatus(deps, ctx)),
	help: (_deps, ctx) => output(ctx, helpText(new Set(Object.keys(HANDLERS)))),
	history: (deps, ctx, args) => history(deps, ctx, args),
	restore: (deps, ctx, args) => restore(deps, ctx, args),
	unused: (deps, ctx, args) => unused(deps, ctx, args),
	trust: (deps, ctx, args) => changeTrust(deps, ctx, true, args),
	untrust: (deps, ctx, args) => changeTrust(deps, ctx, false, args),
	pending: (deps, ctx) => pending(deps, ctx),
	show: (deps, ctx, args) => show(deps, ctx, args),
	approve: (deps, ctx, args) => approve(deps, ctx, args),
	reject: (deps, ctx, args) => reject(deps, ctx, args),
	pin: (deps, ctx, args) => pin(deps, ctx, true, args),
	unpin: (deps, ctx, args) => pin(deps, ctx, false, args),
	export: (deps, ctx, args) => exportCommand(deps, ctx, args),
	doctor: async (deps, ctx) => output(ctx, doctorReport(await context(deps, ctx))),
	eval: (deps, ctx, args, raw) =>
		runEvalCommand(deps, ctx, raw, {
			say: (text, level) => output(ctx, text, level),
			confirm: (c) => confirmed(ctx, args, c),
		}),
};

/** The subcommands this build runs, in help's order. */
const offered = () => SUBCOMMAND_INFO.filter((c) => HANDLERS[c.name] !== undefined);

export async function handleCommand(deps: CommandDeps, rawArgs: string, ctx: ExtensionCommandContext): Promise<void> {
	const [sub = "status", ...rest] = rawArgs.trim().split(/\s+/).filter(Boolean);
	calls.set(ctx, { send: deps.send, command: rawArgs.trim() });
	try {
		const info = offered().find((c) => c.name === sub);
		const handler = info && HANDLERS[info.name];
		if (!info || !handler)
			return output(
				ctx,
				`unknown subcommand "${shownName(sub)}"; use one of ${offered()
					.map((c) => c.name)
					.join(", ")} (/selfskills help says what each does)`,
				"warning",
			);
		const problem = argumentProblem(info, rest);
		if (problem) return output(ctx, problem, "error");
		return await handler(deps, ctx, rest, rawArgs.trim().slice(sub.length));
	} catch (error) {
		output(ctx, `selfskills: ${error instanceof Error ? error.message : String(error)}`, "error");
	} finally {
		calls.delete(ctx);
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
	const backedUp = createBackupStore(deps.fs, deps.agentDir()).skillNames();
	return [...new Set([...deps.knownSkills, ...backedUp])];
}

/** Subcommands whose argument is a pending proposal's id; reject takes a reason after it, export --branch. */
const TAKES_PROPOSAL = new Set(["show", "approve", "reject", "export"]);

/**
 * Completions, each the whole argument text: subcommands, then skill names, then (restore) the
 * backup ids of SKILL.md and the bundled files that have backups, then that file's backup ids;
 * pending proposal ids for show, approve and reject; pinned entries for unpin.
 * pi inserts a value as it is, so one after which another argument can follow ends in a space.
 */
export async function completeArguments(
	deps: CommandDeps,
	prefix: string,
	backupIds?: BackupLister,
): Promise<Completion[] | null> {
	const words = prefix.trimStart().split(/\s+/);
	const last = words.at(-1) ?? "";
	const head = words.slice(0, -1).join(" ");
	const withHead = (v: string) => (head ? `${head} ${v}` : v);
	const store = createBackupStore(deps.fs, deps.agentDir());
	const ids = backupIds ?? ((skill: string, file: string) => store.list(skill, file).map((b) => b.id));
	const [sub, skill, file] = words;
	const final = (names: string[]) => names.map((name) => ({ name, more: false }));
	const notFinal = (names: string[]) => names.map((name) => ({ name, more: true }));
	let options: Array<{ name: string; more: boolean }> = [];
	if (words.length === 1) options = offered().map((c) => ({ name: c.name, more: c.usage.startsWith("<") }));
	else if (words.length === 2 && sub === "eval")
		options = notFinal([...listProposals(deps.fs, deps.agentDir()).map((p) => p.id), ...(await skillNames(deps))]);
	else if (words.length === 2 && TAKES_PROPOSAL.has(sub)) {
		const ids = listProposals(deps.fs, deps.agentDir()).map((p) => p.id);
		options = sub === "reject" || sub === "export" ? notFinal(ids) : final(ids);
	} else if (words.length === 3 && sub === "export") {
		options = final(["--branch"]);
	} else if (words.length === 2 && sub === "unpin") options = final(globalPins(deps));
	else if (words.length === 2 && sub === "pin") {
		const pins = globalPins(deps);
		options = final((await skillNames(deps)).filter((name) => !pins.includes(name)));
	} else if (words.length === 2 && sub === "history") options = notFinal(await skillNames(deps));
	// restore offers only what it can put back: skills with backups or snapshots.
	else if (words.length === 2 && sub === "restore") options = notFinal(store.skillNames());
	else if (words.length === 3 && sub === "history")
		options = final(store.trackedFiles(skill).filter((f) => f !== "SKILL.md"));
	else if (words.length === 3 && sub === "restore") {
		await skillNames(deps);
		// A skill deleted as a whole comes back from a snapshot, never one file at a time.
		const present = deps.knownSkills.includes(skill);
		const snapshots = store.listSnapshots(skill).map((s) => s.id);
		options = present
			? [
					...final([...ids(skill, "SKILL.md"), ...snapshots]),
					...notFinal(store.trackedFiles(skill).filter((f) => f !== "SKILL.md")),
				]
			: final(snapshots);
	} else if (words.length === 4 && sub === "restore" && !BACKUP_ID.test(file) && deps.knownSkills.includes(skill))
		options = final(ids(skill, file));
	const hits = options.filter((o) => o.name.startsWith(last));
	return hits.length > 0
		? hits.map((o) => ({ value: withHead(o.more ? `${o.name} ` : o.name), label: o.name }))
		: null;
}
