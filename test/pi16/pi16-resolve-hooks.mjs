// ESM resolve hook for the pi 1.6 run. Mirrors the alias table of pi 1.6's extension loader so a module
// imported by a test and the same module seen by an extension loaded through pi are one instance.
// Example: `@mariozechner/pi-ai` -> test/pi16/node_modules/@earendil-works/pi-coding-agent/dist/core/extensions/pi-ai-extension-view.js

const pi16Root = new URL("./node_modules/", import.meta.url);
const codingAgentDir = new URL("@earendil-works/pi-coding-agent/", pi16Root);
/** Resolving from inside pi 1.6's coding-agent package finds its own typebox and its siblings. */
const codingAgentParent = new URL("package.json", codingAgentDir).href;

/** Specifiers mapped to a fixed file (the loader's alias targets, not the package's public exports). */
const FIXED = {
	"@mariozechner/pi-coding-agent": new URL("dist/index.js", codingAgentDir).href,
	"@mariozechner/pi-ai": new URL("dist/core/extensions/pi-ai-extension-view.js", codingAgentDir).href,
	"@mariozechner/pi-ai/compat": new URL("dist/core/extensions/pi-ai-extension-view.js", codingAgentDir).href,
};

/** Specifiers renamed, then resolved from pi 1.6's coding-agent package. */
function rename(specifier) {
	if (specifier.startsWith("@mariozechner/pi-")) return specifier.replace("@mariozechner/", "@earendil-works/");
	if (specifier === "@sinclair/typebox" || specifier.startsWith("@sinclair/typebox/")) return specifier.replace("@sinclair/typebox", "typebox");
	if (specifier === "typebox" || specifier.startsWith("typebox/")) return specifier;
	return undefined;
}

export async function resolve(specifier, context, nextResolve) {
	const fixed = FIXED[specifier];
	if (fixed) return { url: fixed, shortCircuit: true, format: "module" };
	const renamed = rename(specifier);
	if (renamed === undefined) return nextResolve(specifier, context);
	return nextResolve(renamed, { ...context, parentURL: codingAgentParent });
}

