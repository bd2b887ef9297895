// src/store/proposals.ts: the store of proposals. One key per call and base bytes (an identical pending
// proposal is found, not filed again), a new id each time, decisions told once per cwd, the sweep
// that finishes or undoes an approval a killed process left, and no symlink ever followed.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../../src/base/fs-ops.ts";
import {
	clearApproving,
	decideProposal,
	fileProposal,
	forgetApprovingHere,
	inspectProposal,
	invalidProposals,
	listProposals,
	markApproving,
	proposalKey,
	readDecision,
	readProposal,
	sweepProposals,
	takeDecisions,
	type Proposal,
	type ProposalTarget,
} from "../../../src/store/proposals.ts";
import { useTempEnv, type TempEnv } from "../../support/temp-env.ts";
import { sha256 } from "../../../src/base/hash.ts";

describe("proposals (src/store/proposals.ts)", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-proposals-" });
	let env: TempEnv;
	let file: string;
	const OLD = "old text\n";
	const NEW = "new text\n";
	const target = (): ProposalTarget => ({
		path: file,
		skill: "s",
		file: "SKILL.md",
		before: sha256(OLD),
		after: sha256(NEW),
	});
	const file1 = (
		args: Record<string, unknown> = { action: "patch", skill: "s", old_string: "old", new_string: "new" },
	) =>
		fileProposal(realFs, env.agentDir, {
			cwd: env.projectDir,
			action: "patch",
			skills: ["s"],
			args,
			targets: [target()],
			diff: "-old\n+new\n",
			added: 1,
			removed: 1,
			mode: "propose",
		});

	beforeEach(function () {
		env = getEnv();
		file = join(env.root, "SKILL.md");
		writeFileSync(file, OLD);
	});
	afterEach(() => forgetApprovingHere());

	it("keys a call by what it changes, not by its reason", function () {
		const args = { action: "patch", skill: "s", old_string: "a", new_string: "b" };
		expect(proposalKey({ ...args, reason: "x" }, [target()])).to.equal(
			proposalKey({ ...args, reason: "y" }, [target()]),
		);
		expect(proposalKey(args, [target()])).to.not.equal(proposalKey({ ...args, new_string: "c" }, [target()]));
		expect(proposalKey(args, [target()])).to.not.equal(proposalKey(args, [{ ...target(), before: sha256("other") }]));
	});

	it("files once, private and durable; the identical call finds it; a decided id is never reused", function () {
		const { proposal, existed } = file1();
		expect(existed).to.equal(false);
		expect(proposal.id).to.match(/^p-[0-9a-f]{8}$/);
		const path = join(env.agentDir, "selfskills", "proposals", `${proposal.id}.json`);
		expect(JSON.parse(readFileSync(path, "utf8"))).to.deep.include({
			id: proposal.id,
			action: "patch",
			cwd: env.projectDir,
		});
		expect(realFs.lstat(path).mode & 0o777).to.equal(0o600);
		expect(
			file1({ action: "patch", skill: "s", old_string: "old", new_string: "new", reason: "again" }),
		).to.deep.include({ existed: true });
		expect(listProposals(realFs, env.agentDir)).to.have.length(1);
		decideProposal(realFs, env.agentDir, proposal, "rejected", "no");
		const next = file1();
		expect(next.existed).to.equal(false);
		expect(next.proposal.id).to.not.equal(proposal.id);
	});

	it("tells each decision once, to a prompt in the proposal's own folder", function () {
		const { proposal } = file1();
		decideProposal(realFs, env.agentDir, proposal, "approved", "fine");
		expect(readProposal(realFs, env.agentDir, proposal.id)).to.equal(undefined);
		expect(takeDecisions(realFs, env.agentDir, "/elsewhere")).to.deep.equal([]);
		const [told] = takeDecisions(realFs, env.agentDir, env.projectDir);
		expect(told).to.include({ id: proposal.id, verdict: "approved", words: "fine" });
		expect(takeDecisions(realFs, env.agentDir, env.projectDir)).to.deep.equal([]);
	});

	it("keeps a told decision for show, and never reuses its id", function () {
		const { proposal } = file1();
		decideProposal(realFs, env.agentDir, proposal, "rejected", "not now");
		expect(readDecision(realFs, env.agentDir, proposal.id)).to.include({ verdict: "rejected", words: "not now" });
		takeDecisions(realFs, env.agentDir, env.projectDir);
		expect(readDecision(realFs, env.agentDir, proposal.id)).to.include({ verdict: "rejected", words: "not now" });
		expect(readDecision(realFs, env.agentDir, "p-00000000")).to.equal(undefined);
	});

	it("reads a pending file of the wrong shape as invalid, with what is wrong, never as a proposal", function () {
		const { proposal } = file1();
		const path = join(env.agentDir, "selfskills", "proposals", `${proposal.id}.json`);
		const good = JSON.parse(readFileSync(path, "utf8"));
		const cases: Array<[Record<string, unknown>, string]> = [
			[{ ...good, args: { action: "operations", operations: {} } }, "args.operations is not a list"],
			[{ ...good, targets: [{ ...good.targets[0], before: 5 }] }, "targets[0].before is not a sha256 or null"],
			[{ ...good, targets: "all" }, "targets is not a list"],
			[{ ...good, skills: [1] }, "skills is not a list of names"],
			[{ ...good, reason: { text: "x" } }, "reason is not text"],
			[{ ...good, mode: "auto" }, 'mode is not "propose" or "ask"'],
			[{ ...good, approving: { pid: "1", at: "t", targets: [] } }, "approving is not an approval mark"],
		];
		for (const [forged, problem] of cases) {
			writeFileSync(path, JSON.stringify(forged));
			expect(inspectProposal(realFs, env.agentDir, proposal.id), problem).to.deep.equal({ problem });
			expect(readProposal(realFs, env.agentDir, proposal.id)).to.equal(undefined);
			expect(listProposals(realFs, env.agentDir)).to.deep.equal([]);
			expect(invalidProposals(realFs, env.agentDir)).to.deep.equal([{ id: proposal.id, problem }]);
		}
	});

	describe("the sweep after a killed approval", function () {
		const marked = (): Proposal => {
			const { proposal } = file1();
			const m = markApproving(realFs, env.agentDir, proposal, proposal.targets, "ok");
			forgetApprovingHere(); // the approving process is gone
			return m;
		};

		it("leaves an approval running in this process alone", function () {
			const { proposal } = file1();
			markApproving(realFs, env.agentDir, proposal, proposal.targets, undefined);
			expect(sweepProposals(realFs, env.agentDir)).to.deep.equal([]);
			expect(readProposal(realFs, env.agentDir, proposal.id)?.approving).to.not.equal(undefined);
		});

		it("clears the mark when the change did not land: pending again, approvable", function () {
			const m = marked();
			expect(sweepProposals(realFs, env.agentDir)).to.have.length(1);
			const again = readProposal(realFs, env.agentDir, m.id);
			expect(again?.approving).to.equal(undefined);
			expect(again?.id).to.equal(m.id);
		});

		it("marks it approved when every target holds its new bytes, once", function () {
			const m = marked();
			writeFileSync(file, NEW);
			expect(sweepProposals(realFs, env.agentDir)[0]).to.contain("landed");
			expect(readProposal(realFs, env.agentDir, m.id)).to.equal(undefined);
			expect(
				takeDecisions(realFs, env.agentDir, env.projectDir).map((d) => [d.id, d.verdict, d.words]),
			).to.deep.equal([[m.id, "approved", "ok"]]);
			expect(sweepProposals(realFs, env.agentDir)).to.deep.equal([]);
		});

		it("removes a pending copy whose decision was already written", function () {
			const { proposal } = file1();
			const decided = join(env.agentDir, "selfskills", "proposals", "decided");
			mkdirSync(decided, { recursive: true });
			writeFileSync(
				join(decided, `${proposal.id}.json`),
				JSON.stringify({
					id: proposal.id,
					verdict: "rejected",
					cwd: env.projectDir,
					time: new Date().toISOString(),
					action: "patch",
					skills: ["s"],
				}),
			);
			sweepProposals(realFs, env.agentDir);
			expect(listProposals(realFs, env.agentDir)).to.deep.equal([]);
		});

		it("clears a mark by hand too (an approval that failed)", function () {
			const { proposal } = file1();
			const m = markApproving(realFs, env.agentDir, proposal, proposal.targets, undefined);
			clearApproving(realFs, env.agentDir, m);
			expect(readProposal(realFs, env.agentDir, proposal.id)?.approving).to.equal(undefined);
		});
	});

	it("never follows a symlink planted in the store", function () {
		const elsewhere = join(env.root, "elsewhere");
		mkdirSync(elsewhere);
		mkdirSync(join(env.agentDir, "selfskills"), { recursive: true });
		symlinkSync(elsewhere, join(env.agentDir, "selfskills", "proposals"));
		expect(() => file1()).to.throw(/symbolic link|ESYMLINK/i);
		expect(listProposals(realFs, env.agentDir)).to.deep.equal([]);
	});
});
