// `/selfskills export <id> [--branch]`: a pending proposal planned again on HEAD's version of its
// files, then handed to git for a teammate to review — a patch `git apply` takes (one per work tree,
// kept in <agentDir>/selfskills/exports/) or the branch `selfskills/<id>` holding it as one commit on
// top of HEAD. Built with plumbing on a temporary index: the work tree, the index and the current
// branch stay as they are; nothing is pushed. Where the ops no longer apply to HEAD: `stale`.

import { join } from "node:path";
import type { SkillManageArgs } from "./arguments.ts";
import { findProposal } from "./review.ts";
import type { SessionDeps } from "../pipeline/session-state.ts";
import { prepareCall } from "./prepare.ts";
import { createCallContext } from "../pipeline/call-context.ts";
import type { TrustContext } from "../policy/trust.ts";
import * as refusals from "../base/errors.ts";
import type { Refusal } from "../base/errors.ts";
import type { FsOps } from "../base/fs-ops.ts";
import { blobBytes, describeGitFailure, filesAt, locateInWorkTree, NO_PROGRAMS, runGit } from "../base/git.ts";
import { getSelfSkillsDir } from "../base/paths.ts";
import { createPrivateDirs, writePrivate } from "../base/writer.ts";
import { commitMessage, commitOnTop, headCommit, identityEnv, indexInfo } from "../pipeline/git-commit.ts";
import { createOverlay, mergeChanges } from "../pipeline/plan.ts";
import type { ReadLedger } from "../store/read-ledger.ts";
import type { Proposal } from "../store/proposals.ts";
import { readIfExists } from "../base/fs-reads.ts";
import { sha256 } from "../base/hash.ts";
import type { FileChange, FileView, Plan } from "../pipeline/types.ts";

export interface ExportedRepo {
	readonly repo: string;
	readonly files: readonly string[];
	readonly commit: string;
	/** The patch file written (no --branch). */
	readonly patch?: string;
	/** The branch made (--branch). */
	readonly branch?: string;
}

/** Where HEAD's version of a file lives: its work tree and path there, and HEAD's entry (none: absent). */
interface HeadFile {
	readonly top: string;
	readonly rel: string;
	readonly bytes: Buffer | null;
	readonly mode: number | undefined;
}

/** The files as HEAD holds them; paths in no work tree read from the disk. */
function headView(fs: FsOps): FileView & { located(absPath: string): HeadFile | undefined } {
	const cache = new Map<string, HeadFile | undefined>();
	const located = (absPath: string): HeadFile | undefined => {
		if (cache.has(absPath)) return cache.get(absPath);
		const where = locateInWorkTree(fs, absPath);
		let file: HeadFile | undefined;
		if (where) {
			const entries = filesAt(where.top, "HEAD", where.rel) ?? [];
			const exact = entries.find((e) => e.path === where.rel);
			const bytes = exact ? (blobBytes(where.top, exact.id) ?? null) : null;
			const mode = exact ? (exact.mode === "100755" ? 0o755 : 0o644) : entries.length > 0 ? 0o755 : undefined;
			file = { ...where, bytes, mode };
		}
		cache.set(absPath, file);
		return file;
	};
	return {
		located,
		read: (absPath) => {
			const file = located(absPath);
			return file ? file.bytes : readIfExists(fs, absPath);
		},
		mode: (absPath) => {
			const file = located(absPath);
			if (file) return file.mode;
			return fs.stat(absPath) === undefined ? undefined : (fs.stat(absPath)?.mode ?? 0) & 0o7777;
		},
		deletedBy: () => undefined,
		skillDeletedBy: () => undefined,
	};
}

/** The reader of an export is HEAD: every file counts as read at HEAD's bytes. */
function headLedger(view: FileView): ReadLedger {
	return {
		record: () => undefined,
		get: (path) => {
			const bytes = view.read(path);
			return bytes === null ? undefined : sha256(bytes);
		},
		forget: () => undefined,
		clear: () => undefined,
		size: 0,
	};
}

