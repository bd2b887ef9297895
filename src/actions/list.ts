// `list`: every skill pi discovers, with its path and whether this tool may change it.

import type { ActionResult, CallContext } from "../call-context.ts";

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function listSkills(ctx: CallContext, filter: string | undefined): ActionResult {
	const wanted = filter?.trim().toLowerCase();
	const skills = ctx.discovery.skills.filter(
		(s) => !wanted || s.name.toLowerCase().includes(wanted) || s.description.toLowerCase().includes(wanted),
	);
	const lines = skills.map(
		(s) =>
			`${s.name} — ${clip(s.description.replace(/\s+/g, " "), 100)} — ${s.filePath} — patchable: ${s.patchable ? "yes" : `no (${s.reason})`}`,
	);
	const writable = skills.filter((s) => s.patchable).length;
	const head = `${skills.length} skill(s)${wanted ? ` matching "${filter}"` : ""}, ${writable} patchable.`;
	return {
		text: [head, ...lines].join("\n"),
		details: {
			ok: true,
			action: "list",
			skills: skills.map((s) => ({ name: s.name, description: s.description, path: s.filePath, patchable: s.patchable, reason: s.reason })),
		},
	};
}
