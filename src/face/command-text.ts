// The texts of /selfskills, one per audience. The human reads the next step as a slash command (the
// tool's refusals and history name tool-call JSON, which is for the model); the few outputs the
// model must know about (a restore or trust change the human made) get a text of their own.
// Also the human's one-line start-up warning about settings problems.

import type { BackupEntry, SnapshotEntry } from "../store/backup-store.ts";
import { findingsText, type Refusal } from "../base/errors.ts";
import { shownDiff, shownName, shownReason } from "../checks/agent-text.ts";
import type { Decision } from "../store/proposals.ts";
import type { EvalRecord } from "../store/evals.ts";
import { evalReportText } from "../eval/report.ts";

const SKILL_FILE = "SKILL.md";

const quoted = (items: readonly unknown[]) => items.map((i) => `"${String(i)}"`).join(", ");
const str = (value: unknown): string => (typeof value === "string" ? value : "");
const list = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : []);

/**
 * `/selfskills restore <skill> <file> <backup>`: the file is always named, so the backup id cannot
 * be taken for one.
 */
export function restoreCommand(skill: string, file: string, backup: string): string {
	return `/selfskills restore ${skill}${file === "" ? "" : ` ${file}`} ${backup}`;
}

export function historyCommand(skill: string, file: string | undefined): string {
	return `/selfskills history ${skill}${file && file !== SKILL_FILE ? ` ${file}` : ""}`;
}

export interface HistoryView {
	readonly skill: string;
	readonly file: string;
	readonly backups: readonly BackupEntry[];
	/** The id a plain restore takes (the newest that differs from the file now). */
	readonly next?: string;
	readonly snapshots: readonly SnapshotEntry[];
	readonly otherFiles: readonly string[];
	/** The skill's evals (/selfskills eval), oldest first. */
	readonly evals?: readonly EvalRecord[];
}

/** Evals shown by history: the newest few. */
const EVALS_SHOWN = 3;

/** The last evals of a skill, newest last; "" when it has none. */
export function evalsText(evals: readonly EvalRecord[]): string {
	if (evals.length === 0) return "";
	const shown = evals.slice(-EVALS_SHOWN);
	const older = evals.length - shown.length;
	return [
		`${evals.length} eval(s) of this skill${older > 0 ? ` (the ${shown.length} newest shown)` : ""}:`,
		...shown.map((e) => escapedReport(e)),
	].join("\n");
}

/** An eval's report with the person's task and check escaped (they are shown back as typed). */
const escapedReport = (e: EvalRecord) => shownDiff(evalReportText(e)).trimEnd();

export function historyText(view: HistoryView): string {
	const { skill, file, backups } = view;
	const lines = [
		`${backups.length} backup(s) of ${skill}/${file}, newest first` +
			`${backups.length > 0 ? "" : " (none yet: a backup is taken before each change)"}:`,
		...backups.map(
			(e) => `  ${e.id}  ${e.time}  ${e.size} bytes  sha256 ${e.hash}${e.legacy ? "  (old flat layout)" : ""}`,
		),
	];
	for (const other of view.otherFiles)
		lines.push(`Other file with backups: ${other} (${historyCommand(skill, other)})`);
	for (const s of view.snapshots)
		lines.push(
			`Whole-skill snapshot: ${s.id} of ${s.originDir ?? "(origin unknown)"}; ` +
				`recreate the skill from it: ${restoreCommand(skill, "", s.id)}`,
		);
	if (view.next)
		lines.push(`Restore one (you see the change and confirm first): ${restoreCommand(skill, file, view.next)}`);
	const evals = evalsText(view.evals ?? []);
	if (evals) lines.push(evals);
	return lines.join("\n");
}

export interface RestoreView {
	readonly skill: string;
	/** "" for a whole skill recreated from a snapshot. */
	readonly file: string;
	readonly backup: string;
	/** The person named the backup (else it is the newest that differs from the file now). */
	readonly named?: boolean;
	/** The selfskills.pinned entry that pins the skill: the confirmation names it. */
	readonly pin?: string;
}

const what = (view: RestoreView) => (view.file === "" ? `${view.skill} (whole skill)` : `${view.skill}/${view.file}`);

/** The pin, named in a person's restore: it holds the agent back, not the person. */
const pinNote = (view: RestoreView) =>
	view.pin === undefined
		? ""
		: ` ${view.skill} is pinned (selfskills.pinned "${shownName(view.pin)}"): the pin keeps the agent from ` +
			"changing it; your restore lands, and the pin stays.";

export function restoreQuestion(view: RestoreView): string {
	return `Restore ${what(view)} to backup ${view.backup}?${pinNote(view)}`;
}

