// The "ask" dialog: the person sees the skill, the action, the agent's reason and the diff, and
// allows the change once, allows the skill for the rest of the session, or denies it with an
// optional reason the model reads. Closing the dialog is a denial without words: nothing lands unasked.
// What the agent wrote (names, reason, diff) is shown escaped and bounded (checks/agent-text.ts).

import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { shownDiff, shownName, shownReason } from "../checks/agent-text.ts";
import { clipDiff } from "../checks/diff.ts";
import { findingsText } from "../base/errors.ts";
import type { AskAnswer, AskRequest } from "../pipeline/types.ts";

/** Diff lines shown in the dialog; the whole diff is in the tool result and in /selfskills show. */
const DIALOG_DIFF_LINES = 60;

export const ALLOW_ONCE = "Allow once";
export const DENY = "Deny";
export const allowSessionLabel = (skills: readonly string[]) =>
	`Allow ${skills.map(shownName).join(", ")} for the rest of this session`;

export function askTitle(request: AskRequest): string {
	return [
		`skill_manage wants to ${shownName(request.action)} ${request.skills.map(shownName).join(", ")}`,
		`Reason: ${request.reason === undefined ? "(none given)" : shownReason(request.reason)}`,
		...(request.findings?.length
			? [
					"Lines that look risky (allowing the skill for the session does not cover these; " +
						"each such change asks):",
					findingsText(request.findings),
				]
			: []),
		"",
		clipDiff(shownDiff(request.diff), DIALOG_DIFF_LINES),
	].join("\n");
}

export async function askPerson(ctx: Pick<ExtensionContext, "ui">, request: AskRequest): Promise<AskAnswer> {
	const session = allowSessionLabel(request.skills);
	const choice = await ctx.ui.select(askTitle(request), [ALLOW_ONCE, session, DENY]);
	if (choice === ALLOW_ONCE) return { allow: "once" };
	if (choice === session) return { allow: "session" };
	if (choice === undefined) return { deny: true };
	const words = await ctx.ui.input("Why not? The agent reads this (optional)", "");
	return { deny: true, ...(words?.trim() ? { words: words.trim() } : {}) };
}
