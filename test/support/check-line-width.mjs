// `npm run format:check`, after biome: no line of the TypeScript sources and tests is wider than 120
// columns (a tab counts as 3, the indent width), which biome itself cannot ensure for long strings
// and comments. Prints each offending line and exits 1; plain JS so it runs without a TS loader.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const LIMIT = 120;
const files = execFileSync("git", ["ls-files", "src/*.ts", "test/*.ts"], { encoding: "utf8" })
	.split("\n")
	.filter((f) => f && !f.includes("node_modules/"));
let wide = 0;
for (const file of files) {
	readFileSync(file, "utf8")
		.split("\n")
		.forEach((line, i) => {
			const width = [...line.replaceAll("\t", "   ")].length;
			if (width > LIMIT) {
				wide++;
				console.error(`${file}:${i + 1}: ${width} columns`);
			}
		});
}
if (wide > 0) {
	console.error(`${wide} line(s) over ${LIMIT} columns`);
	process.exit(1);
}
console.log(`${files.length} files, no line over ${LIMIT} columns`);
