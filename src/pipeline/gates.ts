// The gates every mutation passes, in the contract's order. Each gate is a small function that
// returns a refusal or nothing; none of them writes. GATE_ORDER lists, per planner, the gates it
// runs and their order as data; runGates runs them top to bottom and stops at the first refusal:
//   1 old_string   2 read this session   3 unchanged since read   4 inside a writable root
//   5 unique match   6 pi's validation   (7 backup and 8 atomic write happen in commit.ts)
// Between them sit the checks of the Limits (the file exists and is text, size, hidden Unicode), and
// the review of what a change says: the Agent Skills rules, near-duplicates, and the risk scan.

import { dirname } from "node:path";
import type { CallContext, PlanInput } from "./call-context.ts";
import { escapeControls } from "../checks/content-guard.ts";
import * as refusals from "../base/errors.ts";
import type { NearLine, Refusal } from "../base/errors.ts";
import { folderWriteError, realFs, type FsOps } from "../base/fs-ops.ts";
import { getBackupsDir, getForbiddenReason, getPiPlaces, isWithin, resolveReal, type PiPlaces } from "../base/paths.ts";
import { originOfSkill } from "../store/origins.ts";
import type { ReadLedger } from "../store/read-ledger.ts";
import { findWritableRootOfReal, type WritableRoot } from "../policy/roots.ts";
import { findPin, requiredApproval, type SelfSkillsSettings } from "../policy/settings.ts";
import type { FileTarget, NewSkillTarget } from "../policy/target.ts";
import {
	checkSkillContent,
	descriptionOf,
	newDiagnostics,
	suggestFrontmatter,
	type SkillCheck,
} from "../checks/validation.ts";
import { hashOrNull } from "../base/hash.ts";
import { isSymlink, tryLstat } from "../base/fs-reads.ts";
import { scanChange } from "../checks/risk-scan.ts";
import { findSimilar, type SkillCard } from "../checks/similarity.ts";
import { addedSpecBreaks, dropExtraFields, specBreaksOfText } from "../checks/spec-rules.ts";

/** Every gate a planner can name. */
export type GateName =
	| "old_string"
	| "read"
	| "unchanged"
	| "writable"
	| "pinned"
	| "exists"
	| "text"
	| "unique"
	| "size"
	| "unsafe"
	| "valid"
	| "spec"
	| "similar"
	| "risk"
	| "approval";

/**
 * The order of the gates, per planner: the contract's order, readable in one place. A planner
 * supplies the gates it names (GateSet) and computes the new bytes; it never orders them itself.
 * A pin makes a skill read-only (beside the writable root); the person's approval comes last, after
 * every other gate passed and before the backup in commit.ts (it notes what the person must decide).
 */
export const GATE_ORDER = {
	patch: [
		"old_string",
		"read",
		"unchanged",
		"writable",
		"pinned",
		"exists",
		"text",
		"unique",
		"size",
		"unsafe",
		"spec",
		"valid",
		"similar",
		"risk",
		"approval",
	],
	write: ["read", "unchanged", "writable", "pinned", "text", "unsafe", "risk", "approval"],
	deleteFile: ["read", "exists", "unchanged", "writable", "pinned", "approval"],
	deleteSkill: ["read", "unchanged", "writable", "pinned", "approval"],
	create: ["exists", "writable", "pinned", "size", "spec", "valid", "similar", "risk", "approval"],
	// restore needs no read (the current bytes are backed up first) and checks no content: a byte copy.
	restoreFile: ["writable", "pinned", "exists", "approval"],
	restoreSkill: ["writable", "pinned", "exists", "approval"],
	// A restore from git is a new change, not an undo: its files are scanned like any other.
	restoreGit: ["writable", "pinned", "exists", "risk", "approval"],
} as const satisfies Record<string, readonly GateName[]>;

export type GateSet = Partial<Record<GateName, () => Refusal | undefined>>;

/** Runs the gates `order` names, in that order; the first refusal wins (pi's own gate loop). */
export function runGates(order: readonly GateName[], gates: GateSet): Refusal | undefined {
	for (const name of order) {
		const gate = gates[name];
		if (gate === undefined) throw new Error(`gate "${name}" is named but not supplied`);
		const refusal = gate();
		if (refusal) return refusal;
	}
	return undefined;
}

