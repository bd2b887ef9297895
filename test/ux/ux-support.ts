// Small helpers the UX tests share: a scripted skill_manage call, and what /selfskills showed the
// human in an in-process session.
import type { FauxStep } from "../support/faux-script.ts";
import type { PiSession } from "../support/pi-session.ts";
import { OUTPUT_MESSAGE_TYPE } from "../../src/command.ts";

export const call = (args: Record<string, unknown>): FauxStep => ({ toolCall: { name: "skill_manage", arguments: args } });

/** Every /selfskills output of the session, oldest first: each is a message of the conversation. */
export function commandOutputs(pi: PiSession): string[] {
	return pi.session.messages.flatMap((m) => (m.role === "custom" && m.customType === OUTPUT_MESSAGE_TYPE && typeof m.content === "string" ? [m.content] : []));
}
