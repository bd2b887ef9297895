// What a valid skill is, decided by the running pi's own loader (loadSkills on a temp copy
// named like the real folder), plus the stricter rules both pi lines must agree on. A change
// may not add a diagnostic the file did not already have. For the usual YAML pitfalls the
// refusal carries a corrected frontmatter, built deterministically and re-checked by pi.

import { accessSync, constants, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadSkills, parseFrontmatter } from "@mariozechner/pi-coding-agent";
import type { SkillDiagnostic } from "../base/errors.ts";
import { isProcessAlive } from "../base/writer.ts";

export const NAME_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/;
export const MAX_NAME = 64;
export const MAX_DESCRIPTION = 1024;
export const MAX_COMPATIBILITY = 500;

/**
 * One scratch folder per process, shared by every copy of this module (pi loads the extension
 * afresh for each session and on /reload): one exit handler, one folder to remove.
 */
interface Scratch {
	root?: string;
	readonly parents: Map<string, string>;
}
const SCRATCH = Symbol.for("pi-selfskills.validation-scratch");
const holder = globalThis as { [SCRATCH]?: Scratch };
holder[SCRATCH] ??= { parents: new Map() };
const scratch: Scratch = holder[SCRATCH];

/** Memory-backed /dev/shm where there is one (a check writes a file each time), else the temp folder. */
function scratchBase(): string {
	try {
		if (statSync("/dev/shm").isDirectory()) {
			accessSync("/dev/shm", constants.W_OK);
			return "/dev/shm";
		}
	} catch {
		// No /dev/shm here.
	}
	return tmpdir();
}

const SCRATCH_PREFIX = "selfskills-validate-";

/** Removed at exit; a process killed before that leaves its folder to the next one's sweep. */
function createScratchRoot(): string {
	const base = scratchBase();
	for (const name of readdirSync(base)) {
		const pid = Number(/^selfskills-validate-(\d+)-/.exec(name)?.[1]);
		if (pid && pid !== process.pid && !isProcessAlive(pid))
			rmSync(join(base, name), { recursive: true, force: true });
	}
	const root = mkdtempSync(join(base, `${SCRATCH_PREFIX}${process.pid}-`));
	process.once("exit", () => rmSync(root, { recursive: true, force: true }));
	return root;
}

/**
 * A private folder (mode 0700) holding only `<dirName>/SKILL.md`, reused for every check under
 * that name and removed when the process exits: creating and removing files per check cost
 * more than pi's loader itself.
 */
function scratchParent(dirName: string): string {
	scratch.root ??= createScratchRoot();
	let parent = scratch.parents.get(dirName);
	if (parent === undefined) {
		parent = join(scratch.root, String(scratch.parents.size));
		scratch.parents.set(dirName, parent);
	}
	mkdirSync(join(parent, dirName), { recursive: true });
	return parent;
}

/** Problems with a skill name, per the Agent Skills rules (empty when fine). */
export function nameProblems(name: string): string[] {
	const problems: string[] = [];
	if (name.length === 0) problems.push("it is empty");
	if (name.length > MAX_NAME) problems.push(`it has ${name.length} characters, over ${MAX_NAME}`);
	if (name.length > 0 && !NAME_PATTERN.test(name))
		problems.push("only lowercase a-z, 0-9 and single inner hyphens are allowed");
	return problems;
}

/**
 * `compute` remembered for the last four texts: one patch asks about its before and after text
 * several times, and `===` on two equal strings is a memory compare, far cheaper than hashing or
 * parsing a 1 MB text again.
 */
function lastFew<T>(compute: (text: string) => T): (text: string) => T {
	const recent: Array<{ text: string; value: T }> = [];
	return (text) => {
		const known = recent.find((r) => r.text === text);
		if (known) return known.value;
		const value = compute(text);
		recent.unshift({ text, value });
		if (recent.length > 4) recent.pop();
		return value;
	};
}

/**
 * The frontmatter pi's parser reads from `text` (a leading byte order mark dropped), undefined when
 * it throws; a patch asks for its after text's three times (rules, name, description).
 */
