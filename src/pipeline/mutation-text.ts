// The one renderer of what a run of mutations came to: the text for the model and the details
// for renderers and tests, from a MutationOutcome (a dry run, a proposal, a landed commit, or a
// failed one as a refusal with each file's fate). mutate.ts decides and commits; it writes no text.

import { clipDiff } from "../checks/diff.ts";
import { describeGitReports } from "./git-commit.ts";
import * as refusals from "../base/errors.ts";
import { findingsText, type Refusal } from "../base/errors.ts";
import type {
	DryRunOutcome,
	FailedOutcome,
	LandedOutcome,
	MutationOutcome,
	MutationResult,
	OperationReport,
	ProposedOutcome,
} from "./types.ts";

export function renderOutcome(outcome: MutationOutcome): MutationResult | Refusal {
	switch (outcome.kind) {
		case "dry_run":
			return renderDryRun(outcome);
		case "proposed":
			return renderProposed(outcome);
		case "landed":
			return renderLanded(outcome);
		case "failed":
			return renderFailed(outcome);
	}
}

function renderDryRun(outcome: DryRunOutcome): MutationResult {
	const { diff, review: decision, findings } = outcome;
	const review =
		decision === "auto"
			? ""
			: ` Without dry_run this change would be ${
					decision === "ask" ? "shown to the person, who decides" : "filed as a proposal for the person's review"
				}.`;
	const risky =
		findings.length > 0 ? `\nLines that look risky (the person decides on them):\n${findingsText(findings)}` : "";
	return {
		text:
			`dry run: every gate passed, nothing was written.${review}${risky}` +
			`${risky ? "\n" : " "}The change would be:\n${diff}`,
		details: {
			ok: true,
			dryRun: true,
			diff,
			files: outcome.changes.map((c) => c.absPath),
			targets: outcome.targets,
			...(decision === "auto" ? {} : { review: decision }),
			...(findings.length > 0 ? { findings } : {}),
		},
	};
}

function renderProposed(outcome: ProposedOutcome): MutationResult {
	const { action, skills, proposal, alreadyPending: existed, diff, findings } = outcome;
	const why =
		outcome.mode === "propose"
			? "the person reviews changes to this skill before they land"
			: outcome.riskOnly
				? `it adds ${findings.length} line(s) that look risky, which only the person may let in:\n` +
					`${findingsText(findings)}\n`
				: "the person wants to be asked first and cannot be asked in this session";
	const text = [
		`proposed, not written: ${existed ? "the identical proposal" : "proposal"} ${proposal} ` +
			`(${action} of ${skills.join(", ")}) ${existed ? "is already pending" : "is filed"}; ${why}.`,
		"Do not retry this change or make it another way (no edit, write or bash on these files). " +
			`Carry on with the task; mention proposal ${proposal} in your answer. ` +
			`The person reviews it with /selfskills show ${proposal} and approves or rejects it, ` +
			"and you will be told which.",
		clipDiff(diff, 40),
	].join("\n");
	return {
		text,
		details: {
			ok: true,
			action,
			proposed: true,
			proposal,
			alreadyPending: existed,
			skills,
			diff,
			...(findings.length > 0 ? { findings } : {}),
		},
	};
}

function renderLanded(outcome: LandedOutcome): MutationResult {
	const { action, landed, diff } = outcome;
	const backups = landed.filter((c) => c.backupId).map((c) => `${c.relPath} -> ${c.backupId}`);
	const skills = [...new Set(landed.map((c) => c.skill))].join(", ");
	const summary = outcome.batch
		? `operations landed: ${outcome.operations} operation(s), ${landed.length} file(s) changed in ${skills}.`
		: `${action} landed: ${landed.length} file(s) changed in ${skills}.`;
	const text = [
		summary,
		backups.length > 0 ? `Backup: ${backups.join(", ")}` : "",
		...outcome.notes,
		outcome.auditError ? `(audit log not written: ${outcome.auditError.message})` : "",
		...describeGitReports(outcome.git ?? []),
		clipDiff(diff, 40),
	]
		.filter(Boolean)
		.join("\n");
	return {
		text,
		details: {
			ok: true,
			action,
			diff,
			changes: landed.map((c) => ({
				skill: c.skill,
				file: c.relPath,
				path: c.absPath,
				oldHash: c.oldHash,
				newHash: c.newHash,
				backup: c.backupId,
			})),
			...(outcome.batch
				? {
						operations: outcome.reports.map((r) => ({
							index: r.index,
							action: r.action,
							skill: r.skill,
							fate: r.fate,
							files: r.files.map((f) => f.path),
						})),
					}
				: {}),
			...(outcome.git ? { git: outcome.git } : {}),
			snapshot: outcome.snapshots[0],
			...(outcome.snapshots.length > 1 ? { snapshots: outcome.snapshots } : {}),
		},
	};
}

function describeOperations(reports: readonly OperationReport[], batch: boolean): string {
	const fileLine = (f: OperationReport["files"][number]) => {
		const old =
			f.fate === "rollback_failed"
				? " — differs from before; " +
					`${f.backupPath ? `its old bytes are in ${f.backupPath}` : "it did not exist before"}`
				: "";
		return `${f.path}: ${f.fate.replace("_", " ")}${old}`;
	};
	if (!batch)
		return (
			"What happened to each file:\n" +
			`${reports.flatMap((r) => r.files.map((f) => `  ${fileLine(f)}`)).join("\n")}`
		);
	return `What happened to each operation:\n${reports
		.map(
			(r) =>
				`  operations[${r.index}] ${r.action} ${r.skill}: ${r.fate.replace("_", " ")}` +
				`${r.files.map((f) => `\n    ${fileLine(f)}`).join("")}`,
		)
		.join("\n")}`;
}

function renderFailed(outcome: FailedOutcome): Refusal {
	const { reports, batch, failedOp } = outcome;
	const broken = outcome.fates.filter((f) => f.fate === "rollback_failed");
	const headed =
		batch && failedOp >= 0
			? refusals.withHead(
					outcome.refusal,
					`operations[${failedOp}] failed at commit; ${
						broken.length > 0
							? "the rollback of the ops already written did NOT finish."
							: "every op already written was rolled back."
					}`,
				)
			: outcome.refusal;
	const notes = [
		reports.length > 0 && outcome.fates.length > 0 ? describeOperations(reports, batch) : "",
		broken.length > 0
			? "The rollback could not finish: " +
				`${broken
					.map(
						(f) => `${f.path} differs from before (old bytes: ${f.backupPath ?? "none, the file did not exist"})`,
					)
					.join("; ")}.` +
				`${
					outcome.files > 1
						? " The next skill_manage call retries it from the commit journal; /selfskills shows what is left."
						: " Copy the old bytes back from the backup named here."
				}`
			: "",
	].filter(Boolean);
	const data = {
		...(batch && failedOp >= 0 ? { operation: failedOp } : {}),
		fates: outcome.fates,
		operations: reports,
	};
	return refusals.withNote(headed, notes.join("\n"), data);
}
