// How skill_manage calls and results look in pi's TUI: the action with its skill and file, for a
// landed mutation a compact diff (the whole diff when expanded), refusals in the error colour.

import type { AgentToolResult, Theme } from "@mariozechner/pi-coding-agent";
import { Text } from "@mariozechner/pi-tui";
import { clipDiff } from "./diff.ts";

interface CallArgs {
	readonly action?: string;
	readonly skill?: string;
	readonly path?: string;
	readonly file?: string;
	readonly name?: string;
	readonly operations?: readonly unknown[];
	readonly dry_run?: boolean;
}

type Styler = Pick<Theme, "fg" | "bold">;

export function formatCall(args: CallArgs, theme: Styler): string {
	const subject = args.name ?? args.skill ?? args.path ?? "";
	const parts = [theme.fg("toolTitle", theme.bold("skill_manage ")) + theme.fg("accent", args.action ?? "?")];
	if (subject) parts.push(theme.fg("muted", subject));
	if (args.file) parts.push(theme.fg("dim", args.file));
	if (args.operations) parts.push(theme.fg("dim", `${args.operations.length} op(s)`));
	if (args.dry_run) parts.push(theme.fg("warning", "(dry run)"));
	return parts.join(" ");
}

function colourDiff(diff: string, theme: Styler): string {
	return diff
		.split("\n")
		.map((line) => {
			if (line.startsWith("+") && !line.startsWith("+++")) return theme.fg("toolDiffAdded", line);
			if (line.startsWith("-") && !line.startsWith("---")) return theme.fg("toolDiffRemoved", line);
			return theme.fg("toolDiffContext", line);
		})
		.join("\n");
}

export function formatResult(result: AgentToolResult<unknown>, expanded: boolean, theme: Styler): string {
	const details = (result.details ?? {}) as Record<string, unknown>;
	const first = result.content.find((c) => c.type === "text");
	const text = first && first.type === "text" ? first.text : "";
	if (details.ok === false) return theme.fg("error", expanded ? text : (text.split("\n")[0] ?? ""));
	const diff = typeof details.diff === "string" ? details.diff : "";
	const summary = text.split("\n")[0] ?? "";
	if (diff) return `${theme.fg("success", summary)}\n${colourDiff(expanded ? diff : clipDiff(diff, 12), theme)}`;
	if (expanded) return text;
	const lines = text.split("\n");
	return lines.length > 6 ? `${lines.slice(0, 6).join("\n")}\n${theme.fg("dim", `… ${lines.length - 6} more line(s)`)}` : text;
}

export function renderSkillCall(args: CallArgs, theme: Theme): Text {
	return new Text(formatCall(args, theme), 0, 0);
}

export function renderSkillResult(result: AgentToolResult<unknown>, options: { expanded: boolean }, theme: Theme): Text {
	return new Text(formatResult(result, options.expanded, theme), 0, 0);
}