export const frontmatterOf = lastFew((text): Readonly<Record<string, unknown>> | undefined => {
	try {
		return parseFrontmatter<Record<string, unknown>>(text.replace(/^\uFEFF/, "")).frontmatter;
	} catch {
		return undefined;
	}
});

/** The package's own rules, applied on every pi line (1.6's loader is looser than 0.73's). */
function strictDiagnostics(content: string, dirName: string): SkillDiagnostic[] {
	const out: SkillDiagnostic[] = [];
	if (content.startsWith("\uFEFF")) out.push({ type: "warning", message: "file starts with a byte order mark" });
	const fm = frontmatterOf(content);
	if (!fm) return out;
	const { name, description, compatibility } = fm;
	if (name !== undefined && typeof name !== "string") out.push({ type: "warning", message: "name must be a string" });
	if (typeof name === "string") {
		for (const p of nameProblems(name)) out.push({ type: "warning", message: `name "${name}": ${p}` });
		if (name !== dirName)
			out.push({ type: "warning", message: `name "${name}" does not match its folder "${dirName}"` });
	}
	if (description !== undefined && typeof description !== "string")
		out.push({ type: "warning", message: "description must be a string" });
	if (typeof description === "string" && description.length > MAX_DESCRIPTION) {
		out.push({
			type: "warning",
			message: `description exceeds ${MAX_DESCRIPTION} characters (${description.length})`,
		});
	}
	if (typeof compatibility === "string" && compatibility.length > MAX_COMPATIBILITY) {
		out.push({
			type: "warning",
			message: `compatibility exceeds ${MAX_COMPATIBILITY} characters (${compatibility.length})`,
		});
	}
	out.push(...plainValueSurprises(content.replace(/^\uFEFF/, ""), fm));
	return out;
}

/**
 * Top-level unquoted values YAML reads as something other than what is written: the text after
 * " #" is a comment, a leading & or ! is an anchor or a tag. pi loads such a skill without a word,
 * so the description the agent wrote would silently lose its end.
 */
