// Loaded with `node --import` for the pi 1.6 test run: installs pi16-resolve-hooks.mjs so that
// `@mariozechner/pi-*`, `typebox` and `@sinclair/typebox` resolve to the same files pi 1.6's extension
// loader (jiti aliases, dist/core/extensions/loader.js getAliases) hands to extensions.
import { register } from "node:module";

register("./pi16-resolve-hooks.mjs", import.meta.url);
process.env.SELFSKILLS_PI_LINE ??= "1.6";