/** Without a UI pi cannot ask, so a restore named by skill alone only shows what it would do. */
export function restorePreviewText(view: RestoreView, diff: string): string {
	return [
		`Would restore ${what(view)} to backup ${view.backup}` +
			`${view.named ? "" : ", the newest that differs from it now"}. ` +
			"The change it would make (- now, + after):",
		diff,
		`Nothing was restored: without a UI pi cannot ask you first.${pinNote(view)} ` +
			`To restore it, run: ${restoreCommand(view.skill, view.file, view.backup)} --yes`,
		`Other backups: ${historyCommand(view.skill, view.file || undefined)}`,
	].join("\n");
}

export function restoreDoneText(view: RestoreView, replacedBy: string | undefined, diff: string): string {
	const undo = replacedBy
		? `The version it replaced is backup ${replacedBy}; ` +
			`${restoreCommand(view.skill, view.file, replacedBy)} puts it back.`
		: "pi lists it again after /reload.";
	return [`restore landed: ${what(view)} is back to backup ${view.backup}.`, undo, diff].filter(Boolean).join("\n");
}

export const RESTORE_CANCELLED = "restore cancelled; nothing changed";

/** What the model is told of a restore the human made: the file changed outside its reads. */
export function restoreNoteForModel(view: RestoreView): string {
	return (
		`[selfskills] The user restored ${what(view)} to backup ${view.backup} with /selfskills restore. ` +
		"Its content changed since you last read it: read it again before you patch it, " +
		"and do not redo the change they undid."
	);
}

/** Where pi has project trust of its own (1.6), /selfskills trust defers to pi's command for it. */
export function piTrustText(trusted: boolean): string {
	return (
		`This pi decides project trust itself (now: ${trusted ? "trusted" : "untrusted"}). ` +
		"Change it with pi's own /trust command, which saves the decision for later sessions; " +
		"for one run, start pi with --approve or --no-approve."
	);
}

/** What the model is told of a trust change the human made: which skill folders it may now write. */
export function trustNoteForModel(projectRoot: string, trusted: boolean): string {
	return trusted
		? `[selfskills] The user trusted the project ${projectRoot} with /selfskills trust: ` +
				"its .pi/skills and .agents/skills are writable for skill_manage now."
		: `[selfskills] The user stopped trusting the project ${projectRoot} with /selfskills untrust: ` +
				"its .pi/skills and .agents/skills are read-only for skill_manage now.";
}

/** The history command for the skill a refusal names; the plain command when it names none. */
const historyOf = (d: Record<string, unknown>) =>
	str(d.skill)
		? historyCommand(shownName(str(d.skill)), undefined)
		: "/selfskills history followed by the skill's name";

/**
 * A refusal for the human, from its code and data. Codes /selfskills can meet whose model text names
 * a tool call get their own text; the others read the same for both and keep the model's text.
 */