function plainValueSurprises(content: string, fm: Readonly<Record<string, unknown>>): SkillDiagnostic[] {
	const text = content.replace(/\r\n?/g, "\n");
	const end = text.indexOf("\n---", 3);
	if (!text.startsWith("---\n") || end === -1) return [];
	const lines = text.slice(4, end).split("\n");
	return lines.flatMap((line, i) => {
		const match = TOP_LEVEL_SCALAR.exec(line);
		if (!match) return [];
		const written = match[2].trim();
		// Quoted and block values say what they mean; an indented next line continues the value.
		if (/^["'|>]/.test(written) || /^\s/.test(lines[i + 1] ?? "")) return [];
		const parsed = fm[match[1]];
		if (typeof parsed !== "string" || parsed === written) return [];
		return [
			{
				type: "warning",
				message:
					`${match[1]}: YAML reads ${JSON.stringify(written)} as ${JSON.stringify(parsed)} ` +
					`(" #" starts a comment, a leading & or ! is YAML syntax); quote the value`,
			},
		];
	});
}

export interface SkillCheck {
	/** The name pi would load the skill under, when it loads at all. */
	readonly name: string | undefined;
	/** The description pi would load, when it loads at all. */
	readonly description: string | undefined;
	readonly diagnostics: readonly SkillDiagnostic[];
	/** pi's loader's own diagnostics, in its order (a discovery lists these for the file; no strict rules). */
	readonly loaderDiagnostics: readonly SkillDiagnostic[];
}

/**
 * Loads `content` as `<dirName>/SKILL.md` with pi's loader on a scratch copy and adds the strict
 * rules. A caller works the answer out once per text and passes it along.
 */
export function checkSkillContent(content: string, dirName: string): SkillCheck {
	const dir = scratchParent(dirName);
	const file = join(dir, dirName, "SKILL.md");
	writeFileSync(file, content);
	// The file itself, as a settings `skills` entry naming it: pi's per-file loader without a folder walk.
	const { skills, diagnostics } = loadSkills({ cwd: dir, agentDir: dir, skillPaths: [file], includeDefaults: false });
	const loaderDiagnostics = diagnostics.map((d) => ({ type: d.type, message: d.message }));
	const piDiagnostics = [...loaderDiagnostics];
	if (skills.length !== 1) piDiagnostics.push({ type: "error", message: "pi does not load it as a skill" });
	const strict = strictDiagnostics(content, dirName).filter(
		(s) => !piDiagnostics.some((p) => p.message === s.message),
	);
	return {
		name: skills[0]?.name,
		description: skills[0]?.description,
		diagnostics: [...piDiagnostics, ...strict],
		loaderDiagnostics,
	};
}

/** Diagnostics in `after` that `before` did not have (compared by message). */
export function newDiagnostics(
	before: readonly SkillDiagnostic[],
	after: readonly SkillDiagnostic[],
): SkillDiagnostic[] {
	const known = new Set(before.map((d) => d.message));
	return after.filter((d) => !known.has(d.message));
}

const NEEDS_QUOTES = /(: |\s#|^[[\]{}&*!|>'"%@`,?-]\s?|:$)/;
const TOP_LEVEL_SCALAR = /^([A-Za-z][\w-]*):[ \t]+(.+)$/;

/**
 * A corrected frontmatter for the usual YAML pitfalls (tabs, an unquoted ": " or " #" in a
 * value, a missing description), or undefined when pi would still refuse it.
 */
export function suggestFrontmatter(
	content: string,
	dirName: string,
	fallbackDescription: string | undefined,
): string | undefined {
	const text = content.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
	if (!text.startsWith("---\n")) return undefined;
	const end = text.indexOf("\n---", 3);
	if (end === -1) return undefined;
	const lines = text
		.slice(4, end)
		.split("\n")
		.map((line) => line.replace(/^\t+/, (tabs) => "  ".repeat(tabs.length)));
	const fixed = lines.map((line) => {
		const match = TOP_LEVEL_SCALAR.exec(line);
		if (!match) return line;
		const value = match[2].trim();
		if (/^["']/.test(value) || /^[|>][-+]?\d?$/.test(value) || !NEEDS_QUOTES.test(value)) return line;
		return `${match[1]}: ${JSON.stringify(value)}`;
	});
	if (!fixed.some((line) => /^description:\s*\S/.test(line))) {
		const description = fallbackDescription ?? "Use when <the situation this skill is for>. <What it does>.";
		const withoutEmpty = fixed.filter((line) => !/^description:\s*$/.test(line));
		fixed.splice(0, fixed.length, ...withoutEmpty, `description: ${JSON.stringify(description)}`);
	}
	const frontmatter = `---\n${fixed.join("\n")}\n---`;
	const candidate = `${frontmatter}${text.slice(end + 4)}`;
	const check = checkSkillContent(candidate, dirName);
	const broken = check.diagnostics.some((d) => /yaml|required|not load|parse/i.test(d.message));
	return broken || check.name === undefined ? undefined : frontmatter;
}

export interface LandedCheck {
	readonly loaded: boolean;
	readonly name: string | undefined;
	readonly description: string | undefined;
	readonly diagnostics: readonly SkillDiagnostic[];
}

/** Loads the skill again from its real place, exactly as pi would at startup. */
export function checkLanded(filePath: string, cwd: string, agentDir: string): LandedCheck {
	const { skills, diagnostics } = loadSkills({ cwd, agentDir, skillPaths: [filePath], includeDefaults: false });
	const mine = diagnostics.map((d) => ({ type: d.type, message: d.message }));
	return {
		loaded: skills.length === 1,
		name: skills[0]?.name,
		description: skills[0]?.description,
		diagnostics: mine,
	};
}

function frontmatterField(text: string, key: string): string | undefined {
	const value = frontmatterOf(text)?.[key];
	return typeof value === "string" ? value : undefined;
}

/** The description a skill file's frontmatter holds, as pi's parser reads it. */
export const descriptionOf = (text: string): string | undefined => frontmatterField(text, "description");

/** The name pi loads a skill file under: its frontmatter name, else its folder's name. */
export const loadedNameOf = (text: string, dirName: string): string => frontmatterField(text, "name") || dirName;
