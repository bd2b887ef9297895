// `git: "commit"`: a landed change becomes one commit per work tree it touched, holding only its
// paths. `inspectTargets` runs before the write (was every target as HEAD has it?); `commitLanded`
// after it: `git commit --only` with the person's hooks, or, while a control is on, plumbing on a
// temporary index that runs no hook, filter, fsmonitor or signing program. A git failure is reported,
// never undone: the change stays landed.

import { createHash } from "node:crypto";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import type { FsOps } from "../base/fs-ops.ts";
import { describeGitFailure, existingAncestor, NO_PROGRAMS, runGit, type GitOutcome } from "../base/git.ts";

/** Commits made while no identity is configured carry this one. */
export const PACKAGE_IDENTITY = { name: "pi-selfskills", email: "pi-selfskills@localhost" } as const;
const SUBJECT_MAX = 72;

/** One file of a change, as planned: its bytes before (null: absent) and whether it exists after. */
export interface GitTarget {
	readonly absPath: string;
	readonly before: Buffer | null;
	readonly removed: boolean;
}

interface RepoFile {
	/** Relative to the work tree, `/`-separated. */
	readonly rel: string;
	readonly absPath: string;
	readonly removed: boolean;
	/** Neither in HEAD nor in the index (a new file). */
	readonly untracked: boolean;
}

/** One work tree the change touches, and what it was before the write. */
export interface RepoBefore {
	readonly top: string;
	readonly files: readonly RepoFile[];
	/** Targets that differed from HEAD before the change (index or work tree): nothing is committed. */
	readonly dirty: readonly string[];
	/** Paths in neither HEAD nor the index that git ignores: left out of the commit. */
	readonly ignored: readonly string[];
	/** HEAD's entries for the files (mode, id), to put the index back when a commit fails half way. */
	readonly head: ReadonlyMap<string, { mode: string; id: string }>;
	/** The repository's all-zero object id (sha1 or sha256 long). */
	readonly zero: string;
	/** Why the state could not be read (git missing or failing): nothing is committed. */
	readonly problem?: string;
}

export interface CommitMessage {
	readonly action: string;
	readonly skills: readonly string[];
	readonly reason?: string;
	/** The audit lines' time, the trailer that ties the commit to them. */
	readonly audit: string;
	readonly approved?: string;
	/** A proposal exported for review, not yet approved. */
	readonly proposal?: string;
}

/** What became of one work tree's share of a landed change. */
export interface GitReport {
	readonly repo: string;
	/** The new commit's id, or null when nothing was committed. */
	readonly commit: string | null;
	readonly files: readonly string[];
	readonly ignored: readonly string[];
	readonly hooksSkipped: boolean;
	/** Why nothing was committed. */
	readonly why?: string;
	/** The command that commits it by hand. */
	readonly byHand?: string;
}

function splitZ(text: string): string[] {
	return text.split("\0").filter((s) => s !== "");
}

/** `git ls-tree`/`ls-files -s` lines to path -> {mode, id} (and stage for ls-files). */
function parseEntries(text: string, staged: boolean): Map<string, { mode: string; id: string; stage: string }> {
	const entries = new Map<string, { mode: string; id: string; stage: string }>();
	for (const line of splitZ(text)) {
		const tab = line.indexOf("\t");
		const fields = line.slice(0, tab).split(" ");
		const path = line.slice(tab + 1);
		if (staged) entries.set(path, { mode: fields[0], id: fields[1], stage: fields[2] });
		else entries.set(path, { mode: fields[0], id: fields[2], stage: "0" });
	}
	return entries;
}

function blobId(bytes: Buffer, format: string): string {
	return createHash(format === "sha256" ? "sha256" : "sha1")
		.update(`blob ${bytes.length}\0`)
		.update(bytes)
		.digest("hex");
}

const LITERAL = { GIT_LITERAL_PATHSPECS: "1" };

