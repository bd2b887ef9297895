// The one refusal type of the package and the table of its codes.
// A refusal is data, not an exception: gates return one, the tool turns it into an error result
// whose text starts with the stable code and names the next call to make.

import { dirname } from "node:path";
import { errnoCode } from "./fs-reads.ts";

export type RefusalCode =
	| "invalid_arguments"
	| "unknown_skill"
	| "not_read"
	| "stale"
	| "not_writable"
	| "empty_old_string"
	| "no_change"
	| "not_found"
	| "not_unique"
	| "invalid_skill"
	| "patch_only"
	| "bad_file_path"
	| "binary_file"
	| "too_large"
	| "empty_content"
	| "exists"
	| "invalid_name"
	| "no_backup"
	| "conflict"
	| "unsafe_content"
	| "io_error"
	| "too_many_operations"
	| "backup_corrupt"
	| "aborted"
	| "disabled"
	| "deleted_in_batch"
	| "pinned"
	| "denied"
	| "unknown_proposal"
	| "git_failed"
	| "invalid_proposal"
	| "digest_mismatch"
	| "risky_content"
	| "similar_exists"
	| "spec_violation"
	| "eval_refused";

export interface Refusal {
	readonly code: RefusalCode;
	/** One or two sentences for the model: what is wrong, the offending value, the next call. */
	readonly reason: string;
	/** `<code>: <reason>`: the tool result's text. */
	readonly message: string;
	readonly data: Record<string, unknown>;
}

export function isRefusal(value: unknown): value is Refusal {
	return typeof value === "object" && value !== null && "code" in value && "message" in value && "data" in value;
}

function refusal(code: RefusalCode, reason: string, data: Record<string, unknown> = {}): Refusal {
	return { code, reason, message: `${code}: ${reason}`, data };
}

/** The same refusal with a sentence added after its reason (none when `note` is empty), and more data. */
export function withNote(inner: Refusal, note: string, data: Record<string, unknown> = {}): Refusal {
	return refusal(inner.code, note === "" ? inner.reason : `${inner.reason}\n${note}`, { ...inner.data, ...data });
}

/** The same refusal, its reason led by `head` (which op, at which stage), with more data. */
export function withHead(inner: Refusal, head: string, data: Record<string, unknown> = {}): Refusal {
	return refusal(inner.code, `${head} ${inner.reason}`, { ...inner.data, ...data });
}

const quote = (value: string): string => JSON.stringify(value.length > 120 ? `${value.slice(0, 117)}...` : value);
const listOr = (items: readonly string[], none: string): string => (items.length > 0 ? items.join(", ") : none);

export function invalidArguments(action: string, problem: string, data: Record<string, unknown> = {}): Refusal {
	return refusal("invalid_arguments", `${problem} (action "${action}"). Fix the arguments and call again.`, {
		action,
		...data,
	});
}

export function unknownSkill(name: string, nearNames: readonly string[]): Refusal {
	const hint = nearNames.length > 0 ? `Did you mean ${nearNames.map((n) => `"${n}"`).join(", ")}?` : "";
	return refusal(
		"unknown_skill",
		(
			`no discovered skill matches ${quote(name)}. ${hint} ` +
			`Call skill_manage {"action":"list"} to see every skill and its name.`
		).replace("  ", " "),
		{ skill: name, nearNames },
	);
}

export function notRead(path: string, skill: string, file: string | undefined): Refusal {
	const args = file ? `{"action":"read","skill":"${skill}","file":"${file}"}` : `{"action":"read","skill":"${skill}"}`;
	return refusal("not_read", `${path} was not read in this session. Call skill_manage ${args} first, then retry.`, {
		path,
		skill,
		file: file ?? "SKILL.md",
	});
}

export function stale(
	path: string,
	readHash: string,
	currentHash: string,
	skill: string,
	file: string | undefined,
): Refusal {
	const args = file ? `{"action":"read","skill":"${skill}","file":"${file}"}` : `{"action":"read","skill":"${skill}"}`;
	return refusal(
		"stale",
		`${path} changed since you read it (read ${readHash.slice(0, 12)}, now ${currentHash.slice(0, 12)}). ` +
			`Call skill_manage ${args} again and retry with the current text.`,
		{ path, readHash, currentHash },
	);
}

