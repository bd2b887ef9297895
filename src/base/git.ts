// The system `git`, run without a shell: no terminal (its own session, stdin ignored unless bytes are
// handed in), never a prompt, bounded time (the whole process group is killed past it). A missing git
// is reported as such, never thrown; what git said comes back for the caller to judge.

import { spawn, spawnSync, type SpawnOptions } from "node:child_process";
import { basename, dirname, join, relative, sep } from "node:path";
import type { FsOps } from "./fs-ops.ts";
import { programPath } from "./programs.ts";

/** Past this a git run is killed: a hook or a lock must not hang the tool. */
export const GIT_TIMEOUT_MS = 20_000;
/** Reads made while planning (history, restore from a commit) are short. */
export const GIT_READ_TIMEOUT_MS = 5_000;
const MAX_OUTPUT = 16 * 1024 * 1024;

/** Run-time configuration that turns off every program a repository can name (hooks, fsmonitor, signing). */
export const NO_PROGRAMS = [
	"-c",
	"core.hooksPath=/dev/null",
	"-c",
	"core.fsmonitor=false",
	"-c",
	"commit.gpgsign=false",
];

export interface GitRun {
	readonly cwd: string;
	/** Extra environment (GIT_INDEX_FILE, identities). */
	readonly env?: Readonly<Record<string, string>>;
	/** Bytes for stdin (hash-object --stdin); without them stdin is closed. */
	readonly input?: Buffer | string;
	readonly timeoutMs?: number;
	/** A read: no optional locks (a status never refreshes the index behind the person's back). */
	readonly read?: boolean;
}

export type GitOutcome =
	| { readonly ok: true; readonly stdout: string; readonly stderr: string; readonly bytes?: Buffer }
	| {
			readonly ok: false;
			/** missing: no git on PATH; timeout: killed after the bound; failed: git exited non-zero. */
			readonly kind: "missing" | "timeout" | "failed";
			readonly code: number | null;
			readonly stdout: string;
			readonly stderr: string;
	  };

function gitEnv(run: GitRun): NodeJS.ProcessEnv {
	return {
		...process.env,
		GIT_TERMINAL_PROMPT: "0",
		GIT_ASKPASS: "",
		SSH_ASKPASS: "",
		GIT_EDITOR: ":",
		GIT_SEQUENCE_EDITOR: ":",
		GIT_PAGER: "cat",
		PAGER: "cat",
		LC_ALL: "C",
		...(run.read ? { GIT_OPTIONAL_LOCKS: "0" } : {}),
		...run.env,
	};
}

