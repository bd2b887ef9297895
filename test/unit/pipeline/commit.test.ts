// commit.ts: the order in which a commit makes things durable, seen from its filesystem calls. Every
// backup (file and folder entry) and the journal are synced before the first target is renamed;
// every new content is synced before any target changes; each folder is synced once per commit.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { type FsOps, realFs } from "../../../src/base/fs-ops.ts";
import { errno, faultyFs } from "../../support/faulty-fs.ts";
import { skillText, writeSkill } from "../../support/fixtures.ts";
import { createHarness, expectOk, expectRefused, textOf } from "../../support/harness.ts";
import { useTempEnv } from "../../support/temp-env.ts";

/**
 * What a commit did to the disk, in order: `fsync <path>`, `rename <to>`, `unlink <path>`; `paths`
 * collects the path each fd was opened for.
 */
function recordingFs(events: string[], paths = new Map<number, string>()): FsOps {
	return {
		...realFs,
		open: (path, flags, mode) => {
			const fd = realFs.open(path, flags, mode);
			paths.set(fd, path);
			return fd;
		},
		fsync: (fd) => {
			realFs.fsync(fd);
			events.push(`fsync ${paths.get(fd)}`);
		},
		rename: (from, to) => {
			realFs.rename(from, to);
			events.push(`rename ${to}`);
		},
		unlink: (path) => {
			realFs.unlink(path);
			events.push(`unlink ${path}`);
		},
	};
}

/**
 * recordingFs with fsyncAll kept as it runs in production (realFs, all at once): each group is one
 * event, `sync <path>|<path>...`, logged when it has settled; a close of an fd while its group
 * runs is logged as `closed in flight <path>`.
 */
function groupingFs(events: string[]): FsOps {
	const paths = new Map<number, string>();
	const inFlight = new Set<number>();
	return {
		...recordingFs(events, paths),
		fsyncAll: async (fds) => {
			for (const fd of fds) inFlight.add(fd);
			try {
				await realFs.fsyncAll(fds);
			} finally {
				for (const fd of fds) inFlight.delete(fd);
			}
			events.push(`sync ${fds.map((fd) => paths.get(fd)).join("|")}`);
		},
		close: (fd) => {
			if (inFlight.has(fd)) events.push(`closed in flight ${paths.get(fd)}`);
			realFs.close(fd);
		},
	};
}