/**
 * Gates 2 and 3 for an existing file the call must have read: none for a file an earlier op of
 * the same batch wrote (the batch composes without a re-read).
 */
export function readGates(
	ctx: { ledger: ReadLedger },
	target: FileTarget,
	input: PlanInput,
): Pick<GateSet, "read" | "unchanged"> {
	const touched = input.touched.has(target.absPath);
	return {
		read: () => (touched ? undefined : checkRead(ctx.ledger, target)),
		unchanged: () =>
			touched ? undefined : checkUnchanged(ctx.ledger, target, hashOrNull(input.disk.read(target.absPath))),
	};
}

/**
 * The person's gates for one skill. A pin refuses every change of the agent's. The approval gate never refuses:
 * when the skill's origin has a mode other than "auto" it notes that need in `input.approvals`, and
 * runMutations (mutate.ts), once every op of the call has passed every gate, asks the person once or
 * files one proposal for the whole call. A dry run notes it too (and neither asks nor proposes).
 */
export function humanGates(
	ctx: { settings: SelfSkillsSettings; fs: FsOps; agentDir: string; byPerson?: boolean },
	input: Pick<PlanInput, "approvals">,
	skill: { name: string; dir: string; created?: boolean },
): Pick<GateSet, "pinned" | "approval"> {
	// A change the person makes with /selfskills is their own decision: it lands after their confirmation.
	if (ctx.byPerson) return { pinned: () => undefined, approval: () => undefined };
	return {
		pinned: () => {
			const pin = findPin(ctx.settings.pinned, skill.name);
			return pin === undefined ? undefined : refusals.pinned(skill.name, pin);
		},
		approval: () => {
			const needed = requiredApproval(ctx.settings.approval, () =>
				skill.created ? "own" : originOfSkill(ctx.fs, ctx.agentDir, skill.dir),
			);
			if (needed !== undefined) input.approvals?.push({ skill: skill.name, ...needed });
			return undefined;
		},
	};
}

/** Gate 1: a non-empty old_string that differs from new_string. */
export function checkOldString(oldString: string, newString: string): Refusal | undefined {
	if (oldString.length === 0) return refusals.emptyOldString();
	if (oldString === newString) return refusals.noChange("new_string");
	return undefined;
}

/** Gate 2: the skill's SKILL.md, and a bundled target itself, were read this session. */
export function checkRead(ledger: ReadLedger, target: FileTarget): Refusal | undefined {
	if (ledger.get(target.skill.filePath) === undefined)
		return refusals.notRead(target.skill.filePath, target.skill.name, undefined);
	if (!target.isSkillFile && ledger.get(target.absPath) === undefined) {
		return refusals.notRead(target.absPath, target.skill.name, target.relPath);
	}
	return undefined;
}

/** Gate 3: the target is byte-identical to what was read (sha256 precondition). */
export function checkUnchanged(
	ledger: ReadLedger,
	target: FileTarget,
	currentHash: string | null,
): Refusal | undefined {
	const readHash = ledger.get(target.absPath);
	if (readHash === undefined || readHash === currentHash) return undefined;
	const file = target.isSkillFile ? undefined : target.relPath;
	return refusals.stale(target.absPath, readHash, currentHash ?? "(deleted)", target.skill.name, file);
}

export interface WritableInput {
	readonly roots: readonly WritableRoot[];
	readonly agentDir: string;
	/** Asked whether this user may write the folders (default realFs; tests inject EACCES). */
	readonly fs?: FsOps;
	/** pi's places as the call resolved them (default: resolved here). */
	readonly places?: () => PiPlaces;
}

/** Gate 4's input for a planner: the call's writable roots, filesystem and places. */
export function writableInput(ctx: CallContext): WritableInput {
	return { roots: ctx.discovery.roots, agentDir: ctx.agentDir, fs: ctx.fs, places: ctx.places };
}

/** `path` itself, or the nearest folder above it that exists (where a missing folder would be made). */
function nearestExisting(fs: FsOps, path: string): string {
	for (let at = path; ; at = dirname(at)) if (tryLstat(fs, at) || dirname(at) === at) return at;
}

/**
 * Gate 4: the target lies inside a writable root after resolving symlinks, and is no symlink; and
 * this user may write both its folder and the backup store, so a write the filesystem would
 * refuse is refused here, before any backup is stored for it, naming the folder.
 */
