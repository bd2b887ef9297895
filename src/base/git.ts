// The system `git`, run without a shell: no terminal (its own session, stdin ignored unless bytes are
// handed in), never a prompt, bounded time (the whole process group is killed past it). A missing git
// is reported as such, never thrown; what git said comes back for the caller to judge.

import { spawn, spawnSync, type SpawnOptions } from "node:child_process";

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
	| { readonly ok: true; readonly stdout: string; readonly stderr: string }
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
		const child = spawn("git", [...args], spawnOptions(run));
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

/**
 * The same, synchronously, for the short reads a sync planner needs (history, restore from a
 * commit); bounded by GIT_READ_TIMEOUT_MS unless told otherwise.
 */
export function runGitSync(args: readonly string[], run: GitRun): GitOutcome {
	const result = spawnSync("git", [...args], {
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
	return { ok: true, stdout, stderr };
}

/** A git failure in one line, for a tool result. */
export function describeGitFailure(outcome: Exclude<GitOutcome, { ok: true }>): string {
	if (outcome.kind === "missing") return "git is not installed (no `git` on PATH)";
	if (outcome.kind === "timeout") return "git did not finish in time and was stopped";
	const said = (outcome.stderr.trim() || outcome.stdout.trim()).split("\n").slice(-3).join(" ").slice(0, 300);
	return `git failed${said ? `: ${said}` : ` (exit ${outcome.code})`}`;
}

/** The innermost work tree holding `dir` (its top level), or undefined when none does (or git is missing). */
export function workTreeOf(dir: string): string | undefined {
	const top = runGitSync(["rev-parse", "--show-toplevel"], { cwd: dir, read: true });
	return top.ok && top.stdout.trim() !== "" ? top.stdout.trim() : undefined;
}
