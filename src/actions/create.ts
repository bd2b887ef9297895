// `create`: a new <skillsDir>/<name>/SKILL.md whose frontmatter the tool serialises itself (so
// colons, quotes and newlines in the description are safe), accepted only when pi's loader
// reports no diagnostic at all and no skill of that name exists anywhere pi looks.

import { join } from "node:path";
import { stringify } from "yaml";
import type { CallContext, PlanInput, PreparedMutation } from "../pipeline/call-context.ts";
import { checkSize, checkUnsafe, checkIsText, encodeText, escapeControls } from "../checks/content-guard.ts";
import { skillNamed } from "../policy/discovery.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import {
	checkRisk,
	checkSimilar,
	checkSpec,
	checkWritable,
	writableInput,
	GATE_ORDER,
	humanGates,
	runGates,
} from "../pipeline/gates.ts";
import { newSkillTarget, SKILL_FILE, type NewSkillTarget } from "../policy/target.ts";
import { checkSkillContent, nameProblems } from "../checks/validation.ts";
import type { Plan } from "../pipeline/types.ts";

export interface CreateArgs {
	readonly name: string;
	readonly description: string;
	readonly body: string;
	/** Skills the agent says this one differs from (with a reason): left out of the near-duplicate check. */
	readonly distinct_from?: readonly string[];
}

/**
 * SKILL.md text for a new skill: YAML frontmatter written by the yaml library (or, `quoted`, the
 * description as a JSON string, which YAML reads as a double-quoted scalar), then the body.
 */
export function renderSkillFile(name: string, description: string, body: string, quoted = false): string {
	const frontmatter = quoted
		? `name: ${name}\ndescription: ${JSON.stringify(description)}\n`
		: stringify({ name, description }, { lineWidth: 0 });
	const text = body.replace(/^\s*\n/, "").replace(/\s+$/, "");
	return `---\n${frontmatter}---\n\n${text}\n`;
}

/**
 * The SKILL.md text whose description pi reads back exactly as the agent wrote it, or a refusal.
 * The yaml library quotes what needs it (" #", a leading > | & * !, ": "), but a block value at
 * the end of the frontmatter can lose a trailing newline to pi's parser: then the description is
 * written JSON-quoted, and is refused only if even that does not read back.
 */
function renderExact(args: CreateArgs, path: string): string | Refusal {
	let text = renderSkillFile(args.name, args.description, args.body);
	let check = checkSkillContent(text, args.name);
	if (check.diagnostics.length === 0 && check.description !== args.description) {
		text = renderSkillFile(args.name, args.description, args.body, true);
		check = checkSkillContent(text, args.name);
	}
	if (check.diagnostics.length > 0 || check.name !== args.name) return refusals.invalidSkill(path, check.diagnostics);
	if (check.description !== args.description) {
		const read = [
			{
				type: "error",
				message:
					"pi would read the description as " +
					`${escapeControls(JSON.stringify(check.description ?? null))}, not as written`,
			},
		];
		return refusals.invalidSkill(
			path,
			read,
			`---\nname: ${args.name}\ndescription: ${JSON.stringify(args.description.trim())}\n---`,
		);
	}
	return text;
}

export function prepareCreate(ctx: CallContext, args: CreateArgs): PreparedMutation | Refusal {
	const problems = nameProblems(args.name);
	if (problems.length > 0) return refusals.invalidName(args.name, problems);
	if (args.description.trim() === "")
		return refusals.invalidArguments("create", "description is empty; say what the skill does and when to use it");
	if (args.body.trim() === "")
		return refusals.invalidArguments("create", "body is empty; write the procedure the skill teaches");
	const unsafe =
		checkIsText("description", args.description) ??
		checkIsText("body", args.body) ??
		checkUnsafe("description", args.description) ??
		checkUnsafe("body", args.body);
	if (unsafe) return unsafe;
	const existing = skillNamed(ctx.discovery.skills, args.name);
	if (existing) return refusals.exists(args.name, existing.filePath);
	const target = newSkillTarget(args.name, join(ctx.settings.skillsDir, args.name));
	return {
		action: "create",
		skill: args.name,
		file: SKILL_FILE,
		paths: [target.absPath],
		plan: (input) => planCreate(ctx, args, target, input),
	};
}

function planCreate(ctx: CallContext, args: CreateArgs, target: NewSkillTarget, input: PlanInput): Plan | Refusal {
	const { view } = input;
	// The SKILL.md text pi reads back as written (gate 6 asks pi's loader): worked out once, when first needed.
	let rendered: string | Refusal | undefined;
	const render = (): string | Refusal => (rendered ??= renderExact(args, target.absPath));
	const refused = runGates(GATE_ORDER.create, {
		// A skill this package creates is its own: approval for "own" decides.
		...humanGates(ctx, input, { name: args.name, dir: target.dir, created: true }),
		exists: () =>
			view.read(target.absPath) !== null || view.mode(target.dir) !== undefined
				? refusals.exists(args.name, target.dir)
				: undefined,
		writable: () => checkWritable(writableInput(ctx), target),
		size: () => checkSize(target.absPath, renderSkillFile(args.name, args.description, args.body)),
		spec: () =>
			checkSpec(target.absPath, undefined, renderSkillFile(args.name, args.description, args.body, true), args.name),
		valid: () => {
			const text = render();
			return typeof text === "string" ? undefined : text;
		},
		similar: () => checkSimilar(ctx, { name: args.name, description: args.description }, args.distinct_from ?? []),
		// The name and the description are in `text` (its frontmatter): they count like the body.
		risk: () => {
			const text = render();
			return typeof text === "string"
				? checkRisk(ctx, input, {
						skill: args.name,
						file: SKILL_FILE,
						path: target.absPath,
						before: undefined,
						after: text,
					})
				: text;
		},
	});
	if (refused) return refused;
	const text = render();
	if (typeof text !== "string") return text;
	return {
		action: "create",
		skill: args.name,
		changes: [
			{
				skill: args.name,
				relPath: SKILL_FILE,
				absPath: target.absPath,
				before: null,
				after: encodeText(text),
				mode: 0o644,
				expectName: args.name,
			},
		],
		note:
			"pi lists the new skill after /reload; " +
			"until then it is named in the selfskills block of the system prompt.",
	};
}
