// How skill_manage calls and results read in pi's TUI: formatCall/formatResult of src/face/render.ts with a
// theme whose fg/bold wrap the text in markers, so the colour of every part can be asserted as text.
import { expect } from "chai";
import type { AgentToolResult, Theme } from "@mariozechner/pi-coding-agent";
import {
	formatCall,
	formatCommandOutput,
	formatResult,
	renderCommandOutput,
	renderSkillCall,
	renderSkillResult,
} from "../../src/face/render.ts";

const theme = {
	fg: (colour: string, text: string) => `<${colour}>${text}</${colour}>`,
	bold: (text: string) => `*${text}*`,
};

/** A diff of `n` changed lines, as mutate.ts puts it in details.diff. */
function diffOf(n: number): string {
	const body = Array.from({ length: n }, (_, i) => `-old ${i}\n+new ${i}`).join("\n");
	return `--- a/deploy-checks/SKILL.md\n+++ b/deploy-checks/SKILL.md\n@@ -1,${n} +1,${n} @@\n ${"context"}\n${body}\n`;
}

const landed = (diff: string): AgentToolResult<unknown> => ({
	content: [
		{
			type: "text",
			text:
				"patch landed: 1 file(s) changed in deploy-checks.\n" +
				`Backup: SKILL.md -> 20260101-000000.000-abcdef0123.md\n${diff}`,
		},
	],
	details: { ok: true, action: "patch", diff },
});

const refused: AgentToolResult<unknown> = {
	content: [
		{
			type: "text",
			text:
				"not_unique: old_string occurs 2 times in /a/SKILL.md (lines 7, 10). Add surrounding lines.\n" +
				"second line of help",
		},
	],
	details: { ok: false, code: "not_unique", count: 2 },
};

