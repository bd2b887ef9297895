// Text from the agent shown to the person (a reason, a diff, a file or skill name): control characters
// escaped, so it never drives the person's terminal (ESC, OSC 52, a lone CR), and bounded, so a 1 MB
// reason or diff is never shown whole. Escaping is idempotent: text escaped when stored shows the same.

import { clipText, escapeControls, READ_CHAR_LIMIT } from "./content-guard.ts";

/** The most of a `reason` shown or kept in a proposal. */
export const MAX_REASON_CHARS = 500;
/** The most of a name (skill, file, path, id) shown. */
const MAX_NAME_CHARS = 300;

const hex = (char: string) => `\\u${(char.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`;

/** One line of agent text: escaped like file text, and its tabs and newlines too (it cannot fake lines). */
function escapeLine(text: string): string {
	return escapeControls(text).replace(/[\t\n\r]/g, hex);
}

function cut(text: string, limit: number, what: string): string {
	return text.length <= limit
		? text
		: `${text.slice(0, limit)}… [${what} cut at ${limit} of ${text.length} characters]`;
}

/** A reason as shown and as a proposal keeps it: one escaped line of at most 500 characters. */
export function shownReason(reason: string): string {
	return cut(escapeLine(reason), MAX_REASON_CHARS, "reason");
}

/** A skill, file or proposal name as shown: one escaped line, bounded. */
export function shownName(name: string): string {
	return cut(escapeLine(name), MAX_NAME_CHARS, "name");
}

/** A diff as shown: escaped (tab and newline kept), cut at the read limit with a note. */
export function shownDiff(diff: string): string {
	return clipText(escapeControls(diff), READ_CHAR_LIMIT, "diff");
}
