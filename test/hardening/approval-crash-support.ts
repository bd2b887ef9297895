// Pieces of the approval crash suite: the two proposals it approves and rejects (a patch of one
// SKILL.md; a batch that patches SKILL.md and writes a new references/x.md), a fresh case folder per
// kill point with the proposal filed under approval "propose", the approval child run under tsx, and
// the recovery a new process runs (journals, then proposals) followed by the invariant: either
// pending with every target at its base bytes, or decided with every target at its proposed bytes.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import type { ChangeRecord } from "../../src/store/audit.ts";
import { isRefusal } from "../../src/base/errors.ts";
import { type FsOps, realFs } from "../../src/base/fs-ops.ts";
import { recoverJournals } from "../../src/store/journal.ts";
import { getJournalDir, getProposalsDir } from "../../src/base/paths.ts";
import { readProposal, sweepProposals, takeDecisions, type Decision } from "../../src/store/proposals.ts";
import { findProposal, landApproval, previewApproval, rejectProposal } from "../../src/face/review.ts";
import { auditLines } from "../support/backups.ts";
import { skillText, walkFiles, writeFile, writeSkill } from "../support/fixtures.ts";
import { changesDisk, faultyFs, type FsCall } from "../support/faulty-fs.ts";
import { createHarness, expectOk, textOf, sessionDeps } from "../support/harness.ts";
import { REPO_ROOT } from "../support/pi-line.ts";

export const CHILD = join(REPO_ROOT, "test", "crash", "approval-child.ts");

const OLD_SKILL = skillText("keeper");
const NEW_SKILL = OLD_SKILL.replace("Run the build.", "Run npm run build.");
const NEW_NOTES = "# X\n\nThe build is npm run build now.\n";
const PATCH = { action: "patch", skill: "keeper", old_string: "Run the build.", new_string: "Run npm run build." };

export type Verdict = "approve" | "reject";

export interface ProposalScenario {
	readonly name: string;
	readonly call: Record<string, unknown>;
	/** Each target by its path inside the skill folder: base bytes (null: absent) and proposed bytes. */
	readonly targets: ReadonlyArray<{ readonly relPath: string; readonly base: string | null; readonly next: string }>;
}

export const PROPOSALS: readonly ProposalScenario[] = [
	{
		name: "single-file patch",
		call: { ...PATCH, reason: "the build script changed" },
		targets: [{ relPath: "SKILL.md", base: OLD_SKILL, next: NEW_SKILL }],
	},
	{
		name: "2-file batch",
		call: {
			action: "operations",
			reason: "the build script changed",
			operations: [PATCH, { action: "write", skill: "keeper", file: "references/x.md", content: NEW_NOTES }],
		},
		targets: [
			{ relPath: "SKILL.md", base: OLD_SKILL, next: NEW_SKILL },
			{ relPath: "references/x.md", base: null, next: NEW_NOTES },
		],
	},
];

/** One kill point's own folder: an agent dir holding the skill and the pending proposal, and a project. */
export interface ApprovalCase {
	readonly scenario: ProposalScenario;
	readonly agentDir: string;
	readonly projectDir: string;
	readonly id: string;
}

const skillDir = (c: Pick<ApprovalCase, "agentDir">) => join(c.agentDir, "skills", "keeper");
const targetPath = (c: ApprovalCase, relPath: string) => join(skillDir(c), ...relPath.split("/"));

/** A fresh case under `root` (HOME and XDG_RUNTIME_DIR are the shared ones of the suite's TempEnv). */
export async function prepareCase(root: string, scenario: ProposalScenario): Promise<ApprovalCase> {
	const dir = mkdtempSync(join(root, "case-"));
	const agentDir = join(dir, "agent");
	const projectDir = join(dir, "project");
	mkdirSync(projectDir, { recursive: true });
	writeFile(join(agentDir, "settings.json"), JSON.stringify({ selfskills: { approval: "propose" } }));
	writeSkill(join(agentDir, "skills"), "keeper", OLD_SKILL);
	const tool = createHarness({ agentDir, projectDir });
	expectOk(await tool.call({ action: "read", skill: "keeper" }));
	const filed = await tool.call(scenario.call);
	expectOk(filed);
	expect(filed.details.proposed, textOf(filed)).to.equal(true);
	const id = String(filed.details.proposal);
	return { scenario, agentDir, projectDir, id };
}

