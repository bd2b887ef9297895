// The standing-rules block added to the system prompt on every prompt (patch by exception), the
// list of skills created or changed this session, which pi itself only shows after /reload, and the
// person's verdicts on the agent's proposals, each named once.

import type { Decision } from "../store/proposals.ts";
import type { ChangedSkill } from "../pipeline/session-state.ts";

export const STANDING_RULES =
	"<selfskills-rules>\n" +
	"Most tasks end with no skill write. Patch a skill with skill_manage only when it proved wrong in this " +
	"task, and only the wrong lines. Create one only for a procedure that will recur, never for one-off " +
	"stories, this machine's faults, unverified fixes or secrets. Long form: the selfskills skill.\n" +
	"</selfskills-rules>";

const escapeMarkup = (text: string) =>
	text.replace(/[<>&]/g, (c) => (c === "<" ? "&lt;" : c === ">" ? "&gt;" : "&amp;"));

export function formatChangedSkills(changed: Iterable<ChangedSkill>): string {
	const items = [...changed];
	if (items.length === 0) return "";
	const lines = items.map((s) =>
		s.action === "delete"
			? `- ${s.name}: deleted (was ${escapeMarkup(s.path)})`
			: `- ${s.name} (${s.action}): ${escapeMarkup(s.description)} — ${escapeMarkup(s.path)}`,
	);
	return (
		"<selfskills-changed>\n" +
		"Skills created or changed this session; pi lists new ones only after /reload, so read them from these paths:\n" +
		`${lines.join("\n")}\n</selfskills-changed>`
	);
}

/** The person's verdicts on the agent's proposals since the last prompt, each named once. */
export function formatDecisions(decisions: readonly Decision[]): string {
	if (decisions.length === 0) return "";
	const lines = decisions.map((d) => {
		const what = `${d.id} (${d.action} of ${d.skills.join(", ")})`;
		const said = d.words ? `, saying: "${escapeMarkup(d.words)}"` : "";
		return d.verdict === "approved"
			? `- ${what}: approved${said}; it has landed, so read the skill again before changing it further.`
			: `- ${what}: rejected${said}; do not propose it again unless the person asks for it.`;
	});
	return (
		"<selfskills-reviewed>\nThe person reviewed your skill proposals:\n" +
		`${lines.join("\n")}\n</selfskills-reviewed>`
	);
}

export function buildInjectedBlock(changed: Iterable<ChangedSkill>, decisions: readonly Decision[] = []): string {
	return [STANDING_RULES, formatChangedSkills(changed), formatDecisions(decisions)].filter(Boolean).join("\n");
}
