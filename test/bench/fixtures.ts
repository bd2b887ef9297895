// Skill trees and a ready `executeSkillManage` for the benchmark, in a fresh temp env: skills of
// an exact byte size, a trusted project, and skills spread across every root pi scans.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { realFs } from "../../src/base/fs-ops.ts";
import { createSessionState, type SessionDeps } from "../../src/pipeline/session-state.ts";
import { executeSkillManage } from "../../src/face/tool.ts";
import type { SkillManageArgs } from "../../src/face/arguments.ts";
import { handPiSkillFiles } from "../support/harness.ts";
import { createTempEnv, type TempEnv } from "../support/temp-env.ts";

export const MARK_A = "Marker: alpha step.";

/** A valid SKILL.md of exactly `bytes` bytes (ASCII) holding MARK_A once. */
export function skillText(name: string, bytes: number): string {
	const head =
		`---\nname: ${name}\ndescription: Use when benchmarking ${name}. Steps to follow in order.\n---\n` +
		`# ${name}\n\n${MARK_A}\n\n`;

	const lines: string[] = [];
	let size = head.length;
	for (let i = 1; size < bytes; i++) {
		const line = `${i}. Check item ${i} of the procedure and note the result in the log.\n`;
		lines.push(line);
		size += line.length;
	}
	return `${(head + lines.join("")).slice(0, bytes - 1)}\n`;
}

export function writeSkill(root: string, name: string, bytes = 600): string {
	const dir = join(root, name);
	mkdirSync(dir, { recursive: true });
	const file = join(dir, "SKILL.md");
	writeFileSync(file, skillText(name, bytes));
	return file;
}

export interface BenchEnv {
	readonly env: TempEnv;
	readonly ctx: ExtensionContext;
	readonly deps: SessionDeps;
	/** Every root the tree uses: agent skills, project .pi/skills, .agents/skills, local package skills. */
	readonly roots: readonly string[];
	call(args: SkillManageArgs): Promise<{ text: string; details: Record<string, unknown> }>;
	/** Hands the session every skill file pi loads, as index.ts does before each prompt in pi. */
	handPiSkillFiles(): Promise<void>;
	cleanup(): void;
}

/** A temp env whose project is trusted and which declares one local package with a skills folder. */
export function createBenchEnv(settings: Record<string, unknown> = {}): BenchEnv {
	const env = createTempEnv({ prefix: "selfskills-bench-" });
	const pkg = join(env.projectDir, "local-pkg");
	mkdirSync(join(pkg, "skills"), { recursive: true });
	writeFileSync(
		join(pkg, "package.json"),
		JSON.stringify({ name: "local-pkg", version: "1.0.0", pi: { skills: ["./skills"] } }),
	);
	writeFileSync(
		join(env.agentDir, "settings.json"),
		JSON.stringify({ packages: [pkg], selfskills: { trustedProjects: [env.projectDir], ...settings } }),
	);
	const roots = [
		join(env.agentDir, "skills"),
		join(env.projectDir, ".pi", "skills"),
		join(env.projectDir, ".agents", "skills"),
		join(pkg, "skills"),
	];
	for (const root of roots) mkdirSync(root, { recursive: true });
	const deps: SessionDeps = {
		agentDir: () => env.agentDir,
		fs: realFs,
		state: createSessionState(),
		effects: { onLanded() {} },
	};
	const ctx = { cwd: env.projectDir } as ExtensionContext;
	return {
		env,
		ctx,
		deps,
		roots,
		async call(args) {
			const result = await executeSkillManage(deps, args, ctx);
			const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
			return { text, details: result.details };
		},
		handPiSkillFiles: () => handPiSkillFiles(deps, env),
		cleanup: () => env.cleanup(),
	};
}

/** A call that must succeed; throws with the refusal otherwise. */
export async function expectOk(
	bench: BenchEnv,
	args: SkillManageArgs,
): Promise<{ text: string; details: Record<string, unknown> }> {
	const result = await bench.call(args);
	if (result.details.ok !== true) throw new Error(`${args.action} refused: ${result.text}`);
	return result;
}
