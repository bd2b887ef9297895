// `/selfskills doctor`: a read-only report on the skill library for the person, each line with its
// next step (a subcommand where one exists, else the file to look at): near-duplicate pairs, Agent
// Skills rule violations, skills unused for 30 days, SKILL.md files over 500 lines, links to bundled
// files that do not exist, proposals pending for more than 7 days. Nothing is moved or changed.

import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { CallContext } from "../pipeline/call-context.ts";
import { similarPairs } from "../checks/similarity.ts";
import { specBreaksOfText } from "../checks/spec-rules.ts";
import { DEFAULT_SIMILARITY } from "../policy/settings.ts";
import { findUnused, readUsage } from "../store/usage.ts";
import { listProposals } from "../store/proposals.ts";
import { escapeControls } from "../checks/content-guard.ts";
import type { DiscoveredSkill } from "../policy/discovery.ts";

/** This package's own folder: its bundled doc-skill is never a candidate for pruning. */
const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

const UNUSED_DAYS = 30;
const MAX_LINES = 500;
const PENDING_DAYS = 7;

/** Relative Markdown link targets of a text: `[x](references/a.md)`, not URLs, anchors or absolute paths. */
function relativeLinks(text: string): string[] {
	const out: string[] = [];
	for (const match of text.matchAll(/\]\(\s?<?([^)\s>#?]{1,300})/g)) {
		const target = match[1];
		if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("/") || target.startsWith("~")) continue;
		out.push(target);
	}
	return [...new Set(out)];
}

/** The report's lines, each with its next step; "no problems found" when there is none. */
export function doctorReport(ctx: CallContext, now = new Date()): string {
	const skills = ctx.discovery.skills;
	const lines: string[] = [];
	const threshold = ctx.settings.similarity === false ? DEFAULT_SIMILARITY : ctx.settings.similarity;
	const cards = skills.map((s) => ({ name: s.name, description: s.description, path: s.filePath }));
	for (const pair of similarPairs(cards, threshold))
		lines.push(
			`near-duplicates: ${pair.a.name} and ${pair.b.name} (score ${pair.score.toFixed(2)}) — ` +
				`compare ${pair.a.path} with ${pair.b.path}; merge them or sharpen one description`,
		);
	for (const skill of skills) {
		let text: string;
		try {
			text = ctx.fs.readFile(skill.filePath).toString("utf8");
		} catch {
			continue;
		}
		const dir = skill.dir ?? dirname(skill.filePath);
		for (const broken of specBreaksOfText(text, skill.dir ? (dir.split("/").pop() ?? "") : skill.name))
			lines.push(
				`rule: ${skill.name}: ${escapeControls(broken.message)} — fix the frontmatter in ${skill.filePath}`,
			);
		const count = text.split("\n").length;
		if (count > MAX_LINES)
			lines.push(
				`long: ${skill.name}: SKILL.md has ${count} lines (guidance: at most ${MAX_LINES}) — ` +
					`move detail into references/ files, in ${skill.filePath}`,
			);
		if (!skill.dir) continue;
		for (const link of relativeLinks(text)) {
			const target = resolve(dir, decodeURIComponent(link));
			let present = false;
			try {
				ctx.fs.lstat(target);
				present = true;
			} catch {
				present = false;
			}
			if (!present)
				lines.push(
					`broken link: ${skill.name}: ${escapeControls(link)} does not exist — ` +
						`fix the link or add the file, in ${join(dir, "SKILL.md")}`,
				);
		}
	}
	for (const unused of findPrunable(ctx, UNUSED_DAYS, now))
		lines.push(
			`unused: ${unused.skill.name}: ${unused.last ? `last used ${unused.last.slice(0, 10)}` : "never used"} — ` +
				`if you no longer want it, delete its folder ${unused.skill.dir ?? unused.skill.filePath}`,
		);
	const cutoff = now.getTime() - PENDING_DAYS * 86_400_000;
	for (const proposal of listProposals(ctx.fs, ctx.agentDir))
		if (Date.parse(proposal.time) < cutoff)
			lines.push(
				`old proposal: ${proposal.id} (${proposal.action} of ${proposal.skills.join(", ")}) pending since ` +
					`${proposal.time.slice(0, 10)} — /selfskills show ${proposal.id}, then approve or reject it`,
			);
	if (lines.length === 0) return `selfskills doctor: ${skills.length} skills checked, no problems found.`;
	return [
		`selfskills doctor: ${skills.length} skills checked, ${lines.length} finding(s) (nothing was changed):`,
		...lines.map((l) => `  ${l}`),
	].join("\n");
}

/**
 * Skills not used for `days` that the person might prune: never this package's own doc-skill, never
 * a skill created or changed within `days` (its SKILL.md's modification time), never one pi
 * loads from an npm package (pi installs those). Oldest use first.
 */
export function findPrunable(
	ctx: CallContext,
	days: number,
	now = new Date(),
): Array<{ skill: DiscoveredSkill; last: string | undefined }> {
	const cutoff = now.getTime() - days * 86_400_000;
	const byName = new Map<string, DiscoveredSkill>();
	for (const skill of ctx.discovery.skills) {
		if (skill.filePath.startsWith(PACKAGE_DIR + sep) || skill.filePath.includes(`${sep}node_modules${sep}`)) continue;
		if ((ctx.fs.stat(skill.filePath)?.mtimeMs ?? 0) > cutoff) continue;
		if (!byName.has(skill.name)) byName.set(skill.name, skill);
	}
	return findUnused(readUsage(ctx.fs, ctx.agentDir), [...byName.keys()], days, now).flatMap((u) => {
		const skill = byName.get(u.skill);
		return skill ? [{ skill, last: u.last }] : [];
	});
}