export function notWritable(path: string, reason: string, writableRoots: readonly string[]): Refusal {
	return refusal(
		"not_writable",
		`${path} is read-only: ${reason}. Writable roots: ${listOr(writableRoots, "(none)")}. ` +
			`Leave this skill as it is, or create a skill of your own with {"action":"create"} ` +
			'(a local variant of this one names it in "distinct_from", with a "reason").',
		{ path, reason, writableRoots },
	);
}

export function emptyOldString(): Refusal {
	return refusal(
		"empty_old_string",
		"old_string is empty. Copy the exact text to replace from your last read of the file into old_string.",
	);
}

export function noChange(what: string): Refusal {
	return refusal(
		"no_change",
		`${what} is identical to the current content, so there is nothing to write. ` +
			"Make new_string/content differ, or skip this call.",
	);
}

export interface NearLine {
	readonly line: number;
	readonly text: string;
}

export function notFound(path: string, oldString: string, closest: readonly NearLine[]): Refusal {
	const near = closest.map((l) => `  ${l.line}: ${l.text}`).join("\n");
	const tail = closest.length > 0 ? `\nClosest lines:\n${near}` : "";
	return refusal(
		"not_found",
		`old_string ${quote(oldString)} does not occur in ${path}. ` +
			`Copy old_string exactly (whitespace included) from the file; re-read it if unsure.${tail}`,
		{ path, closest },
	);
}

export function notUnique(path: string, count: number, lines: readonly number[]): Refusal {
	return refusal(
		"not_unique",
		`old_string occurs ${count} times in ${path} ` +
			`(${lines.length < count ? `first ${lines.length} at lines` : "lines"} ${lines.join(", ")}). ` +
			"Add surrounding lines to old_string so it matches once, " +
			'or pass "replace_all": true to change every occurrence.',
		{ path, count, lines },
	);
}

export interface SkillDiagnostic {
	readonly type: string;
	readonly message: string;
}

export function invalidSkill(path: string, diagnostics: readonly SkillDiagnostic[], suggestion?: string): Refusal {
	const found = diagnostics.map((d) => d.message).join("; ");
	const fix = suggestion
		? ` A corrected frontmatter that pi accepts:\n${suggestion}`
		: " Change the call so the skill stays valid (frontmatter with a name and a description).";
	return refusal("invalid_skill", `the result would not load as a skill in pi (${found}).${fix}`, {
		path,
		diagnostics,
		...(suggestion ? { suggestion } : {}),
	});
}

export function patchOnly(skill: string): Refusal {
	return refusal(
		"patch_only",
		"SKILL.md cannot be written whole. " +
			`Change it with {"action":"patch","skill":"${skill}","old_string":…,"new_string":…}.`,
		{ skill },
	);
}

export function badFilePath(file: string, reason: string): Refusal {
	return refusal(
		"bad_file_path",
		`file ${quote(file)} is not allowed: ${reason}. ` +
			'Use a relative path inside the skill folder such as "references/notes.md".',
		{ file, reason },
	);
}

export function binaryFile(path: string, reason: string): Refusal {
	return refusal(
		"binary_file",
		`${path} is not UTF-8 text (${reason}); only text files can be read or changed. Leave it as it is.`,
		{
			path,
			reason,
		},
	);
}

export function tooLarge(what: string, size: number, limit: number): Refusal {
	return refusal("too_large", `${what} is ${size} bytes, over the ${limit}-byte limit. Split it into smaller files.`, {
		what,
		size,
		limit,
	});
}

export function emptyContent(file: string): Refusal {
	return refusal(
		"empty_content",
		`content for ${quote(file)} is empty. ` +
			`To remove the file call {"action":"delete","file":${quote(file)}}; otherwise pass the text.`,
		{ file },
	);
}

export function exists(name: string, where: string): Refusal {
	return refusal(
		"exists",
		`a skill named "${name}" already exists at ${where}. Choose another name, or read and patch the existing skill.`,
		{ name, where },
	);
}

export function invalidName(name: string, problems: readonly string[]): Refusal {
	return refusal(
		"invalid_name",
		`skill name ${quote(name)} is not allowed (${problems.join("; ")}). ` +
			'Use 1-64 lowercase letters, digits and single hyphens, e.g. "deploy-checks".',
		{ name, problems },
	);
}

export function noBackup(
	skill: string,
	file: string,
	backup: string | undefined,
	available: readonly string[],
): Refusal {
	const which = backup ? `backup ${quote(backup)}` : "backup";
	return refusal(
		"no_backup",
		`there is no ${which} of ${skill}/${file}. Available: ${listOr(available.slice(0, 10), "none")}. ` +
			`Call {"action":"history","skill":"${skill}"} to list them.`,
		{ skill, file, backup, available },
	);
}

