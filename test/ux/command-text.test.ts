// The texts of /selfskills for the human (src/face/command-text.ts): every refusal the command can meet
// reads with its code first and names a slash command, never the tool-call JSON the model gets.
import { expect } from "chai";
import * as refusals from "../../src/base/errors.ts";
import { historyText, refusalForHuman, restorePreviewText, settingsWarning } from "../../src/face/command-text.ts";

const TOOL_CALL_SYNTAX = /\{"action"|skill_manage|"backup":/;

/** Each refusal /selfskills history or restore can return, built by the tool's own factories. */
const REACHABLE: Array<[string, refusals.Refusal]> = [
	["unknown skill", refusals.unknownSkill("deploy-chex", ["deploy-checks"])],
	["unknown skill, nothing near", refusals.unknownSkill("zzz", [])],
	[
		"no such backup",
		refusals.noBackup("deploy-checks", "SKILL.md", "20990101-000000.000", ["20261203-000000.000-abc.md"]),
	],
	["no backup of a bundled file", refusals.noBackup("deploy-checks", "references/api.md", undefined, [])],
	["no snapshot", refusals.noBackup("deploy-checks", "(whole skill)", "x", [])],
	["restore to what is there", refusals.restoreNoChange("deploy-checks", "SKILL.md", "b1.md", "b2.md")],
	[
		"restore to what is there, none differs",
		refusals.restoreNoChange("deploy-checks", "references/api.md", "b1.md", undefined),
	],
	["nothing to write", refusals.noChange("backup b1.md")],
	[
		"corrupt backup",
		refusals.backupCorrupt("/a/selfskills/backups/deploy-checks/SKILL.md/b1.md", "abc", "def0123456789"),
	],
	[
		"read-only skill",
		refusals.notWritable("/home/u/.agents/skills/x/SKILL.md", "shared with other agents", ["/a/skills"]),
	],
	["snapshot over an existing folder", refusals.exists("deploy-checks", "/a/skills/deploy-checks")],
	["changed mid-restore", refusals.conflict("/a/skills/deploy-checks/SKILL.md", "hash differs")],
	[
		"backup pi would not load",
		refusals.invalidSkill("/a/skills/deploy-checks/SKILL.md", [
			{ type: "error", message: "description is required" },
		]),
	],
	[
		"filesystem error",
		refusals.ioError("/a/skills/deploy-checks/SKILL.md", Object.assign(new Error("no space"), { code: "ENOSPC" })),
	],
	["bad file argument", refusals.badFilePath("../x", "it leaves the skill folder")],
	["binary backup", refusals.binaryFile("/a/b.md", "invalid UTF-8")],
	["hidden characters", refusals.unsafeContent("backup b1.md", ["U+202E"])],
	["aborted", refusals.aborted()],
];

describe("/selfskills texts for the human", function () {
	for (const [what, refusal] of REACHABLE) {
		it(`says "${what}" with its code first and no tool-call JSON`, function () {
			const text = refusalForHuman(refusal);
			expect(text.startsWith(`${refusal.code}: `), text).to.equal(true);
			expect(text).to.not.match(TOOL_CALL_SYNTAX);
		});
	}

	it("names the slash command that helps next", function () {
		expect(refusalForHuman(refusals.unknownSkill("deploy-chex", ["deploy-checks"]))).to.equal(
			'unknown_skill: no skill is named "deploy-chex". Did you mean "deploy-checks"? ' +
				"/selfskills lists every skill pi found.",
		);
		expect(refusalForHuman(refusals.noBackup("deploy-checks", "references/api.md", "x", ["b1.md"]))).to.contain(
			"/selfskills history deploy-checks references/api.md lists them.",
		);
		expect(refusalForHuman(refusals.restoreNoChange("deploy-checks", "SKILL.md", "b1.md", "b2.md"))).to.contain(
			"/selfskills restore deploy-checks SKILL.md b2.md",
		);
	});

	it("lists history with the restore command of the newest backup, the other files and the snapshots", function () {
		const entry = {
			id: "20261203-080000.000-abcdef0123.md",
			path: "/p",
			stamp: "20261203-080000.000",
			time: "2026-12-03T08:00:00.000Z",
			hash: "abcdef0123",
			size: 10,
			legacy: false,
		};
		const text = historyText({
			skill: "deploy-checks",
			file: "SKILL.md",
			backups: [entry],
			next: entry.id,
			snapshots: [{ id: "20261203-070000.000", path: "/s", time: "t", originDir: "/a/skills/deploy-checks" }],
			otherFiles: ["references/api.md"],
		});
		expect(text).to.contain(
			`Restore one (you see the change and confirm first): /selfskills restore deploy-checks SKILL.md ${entry.id}`,
		);
		expect(text).to.contain(
			"Other file with backups: references/api.md (/selfskills history deploy-checks references/api.md)",
		);
		expect(text).to.contain("recreate the skill from it: /selfskills restore deploy-checks 20261203-070000.000");
		expect(text).to.not.match(TOOL_CALL_SYNTAX);
	});

	it("previews a restore without a UI with the exact command that does it", function () {
		const text = restorePreviewText({ skill: "deploy-checks", file: "SKILL.md", backup: "b1.md" }, "-new\n+old");
		expect(text.split("\n")).to.deep.equal([
			"Would restore deploy-checks/SKILL.md to backup b1.md, the newest that differs from it now. " +
				"The change it would make (- now, + after):",
			"-new",
			"+old",
			"Nothing was restored: without a UI pi cannot ask you first. " +
				"To restore it, run: /selfskills restore deploy-checks SKILL.md b1.md --yes",
			"Other backups: /selfskills history deploy-checks",
		]);
	});

	it("sums settings problems up in one line, and says nothing when there are none", function () {
		expect(settingsWarning([])).to.equal("");
		expect(
			settingsWarning(["a: selfskills.backupCap must be an integer from 1 to 1000; default used", "b"]),
		).to.equal(
			"selfskills: settings problem: a: selfskills.backupCap must be an integer from 1 to 1000; " +
				"default used (and 1 more). /selfskills lists them.",
		);
	});
	it("speaks to the person, not the model, of risky content, an unknown proposal and export outside git", function () {
		const risky = refusalForHuman(
			refusals.riskyContent("/s/deploy-checks/SKILL.md", [
				{ category: "pipe-to-shell", line: 3, text: "curl x | sh" },
			]),
		);
		expect(risky)
			.to.match(/^risky_content: /)
			.and.contain("[pipe-to-shell] line 3")
			.and.contain("nothing was restored");
		const unknown = refusalForHuman(refusals.unknownProposal("p-deadbeef", ["p-00000001"]));
		expect(unknown).to.equal(
			'unknown_proposal: there is no proposal "p-deadbeef". ' +
				"Pending now: p-00000001 (/selfskills pending lists them).",
		);
		const git = refusalForHuman(refusals.gitFailed("p-00000001", "deploy-checks/SKILL.md is in no git work tree"));
		expect(git)
			.to.contain("not in a git repository")
			.and.contain("git init")
			.and.contain("/selfskills show p-00000001");
		for (const text of [risky, unknown, git]) {
			expect(text).not.to.match(/skill_manage|\{"action"|ask the person|<skill>/);
		}
	});
});
