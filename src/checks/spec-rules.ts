// The Agent Skills specification's rules (agentskills.io), stricter than pi's loader: what `create`
// writes must follow them, and a patch of SKILL.md may keep a rule the file already broke but never
// break a new one. Judged on the frontmatter pi's own parser reads (validation.ts); none when it
// cannot parse it, which gate 6 refuses on its own.

import { frontmatterOf, MAX_COMPATIBILITY, MAX_DESCRIPTION, nameProblems } from "./validation.ts";

/** One rule broken: a stable id and what is wrong, for the model and the doctor. */
export interface SpecBreak {
	readonly rule: string;
	readonly message: string;
}

/** Top-level fields the specification defines, and the one pi adds. */
export const ALLOWED_FIELDS: readonly string[] = [
	"name",
	"description",
	"license",
	"compatibility",
	"metadata",
	"allowed-tools",
	"disable-model-invocation",
];

/** The rules a frontmatter breaks, for a skill in the folder `dirName`. */
export function specBreaks(frontmatter: Readonly<Record<string, unknown>>, dirName: string): SpecBreak[] {
	const out: SpecBreak[] = [];
	const { name, description, compatibility, metadata } = frontmatter;
	if (typeof name !== "string" || name.length === 0) out.push({ rule: "name", message: "name is missing" });
	else {
		for (const p of nameProblems(name)) out.push({ rule: "name", message: `name "${name}": ${p}` });
		if (name !== dirName)
			out.push({ rule: "name-folder", message: `name "${name}" differs from its folder "${dirName}"` });
	}
	if (typeof description !== "string" || description.trim().length === 0)
		out.push({ rule: "description", message: "description must be 1-1024 characters; it is empty" });
	else if (description.length > MAX_DESCRIPTION)
		out.push({
			rule: "description",
			message: `description must be 1-${MAX_DESCRIPTION} characters; it has ${description.length}`,
		});
	if (compatibility !== undefined && (typeof compatibility !== "string" || compatibility.length > MAX_COMPATIBILITY))
		out.push({
			rule: "compatibility",
			message: `compatibility must be text of at most ${MAX_COMPATIBILITY} characters`,
		});
	if (
		metadata !== undefined &&
		(typeof metadata !== "object" ||
			metadata === null ||
			Array.isArray(metadata) ||
			Object.values(metadata).some((v) => typeof v !== "string"))
	)
		out.push({ rule: "metadata", message: "metadata must map names to text values" });
	const extra = Object.keys(frontmatter).filter((k) => !ALLOWED_FIELDS.includes(k));
	if (extra.length > 0)
		out.push({
			rule: "fields",
			message:
				`top-level field(s) ${extra.map((k) => `"${k}"`).join(", ")} are not in the specification ` +
				`(allowed: ${ALLOWED_FIELDS.join(", ")}; put others under metadata)`,
		});
	return out;
}

/** The rules a SKILL.md text breaks; none when pi's parser cannot read its frontmatter. */
export function specBreaksOfText(text: string, dirName: string): SpecBreak[] {
	const frontmatter = frontmatterOf(text);
	return frontmatter ? specBreaks(frontmatter, dirName) : [];
}

/**
 * The text without the top-level frontmatter fields the specification does not define (each with
 * its indented lines): the start of a suggestion for a spec_violation.
 */
export function dropExtraFields(text: string): string {
	const end = text.startsWith("---") ? text.indexOf("\n---", 3) : -1;
	if (end === -1) return text;
	const lines = text.slice(0, end).split("\n");
	let dropping = false;
	const kept = lines.filter((line, i) => {
		const key = /^([A-Za-z][\w-]*):/.exec(line)?.[1];
		if (i > 0 && key !== undefined) dropping = !ALLOWED_FIELDS.includes(key);
		else if (!/^[ \t]/.test(line)) dropping = false;
		return !dropping;
	});
	return `${kept.join("\n")}${text.slice(end)}`;
}

/** Rules `after` breaks that `before` did not (compared by message; before undefined: a new skill). */
export function addedSpecBreaks(before: string | undefined, after: string, dirName: string): SpecBreak[] {
	const had = new Set(before === undefined ? [] : specBreaksOfText(before, dirName).map((b) => b.message));
	return specBreaksOfText(after, dirName).filter((b) => !had.has(b.message));
}
