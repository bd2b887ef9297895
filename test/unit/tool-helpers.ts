// Drives skill_manage the way pi does (executeSkillManage with a session state and the real
// filesystem, or an injected one) and writes skill folders for the tool tests.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentToolResult, ExtensionContext } from "@mariozechner/pi-coding-agent";
import type { SkillManageArgs } from "../../src/arguments.ts";
import { realFs, type FsOps } from "../../src/fs-ops.ts";
import { createSessionState, type SessionState } from "../../src/session-state.ts";
import { executeSkillManage } from "../../src/tool.ts";

export interface ToolResult {
	readonly text: string;
	readonly details: Record<string, unknown>;
	readonly ok: boolean;
	readonly code: string | undefined;
}

export interface ToolDriver {
	readonly state: SessionState;
	call(args: SkillManageArgs): Promise<ToolResult>;
}

export function createDriver(agentDir: string, cwd: string, fs: FsOps = realFs): ToolDriver {
	const state = createSessionState();
	const deps = { agentDir: () => agentDir, fs, state, effects: { onLanded() {} } };
	return {
		state,
		async call(args) {
			const result: AgentToolResult<Record<string, unknown>> = await executeSkillManage(deps, args, { cwd } as unknown as ExtensionContext);
			const first = result.content[0];
			const text = first && first.type === "text" ? first.text : "";
			const details = result.details ?? {};
			const code = typeof details.code === "string" ? details.code : undefined;
			return { text, details, ok: details.ok === true, code };
		},
	};
}

export function skillText(name: string, description = `Use when testing ${name}.`, body = `# ${name}\n\nStep one.\n`): string {
	return `---\nname: ${name}\ndescription: ${description}\n---\n${body}`;
}

/** Writes <parent>/<name>/SKILL.md (and bundled files); returns the skill folder. */
export function writeSkill(parent: string, name: string, content: string | Buffer = skillText(name), files: Record<string, string | Buffer> = {}): string {
	const dir = join(parent, name);
	mkdirSync(dir, { recursive: true });
	writeFileSync(join(dir, "SKILL.md"), content);
	for (const [rel, bytes] of Object.entries(files)) {
		mkdirSync(join(dir, rel, ".."), { recursive: true });
		writeFileSync(join(dir, rel), bytes);
	}
	return dir;
}
