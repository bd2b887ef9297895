// The multi-file commit the crash tests kill: five files in three skills (two patched SKILL.md
// files, an overwritten and a new bundled file in new folders, an executable file deleted), as
// old and new trees, plus the plan that turns one into the other. No pi import: the child that
// runs it must start fast, since it is spawned once per kill point.
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { skillText, writeFile, writeSkill } from "../support/fixtures.ts";
import type { CommitPlan, FileChange } from "../../src/pipeline/types.ts";

export interface ScenarioFile {
	readonly skill: string;
	readonly relPath: string;
	readonly old: string | null;
	readonly new: string | null;
	readonly mode: number;
}

const oneStep = (name: string, text: string) => skillText(name, `# ${name}\n\n1. ${text}\n`);

export const SCENARIO: readonly ScenarioFile[] = [
	{
		skill: "alpha",
		relPath: "SKILL.md",
		old: oneStep("alpha", "Run npm build."),
		new: oneStep("alpha", "Run npm run build."),
		mode: 0o644,
	},
	{
		skill: "alpha",
		relPath: "references/notes.md",
		old: "old notes\n",
		new: "new notes, longer than before\n",
		mode: 0o640,
	},
	{
		skill: "beta",
		relPath: "SKILL.md",
		old: oneStep("beta", "Check the page."),
		new: oneStep("beta", "Check the health endpoint."),
		mode: 0o644,
	},
	{ skill: "beta", relPath: "scripts/old.sh", old: "#!/bin/sh\necho old\n", new: null, mode: 0o755 },
	{ skill: "gamma", relPath: "references/new/deep.md", old: null, new: "a new file in new folders\n", mode: 0o644 },
];
/** gamma's SKILL.md is never touched; it makes gamma a skill folder. */
const GAMMA = oneStep("gamma", "Stay as you are.");

export const skillsDir = (agentDir: string) => join(agentDir, "skills");
const absPath = (agentDir: string, f: { skill: string; relPath: string }) =>
	join(skillsDir(agentDir), f.skill, ...f.relPath.split("/"));

/** Writes the old tree. */
export function writeOldTree(agentDir: string): void {
	writeSkill(skillsDir(agentDir), "gamma", GAMMA);
	for (const f of SCENARIO) if (f.old !== null) writeFile(absPath(agentDir, f), f.old, f.mode);
}

export function scenarioPlan(agentDir: string): CommitPlan {
	const changes: FileChange[] = SCENARIO.map((f) => ({
		skill: f.skill,
		relPath: f.relPath,
		absPath: absPath(agentDir, f),
		before: f.old === null ? null : Buffer.from(f.old),
		after: f.new === null ? null : Buffer.from(f.new),
		mode: f.old === null ? f.mode : undefined,
		expectName: f.relPath === "SKILL.md" ? f.skill : undefined,
	}));
	return { changes, snapshots: [], removeDirs: [] };
}

/** Every file under the skills folder (temp files and empty folders included) with bytes and mode. */
export function snapshotTree(agentDir: string): Record<string, string> {
	const out: Record<string, string> = {};
	const walk = (dir: string) => {
		const names = readdirSync(dir).sort();
		if (names.length === 0) out[`${relative(skillsDir(agentDir), dir)}/`] = "(empty folder)";
		for (const name of names) {
			const path = join(dir, name);
			const stat = lstatSync(path);
			if (stat.isDirectory()) walk(path);
			else
				out[relative(skillsDir(agentDir), path)] =
					`${(stat.mode & 0o777).toString(8)} ${readFileSync(path, "utf8")}`;
		}
	};
	walk(skillsDir(agentDir));
	return out;
}

/** The tree as it must be before (all-old) or after (all-new) the commit. */
export function expectedTree(side: "old" | "new"): Record<string, string> {
	const out: Record<string, string> = { "gamma/SKILL.md": `644 ${GAMMA}` };
	for (const f of SCENARIO) {
		const text = side === "old" ? f.old : f.new;
		if (text !== null) out[`${f.skill}/${f.relPath}`] = `${f.mode.toString(8)} ${text}`;
	}
	if (side === "new") out["beta/scripts/"] = "(empty folder)";
	return out;
}