async function readRepo(
	top: string,
	files: RepoFile[],
	targets: Map<string, GitTarget>,
	fs: FsOps,
): Promise<RepoBefore> {
	const rels = files.map((f) => f.rel);
	const read = { cwd: top, read: true, env: LITERAL };
	const fail = (outcome: Exclude<GitOutcome, { ok: true }>): RepoBefore => ({
		top,
		files,
		dirty: [],
		ignored: [],
		head: new Map(),
		zero: "",
		problem: describeGitFailure(outcome),
	});
	const format = await runGit([...NO_PROGRAMS, "rev-parse", "--show-object-format"], read);
	if (!format.ok) return fail(format);
	const hasHead = (await runGit([...NO_PROGRAMS, "rev-parse", "-q", "--verify", "HEAD^{commit}"], read)).ok;
	const tree = hasHead
		? await runGit([...NO_PROGRAMS, "ls-tree", "-z", "--full-tree", "HEAD", "--", ...rels], read)
		: undefined;
	if (tree && !tree.ok) return fail(tree);
	const index = await runGit([...NO_PROGRAMS, "ls-files", "-s", "-z", "--", ...rels], read);
	if (!index.ok) return fail(index);
	const head = parseEntries(tree?.stdout ?? "", false);
	const staged = parseEntries(index.stdout, true);
	const dirty: string[] = [];
	const untracked = new Set<string>();
	for (const file of files) {
		const h = head.get(file.rel);
		const i = staged.get(file.rel);
		if (!h && !i) untracked.add(file.rel);
		const before = targets.get(file.absPath)?.before ?? null;
		const indexDiffers = h?.id !== i?.id || h?.mode !== i?.mode || (i !== undefined && i.stage !== "0");
		const work = before === null ? undefined : blobId(before, format.stdout.trim());
		const executable = before !== null && ((fs.stat(file.absPath)?.mode ?? 0) & 0o111) !== 0;
		const treeDiffers = h?.id !== work || (h !== undefined && (h.mode === "100755") !== executable);
		if (indexDiffers || treeDiffers) dirty.push(file.rel);
	}
	// A path git ignores is neither committed nor anyone's uncommitted work.
	const news = files.filter((f) => untracked.has(f.rel)).map((f) => f.rel);
	const ignoredRun =
		news.length > 0
			? await runGit([...NO_PROGRAMS, "check-ignore", "-z", "--stdin"], {
					cwd: top,
					read: true,
					input: `${news.join("\0")}\0`,
				})
			: undefined;
	const ignored = ignoredRun?.ok ? splitZ(ignoredRun.stdout) : [];
	return {
		top,
		files: files.map((f) => ({ ...f, untracked: untracked.has(f.rel) })),
		dirty: dirty.filter((rel) => !ignored.includes(rel)),
		ignored,
		head: new Map([...head].map(([path, e]) => [path, { mode: e.mode, id: e.id }])),
		zero: "0".repeat(format.stdout.trim() === "sha256" ? 64 : 40),
	};
}

/**
 * Before the write: the work trees the targets lie in (innermost, from each file's folder), and for
 * each whether every target was exactly as HEAD has it, in the index and on disk.
 */
export async function inspectTargets(fs: FsOps, targets: readonly GitTarget[]): Promise<RepoBefore[]> {
	const byTop = new Map<string, RepoFile[]>();
	const topOf = new Map<string, string | undefined>();
	const problems = new Map<string, string>();
	for (const target of targets) {
		const { dir, rest } = existingAncestor(fs, dirname(target.absPath));
		if (!topOf.has(dir)) {
			const top = await runGit([...NO_PROGRAMS, "rev-parse", "--show-toplevel"], { cwd: dir, read: true });
			topOf.set(dir, top.ok && top.stdout.trim() !== "" ? top.stdout.trim() : undefined);
			// Not a work tree is no commit; no git at all (or one that hangs) is said.
			if (!top.ok && top.kind !== "failed") {
				topOf.set(dir, dir);
				problems.set(dir, describeGitFailure(top));
			}
		}
		const top = topOf.get(dir);
		if (top === undefined) continue;
		const rel = relative(top, join(dir, ...rest, basename(target.absPath)))
			.split(sep)
			.join("/");
		if (rel.startsWith("..")) continue;
		const file: RepoFile = { rel, absPath: target.absPath, removed: target.removed, untracked: false };
		byTop.set(top, [...(byTop.get(top) ?? []), file]);
	}
	const byPath = new Map(targets.map((t) => [t.absPath, t]));
	const repos: RepoBefore[] = [];
	for (const [top, files] of byTop) {
		const problem = problems.get(top);
		repos.push(
			problem
				? { top, files, dirty: [], ignored: [], head: new Map(), zero: "", problem }
				: await readRepo(top, files, byPath, fs),
		);
	}
	return repos;
}