/** The proposal's ops planned on HEAD's files, merged to one change per file; stale where they no longer apply. */
async function planOnHead(
	deps: SessionDeps,
	ctx: TrustContext,
	proposal: Proposal,
	view: FileView,
): Promise<FileChange[] | Refusal> {
	const planned = await createCallContext({
		ctx: ctx.cwd === proposal.cwd ? ctx : { cwd: proposal.cwd },
		agentDir: deps.agentDir(),
		ledger: headLedger(view),
		fs: deps.fs,
		runtimeSkillFiles: deps.state.runtimeSkillFiles,
	});
	// The person exports: a pin added since the proposal binds the agent, not them.
	const callCtx = { ...planned, byPerson: true };
	const files = proposal.targets.map((t) => `${t.skill}/${t.file}`);
	const prepared = prepareCall(callCtx, proposal.args as unknown as SkillManageArgs);
	if ("code" in prepared)
		return refusals.proposalStale(proposal.id, files, `the call no longer resolves (${prepared.code})`);
	const overlay = createOverlay(view);
	const touched = new Set<string>();
	const plans: Plan[] = [];
	for (const [index, op] of prepared.entries()) {
		const plan = op.plan({ view: overlay, disk: view, touched, dryRun: true, approvals: [] });
		if ("code" in plan)
			return refusals.proposalStale(
				proposal.id,
				files,
				`it does not apply to HEAD's version (operations[${index}] ${plan.code}: ${plan.reason})`,
			);
		overlay.apply(plan, index);
		for (const change of plan.changes) touched.add(change.absPath);
		plans.push(plan);
	}
	return mergeChanges(plans.flatMap((p) => p.changes));
}

/** The change's files in one work tree as `--index-info` lines, each new content written as a blob. */
async function indexLines(
	top: string,
	changes: ReadonlyArray<{ rel: string; change: FileChange; mode: number | undefined }>,
): Promise<{ info: string } | { error: string }> {
	const ids = new Map<string, { mode: string; id: string }>();
	for (const { rel, change, mode } of changes) {
		if (change.after === null) continue;
		const blob = await runGit([...NO_PROGRAMS, "hash-object", "-w", "--no-filters", "--stdin"], {
			cwd: top,
			input: change.after,
		});
		if (!blob.ok) return { error: describeGitFailure(blob) };
		const executable = ((change.restoreMode ?? mode ?? change.mode ?? 0o644) & 0o111) !== 0;
		ids.set(rel, { mode: executable ? "100755" : "100644", id: blob.stdout.trim() });
	}
	const format = await runGit([...NO_PROGRAMS, "rev-parse", "--show-object-format"], { cwd: top, read: true });
	const zero = "0".repeat(format.ok && format.stdout.trim() === "sha256" ? 64 : 40);
	return { info: indexInfo(changes, ids, zero) };
}

export function exportsDir(agentDir: string): string {
	return join(getSelfSkillsDir(agentDir), "exports");
}

/**
 * Exports pending proposal `id`: one commit per work tree it touches, on top of HEAD, then either
 * a patch file of it or the branch `selfskills/<id>` pointing at it.
 */
export async function exportProposal(
	deps: SessionDeps,
	ctx: TrustContext,
	id: string,
	options: { readonly branch: boolean },
): Promise<ExportedRepo[] | Refusal> {
	const proposal = findProposal(deps, id);
	if (refusals.isRefusal(proposal)) return proposal;
	const view = headView(deps.fs);
	const changes = await planOnHead(deps, ctx, proposal, view);
	if ("code" in changes) return changes;
	const byRepo = new Map<string, Array<{ rel: string; change: FileChange; mode: number | undefined }>>();
	const outside: string[] = [];
	for (const change of changes) {
		const where = view.located(change.absPath);
		if (!where) outside.push(`${change.skill}/${change.relPath}`);
		else byRepo.set(where.top, [...(byRepo.get(where.top) ?? []), { rel: where.rel, change, mode: where.mode }]);
	}
	if (outside.length > 0 || byRepo.size === 0)
		return refusals.gitFailed(
			proposal.id,
			`${outside.join(", ") || "its files"} ${outside.length === 1 ? "is" : "are"} in no git work tree`,
		);
	const exported: ExportedRepo[] = [];
	for (const [top, files] of byRepo) {
		const done = await exportToRepo(deps, proposal, top, files, options);
		if ("code" in done) return done;
		exported.push(done);
	}
	return exported;
}