/** A disk-changing call as the reports name it: the op and the path it changes (a rename's or link's new name). */
export function describeCall(call: Pick<FsCall, "op" | "args">, agentDir: string): string {
	const path = String(call.op === "rename" || call.op === "link" ? call.args[1] : call.args[0]);
	return `${call.op} ${path.replace(agentDir, "<agent>")}`;
}

/**
 * The disk-changing calls of a whole approval or rejection of a twin of `c` (a fresh case of the same
 * scenario), made here: the child makes the same ones, so kill point N falls before the N-th of these.
 */
export async function probeDiskCalls(root: string, scenario: ProposalScenario, verdict: Verdict): Promise<string[]> {
	const twin = await prepareCase(root, scenario);
	const fs = faultyFs();
	expect(await review(twin, verdict, fs)).to.deep.equal({ ok: true });
	return fs.log.filter(changesDisk).map((call) => describeCall(call, twin.agentDir));
}

/**
 * The kill points worth a real child beyond an even spread: right before each rename onto a target,
 * the journal's removal (the commit point), the verdict's rename and the pending copy's removal.
 */
export function landmarks(ops: readonly string[]): number[] {
	const marks = [
		"rename <agent>/skills/",
		"unlink <agent>/selfskills/journal/",
		"rename <agent>/selfskills/proposals/decided/",
		"unlink <agent>/selfskills/proposals/p-",
	];
	return ops.flatMap((op, i) => (marks.some((mark) => op.startsWith(mark)) ? [i + 1] : []));
}

export interface ChildRun {
	readonly killed: boolean;
	readonly ok?: boolean;
	readonly code?: string;
	/** The disk-changing calls the child made (when it was not killed). */
	readonly ops?: readonly string[];
	/** With `fail-journal-sync`: the approval that failed before the one reported. */
	readonly first?: { readonly ok: boolean; readonly code?: string };
}

/**
 * Runs the approval child under tsx (it imports pi), SIGKILLed right before disk-changing call
 * `killAt` (0: never), with an optional fault (see the child).
 */
export function runApprovalChild(
	c: ApprovalCase,
	verdict: Verdict,
	killAt: number,
	fault?: "fail-journal-sync",
): Promise<ChildRun> {
	// HOME, XDG_RUNTIME_DIR and PI_OFFLINE of the suite's one TempEnv are in process.env; NODE_OPTIONS
	// is kept, so on the pi 1.6 line the child maps pi's imports the same way this process does.
	const env = { ...process.env, PI_CODING_AGENT_DIR: c.agentDir };
	const args = [
		"--import",
		"tsx",
		CHILD,
		c.agentDir,
		c.projectDir,
		c.id,
		verdict,
		String(killAt),
		...(fault ? [fault] : []),
	];
	return runNode(args, env).then(({ signal, stdout }) => {
		if (signal === "SIGKILL") return { killed: true };
		return { killed: false, ...(JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as Omit<ChildRun, "killed">) };
	});
}

function runNode(
	args: readonly string[],
	env: NodeJS.ProcessEnv,
): Promise<{ signal: NodeJS.Signals | null; stdout: string }> {
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
		let stdout = "";
		let stderr = "";
		child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
		child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
		child.on("error", reject);
		child.on("close", (code, signal) => {
			if (signal !== "SIGKILL" && code !== 0) reject(new Error(`child ended with ${signal ?? code}: ${stderr}`));
			else resolve({ signal, stdout });
		});
	});
}

