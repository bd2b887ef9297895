// Crash safety of the approval path (Human control; issue #15 item 10): an approval or a rejection
// killed at any point leaves either the proposal pending and the files untouched, or the change
// landed once and the proposal decided — never torn files, never both, never a proposal that can no
// longer be approved or rejected. Two models: a real child SIGKILLed right before its N-th
// disk-changing call, and in this process a filesystem on which every call from call N on fails
// (the process is dead from there); after each, the recovery a new process runs, then the invariant.
import { expect } from "chai";
import { forgetApprovingHere } from "../../src/store/proposals.ts";
import { errno, faultyFs } from "../support/faulty-fs.ts";
import { createTempEnv, type TempEnv } from "../support/temp-env.ts";
import {
	landmarks,
	prepareCase,
	probeDiskCalls,
	PROPOSALS,
	recoverAndCheck,
	recoverHere,
	recoverAfterDeath,
	review,
	runApprovalChild,
	spread,
	type Verdict,
} from "./approval-crash-support.ts";

/**
 * Kill points per scenario by default: the first and the last call, and the landmarks (each rename
 * onto a target, the commit point, the verdict's rename, the pending copy's removal); every point
 * with HARDENING_FULL=1. A child costs seconds (it loads pi), so the default run stays near a minute
 * on two cores; the in-process model below covers every point by default.
 */
const SPREAD_KILLS = 2;