async function exportToRepo(
	deps: SessionDeps,
	proposal: Proposal,
	top: string,
	files: ReadonlyArray<{ rel: string; change: FileChange; mode: number | undefined }>,
	options: { readonly branch: boolean },
): Promise<ExportedRepo | Refusal> {
	const fail = (detail: string) => refusals.gitFailed(proposal.id, `${detail} (in ${top})`);
	const branch = `selfskills/${proposal.id}`;
	if (options.branch) {
		const taken = await runGit([...NO_PROGRAMS, "rev-parse", "-q", "--verify", `refs/heads/${branch}`], {
			cwd: top,
			read: true,
		});
		if (taken.ok)
			return fail(`the branch ${branch} exists already; delete it (git branch -D ${branch}) to export again`);
	}
	const parent = await headCommit(top);
	const lines = await indexLines(top, files);
	if ("error" in lines) return fail(lines.error);
	const rels = files.map((f) => f.rel);
	const message = commitMessage(
		{
			action: proposal.action,
			skills: proposal.skills,
			...(proposal.reason ? { reason: proposal.reason } : {}),
			audit: proposal.time,
			proposal: proposal.id,
		},
		rels,
	);
	const made = await commitOnTop(top, deps.fs, { parent, info: lines.info, message, env: await identityEnv(top) });
	if ("error" in made) return fail(made.error);
	if (options.branch) {
		const ref = await runGit(
			[
				...NO_PROGRAMS,
				"update-ref",
				"-m",
				`selfskills export ${proposal.id}`,
				`refs/heads/${branch}`,
				made.commit,
				"",
			],
			{ cwd: top },
		);
		if (!ref.ok) return fail(describeGitFailure(ref));
		return { repo: top, files: rels, commit: made.commit, branch };
	}
	const patch = await runGit(
		[...NO_PROGRAMS, "format-patch", "-1", "--stdout", "--binary", "--no-ext-diff", "--no-textconv", made.commit],
		{ cwd: top, read: true },
	);
	if (!patch.ok) return fail(describeGitFailure(patch));
	const dir = exportsDir(deps.agentDir());
	const name = top.split("/").filter(Boolean).at(-1) ?? "repo";
	const path = join(dir, `${proposal.id}-${name.replace(/[^\w.-]/g, "_")}.patch`);
	writePrivate(
		deps.fs,
		createPrivateDirs(deps.fs, getSelfSkillsDir(deps.agentDir())),
		path,
		Buffer.from(patch.stdout),
	);
	return { repo: top, files: rels, commit: made.commit, patch: path };
}

/** The command's text: one line per work tree, with what to do next. */
export function exportText(id: string, exported: readonly ExportedRepo[]): string {
	return exported
		.map((e) =>
			e.branch
				? `exported ${id} to branch ${e.branch} in ${e.repo} (${e.files.join(", ")}); your work tree, index and ` +
					`current branch are unchanged. Review it with: git -C ${e.repo} show ${e.branch}; ` +
					`push it for review yourself (nothing is pushed). ${id} stays pending.`
				: `exported ${id} as ${e.patch} (${e.files.join(", ")}, paths relative to ${e.repo}). ` +
					`Apply it with: git -C ${e.repo} apply ${e.patch} (or git am). ${id} stays pending.`,
		)
		.join("\n");
}

/** `/selfskills` status: per writable root, the work tree it lies in (if any) and whether commits are on. */
export function formatGitStatus(fs: FsOps, roots: readonly string[], mode: "off" | "commit"): string {
	const committed = mode === "commit" ? "each landed change is committed" : "not committed";
	const lines = [...new Set(roots)].map((root) => {
		const where = locateInWorkTree(fs, join(root, "SKILL.md"));
		return where ? `  ${root}: in the git work tree ${where.top}; ${committed}` : `  ${root}: not in a git work tree`;
	});
	const head = `git: commits ${mode === "commit" ? 'on (selfskills.git "commit")' : "off"}; nothing is ever pushed`;
	return [head, ...lines].join("\n");
}