export function backupCorrupt(path: string, expected: string, actual: string): Refusal {
	return refusal(
		"backup_corrupt",
		`backup ${path} no longer matches its hash (name says ${expected}, content is ${actual.slice(0, 10)}); ` +
			'it was changed after it was taken. Restore another backup id from {"action":"history"}.',
		{ path, expected, actual },
	);
}

export function conflict(path: string, detail: string): Refusal {
	return refusal(
		"conflict",
		`${path} changed while the change was being written (${detail}); nothing of this call was kept. ` +
			"Read the file again and retry.",
		{ path, detail },
	);
}

export function unsafeContent(what: string, found: readonly string[]): Refusal {
	return refusal(
		"unsafe_content",
		`${what} carries invisible or direction-changing characters (${found.join(", ")}), ` +
			"the usual way to hide instructions. Remove them and call again.",
		{ what, found },
	);
}

/**
 * What the user must do about a folder on a read-only mount (EROFS): chmod cannot make it writable,
 * only a read-write mount (or keeping the skills on another filesystem) can.
 */
function readOnlyMountFix(folder: string): string {
	return (
		`${folder} is on a read-only mount (EROFS), which chmod cannot change: the user must remount ` +
		"that filesystem read-write or keep the skills on another one"
	);
}

export function ioError(path: string, error: unknown): Refusal {
	const code = errnoCode(error) ?? "EUNKNOWN";
	const raw = error instanceof Error ? error.message : String(error);
	// Node's own messages already start with the code: "EACCES: permission denied, open '…'".
	const message = raw.startsWith(`${code}: `) ? raw.slice(code.length + 2) : raw;
	const folder = code === "EACCES" || code === "EPERM" || code === "EROFS" ? folderToWrite(error) : undefined;
	const fix = !folder
		? "Fix the cause or try again later."
		: code === "EROFS"
			? `${readOnlyMountFix(folder)}; do not retry until then.`
			: `The folder ${folder} must be writable by you (e.g. chmod u+w ${JSON.stringify(folder)}); then retry.`;
	return refusal("io_error", `the filesystem refused ${path} (${code}: ${message}). Nothing was changed. ${fix}`, {
		path,
		errno: code,
		...(folder ? { folder } : {}),
	});
}

/** The folder a refused create or rename needed to write into: that of its destination (node's `dest`, else `path`). */
function folderToWrite(error: unknown): string | undefined {
	if (typeof error !== "object" || error === null) return undefined;
	const at =
		"dest" in error && typeof error.dest === "string"
			? error.dest
			: "path" in error && typeof error.path === "string"
				? error.path
				: undefined;
	return at === undefined ? undefined : dirname(at);
}

export function tooManyOperations(count: number, limit: number): Refusal {
	return refusal(
		"too_many_operations",
		`the batch has ${count} operations, over the limit of ${limit}. Split it into several calls.`,
		{
			count,
			limit,
		},
	);
}

export function aborted(): Refusal {
	return refusal("aborted", "the call was aborted before anything was written.");
}

/** Prefix a refusal of one batch operation with its index, keeping code and data. */
export function forOperation(index: number, inner: Refusal): Refusal {
	return withHead(inner, `operations[${index}] failed, nothing was written.`, { operation: index });
}

/** An op of a batch that needs what an earlier op of the same batch deletes. */
export function deletedInBatch(what: string, deletedBy: number, action: string): Refusal {
	return refusal(
		"deleted_in_batch",
		`${what} is deleted by operations[${deletedBy}] earlier in this batch, ` +
			`so a ${action} after it has nothing to work on. ` +
			`Move this op before operations[${deletedBy}], or drop one of the two.`,
		{ what, deletedBy, action },
	);
}

/** A restore whose backup the file already holds; `other` is the newest backup that differs. */
export function restoreNoChange(skill: string, file: string, backup: string, other: string | undefined): Refusal {
	const fileArg = file === "SKILL.md" ? "" : `,"file":${quote(file)}`;
	const next = other
		? `Restore the newest backup that differs: {"action":"restore","skill":"${skill}"${fileArg},"backup":"${other}"}.`
		: `No backup differs from it; {"action":"history","skill":"${skill}"${fileArg}} lists them.`;
	return refusal(
		"no_change",
		`${skill}/${file} already holds backup ${backup}, so restoring it changes nothing. ${next}`,
		{ skill, file, backup, other },
	);
}