function spawnOptions(run: GitRun): SpawnOptions {
	return {
		cwd: run.cwd,
		env: gitEnv(run),
		shell: false,
		// A session of its own: no controlling terminal to prompt on, and one group to kill.
		detached: true,
		stdio: [run.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
		windowsHide: true,
	};
}

function killGroup(pid: number | undefined): void {
	if (pid === undefined) return;
	try {
		process.kill(-pid, "SIGKILL");
	} catch {
		// Already gone.
	}
}

/** Runs `git <args>`; resolves with what it said, never rejects. */
export function runGit(args: readonly string[], run: GitRun): Promise<GitOutcome> {
	return new Promise((resolve) => {
		const git = programPath("git");
		if (git === undefined) return resolve(missingGit());
		const out: Buffer[] = [];
		const err: Buffer[] = [];
		let size = 0;
		let timedOut = false;
		let settled = false;
		const finish = (outcome: GitOutcome) => {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			resolve(outcome);
		};
		const child = spawn(git, [...args], spawnOptions(run));
		const timer = setTimeout(() => {
			timedOut = true;
			killGroup(child.pid);
		}, run.timeoutMs ?? GIT_TIMEOUT_MS);
		const collect = (into: Buffer[]) => (chunk: Buffer) => {
			size += chunk.length;
			if (size > MAX_OUTPUT) return killGroup(child.pid);
			into.push(chunk);
		};
		child.stdout?.on("data", collect(out));
		child.stderr?.on("data", collect(err));
		child.on("error", (error: NodeJS.ErrnoException) => {
			const kind = error.code === "ENOENT" ? "missing" : "failed";
			finish({ ok: false, kind, code: null, stdout: "", stderr: error.message });
		});
		child.on("close", (code) => {
			const stdout = Buffer.concat(out).toString("utf8");
			const stderr = Buffer.concat(err).toString("utf8");
			if (timedOut) finish({ ok: false, kind: "timeout", code, stdout, stderr });
			else if (code === 0) finish({ ok: true, stdout, stderr });
			else finish({ ok: false, kind: "failed", code, stdout, stderr });
		});
		if (child.stdin) {
			child.stdin.on("error", () => undefined);
			child.stdin.end(run.input);
		}
	});
}

/** No git in a PATH folder the agent cannot write (programs.ts): reported as a missing git. */
function missingGit(): GitOutcome {
	const stderr = "git was not found in a PATH folder outside the places the agent may write";
	return { ok: false, kind: "missing", code: null, stdout: "", stderr };
}

/**
 * The same, synchronously, for the short reads a sync planner needs (history, restore from a
 * commit); bounded by GIT_READ_TIMEOUT_MS unless told otherwise.
 */
export function runGitSync(args: readonly string[], run: GitRun): GitOutcome {
	const git = programPath("git");
	if (git === undefined) return missingGit();
	const result = spawnSync(git, [...args], {
		...spawnOptions(run),
		input: run.input,
		stdio: [run.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
		timeout: run.timeoutMs ?? GIT_READ_TIMEOUT_MS,
		killSignal: "SIGKILL",
		maxBuffer: MAX_OUTPUT,
	});
	const stdout = result.stdout?.toString("utf8") ?? "";
	const stderr = result.stderr?.toString("utf8") ?? "";
	const error = result.error as NodeJS.ErrnoException | undefined;
	if (error?.code === "ENOENT") return { ok: false, kind: "missing", code: null, stdout, stderr: error.message };
	if (error?.code === "ETIMEDOUT" || result.signal === "SIGKILL")
		return { ok: false, kind: "timeout", code: result.status, stdout, stderr };
	if (error || result.status !== 0) return { ok: false, kind: "failed", code: result.status, stdout, stderr };
	return { ok: true, stdout, stderr, bytes: result.stdout ?? Buffer.alloc(0) };
}

/** A git failure in one line, for a tool result. */
export function describeGitFailure(outcome: Exclude<GitOutcome, { ok: true }>): string {
	if (outcome.kind === "missing") return "git is not installed (no `git` on PATH)";
	if (outcome.kind === "timeout") return "git did not finish in time and was stopped";
	const said = (outcome.stderr.trim() || outcome.stdout.trim()).split("\n").slice(-3).join(" ").slice(0, 300);
	return `git failed${said ? `: ${said}` : ` (exit ${outcome.code})`}`;
}

/** The nearest existing folder at or above `dir` (symlinks resolved), and the names below it not made yet. */
export function existingAncestor(fs: FsOps, dir: string): { dir: string; rest: string[] } {
	const rest: string[] = [];
	let current = dir;
	while (fs.stat(current) === undefined && dirname(current) !== current) {
		rest.unshift(basename(current));
		current = dirname(current);
	}
	return { dir: fs.realpath(current), rest };
}

/** Where `absPath` lies in a git work tree: its top level and its `/`-separated path there; undefined when in none. */
export function locateInWorkTree(fs: FsOps, absPath: string): { top: string; rel: string } | undefined {
	let found: { dir: string; rest: string[] };
	try {
		found = existingAncestor(fs, dirname(absPath));
	} catch {
		return undefined;
	}
	const top = runGitSync([...NO_PROGRAMS, "rev-parse", "--show-toplevel"], { cwd: found.dir, read: true });
	if (!top.ok || top.stdout.trim() === "") return undefined;
	const rel = relative(top.stdout.trim(), join(found.dir, ...found.rest, basename(absPath)))
		.split(sep)
		.join("/");
	return rel.startsWith("..") ? undefined : { top: top.stdout.trim(), rel };
}

export interface CommitLine {
	readonly id: string;
	readonly short: string;
	readonly time: string;
	readonly author: string;
	readonly subject: string;
}

/** How many commits that touched a file `history` lists, at most. */
export const HISTORY_COMMITS = 10;
/** How many of HEAD's newest commits (first parents) git looks through for them, at most. */
export const HISTORY_DEPTH = 500;

/**
 * The latest commits of the current HEAD that touched `rel` (a file or a folder), newest first: at
 * most `limit`, found among HEAD's newest HISTORY_DEPTH commits, so a file changed long ago in a long
 * history costs a bounded walk, not one through every commit.
 */
export function recentCommits(top: string, rel: string, limit = HISTORY_COMMITS): CommitLine[] {
	const options = { cwd: top, read: true, env: { GIT_LITERAL_PATHSPECS: "1" } };
	const base = runGitSync([...NO_PROGRAMS, "rev-parse", "--verify", "-q", `HEAD~${HISTORY_DEPTH}^{commit}`], options);
	const range = base.ok && base.stdout.trim() ? `${base.stdout.trim()}..HEAD` : "HEAD";
	const log = runGitSync(
		[
			...NO_PROGRAMS,
			"log",
			`-n${limit}`,
			"--no-color",
			"--date=iso-strict",
			"--format=%H%x00%h%x00%ad%x00%an%x00%s",
			range,
			"--",
			rel,
		],
		options,
	);
	if (!log.ok) return [];
	return log.stdout
		.split("\n")
		.filter(Boolean)
		.map((line) => {
			const [id, short, time, author, subject] = line.split("\0");
			return { id, short, time, author, subject };
		});
}

/** A git revision as a backup id names it: `git:<rev>` (a commit id, a branch, HEAD~2...), or undefined. */
export function gitRevisionOf(backup: string | undefined): string | undefined {
	const match = /^git:(.+)$/.exec(backup?.trim() ?? "");
	return match ? match[1].trim() : undefined;
}

/** A revision the tool passes to git: no option look-alike, no whitespace or control characters. */
export function isSafeRevision(rev: string): boolean {
	return /^[\w./~^@{}+-]+$/.test(rev) && !rev.startsWith("-") && rev.length <= 200;
}

/** The files under `rel` (a file or a folder) in commit `rev`: mode, blob id and path; undefined when git fails. */
export function filesAt(
	top: string,
	rev: string,
	rel: string,
): Array<{ mode: string; id: string; path: string }> | undefined {
	const tree = runGitSync([...NO_PROGRAMS, "ls-tree", "-r", "-z", "--full-tree", rev, "--", rel], {
		cwd: top,
		read: true,
		env: { GIT_LITERAL_PATHSPECS: "1" },
	});
	if (!tree.ok) return undefined;
	return tree.stdout
		.split("\0")
		.filter(Boolean)
		.map((line) => {
			const tab = line.indexOf("\t");
			const [mode, type, id] = line.slice(0, tab).split(" ");
			return { mode: type === "blob" ? mode : type, id, path: line.slice(tab + 1) };
		});
}

/** A commit's full id for `rev`, or undefined when it names none. */
export function resolveCommit(top: string, rev: string): string | undefined {
	const out = runGitSync([...NO_PROGRAMS, "rev-parse", "-q", "--verify", "--end-of-options", `${rev}^{commit}`], {
		cwd: top,
		read: true,
	});
	return out.ok ? out.stdout.trim() : undefined;
}

/** A blob's bytes exactly as stored (no filter runs), or undefined. */
export function blobBytes(top: string, id: string): Buffer | undefined {
	const out = runGitSync([...NO_PROGRAMS, "cat-file", "blob", id], { cwd: top, read: true });
	return out.ok ? out.bytes : undefined;
}

/** The innermost work tree holding `dir` (its top level), or undefined when none does (or git is missing). */
export function workTreeOf(dir: string): string | undefined {
	const top = runGitSync([...NO_PROGRAMS, "rev-parse", "--show-toplevel"], { cwd: dir, read: true });
	return top.ok && top.stdout.trim() !== "" ? top.stdout.trim() : undefined;
}
