// What the package adds to every prompt: the standing-rules block (on with inject, off without, nothing at
// all when disabled), what that costs next to pi's own edit tool, and whether the tool's prompt texts and
// argument mapping follow pi's conventions, checked on the tool as pi registered it.
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createEditToolDefinition, type ToolDefinition } from "@mariozechner/pi-coding-agent";
import { STANDING_RULES } from "../../src/face/prompt.ts";
import { REPO_ROOT, getPiLine } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { call } from "../support/faux-script.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";

/** Characters a tool puts in front of the model on every call: name, description, schema, snippet, guidelines. */
function toolCost(
	tool: Pick<ToolDefinition, "name" | "description" | "parameters" | "promptSnippet" | "promptGuidelines">,
): number {
	return (
		tool.name.length +
		tool.description.length +
		JSON.stringify(tool.parameters).length +
		(tool.promptSnippet ?? "").length +
		(tool.promptGuidelines ?? []).join("\n").length
	);
}

const tokens = (chars: number) => Math.round(chars / 4);

describe(`the per-prompt footprint (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	it(`injects the ${STANDING_RULES.length}-char standing-rules block once into every model call`, async function () {
		pi = await createPiSession({ env: getEnv(), packageDir: REPO_ROOT });
		const first = await pi.run("one", [call({ action: "list" }), { text: "ok" }]);
		const second = await pi.run("two", [{ text: "ok" }]);
		const calls = [...first.calls, ...second.calls];
		expect(calls).to.have.length(3);
		for (const c of calls) {
			expect(c.systemPrompt).to.contain(STANDING_RULES);
			expect(
				c.systemPrompt.split("<selfskills-rules>").length - 1,
				"the block is appended once, not once per prompt",
			).to.equal(1);
			expect(c.toolNames).to.include("skill_manage");
		}
	});

	it("leaves the block out with inject: false, and keeps the tool", async function () {
		pi = await createPiSession({ env: getEnv(), packageDir: REPO_ROOT, settings: { selfskills: { inject: false } } });
		const run = await pi.run("one", [{ text: "ok" }]);
		expect(run.calls[0].systemPrompt).not.to.contain("<selfskills-rules>");
		expect(run.calls[0].toolNames).to.include("skill_manage");
		expect(run.calls[0].systemPrompt, "pi still lists the tool's snippet").to.contain("skill_manage");
	});

	it("registers nothing with enabled: false: no tool, no block, no /selfskills, no prompt text", async function () {
		pi = await createPiSession({
			env: getEnv(),
			packageDir: REPO_ROOT,
			settings: { selfskills: { enabled: false } },
		});
		const run = await pi.run("one", [{ text: "ok" }]);
		expect(run.calls[0].toolNames).not.to.include("skill_manage");
		expect(run.calls[0].systemPrompt).not.to.contain("<selfskills-rules>");
		expect(run.calls[0].systemPrompt, "no tool snippet or guideline").not.to.match(/^- skill_manage/m);
		expect(pi.session.extensionRunner.getCommand("selfskills")).to.equal(undefined);
		expect(pi.session.getToolDefinition("skill_manage")).to.equal(undefined);
	});

	it("costs, per prompt, tool + block vs pi's built-in edit tool (figures in the log)", async function () {
		const env = getEnv();
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		const tool = pi.session.getToolDefinition("skill_manage");
		if (!tool) throw new Error("skill_manage is not registered");
		const edit = createEditToolDefinition(env.projectDir) as unknown as ToolDefinition;
		const ours = toolCost(tool) + STANDING_RULES.length;
		const theirs = toolCost(edit);
		const systemPrompt = (await pi.run("one", [{ text: "ok" }])).calls[0].systemPrompt;
		console.log(
			`      skill_manage tool ${toolCost(tool)} chars (schema ${JSON.stringify(tool.parameters).length}) ` +
				`+ rules block ${STANDING_RULES.length} = ${ours} chars (~${tokens(ours)} tokens) per prompt; ` +
				`pi's edit tool ${theirs} chars (~${tokens(theirs)} tokens); ratio ${(ours / theirs).toFixed(2)}`,
		);
		console.log(`      whole system prompt with the package installed: ${systemPrompt.length} chars`);
		expect(ours, "the whole package stays under 3x pi's edit tool").to.be.below(theirs * 3);
		expect(STANDING_RULES.length, "the block stays short").to.be.below(1000);
	});

	it("meets pi's conventions: one-line snippet, guidelines naming skill_manage, StringEnum action", async function () {
		pi = await createPiSession({ env: getEnv(), packageDir: REPO_ROOT });
		const tool = pi.session.getToolDefinition("skill_manage");
		if (!tool) throw new Error("skill_manage is not registered");
		expect(tool.promptSnippet).to.be.a("string").and.not.to.contain("\n");
		expect(tool.promptGuidelines).to.be.an("array").that.is.not.empty;
		for (const guideline of tool.promptGuidelines ?? []) expect(guideline).to.contain("skill_manage");
		const schema = tool.parameters as unknown as {
			properties: Record<string, { type?: string; enum?: string[]; anyOf?: unknown }>;
			required?: string[];
		};
		expect(schema.properties.action.type).to.equal("string");
		expect(schema.properties.action.enum).to.deep.equal([
			"list",
			"read",
			"patch",
			"create",
			"write",
			"delete",
			"restore",
			"history",
			"operations",
		]);
		expect(schema.properties.action.anyOf, "StringEnum, not a union of literals").to.equal(undefined);
		expect(schema.required).to.deep.equal(["action"]);
		const run = await pi.run("one", [{ text: "ok" }]);
		expect(run.calls[0].systemPrompt).to.contain(`- skill_manage: ${tool.promptSnippet}`);
		for (const guideline of tool.promptGuidelines ?? []) expect(run.calls[0].systemPrompt).to.contain(guideline);
	});

	it("maps file_path, old_text/new_text and a stringified operations array (prepareArguments)", async function () {
		const env = getEnv();
		const skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		const run = await pi.run("fix it", [
			call({ action: "read", file_path: skillFile }),
			call({ action: "patch", skill: "deploy-checks", old_text: "npm build", new_text: "npm run build" }),
			call({
				action: "operations",
				operations: JSON.stringify([
					{ action: "patch", skill: "deploy-checks", old_string: "health page", new_string: "health endpoint" },
				]),
			}),
			call({ action: "frobnicate" }),
			{ text: "done" },
		]);
		const [read, patched, batch, unknown] = run.toolResults;
		expect(read.isError, read.text).to.equal(false);
		expect(read.text).to.contain("1. Run npm build.");
		expect(patched.isError, patched.text).to.equal(false);
		expect(batch.isError, batch.text).to.equal(false);
		expect(readFileSync(skillFile, "utf8")).to.contain("1. Run npm run build.\n2. Check the health endpoint.");
		expect(unknown.isError).to.equal(true);
		expect(unknown.text).to.match(/invalid_arguments|Validation failed/);
		expect(unknown.text).to.contain("list, read, patch");
	});
});