/** A refusal raised where only a throw gets out (deep in lock acquisition); withFileLocks turns it back into data. */
export class RefusalError extends Error {
	constructor(readonly refusal: Refusal) {
		super(refusal.message);
		this.name = "RefusalError";
	}
}

/** The folder that receives the write (or the nearest one that exists) is not writable by this user. */
export function folderNotWritable(
	path: string,
	folder: string,
	errno: string,
	writableRoots: readonly string[],
): Refusal {
	return refusal(
		"not_writable",
		`${path} is read-only: folder not writable by you (${folder}, ${errno}). Nothing was changed. ` +
			(errno === "EROFS"
				? `Only the user can fix this: ${readOnlyMountFix(folder)}. `
				: "Only the user can fix this: tell them that folder must be writable by them " +
					`(e.g. chmod u+w ${JSON.stringify(folder)}), `) +
			"and do not retry this call until they have.",
		{ path, reason: "folder not writable by you", folder, errno, writableRoots },
	);
}

/**
 * The package's own folder under the agent dir (backups, journal, audit) cannot be written:
 * nothing may land unbacked.
 */
export function storeNotWritable(folder: string, errno: string): Refusal {
	return refusal(
		"io_error",
		`the backup store ${folder} is not writable by you (${errno}); ` +
			"every change is backed up there before it lands, so nothing was changed. " +
			(errno === "EROFS"
				? `${readOnlyMountFix(folder)}, `
				: `The user must make that folder writable (e.g. chmod u+w ${JSON.stringify(folder)}), `) +
			"then retry the same call.",
		{ path: folder, folder, errno },
	);
}

/** The per-user folder of cross-process locks is missing, foreign or open to others. */
export function lockFolderUnusable(folder: string, problem: string, errno: string): Refusal {
	return refusal(
		"io_error",
		`the lock folder ${folder} ${problem}; pi-selfskills serialises every writer there ` +
			"and uses it only when it is a private folder of yours (mode 0700, not a symbolic link). " +
			"Nothing was changed. The user must remove or fix that folder " +
			"(or point XDG_RUNTIME_DIR at a private folder), then retry the same call.",
		{ path: folder, folder, problem, errno },
	);
}

/** Another process held the target's lock for the whole wait. */
export function lockBusy(path: string, waitedMs: number): Refusal {
	return refusal(
		"io_error",
		`${path} stayed locked by another pi process for ${Math.round(waitedMs / 1000)} s; nothing was changed. ` +
			"Retry the same call in a moment.",
		{ path, errno: "ELOCKED", waitedMs },
	);
}

export function pinned(skill: string, pin: string): Refusal {
	return refusal(
		"pinned",
		`skill "${skill}" is pinned (selfskills.pinned: "${pin}"): it may be read, never changed, ` +
			"and nothing was written. Do not make the change another way; " +
			"tell the person the change you would make. " +
			`Only they can unpin it (/selfskills unpin ${skill}).`,
		{ skill, pin },
	);
}

/** The person said no to a change under "ask", in their own words when they gave any. */
export function denied(action: string, skills: readonly string[], words: string | undefined): Refusal {
	const said = words ? `, saying: "${words}"` : " (no reason given)";
	return refusal(
		"denied",
		`the person denied this ${action} of ${skills.map((s) => `"${s}"`).join(", ")}${said}. Nothing was written. ` +
			"Do not retry it or make the change another way (no edit, write or bash on those files); " +
			"carry on without it, or ask the person what they want instead.",
		{ action, skills, ...(words ? { words } : {}) },
	);
}

/** An approval cannot land what was proposed: a file changed and the change cannot be replayed on it, or it drifted. */
export function proposalStale(id: string, files: readonly string[], detail: string): Refusal {
	return refusal(
		"stale",
		`proposal ${id} no longer applies to ${files.join(", ")}: ${detail}. ` +
			`Nothing was written and the proposal is still pending: reject it (/selfskills reject ${id}) ` +
			"and let the agent propose the change again on the current text.",
		{ id, files },
	);
}

/** `/selfskills show|approve|reject` named no pending proposal. */
export function unknownProposal(id: string, pending: readonly string[]): Refusal {
	const listed = pending.length > 0 ? `pending: ${pending.join(", ")}` : "no proposal is pending";
	return refusal(
		"unknown_proposal",
		`no pending proposal "${id}" (${listed}); it may have been approved or rejected already. ` +
			"Run /selfskills pending.",
		{ id, pending },
	);
}