export function checkWritable(input: WritableInput, target: FileTarget | NewSkillTarget): Refusal | undefined {
	const rootPaths = input.roots.map((r) => r.path);
	// A skill that does not exist yet has no discovered verdict: the place alone decides.
	const skill = "skill" in target ? target.skill : undefined;
	const skillDir = "skill" in target ? target.skill.dir : target.dir;
	if (skill?.writeDenied)
		return refusals.folderNotWritable(target.absPath, skill.writeDenied.folder, skill.writeDenied.errno, rootPaths);
	if (skill && !skill.patchable) return refusals.notWritable(target.absPath, skill.reason ?? "read-only", rootPaths);
	const real = resolveReal(target.absPath);
	const forbidden = getForbiddenReason(input.places?.() ?? getPiPlaces(input.agentDir), real);
	if (forbidden) return refusals.notWritable(target.absPath, forbidden, rootPaths);
	if (!findWritableRootOfReal(input.roots, real)) {
		return refusals.notWritable(target.absPath, "outside every writable root (after resolving symlinks)", rootPaths);
	}
	if (isSymlink(input.fs ?? realFs, target.absPath))
		return refusals.notWritable(target.absPath, "the file is a symbolic link", rootPaths);
	// Resolved once when the file lies in the skill's folder itself (a SKILL.md, a top-level file).
	const folderReal = resolveReal(dirname(target.absPath));
	const skillDirReal = skillDir === dirname(target.absPath) ? folderReal : skillDir && resolveReal(skillDir);
	if (skillDirReal && !isWithin(skillDirReal, folderReal)) {
		return refusals.notWritable(
			target.absPath,
			"a folder on the way is a symbolic link leading out of the skill",
			rootPaths,
		);
	}
	const fs = input.fs ?? realFs;
	const folder = nearestExisting(fs, dirname(target.absPath));
	const denied = folderWriteError(fs, folder);
	if (denied) return refusals.folderNotWritable(target.absPath, folder, denied, rootPaths);
	const store = nearestExisting(fs, getBackupsDir(input.agentDir));
	const storeDenied = folderWriteError(fs, store);
	if (storeDenied) return refusals.storeNotWritable(store, storeDenied);
	return undefined;
}

/**
 * Every start index of `needle` in `text`, by Knuth-Morris-Pratt: linear in both lengths, whatever
 * the model sends. V8's indexOf is not: a long old_string of the wrong shape can hold pi's event loop
 * for seconds. `overlapping` counts "aba" twice in "ababa".
 */
function searchAll(text: string, needle: string, overlapping: boolean, limit = Number.POSITIVE_INFINITY): number[] {
	const hits: number[] = [];
	const m = needle.length;
	if (m === 0 || m > text.length) return hits;
	const fail = new Int32Array(m);
	for (let i = 1, k = 0; i < m; i++) {
		while (k > 0 && needle.charCodeAt(i) !== needle.charCodeAt(k)) k = fail[k - 1];
		if (needle.charCodeAt(i) === needle.charCodeAt(k)) k++;
		fail[i] = k;
	}
	for (let i = 0, k = 0; i < text.length && hits.length < limit; i++) {
		const c = text.charCodeAt(i);
		while (k > 0 && c !== needle.charCodeAt(k)) k = fail[k - 1];
		if (c === needle.charCodeAt(k)) k++;
		if (k === m) {
			hits.push(i - m + 1);
			k = overlapping ? fail[m - 1] : 0;
		}
	}
	return hits;
}

/**
 * Needles up to this length are searched with the engine's own indexOf, faster than searchAll: V8's
 * Boyer-Moore tables cover 250 characters, and up to there its search stays linear; past it a needle
 * of the wrong shape goes quadratic, so longer needles go through searchAll.
 */
const NATIVE_SEARCH_MAX = 250;

/** The first `limit` start indexes of `needle`, overlapping; whole-text scans stay linear either way. */
function firstHits(text: string, needle: string, limit: number): number[] {
	if (needle.length > NATIVE_SEARCH_MAX) return searchAll(text, needle, true, limit);
	const hits: number[] = [];
	for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
		hits.push(at);
		if (hits.length >= limit) break;
	}
	return hits;
}

/** Every start index of `needle` in `text` (non-overlapping, left to right). */
export function findAll(text: string, needle: string): number[] {
	return searchAll(text, needle, false);
}