export function refusalForHuman(refusal: Refusal): string {
	const d = refusal.data;
	switch (refusal.code) {
		case "unknown_skill": {
			const near = list(d.nearNames);
			return (
				`unknown_skill: no skill is named "${str(d.skill)}".` +
				`${near.length > 0 ? ` Did you mean ${quoted(near)}?` : ""} /selfskills lists every skill pi found.`
			);
		}
		case "no_backup": {
			const available = list(d.available);
			const backup = str(d.backup);
			const skill = str(d.skill);
			const file = str(d.file);
			const which = backup ? `backup "${backup}"` : "backup";
			const where = file === "(whole skill)" ? `${skill} (whole skill)` : `${skill}/${file}`;
			if (available.length === 0)
				return (
					`no_backup: there is no ${which} of ${where} yet: one is taken before each change, ` +
					"so there is nothing to restore."
				);
			return (
				`no_backup: there is no ${which} of ${where}.` +
				`${available.length > 0 ? ` Available: ${available.slice(0, 10).join(", ")}.` : ""} ` +
				`${historyCommand(skill, file === "(whole skill)" ? undefined : file)} lists them.`
			);
		}
		case "no_change": {
			if (!("backup" in d)) return "no_change: the file already holds that content; nothing changed.";
			const skill = str(d.skill);
			const file = str(d.file);
			const other = str(d.other);
			const next = other
				? ` The newest backup that differs: ${restoreCommand(skill, file, other)}`
				: ` No backup differs from it (${historyCommand(skill, file)}).`;
			return (
				`no_change: ${skill}/${file} already holds backup ${str(d.backup)}, ` +
				`so restoring it changes nothing.${next}`
			);
		}
		case "backup_corrupt":
			return (
				`backup_corrupt: backup ${str(d.path)} no longer matches its hash (its name says ${str(d.expected)}); ` +
				`it was changed after it was taken. Pick another backup from ${historyOf(d)}.`
			);
		case "not_writable": {
			const folder = str(d.folder);
			const fix = !folder
				? " /selfskills lists the writable folders."
				: d.errno === "EROFS"
					? " It is on a read-only mount (EROFS), which chmod cannot change: remount it read-write."
					: ` Make that folder writable (chmod u+w "${folder}"), then run the command again.`;
			return (
				`not_writable: ${str(d.path)} is read-only: ${str(d.reason)}` +
				`${folder ? ` (${folder}, ${str(d.errno)})` : ""}.${fix}`
			);
		}
		case "exists":
			return (
				`exists: ${str(d.where)} is there already, ` +
				`so the deleted skill "${str(d.name)}" cannot be recreated in its place. ` +
				"Move that folder away, then run the command again."
			);
		case "invalid_skill": {
			const found = Array.isArray(d.diagnostics)
				? d.diagnostics.map((x: { message?: unknown }) => str(x.message)).join("; ")
				: "";
			return (
				`invalid_skill: that backup would not load as a skill in this pi (${found}); nothing was restored. ` +
				`Pick another backup from ${historyOf(d)}.`
			);
		}
		case "unknown_proposal": {
			const pending = list(d.pending);
			return (
				`unknown_proposal: there is no proposal "${shownName(str(d.id))}". ` +
				(pending.length > 0
					? `Pending now: ${pending.slice(0, 10).join(", ")} (/selfskills pending lists them).`
					: "No proposal is pending (/selfskills pending lists them when there are).")
			);
		}
		case "risky_content": {
			const findings = Array.isArray(d.findings) ? (d.findings as Parameters<typeof findingsText>[0]) : [];
			return (
				`risky_content: that version of ${str(d.path)} holds ${findings.length} line(s) that look risky, and ` +
				'selfskills.contentReview is "refuse"; nothing was restored:\n' +
				`${findingsText(findings, 10)}\nTo put it back anyway, copy it out of git by hand, or pick another ` +
				"version."
			);
		}
		case "git_failed":
			return gitFailedText(str(d.id), str(d.detail));
		case "conflict":
			return (
				`conflict: ${str(d.path)} changed while the restore was being written (${str(d.detail)}); ` +
				"nothing was kept. Run the command again."
			);
		default:
			return refusal.message;
	}
}

/** An export git could not take: what went wrong and the person's next step. */
function gitFailedText(id: string, detail: string): string {
	if (/ in no git work tree$/.test(detail))
		return (
			`Not exported: proposal ${shownName(id)} changes files that are not in a git repository ` +
			`(${shownName(detail)}). ` +
			"export needs the skill folder in a git work tree: run git init there (and commit the skill), " +
			`or review the proposal here with /selfskills show ${shownName(id)}. It is still pending.`
		);
	return (
		`Not exported: git failed for proposal ${shownName(id)}: ${shownName(detail)}. ` +
		"Fix that in the repository and run the command again; the proposal is still pending."
	);
}

/** One line for the start-up notice; /selfskills lists every problem. Empty when there is none. */
export function settingsWarning(problems: readonly string[]): string {
	if (problems.length === 0) return "";
	const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : "";
	return `selfskills: settings problem: ${problems[0]}${more}. /selfskills lists them.`;
}

/** "3 min ago" for a proposal's age. */
export function ageText(time: string, now = Date.now()): string {
	const seconds = Math.max(0, Math.round((now - Date.parse(time)) / 1000));
	if (!Number.isFinite(seconds)) return "?";
	if (seconds < 60) return `${seconds} s ago`;
	if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
	if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
	return `${Math.round(seconds / 86400)} d ago`;
}

export interface ProposalView {
	readonly id: string;
	readonly time: string;
	readonly cwd: string;
	readonly action: string;
	readonly skills: readonly string[];
	readonly reason?: string;
	readonly added: number;
	readonly removed: number;
	readonly diff: string;
	/** Lines the change adds that the risk scan flags. */
	readonly findings?: ReadonlyArray<{ readonly category: string; readonly line: number; readonly text: string }>;
	/** The last /selfskills eval of it. */
	readonly eval?: EvalRecord;
}

/** The risky lines of a change, for the person, above its diff; "" when there are none. */
export function findingsBlock(findings: ProposalView["findings"]): string {
	if (!findings || findings.length === 0) return "";
	return `lines that look risky:\n${findingsText(findings, Number.POSITIVE_INFINITY)}`;
}

const reasonText = (reason: string | undefined) => (reason ? `"${shownReason(reason)}"` : "(no reason given)");
const names = (skills: readonly string[]) => skills.map(shownName).join(", ");

