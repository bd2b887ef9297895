// Real git repositories for the "Skills in git" tests: a skills root made a repository with one first
// commit, the plain git commands the tests read it back with, and the state (status, staged diff,
// HEAD, log) compared before and after a change.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { writeJson } from "./fixtures.ts";

/** `git <args>` in `cwd`, its stdout (throws on a non-zero exit). */
export function git(cwd: string, ...args: string[]): string {
	return execFileSync("git", args, {
		cwd,
		encoding: "utf8",
		stdio: ["ignore", "pipe", "pipe"],
		env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" },
	});
}

/** Makes `dir` a repository on branch main holding everything in it as one first commit. */
export function initRepo(dir: string, identity = true): string {
	mkdirSync(dir, { recursive: true });
	git(dir, "init", "-q", "-b", "main");
	if (identity) {
		git(dir, "config", "user.name", "Pat Person");
		git(dir, "config", "user.email", "pat@example.com");
	}
	git(dir, "add", "-A");
	git(
		dir,
		"-c",
		"user.name=Setup",
		"-c",
		"user.email=setup@example.com",
		"commit",
		"-q",
		"--allow-empty",
		"-m",
		"first",
	);
	return dir;
}

/** What the person's git shows: status, the staged diff, the unstaged diff, HEAD. */
export function repoState(dir: string): { status: string; staged: string; unstaged: string; head: string } {
	return {
		status: git(dir, "status", "--porcelain"),
		staged: git(dir, "diff", "--cached"),
		unstaged: git(dir, "diff"),
		head: git(dir, "rev-parse", "HEAD").trim(),
	};
}

export function commitCount(dir: string): number {
	return Number(git(dir, "rev-list", "--count", "HEAD").trim());
}

/** The files the last commit changed, `A`/`M`/`D` and path. */
export function lastCommitFiles(dir: string): string[] {
	return git(dir, "show", "--name-status", "--format=", "HEAD").trim().split("\n").filter(Boolean);
}

/** Writes the global selfskills settings (git: "commit" plus `extra`). */
export function gitSettings(agentDir: string, extra: Record<string, unknown> = {}): void {
	writeJson(join(agentDir, "settings.json"), { selfskills: { git: "commit", ...extra } });
}
