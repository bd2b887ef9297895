// The setup the action tests share: a temp env per test with the skill "alpha" (SKILL.md and
// references/api.md) in the agent's skills folder, the tool on it, and the patch most tests make.
import { dirname, join } from "node:path";
import { skillBackupDir } from "./backups.ts";
import { skillText, writeSkill } from "./fixtures.ts";
import { createHarness, type Harness, type Result } from "./harness.ts";
import { useTempEnv, type TempEnv } from "./temp-env.ts";

/** The skill every action test starts from; "Step one." is the line the patches aim at. */
export const ALPHA = skillText("alpha", "# alpha\n\nStep one.\n", "Use when testing alpha.");

/** The patch most action tests make: "Step one." to "Step 1." in alpha's SKILL.md. */
export const PATCH_ALPHA = { action: "patch", skill: "alpha", old_string: "Step one.", new_string: "Step 1." };

export interface AlphaSetup {
	env(): TempEnv;
	tool(): Harness;
	/** alpha's skill folder. */
	dir(): string;
	skillFile(): string;
	/** The backups folder of the whole store. */
	backups(): string;
	/** Where the backup a landed single-file change names is kept (SKILL.md unless `relPath`). */
	backupOf(landed: Result, relPath?: string): string;
}

/** Call inside a describe: each test gets a fresh env, alpha written, and a fresh tool. */
export function useAlphaSkill(): AlphaSetup {
	const getEnv = useTempEnv();
	let tool: Harness;
	let dir: string;
	beforeEach(function () {
		const env = getEnv();
		const files = { "references/api.md": "API notes\nline two\n" };
		dir = dirname(writeSkill(join(env.agentDir, "skills"), "alpha", ALPHA, files));
		tool = createHarness(env);
	});
	return {
		env: getEnv,
		tool: () => tool,
		dir: () => dir,
		skillFile: () => join(dir, "SKILL.md"),
		backups: () => join(getEnv().agentDir, "selfskills", "backups"),
		backupOf: (landed, relPath = "SKILL.md") => {
			const [change] = landed.details.changes as Array<{ backup: string }>;
			return join(skillBackupDir(getEnv().agentDir, "alpha"), relPath, change.backup);
		},
	};
}