export function pendingText(
	proposals: readonly ProposalView[],
	now = Date.now(),
	invalid: ReadonlyArray<{ id: string; problem: string }> = [],
): string {
	const broken = invalid.map(
		(p) => `Not a valid proposal file, never planned: ${shownName(p.id)} (${shownName(p.problem)})`,
	);
	if (proposals.length === 0) return ["No proposal is pending.", ...broken].join("\n");
	const lines = proposals.map(
		(p) =>
			`  ${shownName(p.id)}  ${ageText(p.time, now)}  ${names(p.skills)}  ` +
			`${shownName(p.action)}  +${p.added} −${p.removed}  ${reasonText(p.reason)}` +
			`${p.findings?.length ? `  ⚠ ${p.findings.length} risky line(s)` : ""}` +
			`${p.eval ? `  eval: ${shownName(p.eval.verdict)}` : ""}`,
	);
	return [
		`${proposals.length} pending proposal(s), oldest first:\n${lines.join("\n")}`,
		...broken,
		"Review one with /selfskills show <id>, then /selfskills approve <id> or /selfskills reject <id> [reason].",
	].join("\n");
}

/** The change an approval would land now (planned again), with its digest; or why it cannot land. */
export type PlannedView =
	| { readonly diff: string; readonly digest: string; readonly replayedOn: readonly string[] }
	| { readonly refusal: Refusal };

/** How print mode approves the change `show` displayed: with that change's digest. */
export const approveCommand = (id: string, digest: string) => `/selfskills approve ${id} --yes=${digest}`;

/**
 * The proposal in full, its change planned again on the files as they are now (what an approval
 * lands), with the digest print mode's approve must name; the stored diff when it no longer applies.
 */
export function proposalText(p: ProposalView, planned: PlannedView, now = Date.now()): string {
	const head = [
		`proposal ${shownName(p.id)}: ${shownName(p.action)} of ${names(p.skills)}, ` +
			`proposed ${ageText(p.time, now)} in ${shownName(p.cwd)}`,
		`reason: ${reasonText(p.reason)}`,
		p.eval
			? escapedReport(p.eval)
			: `evidence: none yet (/selfskills eval ${shownName(p.id)} --task … --check … measures it)`,
	];
	if ("refusal" in planned) {
		return [
			...head,
			`It cannot be approved as it stands: ${refusalForHuman(planned.refusal)}`,
			"The change as proposed:",
			findingsBlock(p.findings),
			shownDiff(p.diff).trimEnd(),
			`/selfskills reject ${shownName(p.id)} [reason] drops it.`,
		].join("\n");
	}
	return [
		...head,
		planned.replayedOn.length > 0
			? `changed since: ${names(planned.replayedOn)}; an approval lands the change replayed on their new text:`
			: "",
		shownDiff(planned.diff).trimEnd(),
		`digest: ${planned.digest}`,
		`/selfskills approve ${shownName(p.id)} lands it, backed up first ` +
			`(without a UI: ${approveCommand(shownName(p.id), planned.digest)}); ` +
			`/selfskills reject ${shownName(p.id)} [reason] drops it.`,
	]
		.filter(Boolean)
		.join("\n");
}

/** `show` of a proposal no longer pending: what the person decided, when, and why. */
export function decidedText(d: Decision, now = Date.now()): string {
	return [
		`proposal ${shownName(d.id)} (${shownName(d.action)} of ${names(d.skills)}) was ${d.verdict} ` +
			`${ageText(d.time, now)} (${shownName(d.time)})` +
			`${d.words ? `, saying: "${shownReason(d.words)}"` : ", without a reason given"}.`,
		`The agent's reason for it: ${reasonText(d.reason)}`,
		d.verdict === "approved"
			? `It landed; ${d.skills.map((k) => historyCommand(shownName(k), undefined)).join(", ")} ` +
				"lists the backup taken before it."
			: "It was rejected: nothing of it was written.",
	]
		.filter(Boolean)
		.join("\n");
}

export function approveQuestion(id: string, replayedOn: readonly string[]): string {
	return replayedOn.length > 0
		? `Approve ${shownName(id)}, replayed on the changed ${names(replayedOn)}?`
		: `Approve proposal ${shownName(id)}?`;
}

/** The body of the approval dialog: the agent's reason and the change as it would land now. */
export function approveBody(reason: string | undefined, diff: string, digest: string, evidence?: EvalRecord): string {
	return [
		`reason: ${reasonText(reason)}`,
		evidence ? escapedReport(evidence) : "evidence: no eval of this change (/selfskills eval)",
		shownDiff(diff).trimEnd(),
		`digest: ${digest}`,
	].join("\n");
}

/**
 * Print mode's approve without a digest: the change as it would land now (as `show` prints it), and
 * the command that approves exactly that change.
 */
export function approvePreviewText(
	id: string,
	reason: string | undefined,
	diff: string,
	digest: string,
	evidence?: EvalRecord,
): string {
	return [
		approveBody(reason, diff, digest, evidence),
		`Nothing changed: without a UI nobody can be asked. To approve it, run: ${approveCommand(shownName(id), digest)}`,
	].join("\n");
}