/** The distinct 1-based line numbers of ascending indexes, the first `max` of them, in one pass. */
function lineNumbers(text: string, indexes: readonly number[], max: number): number[] {
	const lines: number[] = [];
	let line = 1;
	let from = 0;
	for (const index of indexes) {
		for (let nl = text.indexOf("\n", from); nl !== -1 && nl < index; nl = text.indexOf("\n", from)) {
			line++;
			from = nl + 1;
		}
		if (lines[lines.length - 1] !== line) lines.push(line);
		if (lines.length >= max) break;
	}
	return lines;
}

/** Enough of a line or of old_string to tell which line was meant; more only costs time. */
const PROBE_CHARS = 200;

/** Distinct character pairs of `s` into `out` (one code per pair; a 0/1-character string is its own code). */
function addBigrams(s: string, out: Set<number>): Set<number> {
	out.clear();
	if (s.length < 2) out.add(-1 - (s.charCodeAt(0) || 0));
	for (let i = 0; i + 1 < s.length; i++) out.add(s.charCodeAt(i) * 65536 + s.charCodeAt(i + 1));
	return out;
}

/**
 * The three lines most like the first non-blank line of `oldString`, with their numbers and their
 * control characters escaped. Bounded: only the first 200 characters of the probe and of each line
 * are compared, and the best three are kept in one pass (no sort of every line).
 */
export function closestLines(text: string, oldString: string): NearLine[] {
	const head = oldString.slice(0, PROBE_CHARS * 4);
	const probe = (
		head
			.split(/\r?\n/)
			.find((l) => l.trim() !== "")
			?.trim() ?? head.trim()
	).slice(0, PROBE_CHARS);
	const probeGrams = addBigrams(probe, new Set());
	const lineGrams = new Set<number>();
	const best: Array<{ line: number; text: string; score: number }> = [];
	text.split("\n").forEach((raw, i) => {
		const key = raw.trim().slice(0, PROBE_CHARS);
		if (key === "") return;
		let score = 1;
		if (key !== probe) {
			let shared = 0;
			for (const gram of addBigrams(key, lineGrams)) if (probeGrams.has(gram)) shared++;
			score = (2 * shared) / (lineGrams.size + probeGrams.size);
		}
		if (score <= 0.3 || (best.length === 3 && score <= best[2].score)) return;
		best.push({ line: i + 1, text: raw, score });
		best.sort((a, b) => b.score - a.score || a.line - b.line);
		if (best.length > 3) best.pop();
	});
	return best.map(({ line, text: t }) => {
		const shown = t.replace(/\r$/, "");
		return { line, text: escapeControls(shown.length > 160 ? `${shown.slice(0, 157)}...` : shown) };
	});
}

/** Line numbers listed in a not_unique refusal; the count is always exact. */
const MAX_LISTED_LINES = 20;

/** Gate 5: old_string occurs exactly once (or at least once with replace_all). */
export function checkUnique(text: string, oldString: string, replaceAll: boolean, path: string): Refusal | undefined {
	// Overlapping occurrences count: "aba" in "ababa" is ambiguous, not unique. Two hits decide; only an
	// ambiguous old_string is counted in full (the refusal gives the exact count and the lines).
	const probe = firstHits(text, oldString, replaceAll ? 1 : 2);
	if (probe.length === 0) {
		const refusal = refusals.notFound(
			path,
			escapeControls(oldString.slice(0, PROBE_CHARS)),
			closestLines(text, oldString),
		);
		const crlf = text.includes("\r\n") && /(^|[^\r])\n/.test(oldString);
		return crlf
			? refusals.withNote(refusal, "The file uses CRLF line endings: write \\r\\n in old_string.")
			: refusal;
	}
	if (probe.length === 1 || replaceAll) return undefined;
	const hits = searchAll(text, oldString, true);
	return refusals.notUnique(path, hits.length, lineNumbers(text, hits, MAX_LISTED_LINES));
}

/** Applies an exact replacement; `$&` and friends in newString are taken literally. */
export function replaceExact(text: string, oldString: string, newString: string, replaceAll: boolean): string {
	const parts: string[] = [];
	let from = 0;
	const hits = replaceAll ? searchAll(text, oldString, false) : firstHits(text, oldString, 1);
	for (const at of hits) {
		parts.push(text.slice(from, at), newString);
		from = at + oldString.length;
	}
	parts.push(text.slice(from));
	return parts.join("");
}