describe("hardening: crash safety of an approval", function () {
	this.timeout(900_000);
	let env: TempEnv;
	before(() => {
		env = createTempEnv({ prefix: "selfskills-approval-crash-" });
	});
	after(() => env.cleanup({ keep: process.env.SELFSKILLS_KEEP_TMP === "1" }));

	describe("a real child process SIGKILLed before each disk-changing call", function () {
		// A rejection writes only the proposal store, the same calls for either proposal: the single one.
		const cases: Array<[Verdict, (typeof PROPOSALS)[number]]> = [
			...PROPOSALS.map((p): [Verdict, typeof p] => ["approve", p]),
			["reject", PROPOSALS[0]],
		];
		for (const [verdict, scenario] of cases) {
			it(`${verdict} of a ${scenario.name}: pending and untouched, or decided and applied once`, async function () {
				const ops = await probeDiskCalls(env.root, scenario, verdict);
				const points = [...new Set([...spread(ops.length, SPREAD_KILLS), ...landmarks(ops)])].sort((a, b) => a - b);
				const runs: Array<number> = verdict === "approve" && scenario === PROPOSALS[0] ? [0, ...points] : points;
				const fates = { pending: 0, decided: 0 };
				for (let i = 0; i < runs.length; i += 2) {
					await Promise.all(
						runs.slice(i, i + 2).map(async (point) => {
							const c = await prepareCase(env.root, scenario);
							const run = await runApprovalChild(c, verdict, point);
							if (point === 0) {
								// Once, unkilled: the child makes exactly the calls counted here.
								expect(run, "no kill").to.include({ killed: false, ok: true });
								expect(run.ops, "the child's calls").to.have.length(ops.length);
								expect(await recoverAndCheck(c, verdict, "no kill")).to.equal("decided");
								return;
							}
							const where = `killed before call ${point} of ${ops.length} (${ops[point - 1]})`;
							expect(run.killed, where).to.equal(true);
							fates[await recoverAndCheck(c, verdict, where)]++;
						}),
					);
				}
				console.log(
					`      ${verdict} of a ${scenario.name}: ${ops.length} disk-changing calls, ` +
						`killed before ${points.length} (${points.join(", ")}): ` +
						`${fates.pending} pending, ${fates.decided} decided`,
				);
			});
		}
	});

	describe("in this process, every filesystem call from call N on fails (the process is dead)", function () {
		for (const verdict of ["approve", "reject"] as const) {
			for (const scenario of PROPOSALS) {
				it(`${verdict} of a ${scenario.name}: the recovery leaves it pending or decided`, async function () {
					const probe = await prepareCase(env.root, scenario);
					const counted = faultyFs();
					expect(await review(probe, verdict, counted)).to.deep.equal({ ok: true });
					const calls = counted.log;
					expect(await recoverAndCheck(probe, verdict, "no fault")).to.equal("decided");
					// Every point (milliseconds each, in this process).
					const points = calls.map((_, i) => i + 1);
					const fates = { pending: 0, decided: 0, threw: 0 };
					for (const point of points) {
						const c = await prepareCase(env.root, scenario);
						const dead = faultyFs(({ seq }) =>
							seq >= point - 1 ? errno("EIO", "injected: the process is dead from here on") : undefined,
						);
						try {
							await review(c, verdict, dead);
						} catch {
							fates.threw++;
						}
						forgetApprovingHere(); // the dead process's approvals are no longer running
						const call = calls[point - 1];
						const what = `${call.op} ${String(call.args[0]).replace(c.agentDir, "<agent>")}`;
						const where = `every call from ${point} of ${calls.length} (${what}) fails`;
						fates[await recoverAndCheck(c, verdict, where, recoverAfterDeath)]++;
					}
					console.log(
						`      ${verdict} of a ${scenario.name}: ${calls.length} fs calls, ` +
							`failing from ${points.length} of them: ${fates.pending} pending, ${fates.decided} decided ` +
							`(${fates.threw} threw)`,
					);
				});
			}
		}
	});

	describe("defects the sweeps found (each test failed before its fix)", function () {
		// src/face/review.ts findProposal sweeps proposals without recovering journals first.
		it("a live session sweeps a killed batch approval only after its journal is recovered", async function () {
			// Another pi process approved the batch and was killed right before the commit point (the
			// journal's removal): both files hold the new bytes, the journal says roll back. A session
			// that is still running has no start to recover at: its /selfskills show|approve|reject
			// sweeps proposals (findProposal), and its next tool call recovers journals.
			const scenario = PROPOSALS[1];
			const ops = await probeDiskCalls(env.root, scenario, "approve");
			const commitPoint = ops.findIndex((op) => op.startsWith("unlink <agent>/selfskills/journal/")) + 1;
			expect(commitPoint).to.be.greaterThan(0);
			const c = await prepareCase(env.root, scenario);
			expect((await runApprovalChild(c, "approve", commitPoint)).killed).to.equal(true);
			// The person approves it in the live session: its sweep finds every target at its new bytes and
			// decides it approved (so this approval finds no such proposal) ...
			await review(c, "approve");
			// ... and the session's next tool call rolls the files back from the journal.
			recoverHere(c);
			await recoverAndCheck(c, "approve", "reviewed in a live session, then its journals recovered");
		});

		// src/store/journal.ts writeJournal keeps a journal whose write failed after its rename (active, on disk).
		it("a journal whose folder sync failed does not undo a later approval in the next process", async function () {
			// A pi process approves: the journal is renamed into place, then its folder's fsync fails (EIO),
			// the commit writes nothing and the approval fails (the proposal is pending again); the person
			// approves again and it lands; the process ends. The next process finds the first journal
			// (its pid gone) with every file at its new bytes, and rolls them back.
			const c = await prepareCase(env.root, PROPOSALS[1]);
			const run = await runApprovalChild(c, "approve", 0, "fail-journal-sync");
			expect(run.first, "the approval with the failed sync").to.include({ ok: false });
			expect(run.ok, `approved again: ${run.code}`).to.equal(true);
			expect(await recoverAndCheck(c, "approve", "approved again, then the next process recovered")).to.equal(
				"decided",
			);
		});

		// src/face/review.ts landApproval leaves the proposal marked as approved here when decideProposal throws.
		it("a verdict whose write failed after the change landed is finished by the same process", async function () {
			// The commit lands, then writing the decided record fails once (EIO): landApproval throws.
			// The process lives on; its sweeps skip the proposal for good (it is still marked as being
			// approved here), so it stays pending over files that already hold the change: an approval
			// finds it stale, and a rejection would record "rejected" for a change that landed.
			const c = await prepareCase(env.root, PROPOSALS[0]);
			let failed = 0;
			const fs = faultyFs({
				rename: ({ args }) =>
					String(args[1]).includes("/decided/") && failed++ === 0
						? errno("EIO", "injected: the verdict could not be written")
						: undefined,
			});
			try {
				await review(c, "approve", fs);
			} catch {
				// Thrown by landApproval today; the change landed all the same.
			}
			expect(failed, "the verdict's write failed").to.equal(1);
			await recoverAndCheck(c, "approve", "the verdict failed, then the same process recovered");
		});
	});
});
