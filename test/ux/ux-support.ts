// Small helpers the UX tests share: a user skill in the temp agent dir, a scripted skill_manage call,
// and what /selfskills showed the human in an in-process session.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FauxStep } from "../support/faux-script.ts";
import type { PiSession } from "../support/pi-session.ts";
import type { TempEnv } from "../support/temp-env.ts";
import { OUTPUT_MESSAGE_TYPE } from "../../src/command.ts";

export const DEPLOY_SKILL = "---\nname: deploy-checks\ndescription: Use when deploying the app. Lists the checks to run.\n---\n# Deploy checks\n\n1. Run npm build.\n2. Check the health page.\n";

/** Writes `<agentDir>/skills/<name>/SKILL.md` and returns its path. */
export function writeAgentSkill(env: TempEnv, name: string, text: string): string {
	const dir = join(env.agentDir, "skills", name);
	mkdirSync(dir, { recursive: true });
	writeFileSync(join(dir, "SKILL.md"), text);
	return join(dir, "SKILL.md");
}

export const call = (args: Record<string, unknown>): FauxStep => ({ toolCall: { name: "skill_manage", arguments: args } });

/** Every /selfskills output of the session, oldest first: each is a message of the conversation. */
export function commandOutputs(pi: PiSession): string[] {
	return pi.session.messages.flatMap((m) => (m.role === "custom" && m.customType === OUTPUT_MESSAGE_TYPE && typeof m.content === "string" ? [m.content] : []));
}
