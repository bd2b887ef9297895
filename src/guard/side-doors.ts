// The side doors: pi's own `edit`, `write` and `bash` reach the same skill files as skill_manage.
// The same watch counts a use of a skill each time pi's `read` loads its skill file (usage.ts).
// A `tool_call` handler finds the skill files a call would change (paths resolved as pi resolves
// them, symlinks followed) and, per `selfskills.guardBuiltins`, blocks the call, or backs the files
// up first and checks the skill once the result is back (audit line with `via`, changed event, a
// warning appended when the skill no longer loads). While a control is on (controlIsOn), nothing
// of the protected set (protected-set.ts) may change through them, and edit and write change only the
// writable places (writable.ts); bash runs in the sandbox (bash-tool.ts), or, without one, is matched
// best effort (bash-writes.ts). A protected folder moved since the session started stops all three.

import { basename, dirname, join, relative } from "node:path";
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { appendAudit, type ChangeRecord } from "../store/audit.ts";
import { createBackupStore, skillKey } from "../store/backup-store.ts";
import { findBashWrites, findSelfApproval, selfApprovalReason } from "./bash-writes.ts";
import { loadPolicy } from "../pipeline/call-context.ts";
import type { FsOps } from "../base/fs-ops.ts";
import { tryRead, walkTree } from "../base/fs-reads.ts";
import { originOfSkill } from "../store/origins.ts";
import { isWithin, resolveReal } from "../base/paths.ts";
import { sha256 } from "../base/hash.ts";
import type { SessionState } from "../pipeline/session-state.ts";
import {
	controlIsOn,
	findPin,
	getGlobalSettingsPath,
	requiredApproval,
	type SelfSkillsSettings,
} from "../policy/settings.ts";
import type { ProtectedPlace, ProtectedSet } from "./protected-set.ts";
import { type Boundary, type CallPlaces, createBoundary } from "./boundary.ts";
import { describeWritable } from "./writable.ts";
import { normalizeUserPath } from "../policy/target.ts";
import { recordUse } from "../store/usage.ts";
import { checkSkillContent, newDiagnostics } from "../checks/validation.ts";
import type { LandedChange, MutationEffects } from "../pipeline/types.ts";
import { findingsText } from "../base/errors.ts";
import { scanChange } from "../checks/risk-scan.ts";

export type SideDoor = "edit" | "write" | "bash";
const isSideDoor = (name: string): name is SideDoor => name === "edit" || name === "write" || name === "bash";

/** A discovered skill as the guard knows it: its folder (symlinks resolved) and its skill file. */
export interface SkillPlace {
	readonly name: string;
	/** Real path of the skill folder; for a root-level single-file skill, of the file itself. */
	readonly dir: string;
	readonly filePath: string;
}

export interface SkillIndex {
	/** The skill whose folder holds `real` (a symlink-free path), if any: one map lookup per ancestor. */
	find(real: string): SkillPlace | undefined;
	/** Skills whose folders lie below `real` (a command that removes a whole skills folder). */
	below(real: string): SkillPlace[];
}

