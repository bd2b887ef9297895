// Turns a child script and every .ts module it imports (relative imports only, type-only imports
// skipped) into plain .js in a temp folder with TypeScript's own transpiler, so each crash child
// starts as bare `node` (tens of ms) instead of loading tsx; the crash sweep spawns dozens.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const IMPORT = /^import\s+(type\s+)?[^;]*?from\s+"(\.{1,2}\/[^"]+\.ts)";/gm;

/** Returns the path of the entry's .js inside `outDir`; paths keep their place relative to `root`. */
export function transpileTree(entry: string, root: string, outDir: string): string {
	const seen = new Set<string>();
	const queue = [resolve(entry)];
	while (queue.length > 0) {
		const file = queue.pop() as string;
		if (seen.has(file)) continue;
		seen.add(file);
		const source = readFileSync(file, "utf8");
		for (const match of source.matchAll(IMPORT)) if (!match[1]) queue.push(resolve(dirname(file), match[2]));
		const { outputText } = ts.transpileModule(source, {
			fileName: file,
			compilerOptions: {
				module: ts.ModuleKind.ESNext,
				target: ts.ScriptTarget.ES2022,
				verbatimModuleSyntax: true,
				rewriteRelativeImportExtensions: true,
			},
		});
		const out = join(outDir, relative(root, file)).replace(/\.ts$/, ".js");
		mkdirSync(dirname(out), { recursive: true });
		writeFileSync(out, outputText);
	}
	writeFileSync(join(outDir, "package.json"), '{"type":"module"}\n');
	return join(outDir, relative(root, resolve(entry))).replace(/\.ts$/, ".js");
}