/** UTF-8 size of replaceExact's result, known before building it (a replace_all can multiply). */
export function replacedSize(text: string, oldString: string, newString: string, replaceAll: boolean): number {
	const count = replaceAll ? findAll(text, oldString).length : 1;
	return (
		Buffer.byteLength(text, "utf8") +
		count * (Buffer.byteLength(newString, "utf8") - Buffer.byteLength(oldString, "utf8"))
	);
}

export interface ValidInput {
	readonly before: string | undefined;
	readonly after: string;
	/** pi's answer on `after` (checkSkillContent), worked out once by the caller. */
	readonly check: SkillCheck;
	readonly dirName: string;
	readonly path: string;
	/** Names of the other discovered skills, for collisions when the name changes. */
	readonly otherNames: readonly string[];
	/** For the corrected frontmatter of a refusal; only computed when there is one. */
	readonly previousDescription?: () => string | undefined;
}

/**
 * Gate 6: pi still loads the skill, with no diagnostic the file did not already have. `before` goes
 * to pi's loader only when `after` has a diagnostic it might already have had.
 */
export function checkValid(input: ValidInput): Refusal | undefined {
	const after = input.check;
	const added =
		input.before === undefined || after.diagnostics.length === 0
			? [...after.diagnostics]
			: newDiagnostics(checkSkillContent(input.before, input.dirName).diagnostics, after.diagnostics);
	if (after.name !== undefined && input.otherNames.includes(after.name)) {
		added.push({ type: "collision", message: `name "${after.name}" collides with another discovered skill` });
	}
	if (added.length === 0 && after.name !== undefined) return undefined;
	const suggestion = suggestFrontmatter(input.after, input.dirName, input.previousDescription?.());
	// pi's diagnostics and the suggestion quote the file's own text: no raw control characters.
	const diagnostics = (added.length > 0 ? added : after.diagnostics).map((d) => ({
		...d,
		message: escapeControls(d.message),
	}));
	return refusals.invalidSkill(
		input.path,
		diagnostics,
		suggestion === undefined ? undefined : escapeControls(suggestion),
	);
}

/** The Agent Skills rules: a SKILL.md change may keep a rule the file broke, never break a new one. */
export function checkSpec(
	path: string,
	before: string | undefined,
	after: string,
	dirName: string,
): Refusal | undefined {
	const broken = addedSpecBreaks(before, after, dirName);
	if (broken.length === 0) return undefined;
	// Offered: the frontmatter with only the fields the specification defines, a lost description put back.
	const previous = before === undefined ? undefined : descriptionOf(before);
	const suggestion = suggestFrontmatter(dropExtraFields(after), dirName, previous);
	const fixes = suggestion !== undefined && specBreaksOfText(`${suggestion}\n`, dirName).length === 0;
	return refusals.specViolation(path, broken, fixes ? suggestion : undefined);
}

/**
 * Near-duplicates: the skills that read too much like `card` (name and description) under the
 * `similarity` setting; those `except` names are left out (the skill itself, `distinct_from`).
 */
export function checkSimilar(
	ctx: Pick<CallContext, "settings" | "discovery">,
	card: SkillCard,
	except: readonly string[],
): Refusal | undefined {
	const threshold = ctx.settings.similarity;
	if (threshold === false) return undefined;
	const library = ctx.discovery.skills.map((s) => ({ name: s.name, description: s.description, path: s.filePath }));
	const similar = findSimilar(card, library, threshold, except);
	return similar.length === 0 ? undefined : refusals.similarExists(card.name, similar, threshold);
}

/**
 * The risk scan of one file change (contentReview): findings the result adds are refused under
 * "refuse", and under "escalate" noted in `input.risks` so the call goes to the person, whatever the
 * approval mode; "off" scans nothing.
 */
export function checkRisk(
	ctx: { settings: Pick<SelfSkillsSettings, "contentReview"> },
	input: Pick<PlanInput, "risks">,
	change: { skill: string; file: string; path: string; before: string | undefined; after: string },
): Refusal | undefined {
	const mode = ctx.settings.contentReview;
	if (mode === "off") return undefined;
	const findings = scanChange(change.before, change.after);
	if (findings.length === 0) return undefined;
	if (mode === "refuse") return refusals.riskyContent(change.path, findings);
	input.risks?.push({ skill: change.skill, file: change.file, findings });
	return undefined;
}