/** What a new process does at its start (index.ts `recover`): journals put back, then proposals swept. */
export function recoverHere(c: ApprovalCase): void {
	recoverJournals(realFs, c.agentDir);
	sweepProposals(realFs, c.agentDir);
}

/** A pid no process can have (above the kernel's pid_max): the owner of what a dead process left. */
function pidOfTheDead(): number {
	try {
		return Number(readFileSync("/proc/sys/kernel/pid_max", "utf8").trim()) + 1;
	} catch {
		return 2 ** 22 + 1;
	}
}

/**
 * The recovery after this process "died" (every fs call failed from some point on): what it left
 * is owned by nobody alive, so its journals are handed to a dead pid first — a journal it was still
 * writing stays its own here (journal.ts keeps it as running) though no new process would think so.
 * Then the recovery a new process runs.
 */
export function recoverAfterDeath(c: ApprovalCase): void {
	for (const name of journalsOf(c).filter((n) => n.endsWith(".json"))) {
		const path = join(getJournalDir(c.agentDir), name);
		const journal = JSON.parse(readFileSync(path, "utf8")) as { pid: number };
		if (journal.pid === process.pid) writeFileSync(path, JSON.stringify({ ...journal, pid: pidOfTheDead() }));
	}
	recoverHere(c);
}

const readOrNull = (path: string): string | null => (existsSync(path) ? readFileSync(path, "utf8") : null);

/** "base" when every target holds its base bytes, "proposed" when every one holds the proposed bytes; else it fails. */
export function targetsSide(c: ApprovalCase, where: string): "base" | "proposed" {
	const now = c.scenario.targets.map((t) => readOrNull(targetPath(c, t.relPath)));
	const base = c.scenario.targets.map((t) => t.base);
	const next = c.scenario.targets.map((t) => t.next);
	const same = (a: ReadonlyArray<string | null>) => JSON.stringify(now) === JSON.stringify(a);
	expect(
		same(base) || same(next),
		`${where}: the targets are neither all base nor all proposed: ${JSON.stringify(now)}`,
	).to.equal(true);
	return same(base) ? "base" : "proposed";
}

function approvedAuditLines(c: ApprovalCase): ChangeRecord[] {
	return auditLines(c.agentDir).filter((r) => r.approved === c.id);
}

/** Where a review acts: the agent dir, the project the proposal was filed from, the proposal's id. */
type ReviewTarget = Pick<ApprovalCase, "agentDir" | "projectDir" | "id">;

/** Approves (or rejects) `c`'s proposal in this process, as /selfskills does; throws what the fs throws. */
export async function review(
	c: ReviewTarget,
	verdict: Verdict,
	fs: FsOps = realFs,
): Promise<{ ok: boolean; code?: string }> {
	const deps = sessionDeps(c.agentDir, fs);
	const proposal = findProposal(deps, c.id);
	if (isRefusal(proposal)) return { ok: false, code: proposal.code };
	if (verdict === "reject") {
		rejectProposal(deps, proposal, "not this way");
		return { ok: true };
	}
	const preview = await previewApproval(deps, { cwd: c.projectDir }, proposal);
	if (isRefusal(preview)) return { ok: false, code: preview.code };
	const landed = await landApproval(deps, preview, "looks right");
	return isRefusal(landed) ? { ok: false, code: landed.code } : { ok: true };
}

const journalsOf = (c: ApprovalCase) =>
	existsSync(getJournalDir(c.agentDir))
		? readdirSync(getJournalDir(c.agentDir)).filter((n) => n.endsWith(".json"))
		: [];

function onlyDecision(c: ApprovalCase, where: string): Decision {
	const decisions = takeDecisions(realFs, c.agentDir, c.projectDir);
	expect(
		decisions.map((d) => d.id),
		`${where}: decisions`,
	).to.deep.equal([c.id]);
	expect(takeDecisions(realFs, c.agentDir, c.projectDir), `${where}: a decision is told once`).to.deep.equal([]);
	return decisions[0];
}