/** The subject (≤ 72 characters), the reason as the body, then the trailers. */
export function commitMessage(message: CommitMessage, files: readonly string[]): string {
	const names = files.map((f) => f.split("/").slice(-2).join("/"));
	let subject = `selfskills: ${message.action} ${message.skills.join(", ")} (${names.join(", ")})`;
	if (subject.length > SUBJECT_MAX)
		subject = `selfskills: ${message.action} ${message.skills.join(", ")} (${files.length} files)`;
	if (subject.length > SUBJECT_MAX) subject = `${subject.slice(0, SUBJECT_MAX - 1)}…`;
	const body = (message.reason ?? "").replace(/\r\n?/g, "\n").trim();
	const trailers = [
		`Selfskills-Audit: ${message.audit}`,
		...(message.approved ? [`Selfskills-Approved: ${message.approved}`] : []),
		...(message.proposal ? [`Selfskills-Proposal: ${message.proposal}`] : []),
	];
	return [subject, ...(body ? [body] : []), trailers.join("\n")].join("\n\n");
}

/** The person's identity where git has one; the package's otherwise. */
export async function identityEnv(top: string): Promise<Record<string, string>> {
	const get = async (key: string) => {
		const out = await runGit([...NO_PROGRAMS, "config", "--get", key], { cwd: top, read: true });
		return out.ok ? out.stdout.trim() : "";
	};
	const name = process.env.GIT_AUTHOR_NAME || (await get("user.name"));
	const email = process.env.GIT_AUTHOR_EMAIL || (await get("user.email"));
	if (name && email) return {};
	return {
		GIT_AUTHOR_NAME: PACKAGE_IDENTITY.name,
		GIT_AUTHOR_EMAIL: PACKAGE_IDENTITY.email,
		GIT_COMMITTER_NAME: PACKAGE_IDENTITY.name,
		GIT_COMMITTER_EMAIL: PACKAGE_IDENTITY.email,
	};
}

