// How skill_manage calls and results look in pi's TUI: the action with its skill and file; for a
// landed mutation the backups it took (with the command that puts each back) and a compact diff (the
// whole diff when expanded); refusals in the error colour; each /selfskills output, a panel of its own.

import type { AgentToolResult, Theme } from "@mariozechner/pi-coding-agent";
import { Box, Text } from "@mariozechner/pi-tui";
import { escapeControls } from "../checks/content-guard.ts";
import { clipDiff } from "../checks/diff.ts";
import { restoreCommand } from "./command-text.ts";

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
	// Arguments and file text are shown with control characters escaped: they must never drive the terminal.
	const subject = escapeControls(String(args.name ?? args.skill ?? args.path ?? ""));
	const parts = [
		theme.fg("toolTitle", theme.bold("skill_manage ")) +
			theme.fg("accent", escapeControls(String(args.action ?? "?"))),
	];
	if (subject) parts.push(theme.fg("muted", subject));
	if (args.file) parts.push(theme.fg("dim", escapeControls(String(args.file))));
	if (args.operations) parts.push(theme.fg("dim", `${args.operations.length} op(s)`));
	if (args.dry_run) parts.push(theme.fg("warning", "(dry run)"));
	return parts.join(" ");
}

function diffLineColour(line: string): "toolDiffAdded" | "toolDiffRemoved" | undefined {
	if (line.startsWith("+") && !line.startsWith("+++")) return "toolDiffAdded";
	if (line.startsWith("-") && !line.startsWith("---")) return "toolDiffRemoved";
	return undefined;
}

function colourDiff(diff: string, theme: Styler): string {
	return diff
		.split("\n")
		.map((line) => theme.fg(diffLineColour(line) ?? "toolDiffContext", line))
		.join("\n");
}

/** Backups listed under a landed change when collapsed; the rest are counted. */
const BACKUP_LINES = 3;

/** One dim line per file a landed change backed up: the backup's id and the command that puts it back. */
function backupLines(details: Record<string, unknown>, expanded: boolean, theme: Styler): string[] {
	const changes = Array.isArray(details.changes) ? (details.changes as Array<Record<string, unknown>>) : [];
	const lines = changes.flatMap((c) =>
		typeof c.backup === "string" && typeof c.skill === "string" && typeof c.file === "string"
			? [
					escapeControls(
						`backed up ${c.skill}/${c.file} as ${c.backup} (undo: ${restoreCommand(c.skill, c.file, c.backup)})`,
					),
				]
			: [],
	);
	const shown = expanded ? lines : lines.slice(0, BACKUP_LINES);
	const more = lines.length - shown.length;
	return [...shown, ...(more > 0 ? [`… ${more} more backup(s)`] : [])].map((line) => theme.fg("dim", line));
}

export function formatResult(result: AgentToolResult<unknown>, expanded: boolean, theme: Styler): string {
	const details = (result.details ?? {}) as Record<string, unknown>;
	const first = result.content.find((c) => c.type === "text");
	const text = escapeControls(first && first.type === "text" ? first.text : "");
	if (details.ok === false) return theme.fg("error", expanded ? text : (text.split("\n")[0] ?? ""));
	const diff = typeof details.diff === "string" ? escapeControls(details.diff) : "";
	const summary = text.split("\n")[0] ?? "";
	if (diff)
		return [
			theme.fg("success", summary),
			...backupLines(details, expanded, theme),
			colourDiff(expanded ? diff : clipDiff(diff, 12), theme),
		].join("\n");
	if (expanded) return text;
	const lines = text.split("\n");
	return lines.length > 6
		? `${lines.slice(0, 6).join("\n")}\n${theme.fg("dim", `… ${lines.length - 6} more line(s)`)}`
		: text;
}

export function renderSkillCall(args: CallArgs, theme: Theme): Text {
	return new Text(formatCall(args, theme), 0, 0);
}

export function renderSkillResult(
	result: AgentToolResult<unknown>,
	options: { expanded: boolean },
	theme: Theme,
): Text {
	return new Text(formatResult(result, options.expanded, theme), 0, 0);
}

export interface CommandOutputView {
	readonly content: unknown;
	readonly details?: unknown;
}

/** A /selfskills output: the command as its title, then the text, diff lines in the diff colours. */
export function formatCommandOutput(message: CommandOutputView, theme: Styler): string {
	const details = (message.details ?? {}) as { command?: unknown; level?: unknown };
	// The text quotes skill files and the typed command: their control characters must not drive the terminal.
	const command =
		typeof details.command === "string" && details.command !== "" ? ` ${escapeControls(details.command)}` : "";
	const colour = details.level === "error" ? "error" : details.level === "warning" ? "warning" : "customMessageText";
	const text = escapeControls(typeof message.content === "string" ? message.content : "");
	const body = text.split("\n").map((line) => theme.fg(diffLineColour(line) ?? colour, line));
	return [theme.fg("customMessageLabel", theme.bold(`/selfskills${command}`)), ...body].join("\n");
}

/** Styled like pi's own custom-message panel; the whole text, since the conversation scrolls. */
export function renderCommandOutput(message: CommandOutputView, options: { expanded: boolean }, theme: Theme): Box {
	// pi 1.6 passes the user's outputPad setting; pi 0.73 pads its panels by 1
	const pad = "outputPad" in options && typeof options.outputPad === "number" ? options.outputPad : 1;
	const box = new Box(pad, 1, (text) => theme.bg("customMessageBg", text));
	box.addChild(new Text(formatCommandOutput(message, theme), 0, 0));
	return box;
}