/** Visible (not hidden) temp files: a killed writer's leftovers must never be mistaken for skill files. */
function visibleTemps(c: ApprovalCase): string[] {
	return walkFiles(c.agentDir).filter(
		(f) => f.includes(".selfskills-tmp-") && !(f.split("/").pop() ?? "").startsWith("."),
	);
}

/**
 * What a new process does first (journals put back, then proposals swept), then the invariant. Pending:
 * every target at its base bytes, the proposal readable without an `approving` mark and no verdict;
 * then approving it here lands the proposed bytes once (one approved audit line per target) and
 * decides it. Decided: every target at its proposed bytes for an approval (base for a rejection),
 * no pending copy, the verdict told once, and the id unknown to a second approval.
 */
export async function recoverAndCheck(
	c: ApprovalCase,
	verdict: Verdict,
	where: string,
	recover: (c: ApprovalCase) => unknown = recoverHere,
): Promise<"pending" | "decided"> {
	await recover(c);
	expect(visibleTemps(c), `${where}: visible temp files`).to.deep.equal([]);
	const side = targetsSide(c, where);
	const pending = readProposal(realFs, c.agentDir, c.id);
	const decidedFile = existsSync(join(getProposalsDir(c.agentDir), "decided", `${c.id}.json`));
	expect(pending !== undefined && decidedFile, `${where}: pending and decided at once`).to.equal(false);
	expect(journalsOf(c), `${where}: journals left after recovery`).to.deep.equal([]);
	if (pending) {
		expect(side, `${where}: pending, but the targets changed`).to.equal("base");
		expect(pending.approving, `${where}: still marked approving after the sweep`).to.equal(undefined);
		expect(approvedAuditLines(c), `${where}: audit lines of an approval that did not land`).to.deep.equal([]);
		// Still reviewable: approve it here (a reject kill point too: the person may change their mind).
		const again = await review(c, "approve");
		expect(again, `${where}: approving the pending proposal again`).to.deep.equal({ ok: true });
		expect(targetsSide(c, `${where}, approved again`)).to.equal("proposed");
		expect(approvedAuditLines(c), `${where}: the approval landed once`).to.have.length(c.scenario.targets.length);
		expect(readProposal(realFs, c.agentDir, c.id), `${where}: pending after its approval`).to.equal(undefined);
		expect(onlyDecision(c, `${where}, approved again`).verdict).to.equal("approved");
		expect(journalsOf(c), `${where}: journals left after the approval`).to.deep.equal([]);
		return "pending";
	}
	expect(decidedFile, `${where}: the proposal is gone without a verdict`).to.equal(true);
	expect(side, `${where}: decided, targets`).to.equal(verdict === "approve" ? "proposed" : "base");
	expect(approvedAuditLines(c).length, `${where}: approved audit lines`).to.be.at.most(
		verdict === "approve" ? c.scenario.targets.length : 0,
	);
	expect(onlyDecision(c, where).verdict).to.equal(verdict === "approve" ? "approved" : "rejected");
	const second = await review(c, "approve");
	expect(second, `${where}: a decided proposal approved again`).to.deep.equal({ ok: false, code: "unknown_proposal" });
	expect(targetsSide(c, `${where}, second approval`)).to.equal(verdict === "approve" ? "proposed" : "base");
	return "decided";
}

/** Up to `max` of 1..count spread evenly, always the first and the last; all of them with HARDENING_FULL=1. */
export function spread(count: number, max: number): number[] {
	const all = Array.from({ length: count }, (_, i) => i + 1);
	if (count <= max || process.env.HARDENING_FULL === "1") return all;
	return [...new Set(Array.from({ length: max }, (_, i) => 1 + Math.round((i * (count - 1)) / (max - 1))))];
}