describe("rendering skill_manage in the TUI", function () {
	describe("the call line", function () {
		it("names the tool, the action, the skill and the file", function () {
			const text = formatCall({ action: "patch", skill: "deploy-checks", file: "references/api.md" }, theme);
			expect(text).to.equal(
				"<toolTitle>*skill_manage *</toolTitle><accent>patch</accent> " +
					"<muted>deploy-checks</muted> <dim>references/api.md</dim>",
			);
		});

		it("shows the new name for create, a path when no skill is named, a batch's op count and dry run", function () {
			expect(formatCall({ action: "create", name: "staging-rollback" }, theme)).to.contain(
				"<accent>create</accent> <muted>staging-rollback</muted>",
			);
			expect(formatCall({ action: "read", path: "/s/x/SKILL.md" }, theme)).to.contain(
				"<muted>/s/x/SKILL.md</muted>",
			);
			const batch = formatCall({ action: "operations", operations: [{}, {}, {}], dry_run: true }, theme);
			expect(batch).to.contain("<dim>3 op(s)</dim>").and.to.contain("<warning>(dry run)</warning>");
		});

		it("still renders when the model left the action out", function () {
			expect(formatCall({}, theme)).to.contain("<accent>?</accent>");
		});
	});

	describe("the result", function () {
		it("shows a landed mutation as its summary line in the success colour and a coloured diff", function () {
			const text = formatResult(landed(diffOf(2)), false, theme);
			const lines = text.split("\n");
			expect(lines[0]).to.equal("<success>patch landed: 1 file(s) changed in deploy-checks.</success>");
			expect(text).to.contain("<toolDiffRemoved>-old 0</toolDiffRemoved>");
			expect(text).to.contain("<toolDiffAdded>+new 0</toolDiffAdded>");
			expect(text).to.contain("<toolDiffContext> context</toolDiffContext>");
			expect(text, "file headers are not coloured as changes").to.contain(
				"<toolDiffContext>--- a/deploy-checks/SKILL.md</toolDiffContext>",
			);
			expect(text, "the backup line stays out of the compact view").not.to.contain("Backup:");
		});

		it("names the backup a landed change took, with the command that puts it back", function () {
			const id = "20260101-000000.000-abcdef0123.md";
			const change = (file: string, backup: string | null) => ({ skill: "deploy-checks", file, backup });
			const result = {
				...landed(diffOf(1)),
				details: { ok: true, action: "patch", diff: diffOf(1), changes: [change("SKILL.md", id)] },
			};
			const lines = formatResult(result, false, theme).split("\n");
			expect(lines[1]).to.equal(
				`<dim>backed up deploy-checks/SKILL.md as ${id} ` +
					`(undo: /selfskills restore deploy-checks SKILL.md ${id})</dim>`,
			);
			// a batch: new files took no backup; past three backups the rest are counted until expanded
			const files = ["a.md", "b.md", "c.md", "d.md", "e.md"];
			const batch = {
				...result,
				details: { ...result.details, changes: [change("new.md", null), ...files.map((f) => change(f, id))] },
			};
			const compact = formatResult(batch, false, theme);
			expect(compact).not.to.contain("new.md");
			expect(compact).to.contain("backed up deploy-checks/c.md").and.not.to.contain("deploy-checks/d.md");
			expect(compact).to.contain("<dim>… 2 more backup(s)</dim>");
			expect(formatResult(batch, true, theme)).to.contain("backed up deploy-checks/e.md");
		});

		it("clips a long diff when collapsed and shows all of it when expanded", function () {
			const result = landed(diffOf(20));
			const compact = formatResult(result, false, theme);
			const full = formatResult(result, true, theme);
			expect(compact).to.contain("more diff line(s)");
			expect(compact).not.to.contain("+new 19");
			expect(compact.split("\n").length).to.be.at.most(14);
			expect(full).to.contain("<toolDiffAdded>+new 19</toolDiffAdded>");
			expect(full).not.to.contain("more diff line(s)");
		});

		it("shows a refusal in the theme's error colour: its first line collapsed, all of it expanded", function () {
			expect(formatResult(refused, false, theme)).to.equal(
				"<error>not_unique: old_string occurs 2 times in /a/SKILL.md (lines 7, 10). Add surrounding lines.</error>",
			);
			expect(formatResult(refused, true, theme)).to.equal(
				`<error>${(refused.content[0] as { text: string }).text}</error>`,
			);
		});

		it("cuts a long read or list to six lines when collapsed, and shows it whole expanded", function () {
			const text = Array.from({ length: 10 }, (_, i) => `line ${i}`).join("\n");
			const result: AgentToolResult<unknown> = { content: [{ type: "text", text }], details: { ok: true } };
			const compact = formatResult(result, false, theme);
			expect(compact.split("\n")).to.have.length(7);
			expect(compact).to.contain("<dim>… 4 more line(s)</dim>");
			expect(formatResult(result, true, theme)).to.equal(text);
		});

		it("is what renderCall and renderResult draw", function () {
			const fullTheme = theme as unknown as Parameters<typeof renderSkillCall>[1];
			const call = renderSkillCall({ action: "list" }, fullTheme).render(200).join("\n");
			expect(call).to.contain("<accent>list</accent>");
			const result = renderSkillResult(refused, { expanded: false }, fullTheme).render(200).join("\n");
			expect(result).to.contain("<error>not_unique:");
		});
	});

	describe("a /selfskills output", function () {
		it("is titled with the command line, its text in the panel colour, diff lines in the diff colours", function () {
			const text = formatCommandOutput(
				{ content: "restore landed: x\n-old line\n+new line", details: { command: "restore x", level: "info" } },
				theme,
			);
			expect(text.split("\n")).to.deep.equal([
				"<customMessageLabel>*/selfskills restore x*</customMessageLabel>",
				"<customMessageText>restore landed: x</customMessageText>",
				"<toolDiffRemoved>-old line</toolDiffRemoved>",
				"<toolDiffAdded>+new line</toolDiffAdded>",
			]);
		});

		it("shows warnings and refusals in their colours", function () {
			expect(
				formatCommandOutput(
					{ content: "no_backup: none", details: { command: "restore x", level: "error" } },
					theme,
				),
			).to.contain("<error>no_backup: none</error>");
			expect(
				formatCommandOutput({ content: "usage", details: { command: "history", level: "warning" } }, theme),
			).to.contain("<warning>usage</warning>");
		});

		it("escapes control characters from skill text and the typed command", function () {
			const text = formatCommandOutput(
				{ content: "+evil \u001b[2J line", details: { command: "history \u001b]0;x", level: "info" } },
				theme,
			);
			expect(text).to.not.contain("\u001b");
			expect(text).to.contain("\\u001b[2J");
		});

		it("renders as a padded panel on the custom-message background", function () {
			const calls: string[] = [];
			const panelTheme = {
				...theme,
				bg: (colour: string, text: string) => {
					calls.push(colour);
					return text;
				},
			} as unknown as Theme;
			const lines = renderCommandOutput(
				{ content: "line one", details: { command: "", level: "info" } },
				{ expanded: false },
				panelTheme,
			).render(100);
			expect(lines.map((l) => l.trim())).to.deep.equal([
				"",
				"<customMessageLabel>*/selfskills*</customMessageLabel>",
				"<customMessageText>line one</customMessageText>",
				"",
			]);
			expect(lines[1]?.startsWith(" "), "padded").to.equal(true);
			expect(new Set(calls)).to.deep.equal(new Set(["customMessageBg"]));
		});
	});
});