/** pi resolves a tool path like a skill_manage path, after turning Unicode spaces into plain ones. */
export function resolveToolPath(path: string, cwd: string): string {
	return normalizeUserPath(path.replace(/[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g, " "), cwd);
}

export function createSkillIndex(skills: ReadonlyArray<{ name: string; filePath: string }>): SkillIndex {
	const byDir = new Map<string, SkillPlace>();
	for (const skill of skills) {
		const real = resolveReal(skill.filePath);
		const dir = basename(real) === "SKILL.md" ? dirname(real) : real;
		byDir.set(dir, { name: skill.name, dir, filePath: real });
	}
	// Every folder that holds a skill folder: a path outside this set holds none, found in one lookup.
	const holders = new Set<string>();
	for (const dir of byDir.keys()) {
		for (let up = dirname(dir); !holders.has(up); up = dirname(up)) {
			holders.add(up);
			if (dirname(up) === up) break;
		}
	}
	return {
		find(real) {
			for (let path = real; ; path = dirname(path)) {
				const hit = byDir.get(path);
				if (hit) return hit;
				if (dirname(path) === path) return undefined;
			}
		},
		below: (real) =>
			holders.has(real)
				? [...byDir.values()].filter((place) => place.dir !== real && isWithin(real, place.dir))
				: [],
	};
}

/** One skill a call would change, and the real paths in it the call names (the folder itself for "all of it"). */
export interface SkillHit {
	readonly skill: SkillPlace;
	readonly paths: readonly string[];
}

/** The paths a call of pi's edit, write or bash would write: its path, or what the matcher reads off the command. */
function writeTargets(via: SideDoor, input: Record<string, unknown>, cwd: string): string[] {
	if (via !== "bash") return typeof input.path === "string" ? [resolveToolPath(input.path, cwd)] : [];
	return typeof input.command === "string" ? findBashWrites(input.command, cwd) : [];
}

/** The skills a call writing `targets` would change; empty for a call outside every skill (the common case). */
export function findSkillHits(via: SideDoor, targets: readonly string[], index: SkillIndex): SkillHit[] {
	const hits = new Map<string, { skill: SkillPlace; paths: string[] }>();
	const add = (skill: SkillPlace, path: string) => {
		const hit = hits.get(skill.dir) ?? { skill, paths: [] };
		hit.paths.push(path);
		hits.set(skill.dir, hit);
	};
	for (const target of targets) {
		const real = resolveReal(target);
		const skill = index.find(real);
		if (skill) add(skill, real);
		else if (via === "bash") for (const inside of index.below(real)) add(inside, inside.dir);
	}
	return [...hits.values()];
}

/** Why a side door to this skill is closed whatever guardBuiltins says, or undefined. */
function forcedBlock(deps: GuardDeps, settings: SelfSkillsSettings, skill: SkillPlace): string | undefined {
	if (findPin(settings.pinned, skill.name) !== undefined)
		return `skill "${skill.name}" is pinned (selfskills.pinned): it may be read, never changed`;
	const needed = requiredApproval(settings.approval, () => originOfSkill(deps.fs, deps.agentDir(), skill.dir));
	return (
		needed &&
		`changes to this skill need the person's approval (selfskills.approval: "${needed.mode}"), ` +
			"which only skill_manage asks for"
	);
}

function blockReason(toolName: string, skill: SkillPlace, why: string | undefined): string {
	const read = JSON.stringify({ action: "read", skill: skill.name });
	const because = why ? `: ${why}` : " (selfskills.guardBuiltins: block)";
	return [
		`selfskills: this ${toolName} call would change the files of skill "${skill.name}" (${skill.dir}), ` +
			`which pi's own ${toolName} may not do here${because}.`,
		`Use skill_manage instead: ${read}, ` +
			`then {"action":"patch","skill":"${skill.name}","old_string":…,"new_string":…} for SKILL.md, ` +
			`or {"action":"write","skill":"${skill.name}","file":…,"content":…} for a bundled file. ` +
			"Reading the files with read, cat or grep is always fine.",
	].join(" ");
}

/** Regular files of a skill folder, relative (symlinks are never followed). */
function skillFiles(fs: FsOps, skill: SkillPlace): string[] {
	if (skill.filePath === skill.dir) return [basename(skill.dir)];
	return walkTree(fs, skill.dir).files.map((f) => f.relPath);
}

/** The folder a skill's relative paths start from: its own, or the one holding a single-file skill. */
function skillRoot(skill: SkillPlace): string {
	return skill.filePath === skill.dir ? dirname(skill.dir) : skill.dir;
}

interface Before {
	readonly bytes: Buffer;
	readonly backupId: string | null;
}

/** What a watched call saw before it ran, kept until its result comes back. */
interface Pending {
	readonly via: SideDoor;
	readonly cwd: string;
	readonly skills: readonly WatchedSkill[];
}

/** One skill a watched call may change: the files it names (all of them for bash), and their bytes before. */
interface WatchedSkill {
	readonly skill: SkillPlace;
	/** Paths relative to the skill folder that the call names (bash: none; every file is compared). */
	readonly rels: readonly string[];
	readonly files: ReadonlyMap<string, Before>;
	readonly whole: boolean;
}

export interface SideDoorDeps {
	readonly agentDir: () => string;
	readonly fs: FsOps;
	readonly state: SessionState;
	readonly effects: MutationEffects;
	/** The session's boundary: the sandbox, its temp folder, the writable places and the pins. */
	readonly boundary?: Boundary;
	/** Tells the person (a moved protected folder). */
	readonly tellPerson?: (ctx: ExtensionContext, text: string) => void;
}

/** The guard's deps once the boundary is settled. */
type GuardDeps = SideDoorDeps & { readonly boundary: Boundary };

export interface SideDoorGuard {
	onToolCall(
		event: { toolName: string; toolCallId: string; input: Record<string, unknown> },
		ctx: ExtensionContext,
	): { block: true; reason: string } | undefined;
	/** The warning to append to the result, or undefined; records audit lines and events. */
	onToolResult(event: { toolName: string; toolCallId: string }): string | undefined;
}

/** One call of pi's edit, write or bash, with the settings it is judged by. */
interface SideDoorCall {
	/** pi's tool call id. */
	readonly id: string;
	readonly via: SideDoor;
	readonly input: Record<string, unknown>;
	/** What it would write (writeTargets), worked out once for every check. */
	readonly targets: readonly string[];
	readonly cwd: string;
	readonly settings: SelfSkillsSettings;
}

/** What the guard makes of a call: why it is blocked (and what the person is told), or the skills to check after it. */
interface Verdict {
	readonly block?: string;
	readonly watch?: Pending;
	readonly tell?: string;
}

export function createSideDoorGuard(given: SideDoorDeps): SideDoorGuard {
	const deps: GuardDeps = { ...given, boundary: given.boundary ?? createBoundary(given.fs) };
	const pending = new Map<string, Pending>();
	const index = createIndexCache(deps.state);
	return {
		onToolCall(event, ctx) {
			if (event.toolName === "read") {
				noteUse(deps, index, event.input, ctx.cwd);
				return undefined;
			}
			if (UNGUARDED_SHELLS.has(event.toolName))
				return unguardedShellBlock(event.toolName, loadPolicy(ctx, deps.agentDir()).report.settings);
			if (!isSideDoor(event.toolName)) return undefined;
			const { settings } = loadPolicy(ctx, deps.agentDir()).report;
			const targets = writeTargets(event.toolName, event.input, ctx.cwd);
			const call = {
				id: event.toolCallId,
				via: event.toolName,
				input: event.input,
				targets,
				cwd: ctx.cwd,
				settings,
			};
			const verdict = judgeCall(deps, call, index);
			if (verdict.tell) deps.tellPerson?.(ctx, verdict.tell);
			if (verdict.watch) pending.set(event.toolCallId, verdict.watch);
			return verdict.block === undefined ? undefined : { block: true, reason: verdict.block };
		},

		onToolResult(event) {
			const seen = pending.get(event.toolCallId);
			pending.delete(event.toolCallId);
			return seen && settleWatch(deps, seen);
		},
	};
}

/** pi's own skill list of this prompt plus the skills created or changed since: rebuilt only when those change. */
function createIndexCache(state: SessionState): () => SkillIndex {
	let indexed: { files: readonly string[]; changed: number; index: SkillIndex } | undefined;
	return () => {
		const { runtimeSkillFiles, runtimeSkillNames, changed } = state;
		if (indexed?.files !== runtimeSkillFiles || indexed.changed !== changed.size) {
			const skills = runtimeSkillFiles.map((filePath) => ({
				name: runtimeSkillNames.get(filePath) ?? skillNameOf(filePath),
				filePath,
			}));
			for (const c of changed.values()) if (c.action !== "delete") skills.push({ name: c.name, filePath: c.path });
			indexed = { files: runtimeSkillFiles, changed: changed.size, index: createSkillIndex(skills) };
		}
		return indexed.index;
	};
}

/** pi's read of a skill file is how pi loads a skill: one use. */
function noteUse(deps: GuardDeps, index: () => SkillIndex, input: Record<string, unknown>, cwd: string): void {
	if (typeof input.path !== "string") return;
	const real = resolveReal(resolveToolPath(input.path, cwd));
	const skill = index().find(real);
	if (skill && skill.filePath === real) recordUse(deps.fs, deps.agentDir(), skill.name);
}

/**
 * The checks in their order: pi run to approve from an unsandboxed bash, a skill closed to side doors,
 * risky content, the protected set while a control is on; then the skill files are backed up.
 */
function judgeCall(deps: GuardDeps, call: SideDoorCall, index: () => SkillIndex): Verdict {
	const approving = selfApprovalBlock(deps, call);
	if (approving) return { block: approving };
	const hits = findSkillHits(call.via, call.targets, index());
	// A skill file first: its refusal names the skill_manage call that changes it.
	const skillBlock = blockSkills(deps, call, hits) ?? (hits.length > 0 ? riskyContent(deps.fs, call) : undefined);
	if (skillBlock) return { block: skillBlock };
	const control = controlIsOn(call.settings) ? guardProtected(deps, call) : {};
	if (control.block) return control;
	return watchSkills(deps, call, hits);
}

/** pi run from an unsandboxed bash to approve: the person decides, while a control is on. */
function selfApprovalBlock(deps: GuardDeps, call: SideDoorCall): string | undefined {
	if (call.via !== "bash" || !controlIsOn(call.settings)) return undefined;
	const approving = findSelfApproval(String(call.input.command ?? ""));
	return approving && !deps.boundary.probe().available ? selfApprovalReason(approving) : undefined;
}

/** A block when a skill the call would change is pinned, needs approval, or guardBuiltins is "block". */
function blockSkills(deps: GuardDeps, call: SideDoorCall, hits: readonly SkillHit[]): string | undefined {
	for (const { skill } of hits) {
		const forced = forcedBlock(deps, call.settings, skill);
		if (forced || call.settings.guardBuiltins === "block") return blockReason(call.via, skill, forced);
	}
	return undefined;
}

/**
 * While a control is on: a block when a protected folder moved since the session started, or when
 * the call would change the protected set or (edit, write) a place outside the writable ones. bash
 * is held by the sandbox where there is one (bash-tool.ts), else by the matcher.
 */
function guardProtected(deps: GuardDeps, call: SideDoorCall): Verdict {
	const input = {
		cwd: call.cwd,
		agentDir: deps.agentDir(),
		settings: call.settings,
		runtimeSkillFiles: deps.state.runtimeSkillFiles,
	};
	// A sandboxed bash builds its layout from these same places (bash-tool.ts takes them by the call's id).
	const places = deps.boundary.places(input, call.via === "bash" ? { keep: call.id } : undefined);
	const moved = deps.boundary.movedPlace(places.set);
	if (moved) return movedBlock(call, moved);
	if (call.via === "bash") return guardProtectedBash(deps, call, places.set);
	if (typeof call.input.path !== "string") return {};
	const target = resolveToolPath(call.input.path, call.cwd);
	const real = resolveReal(target);
	const place = places.set.find(real);
	if (place) return protectedBlock(call, target, place);
	return places.writable.find(real) ? {} : outsideBlock(deps, call, target, places);
}

/** bash without a sandbox: the matcher, best effort. */
function guardProtectedBash(deps: GuardDeps, call: SideDoorCall, set: ProtectedSet): Verdict {
	if (typeof call.input.command !== "string" || deps.boundary.probe().available) return {};
	// A write into a place, or over a folder holding one (`rm -rf ~/.pi`); the working folder itself
	// is where an unresolved glob or archive lands, and the places inside it are hidden names.
	const cwdReal = resolveReal(call.cwd);
	for (const target of call.targets) {
		const real = resolveReal(target);
		const holds = (p: ProtectedPlace) => real !== cwdReal && isWithin(real, p.real);
		const place = set.places.find((p) => isWithin(p.real, real) || holds(p));
		if (place) return protectedBlock(call, target, place);
	}
	return {};
}

/** guardBuiltins "backup": the files a call may change, backed up before it runs (blocked if they cannot be). */
function watchSkills(deps: GuardDeps, call: SideDoorCall, hits: readonly SkillHit[]): Verdict {
	if (hits.length === 0 || call.settings.guardBuiltins === "off") return {};
	try {
		return { watch: { via: call.via, cwd: call.cwd, skills: hits.map((hit) => backUp(deps, call, hit)) } };
	} catch (error) {
		// No change may run that could not be backed up first.
		const cause = error instanceof Error ? error.message : String(error);
		const reason =
			`selfskills: the skill files could not be backed up before this ${call.via} call ` +
			`(${cause}); nothing ran. Use skill_manage, or retry once the backup folder is writable.`;
		return { block: reason };
	}
}

/** The files of one skill a call may change, backed up, with their bytes kept to compare once it ran. */
function backUp(deps: GuardDeps, call: SideDoorCall, hit: SkillHit): WatchedSkill {
	const { skill } = hit;
	const whole = call.via === "bash";
	const store = createBackupStore(deps.fs, deps.agentDir());
	const root = skillRoot(skill);
	const rels = whole ? skillFiles(deps.fs, skill) : hit.paths.map((p) => relative(root, p));
	const files = new Map<string, Before>();
	for (const rel of rels) {
		let bytes: Buffer;
		try {
			bytes = deps.fs.readFile(join(root, rel));
		} catch {
			continue; // A new file, or no regular file: nothing to keep.
		}
		const key = skillKey(skill.name, join(root, rel), skill.filePath === skill.dir ? "SKILL.md" : rel);
		const entry = store.store(key, rel, bytes);
		store.prune(key, rel, call.settings.backupCap);
		files.set(rel, { bytes, backupId: entry.id });
	}
	return { skill, rels, files, whole };
}

/** Once a watched call ran: an audit line and a changed event per file it changed, a warning per skill it broke. */
function settleWatch(deps: GuardDeps, seen: Pending): string | undefined {
	const time = new Date().toISOString();
	const changes = seen.skills.flatMap((watched) => landedChanges(deps.fs, watched));
	const warnings = seen.skills.flatMap((watched) => checkSkillAfter(deps.fs, watched, seen.via) ?? []);
	const records = changes.map((change) => auditRecord(seen, time, change));
	appendAudit(deps.fs, deps.agentDir(), records);
	for (const [i, change] of changes.entries()) deps.effects.onLanded(records[i], change);
	return warnings.length > 0 ? warnings.join("\n") : undefined;
}

/** The files of a watched skill whose bytes differ from before: bash may have changed, added or removed any. */
function landedChanges(fs: FsOps, { skill, rels: named, files, whole }: WatchedSkill): LandedChange[] {
	const root = skillRoot(skill);
	const rels = whole ? new Set([...files.keys(), ...skillFiles(fs, skill)]) : new Set(named);
	const changes: LandedChange[] = [];
	for (const rel of rels) {
		const before = files.get(rel);
		const after = tryRead(fs, join(root, rel)) ?? null;
		const oldHash = before ? sha256(before.bytes) : null;
		const newHash = after ? sha256(after) : null;
		if (oldHash === newHash) continue;
		const backupId = before?.backupId ?? null;
		changes.push({
			skill: skill.name,
			relPath: rel,
			absPath: join(root, rel),
			oldHash,
			newHash,
			backupId,
			backupPath: null,
		});
	}
	return changes;
}

function auditRecord(seen: Pending, time: string, change: LandedChange): ChangeRecord {
	const { skill, relPath: file, oldHash, newHash, backupId: backup } = change;
	return { time, cwd: seen.cwd, action: seen.via, via: seen.via, skill, file, oldHash, newHash, backup };
}

/** pi's shell tools the guard neither sandboxes nor reads (pi 1.6's powershell). */
const UNGUARDED_SHELLS = new Set(["powershell"]);

/** While a control is on, a shell the guard cannot hold to the protected set does not run at all. */
function unguardedShellBlock(
	toolName: string,
	settings: SelfSkillsSettings,
): { block: true; reason: string } | undefined {
	if (!controlIsOn(settings)) return undefined;
	const reason =
		`selfskills: pi's ${toolName} tool is neither sandboxed nor checked by this package, so it may not run ` +
		`while the person's review is on (${describeControl(settings)}). Run the command with bash instead; ` +
		"to change a skill use skill_manage (read, then patch, write or create).";
	return { block: true, reason };
}

/** Which of the person's controls is on, in words. */
function describeControl(settings: SelfSkillsSettings): string {
	const on: string[] = [];
	if (typeof settings.approval !== "string" || settings.approval !== "auto")
		on.push(`selfskills.approval ${JSON.stringify(settings.approval)}`);
	if (settings.pinned.length > 0) on.push(`pinned skills (${settings.pinned.join(", ")})`);
	if (settings.contentReview === "refuse") on.push('selfskills.contentReview "refuse"');
	return on.join(", ");
}

function protectedBlock(call: SideDoorCall, path: string, place: ProtectedPlace): Verdict {
	const block =
		`selfskills: this ${call.via} call would change ${path}, inside ${place.path} (${place.why}), which ` +
		"pi's own edit, write and bash may not change while the person's review is on " +
		`(${describeControl(call.settings)}). ` +
		"To change a skill use skill_manage (read, then patch, write or create): the person's approval and pins " +
		"apply there. Settings, proposals and trust are the person's to change: ask them. Reading is always fine.";
	return { block };
}

/** edit or write outside every writable place: the place, the writable ones and the setting named. */
function outsideBlock(deps: GuardDeps, call: SideDoorCall, path: string, places: CallPlaces): Verdict {
	const block =
		`selfskills: outside_writable: this ${call.via} call would change ${path}, outside the places pi's own ` +
		`edit, write and bash may change while the person's review is on (${describeControl(call.settings)}): ` +
		`${describeWritable(places.writable)}. Work inside the project, or put scratch files in the session's temp ` +
		`folder ${deps.boundary.tmpdirPath()} ($TMPDIR in bash). Only the person can add a folder, to ` +
		`selfskills.sandbox.writable in ${getGlobalSettingsPath(deps.agentDir())}.`;
	return { block };
}

/** A protected folder is not the one pinned at session start: nothing of pi's edit, write or bash runs. */
function movedBlock(call: SideDoorCall, moved: string): Verdict {
	const block =
		`selfskills: protected_moved: ${moved}. While the person's review is on ` +
		`(${describeControl(call.settings)}) pi's edit, write and bash stop until the person has looked; ` +
		"tell them what you were doing and wait for them.";
	const tell =
		`selfskills: ${moved}. pi's edit, write and bash are stopped while a control is on; ` +
		"check that folder, then start pi again.";
	return { block, tell };
}

/** A skill's name from its file path, where pi's own name is not known: its folder's name. */
function skillNameOf(filePath: string): string {
	return basename(filePath) === "SKILL.md" ? basename(dirname(filePath)) : basename(filePath).replace(/\.md$/, "");
}

/** A warning when the skill no longer loads in pi or gained a diagnostic, naming the exact restore call. */
function checkSkillAfter(fs: FsOps, { skill, files: before }: WatchedSkill, via: SideDoor): string | undefined {
	const rel = skill.filePath === skill.dir ? basename(skill.dir) : "SKILL.md";
	const old = before.get(rel);
	const now = tryRead(fs, skill.filePath) ?? null;
	if (old && now && old.bytes.equals(now)) return undefined;
	const dirName = basename(skillRoot(skill));
	const after = now ? checkSkillContent(now.toString("utf8"), dirName) : undefined;
	const added = after
		? newDiagnostics(old ? checkSkillContent(old.bytes.toString("utf8"), dirName).diagnostics : [], after.diagnostics)
		: [];
	if (after?.name !== undefined && added.length === 0) return undefined;
	const problem = !now
		? "its SKILL.md is gone"
		: after?.name === undefined
			? "pi no longer loads it"
			: `pi now reports: ${added.map((d) => d.message).join("; ")}`;
	const restore = old?.backupId
		? `skill_manage {"action":"restore","skill":"${skill.name}","backup":"${old.backupId}"} ` +
			`puts the version from before this ${via} back.`
		: `skill_manage {"action":"history","skill":"${skill.name}"} lists the backups to restore.`;
	return (
		`selfskills warning: after this ${via}, skill "${skill.name}" (${skill.filePath}) is broken: ` +
		`${problem}. ${restore}`
	);
}

/**
 * The content review of a side door whose result is known before it runs (write's content, edit's
 * exact replacements): a call that adds risky lines is blocked and pointed to skill_manage, which
 * puts them before the person. Unknown results (a fuzzy edit, bash) are left to the other guards.
 */
function riskyContent(fs: FsOps, call: SideDoorCall): string | undefined {
	const { via, input } = call;
	if (call.settings.contentReview === "off" || typeof input.path !== "string") return undefined;
	const before = tryRead(fs, resolveToolPath(input.path, call.cwd))?.toString("utf8");
	let after: string | undefined;
	if (via === "write" && typeof input.content === "string") after = input.content;
	else if (via === "edit" && before !== undefined) after = editedText(before, input);
	if (after === undefined) return undefined;
	const findings = scanChange(before, after);
	if (findings.length === 0) return undefined;
	return (
		`selfskills: this ${via} call adds lines to a skill that look risky, and only the person may let ` +
		`them in:\n${findingsText(findings)}\nUse skill_manage instead (read, then patch or write), which shows ` +
		"them to the person; or leave those lines out."
	);
}

/** What an edit's exact replacements make of `before`; undefined when one of them does not apply exactly. */
function editedText(before: string, input: Record<string, unknown>): string | undefined {
	const edits = Array.isArray(input.edits) ? input.edits : [{ oldText: input.oldText, newText: input.newText }];
	let after = before;
	for (const edit of edits as Array<Record<string, unknown>>) {
		const { oldText, newText } = edit;
		if (typeof oldText !== "string" || typeof newText !== "string" || !after.includes(oldText)) return undefined;
		after = after.replace(oldText, () => newText);
	}
	return after;
}
