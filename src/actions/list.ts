// `list`: every skill pi discovers, with its path, whether this tool may change it and the agent's
// proposals awaiting the person's review. Names and descriptions come from files on disk, so they
// are echoed with control characters escaped, and the result stops at the read limit, saying how to filter.
// A pinned skill is listed read-only with the reason "pinned", as every change to it is refused.

import type { ActionResult, CallContext } from "../pipeline/call-context.ts";
import { escapeControls, READ_CHAR_LIMIT } from "../checks/content-guard.ts";
import { listProposals } from "../store/proposals.ts";
import { findPin } from "../policy/settings.ts";

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function listSkills(ctx: CallContext, filter: string | undefined): ActionResult {
	const wanted = filter?.trim().toLowerCase();
	const skills = ctx.discovery.skills
		.filter((s) => !wanted || s.name.toLowerCase().includes(wanted) || s.description.toLowerCase().includes(wanted))
		.map((s) => {
			const pin = s.patchable ? findPin(ctx.settings.pinned, s.name) : undefined;
			return pin === undefined ? s : { ...s, patchable: false, reason: `pinned (by "${pin}")` };
		});
	const writable = skills.filter((s) => s.patchable).length;
	const proposed = new Map<string, string[]>();
	for (const p of listProposals(ctx.fs, ctx.agentDir))
		for (const skill of p.skills) proposed.set(skill, [...(proposed.get(skill) ?? []), p.id]);
	const pendingNote = (name: string) =>
		proposed.has(name) ? ` — awaiting the person's review: ${proposed.get(name)?.join(", ")} (do not redo)` : "";
	const head =
		`${skills.length} skill(s)` +
		`${wanted ? ` matching "${escapeControls(clip(filter ?? "", 100))}"` : ""}, ${writable} patchable.`;
	const lines = [head];
	let size = head.length;
	let shown = 0;
	for (const s of skills) {
		const line = escapeControls(
			`${s.name} — ${clip(s.description.replace(/\s+/g, " "), 100)} — ${s.filePath} — ` +
				`patchable: ${s.patchable ? "yes" : `no (${s.reason})`}${pendingNote(s.name)}`,
		);
		if (size + line.length + 1 > READ_CHAR_LIMIT) break;
		lines.push(line);
		size += line.length + 1;
		shown++;
	}
	if (shown < skills.length)
		lines.push(
			`[${skills.length - shown} more skill(s) not shown; ` +
				'pass {"action":"list","skill":"<part of a name>"} to filter]',
		);
	return {
		text: lines.join("\n"),
		details: {
			ok: true,
			action: "list",
			skills: skills.slice(0, shown).map((s) => ({
				name: s.name,
				description: s.description,
				path: s.filePath,
				patchable: s.patchable,
				reason: s.reason,
				...(proposed.has(s.name) ? { pending: proposed.get(s.name) } : {}),
			})),
			...(shown < skills.length ? { total: skills.length } : {}),
		},
	};
}
