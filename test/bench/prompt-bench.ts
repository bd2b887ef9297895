// SPEC "Cost", prompt: what the package adds to every request, measured as pi sends it. Ours: the
// tool's JSON definition (name, description, parameters) plus the system prompt with the package
// minus without it (the injected block, the doc-skill's entry and the skills preamble pi adds for it).
// pi's edit: its JSON definition plus the system prompt with edit minus without (`--tools read,bash,write`).
import { createEditToolDefinition } from "@mariozechner/pi-coding-agent";
import { skillManageSchema, TOOL_DESCRIPTION, TOOL_NAME } from "../../src/face/tool-schema.ts";
import { piInstall, runPiPrint } from "../support/pi-cli.ts";
import { REPO_ROOT } from "../support/pi-line.ts";
import { createTempEnv, type TempEnv } from "../support/temp-env.ts";

export interface PromptCost {
	readonly ours: { tool: number; systemPrompt: number; total: number };
	readonly edit: { tool: number; systemPrompt: number; total: number };
	readonly ratio: number;
}

const toolJson = (tool: { name: string; description: string; parameters: unknown }) =>
	JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters }).length;

async function systemPrompt(env: TempEnv, extraArgs: string[] = []): Promise<string> {
	const run = await runPiPrint({ env, prompt: "hello", steps: [{ text: "ok" }], extraArgs });
	const prompt = run.calls[0]?.systemPrompt;
	if (run.exitCode !== 0 || prompt === undefined) throw new Error(`pi -p failed: ${run.stderr.slice(0, 500)}`);
	return prompt;
}

export async function measurePromptCost(): Promise<PromptCost> {
	// Same-length prefixes: the project's path is part of both prompts.
	const withPkg = createTempEnv({ prefix: "selfskills-prompt-a-" });
	const without = createTempEnv({ prefix: "selfskills-prompt-b-" });
	try {
		await piInstall(withPkg, REPO_ROOT);
		const ourPrompt = await systemPrompt(withPkg);
		if (!ourPrompt.includes("<selfskills-rules>")) throw new Error("the package did not load");
		const base = await systemPrompt(without);
		const noEdit = await systemPrompt(without, ["--tools", "read,bash,write"]);
		const oursTool = toolJson({ name: TOOL_NAME, description: TOOL_DESCRIPTION, parameters: skillManageSchema });
		const ours = { tool: oursTool, systemPrompt: ourPrompt.length - base.length, total: 0 };
		const editTool = toolJson(createEditToolDefinition(withPkg.projectDir));
		const edit = { tool: editTool, systemPrompt: base.length - noEdit.length, total: 0 };
		ours.total = ours.tool + ours.systemPrompt;
		edit.total = edit.tool + edit.systemPrompt;
		return { ours, edit, ratio: ours.total / edit.total };
	} finally {
		withPkg.cleanup();
		without.cleanup();
	}
}