function quote(arg: string): string {
	return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function byHand(top: string, paths: readonly string[], subject: string): string {
	const list = paths.map(quote).join(" ");
	return `git -C ${quote(top)} add -A -- ${list} && git -C ${quote(top)} commit -m ${quote(subject)} -- ${list}`;
}

/** A merge, rebase, cherry-pick or revert under way, a detached HEAD or a held index.lock: the reason, if any. */
async function blockedBy(top: string, fs: FsOps): Promise<string | undefined> {
	const names = ["index.lock", "MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD"];
	const why = [
		"another git process holds the index (index.lock exists)",
		"a merge is under way",
		"a rebase is under way",
		"a rebase is under way",
		"a cherry-pick is under way",
		"a revert is under way",
	];
	const where = await gitPaths(top, names);
	if ("error" in where) return where.error;
	const hit = where.paths.findIndex((p) => fs.stat(p) !== undefined);
	if (hit >= 0) return why[hit];
	const branch = await runGit([...NO_PROGRAMS, "symbolic-ref", "-q", "HEAD"], { cwd: top, read: true });
	if (!branch.ok)
		return branch.kind === "failed" ? "HEAD is detached (no branch to commit on)" : describeGitFailure(branch);
	return undefined;
}

/** Where git keeps `names` in this repository (`git rev-parse --git-path`), as absolute paths. */
async function gitPaths(top: string, names: readonly string[]): Promise<{ paths: string[] } | { error: string }> {
	const out = await runGit([...NO_PROGRAMS, "rev-parse", ...names.flatMap((n) => ["--git-path", n])], {
		cwd: top,
		read: true,
	});
	if (!out.ok) return { error: describeGitFailure(out) };
	return {
		paths: out.stdout
			.trim()
			.split("\n")
			.map((p) => (isAbsolute(p) ? p : join(top, p))),
	};
}

/** The real index entries for `files` set to what HEAD now holds for them (plumbing keeps it in step). */
export function indexInfo(
	files: ReadonlyArray<{ readonly rel: string }>,
	ids: ReadonlyMap<string, { mode: string; id: string }>,
	zero: string,
): string {
	return files
		.map((f) => {
			const entry = ids.get(f.rel);
			return entry ? `${entry.mode} ${entry.id}\t${f.rel}\n` : `0 ${zero}\t${f.rel}\n`;
		})
		.join("");
}

async function commitWithHooks(
	repo: RepoBefore,
	files: readonly RepoFile[],
	message: string,
	env: Record<string, string>,
) {
	const run = { cwd: repo.top, env: { ...env, ...LITERAL } };
	const added = files.filter((f) => f.untracked && !f.removed).map((f) => f.rel);
	if (added.length > 0) {
		const add = await runGit(["add", "--", ...added], run);
		if (!add.ok) return { error: describeGitFailure(add) };
	}
	const commit = await runGit(
		["commit", "--only", "--no-edit", "--cleanup=whitespace", "-m", message, "--", ...files.map((f) => f.rel)],
		run,
	);
	if (!commit.ok) {
		// Undo only what this call staged: the new files were in no index before.
		if (added.length > 0) await runGit(["rm", "--cached", "-q", "--ignore-unmatch", "--", ...added], run);
		return {
			error: describeGitFailure(commit).replace(/^git failed/, "git commit failed (a hook may have refused)"),
		};
	}
	const head = await runGit([...NO_PROGRAMS, "rev-parse", "HEAD"], { cwd: repo.top, read: true });
	return { commit: head.ok ? head.stdout.trim() : "HEAD" };
}

/**
 * A commit object on top of `parent` (none: a root commit) whose tree is the parent's with `info`
 * (`git update-index --index-info` lines) applied, built in a temporary index: no work tree, index
 * or ref is touched, and no hook, filter or signing program runs.
 */
export async function commitOnTop(
	top: string,
	fs: FsOps,
	change: { parent: string; info: string; message: string; env: Record<string, string> },
): Promise<{ error: string } | { commit: string }> {
	const tempPath = await gitPaths(top, [`selfskills-index-${process.pid}-${Date.now()}`]);
	if ("error" in tempPath) return tempPath;
	const run = { cwd: top, env: { ...change.env, ...LITERAL, GIT_INDEX_FILE: tempPath.paths[0] } };
	const git = (args: string[], input?: string) => runGit([...NO_PROGRAMS, ...args], { ...run, input });
	try {
		const seeded = await git(change.parent ? ["read-tree", change.parent] : ["read-tree", "--empty"]);
		if (!seeded.ok) return { error: describeGitFailure(seeded) };
		const updated = await git(["update-index", "--index-info"], change.info);
		if (!updated.ok) return { error: describeGitFailure(updated) };
		const tree = await git(["write-tree"]);
		if (!tree.ok) return { error: describeGitFailure(tree) };
		const parents = change.parent ? ["-p", change.parent] : [];
		const made = await git(["commit-tree", tree.stdout.trim(), ...parents, "-m", change.message]);
		return made.ok ? { commit: made.stdout.trim() } : { error: describeGitFailure(made) };
	} finally {
		try {
			fs.unlink(tempPath.paths[0]);
		} catch {
			// Never written, or already gone.
		}
	}
}

/** HEAD's commit id, or "" on a branch with no commit yet. */
export async function headCommit(top: string): Promise<string> {
	const old = await runGit([...NO_PROGRAMS, "rev-parse", "-q", "--verify", "HEAD^{commit}"], { cwd: top, read: true });
	return old.ok ? old.stdout.trim() : "";
}

async function commitWithPlumbing(
	repo: RepoBefore,
	files: readonly RepoFile[],
	message: string,
	env: Record<string, string>,
	fs: FsOps,
): Promise<{ error: string } | { commit: string }> {
	const run = { cwd: repo.top, env: { ...env, ...LITERAL } };
	const git = (args: string[], input?: string) => runGit([...NO_PROGRAMS, ...args], { ...run, input });
	const parent = await headCommit(repo.top);
	const present = files.filter((f) => !f.removed);
	const ids = new Map<string, { mode: string; id: string }>();
	if (present.length > 0) {
		const hashed = await git(["hash-object", "-w", "--no-filters", "--", ...present.map((f) => f.rel)]);
		if (!hashed.ok) return { error: describeGitFailure(hashed) };
		const lines = hashed.stdout.trim().split("\n");
		present.forEach((f, i) => {
			const executable = ((fs.stat(f.absPath)?.mode ?? 0) & 0o111) !== 0;
			ids.set(f.rel, { mode: executable ? "100755" : "100644", id: lines[i] });
		});
	}
	const info = indexInfo(files, ids, repo.zero);
	const made = await commitOnTop(repo.top, fs, { parent, info, message, env });
	if ("error" in made) return made;
	// The real index first: were the ref moved and the index left behind, it would show the
	// change as staged to be undone, and the person's next `git commit` would revert it.
	const inStep = await git(["update-index", "--index-info"], info);
	if (!inStep.ok) return { error: describeGitFailure(inStep) };
	const moved = await git(["update-ref", "-m", "commit (pi-selfskills)", "HEAD", made.commit, parent]);
	if (!moved.ok) {
		await git(["update-index", "--index-info"], indexInfo(files, repo.head, repo.zero));
		return { error: describeGitFailure(moved) };
	}
	return made;
}

export interface CommitOptions {
	readonly fs: FsOps;
	readonly message: CommitMessage;
	/** A control is on: commit with plumbing, running none of the repository's programs. */
	readonly skipHooks: boolean;
}

/** After the write: one commit per work tree of exactly the touched paths, or the reason there is none. */
export async function commitLanded(repos: readonly RepoBefore[], options: CommitOptions): Promise<GitReport[]> {
	const reports: GitReport[] = [];
	for (const repo of repos) {
		const ignored = new Set(repo.ignored);
		const files = repo.files.filter((f) => !ignored.has(f.rel));
		const rels = files.map((f) => f.rel);
		const message = commitMessage(options.message, rels);
		const base = { repo: repo.top, files: rels, ignored: repo.ignored, hooksSkipped: options.skipHooks };
		const notCommitted = (why: string): GitReport => ({
			...base,
			commit: null,
			why,
			...(rels.length > 0 ? { byHand: byHand(repo.top, rels, message.split("\n")[0]) } : {}),
		});
		if (repo.problem) {
			reports.push(notCommitted(repo.problem));
			continue;
		}
		if (repo.dirty.length > 0) {
			reports.push({
				...notCommitted(`${repo.dirty.join(", ")} differed from HEAD before the change (your uncommitted work)`),
				byHand: undefined,
			});
			continue;
		}
		if (files.length === 0) {
			reports.push({ ...base, commit: null, why: "every touched path is ignored by git" });
			continue;
		}
		const blocked = await blockedBy(repo.top, options.fs);
		if (blocked) {
			reports.push(notCommitted(blocked));
			continue;
		}
		const env = await identityEnv(repo.top);
		const done = options.skipHooks
			? await commitWithPlumbing(repo, files, message, env, options.fs)
			: await commitWithHooks(repo, files, message, env);
		reports.push(
			"commit" in done && done.commit
				? { ...base, commit: done.commit }
				: notCommitted(String("error" in done ? done.error : "")),
		);
	}
	return reports;
}

/** One line per work tree, for the tool result. */
export function describeGitReports(reports: readonly GitReport[]): string[] {
	return reports.map((r) => {
		const ignored = r.ignored.length > 0 ? ` Ignored by git, not committed: ${r.ignored.join(", ")}.` : "";
		if (r.commit) {
			const hooks = r.hooksSkipped ? " (hooks skipped: a control is on)" : "";
			return `git: committed ${r.commit.slice(0, 12)} in ${r.repo}: ${r.files.join(", ")}${hooks}.${ignored}`;
		}
		const hand = r.byHand ? ` To commit it by hand: ${r.byHand}` : "";
		return `git: not committed in ${r.repo} — ${r.why}; the change stays landed, uncommitted.${ignored}${hand}`;
	});
}

/** What `gitBefore` captured: commit the landed change with its message, or report why not. */
export type GitCommitter = (message: CommitMessage, skipHooks: boolean) => Promise<GitReport[]>;

/**
 * The hook the pipeline calls before it writes: the state of every target's work tree now, and the
 * function that commits once the change landed. Nothing here may stop the change: a failure to
 * read the state is a report.
 */
export async function gitBefore(
	fs: FsOps,
	changes: ReadonlyArray<{ absPath: string; before: Buffer | null; after: Buffer | null }>,
): Promise<GitCommitter> {
	let repos: RepoBefore[];
	try {
		repos = await inspectTargets(
			fs,
			changes.map((c) => ({ absPath: c.absPath, before: c.before, removed: c.after === null })),
		);
	} catch (error) {
		return async () => [failedReport("the git state could not be read", error)];
	}
	// The change has landed by the time this runs: whatever goes wrong is a report, never a throw.
	return (message, skipHooks) =>
		commitLanded(repos, { fs, message, skipHooks }).catch((error: unknown) => [failedReport("git failed", error)]);
}

function failedReport(what: string, error: unknown): GitReport {
	const why = `${what} (${error instanceof Error ? error.message : String(error)})`;
	return { repo: "(unknown)", commit: null, files: [], ignored: [], hooksSkipped: false, why };
}