/** `/selfskills export` could not hand the proposal to git; it stays pending. */
export function gitFailed(id: string, detail: string): Refusal {
	return refusal(
		"git_failed",
		`proposal ${id} was not exported: ${detail}. Nothing changed and the proposal is still pending.`,
		{ id, detail },
	);
}

/** A risk finding as a refusal carries it (the scan's own type lives in checks/risk-scan.ts, above this layer). */
export interface RiskFindingData {
	readonly category: string;
	readonly line: number;
	readonly text: string;
}

/** Risk findings for the model or the person, one line each: `  [category] line N: text`. */
export function findingsText(findings: readonly RiskFindingData[], limit = 20): string {
	const shown = findings.slice(0, limit).map((f) => `  [${f.category}] line ${f.line}: ${f.text}`);
	if (findings.length > limit) shown.push(`  … and ${findings.length - limit} more`);
	return shown.join("\n");
}

/** Under contentReview "refuse": the change adds lines the risk scan flags. */
export function riskyContent(path: string, findings: readonly RiskFindingData[]): Refusal {
	return refusal(
		"risky_content",
		`the change to ${path} adds ${findings.length} line(s) that look risky, and risky content is refused here ` +
			`(selfskills.contentReview: "refuse"); nothing was written:\n${findingsText(findings, 10)}\n` +
			"Make the change again without those lines, or ask the person to make it themselves. " +
			"Do not write them another way.",
		{ path, findings },
	);
}

export interface SimilarSkillData {
	readonly name: string;
	readonly score: number;
	readonly path: string;
}

/** A new or renamed skill reads like one that exists: patch that one, or say how this one differs. */
export function similarExists(name: string, similar: readonly SimilarSkillData[], threshold: number): Refusal {
	const listed = similar.map((s) => `"${s.name}" (${s.score.toFixed(2)}, ${s.path})`).join(", ");
	const names = JSON.stringify(similar.map((s) => s.name));
	return refusal(
		"similar_exists",
		`"${name}" is too similar in name and description to ${listed} (threshold ${threshold}). ` +
			`Read one of them ({"action":"read","skill":"${similar[0]?.name ?? ""}"}) and patch it instead; ` +
			`or, if this skill really does another job, call again with "distinct_from": ${names} ` +
			'and a "reason" saying how it differs.',
		{ name, similar, threshold },
	);
}

export interface SpecRuleData {
	readonly rule: string;
	readonly message: string;
}

/** The skill would break Agent Skills rules (agentskills.io) that it did not break before. */
export function specViolation(path: string, broken: readonly SpecRuleData[], suggestion?: string): Refusal {
	const offer = suggestion
		? ` A frontmatter that holds them is in details.suggestion:\n${suggestion}\n` +
			"Patch the frontmatter to it, then call again."
		: " Change the call so each of these holds, then call again.";
	return refusal(
		"spec_violation",
		`the result would break the Agent Skills specification in ${path}: ${broken.map((b) => b.message).join("; ")}.` +
			offer,
		{ path, broken, ...(suggestion ? { suggestion } : {}) },
	);
}

/** A proposal file that is not one this package wrote (a field of the wrong type): never planned or shown. */
export function invalidProposal(id: string, problem: string): Refusal {
	return refusal(
		"invalid_proposal",
		`proposal ${id} is not a valid proposal file (${problem}); nothing was planned or written. ` +
			`Delete it by hand if you did not expect it (it lives in <agentDir>/selfskills/proposals/${id}.json).`,
		{ id, problem },
	);
}

/** Print mode's `approve --yes=<digest>` named a digest the change as planned now does not have. */
export function digestMismatch(id: string, given: string, current: string): Refusal {
	return refusal(
		"digest_mismatch",
		`proposal ${id} would now land a change whose digest is ${current}, not ${JSON.stringify(given)}: ` +
			"the proposal or its files changed since you looked. Nothing was written. " +
			`Read the change again with /selfskills show ${id}, then approve what it shows with ` +
			`/selfskills approve ${id} --yes=<the digest show prints>.`,
		{ id, given, current },
	);
}

/**
 * `/selfskills eval` cannot start as asked (a flag, the task, the check, the model, the sandbox, the
 * extension): nothing ran and nothing changed. `problem` names the offending value, `next` the step.
 */
export function evalRefused(problem: string, next: string, data: Record<string, unknown> = {}): Refusal {
	return refusal("eval_refused", `${problem}; nothing ran and nothing changed. ${next}`, { problem, ...data });
}