describe("commit: durability by step", function () {
	const getEnv = useTempEnv();
	const SKILLS = ["ant", "bee", "cat"];

	async function patchAll(batch: boolean, grouped = false): Promise<{ events: string[]; files: string[] }> {
		const env = getEnv();
		const files = SKILLS.map((name) =>
			writeSkill(join(env.agentDir, "skills"), name, skillText(name, "Old step.\n")),
		);
		const events: string[] = [];
		const harness = createHarness(env, grouped ? groupingFs(events) : faultyFs({}, recordingFs(events)));
		for (const skill of SKILLS) expectOk(await harness.call({ action: "read", skill }));
		// The second round is the one looked at: the first made the store's folders and notes.
		for (const [from, to] of [
			["Old step.", "New step."],
			["New step.", "Newer step."],
		]) {
			events.length = 0;
			const ops = SKILLS.map((skill) => ({ action: "patch", skill, old_string: from, new_string: to }));
			if (batch) {
				const result = await harness.call({ action: "operations", operations: ops });
				expect(result.details.ok, textOf(result)).to.equal(true);
			} else for (const op of ops) expectOk(await harness.call(op));
		}
		return { events, files };
	}

	it("syncs every backup and the journal before the first target is renamed, and each folder once", async function () {
		const { events, files } = await patchAll(true);
		const backups = join(getEnv().agentDir, "selfskills", "backups");
		const journal = join(getEnv().agentDir, "selfskills", "journal");
		const renames = new Set(files.map((f) => `rename ${f}`));
		const firstTarget = events.findIndex((e) => renames.has(e));
		expect(firstTarget, events.join("\n")).to.be.greaterThan(0);
		const before = events.slice(0, firstTarget);
		const backupSyncs = before.filter((e) => e.startsWith(`fsync ${backups}`));
		// Each backup file, then each backup folder: 3 + 3.
		expect(
			backupSyncs.filter((e) => e.includes(".selfskills-tmp-")),
			events.join("\n"),
		).to.have.length(3);
		expect(
			backupSyncs.filter((e) => e.endsWith("/SKILL.md")),
			events.join("\n"),
		).to.have.length(3);
		expect(before, "the journal is durable first").to.include(`fsync ${journal}`);
		// Every new content synced in its temp file before any target changed.
		expect(before.filter((e) => /skills\/\w+\/\.SKILL\.md\.selfskills-tmp-/.test(e))).to.have.length(3);
		// After the renames, each skill folder synced once.
		for (const file of files) {
			const renamed = events.indexOf(`rename ${file}`);
			const synced = events.filter((e) => e === `fsync ${join(file, "..")}`);
			expect(synced, file).to.have.length(1);
			expect(events.indexOf(synced[0]), file).to.be.greaterThan(renamed);
		}
		// 3 backups + 3 backup folders + the journal and its folder + 3 temp files + 3 skill folders + the
		// journal folder once it is removed.
		expect(
			events.filter((e) => e.startsWith("fsync")),
			events.join("\n"),
		).to.have.length(15);
	});

	it("syncs four times for one patch: its backup, the backup folder, its temp file, its folder", async function () {
		const { events } = await patchAll(false);
		expect(
			events.filter((e) => e.startsWith("fsync")),
			events.join("\n"),
		).to.have.length(12);
	});

	/** The paths of a `sync a|b|c` event, or undefined for another event. */
	const group = (event: string): string[] | undefined =>
		event.startsWith("sync ") ? event.slice("sync ".length).split("|") : undefined;

	it("syncs each step's files at once, and each group before the renames that need it", async function () {
		const { events, files } = await patchAll(true, true);
		const log = events.join("\n");
		const backups = join(getEnv().agentDir, "selfskills", "backups");
		const journal = join(getEnv().agentDir, "selfskills", "journal");
		const skills = join(getEnv().agentDir, "skills");
		expect(log).not.to.include("closed in flight");
		const at = (pred: (paths: string[]) => boolean): number => {
			const found = events.findIndex((e) => {
				const paths = group(e);
				return paths !== undefined && pred(paths);
			});
			expect(found, log).to.be.greaterThan(-1);
			return found;
		};
		const allIn = (dir: string, temp: boolean) => (paths: string[]) =>
			paths.length === 3 && paths.every((p) => p.startsWith(dir) && p.includes(".selfskills-tmp-") === temp);
		const backupTemps = at(allIn(backups, true));
		const backupDirs = at(
			(paths) => paths.length === 3 && paths.every((p) => p.startsWith(backups) && p.endsWith("/SKILL.md")),
		);
		const targetTemps = at(allIn(skills, true));
		const targetDirs = at(
			(paths) => paths.length === 3 && paths.every((p) => files.some((f) => p === join(f, ".."))),
		);
		const backupRenames = events.flatMap((e, i) => (e.startsWith(`rename ${backups}`) ? [i] : []));
		const targetRenames = files.map((f) => events.indexOf(`rename ${f}`));
		const journalSync = events.indexOf(`fsync ${journal}`);
		expect(backupRenames, log).to.have.length(3);
		// Every backup's copy durable before it is renamed into place, and its folder entry after.
		expect(Math.min(...backupRenames), log).to.be.greaterThan(backupTemps);
		expect(backupDirs, log).to.be.greaterThan(Math.max(...backupRenames));
		// Backups, their folders, the journal and every new content durable before the first target changes.
		const firstTarget = Math.min(...targetRenames);
		for (const [what, index] of Object.entries({ backupDirs, journalSync, targetTemps }))
			expect(index, `${what}\n${log}`).to.be.greaterThan(-1).and.lessThan(firstTarget);
		// Each skill folder synced once, after every rename into it.
		expect(targetDirs, log).to.be.greaterThan(Math.max(...targetRenames));
		expect(
			events.filter((e) => e.startsWith("fsync") && e.includes(".selfskills-tmp-") && !e.includes(journal)),
			"no backup copy or new content synced on its own (the journal is, before the first target)",
		).to.deep.equal([]);
	});

	it("syncs one patch in four groups: backup copy, backup folder, new content, skill folder", async function () {
		const { events, files } = await patchAll(false, true);
		const log = events.join("\n");
		expect(log).not.to.include("closed in flight");
		const backups = join(getEnv().agentDir, "selfskills", "backups");
		// The last patch: from its backup's sync to its folder's.
		const file = files[files.length - 1];
		const last = events.slice(events.findLastIndex((e) => e.startsWith(`sync ${backups}`) && e.includes("-tmp-")));
		const kinds = last.flatMap((e) => {
			const paths = group(e);
			if (paths)
				return [
					`sync ${paths.map((p) => (p.startsWith(backups) ? "backup" : "skill")).join("|")}` +
						(paths[0].includes("-tmp-") ? " temp" : " folder"),
				];
			if (e === `rename ${file}`) return ["rename target"];
			return e.startsWith(`rename ${backups}`) ? ["rename backup"] : [];
		});
		expect(kinds, log).to.deep.equal([
			"sync backup temp",
			"rename backup",
			"sync backup folder",
			"sync skill temp",
			"rename target",
			"sync skill folder",
		]);
	});

	it("writes nothing when a new content cannot be synced: not one file, temp file or new folder", async function () {
		const env = getEnv();
		const skills = join(env.agentDir, "skills");
		const files = SKILLS.map((name) => writeSkill(skills, name, skillText(name, "Old step.\n")));
		const harness = createHarness(env);
		for (const skill of SKILLS) expectOk(await harness.call({ action: "read", skill }));
		let fail = false;
		harness.fs = faultyFs(({ op, args }) => {
			// The last op's temp file: the first two are synced and waiting, no target has changed.
			if (op === "open") fail = String(args[0]).includes(join("cat", ".SKILL.md.selfskills-tmp-"));
			if (op === "fsync" && fail) return errno("EIO", "injected fsync failure");
		});
		const result = await harness.call({
			action: "operations",
			operations: [
				{ action: "write", skill: "ant", file: "references/new.md", content: "new\n" },
				...SKILLS.map((skill) => ({ action: "patch", skill, old_string: "Old step.", new_string: "New step." })),
			],
		});
		expectRefused(result, "io_error");
		expect((result.details.operations as Array<{ fate: string }>).map((o) => o.fate)).to.deep.equal([
			"not_written",
			"not_written",
			"not_written",
			"not_written",
		]);
		for (const [i, file] of files.entries())
			expect(readFileSync(file, "utf8")).to.equal(skillText(SKILLS[i], "Old step.\n"));
		expect(existsSync(join(skills, "ant", "references")), "the folder made for the new file").to.equal(false);
		for (const name of SKILLS) expect(readdirSync(join(skills, name)), name).to.deep.equal(["SKILL.md"]);
	});

	for (const step of ["new contents", "skill folders"] as const) {
		it(`names the file whose sync failed when the ${step} sync together, not the first`, async function () {
			const env = getEnv();
			const skills = join(env.agentDir, "skills");
			const files = SKILLS.map((name) => writeSkill(skills, name, skillText(name, "Old step.\n")));
			const harness = createHarness(env);
			for (const skill of SKILLS) expectOk(await harness.call({ action: "read", skill }));
			const last = files[files.length - 1];
			let armed = false;
			let synced = 0;
			harness.fs = faultyFs(({ op, args }) => {
				// The group of the last file's step: its temp file just opened, or its target just renamed.
				if (step === "new contents" && op === "open")
					armed ||= String(args[0]).includes(".SKILL.md.selfskills-tmp-");
				if (step === "skill folders" && op === "rename") armed ||= args[1] === last;
				// The last of the group: ant, bee, then cat.
				if (op === "fsync" && armed && synced++ === SKILLS.length - 1)
					return errno("EIO", "injected fsync failure");
			});
			const result = await harness.call({
				action: "operations",
				operations: SKILLS.map((skill) => ({ action: "patch", skill, old_string: "Old step.", new_string: "New" })),
			});
			expectRefused(result, "io_error");
			expect(result.details.path, textOf(result)).to.equal(last);
			for (const [i, file] of files.entries())
				expect(readFileSync(file, "utf8")).to.equal(skillText(SKILLS[i], "Old step.\n"));
		});
	}
});
