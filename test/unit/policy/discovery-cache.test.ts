// discovery-cache.ts: a reused discovery must always equal a fresh one. Every place pi looks gets
// a random walk of changes (new, removed, renamed and edited skills, ignore files, settings,
// symlinks, the git root marker), each followed at once by a cached and a fresh discovery.
import {
	existsSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	renameSync,
	rmSync,
	statSync,
	symlinkSync,
	unlinkSync,
	utimesSync,
	writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { expect } from "chai";
import { checkLanded } from "../../../src/checks/validation.ts";
import { createDiscoveryCache, type LandedFile } from "../../../src/policy/discovery-cache.ts";
import { discoverSkills, type DiscoverOptions, type Discovery } from "../../../src/policy/discovery.ts";
import { loadSettings } from "../../../src/policy/settings.ts";
import { buildLocations, type LocationsFixture } from "../../fixtures/locations/build-locations.ts";
import { createRandom } from "../../support/random.ts";
import { useTempEnv, type TempEnv } from "../../support/temp-env.ts";
import { sha256 } from "../../../src/base/hash.ts";

function summary(discovery: Discovery): unknown {
	return {
		skills: discovery.skills.map((s) => [
			s.name,
			s.description,
			s.filePath,
			s.dir,
			s.patchable,
			s.reason,
			s.origin.kind,
		]),
		diagnostics: discovery.diagnostics.map((d) => [d.type, d.message, d.path]),
		roots: discovery.roots.map((r) => [r.kind, r.path]),
	};
}

function optionsFor(env: TempEnv, fixture: LocationsFixture): DiscoverOptions {
	const settings = loadSettings({ cwd: fixture.cwd, agentDir: env.agentDir, trusted: true }).settings;
	return {
		cwd: fixture.cwd,
		agentDir: env.agentDir,
		trusted: true,
		settings,
		runtimeSkillFiles: fixture.runtimeSkillFiles,
	};
}

function skillText(name: string, description: string): string {
	return `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n`;
}

/** Every skill folder under `dir` (folders holding a SKILL.md), not following dot folders. */
function skillDirs(dir: string): string[] {
	if (!existsSync(dir)) return [];
	const found: string[] = [];
	for (const entry of readdirSync(dir, { withFileTypes: true })) {
		if (entry.name.startsWith(".") || entry.name === "node_modules" || entry.isSymbolicLink() || !entry.isDirectory())
			continue;
		const child = join(dir, entry.name);
		if (existsSync(join(child, "SKILL.md"))) found.push(child);
		else found.push(...skillDirs(child));
	}
	return found;
}

function scannedPlaces(env: TempEnv, fixture: LocationsFixture): string[] {
	return [
		join(env.agentDir, "skills"),
		join(fixture.cwd, ".pi", "skills"),
		join(fixture.cwd, ".agents", "skills"),
		join(fixture.gitRoot, ".agents", "skills"),
		join(env.root, ".agents", "skills"),
		join(env.home, ".agents", "skills"),
		join(env.root, "local-pkg", "skills"),
		join(fixture.cwd, "proj-local-pkg", "skills"),
		join(fixture.cwd, "listed-project"),
		join(env.root, "listed-global"),
		join(env.root, "custom-skills"),
		join(env.agentDir, "npm", "node_modules", "npm-global-fixture", "skills"),
	];
}

type Change = (pick: (n: number) => number, step: number) => string;

function createChanges(env: TempEnv, fixture: LocationsFixture): Change[] {
	const places = scannedPlaces(env, fixture);
	const anySkill = (pick: (n: number) => number) => {
		const all = places.flatMap(skillDirs);
		return all.length > 0 ? all[pick(all.length)] : undefined;
	};
	const settingsPath = join(env.agentDir, "settings.json");
	return [
		(pick, step) => {
			const place = places[pick(places.length)];
			const name = `new-skill-${step}`;
			mkdirSync(join(place, name), { recursive: true });
			writeFileSync(join(place, name, "SKILL.md"), skillText(name, `Added at step ${step}.`));
			return `add ${name} in ${place}`;
		},
		(pick) => {
			const dir = anySkill(pick);
			if (dir) rmSync(dir, { recursive: true, force: true });
			return `remove ${dir}`;
		},
		(pick, step) => {
			const dir = anySkill(pick);
			if (!dir) return "edit: none";
			const file = join(dir, "SKILL.md");
			const text = readFileSync(file, "utf8");
			// Same length, different description, mtime put back: only ctime (or the content) tells.
			const { mtime, atime } = statSync(file);
			writeFileSync(
				file,
				text.replace(/description: .{4}/, `description: ${String(step % 10000).padStart(4, "0")}`),
			);
			utimesSync(file, atime, mtime);
			return `edit ${file}`;
		},
		(pick, step) => {
			const dir = anySkill(pick);
			if (!dir) return "rename: none";
			const name = readFileSync(join(dir, "SKILL.md"), "utf8").match(/name: (\S+)/)?.[1] ?? "x";
			const target = join(dirname(dir), `${name}-moved-${step}`);
			renameSync(dir, target);
			return `rename ${dir} -> ${target}`;
		},
		(pick) => {
			const place = places[pick(places.length)];
			const ignore = join(place, ".gitignore");
			if (existsSync(ignore) && pick(2) === 0) {
				unlinkSync(ignore);
				return `unignore ${place}`;
			}
			const names = existsSync(place) ? readdirSync(place).filter((n) => !n.startsWith(".")) : [];
			if (names.length === 0) return "ignore: none";
			// Rewritten in place when it exists: the folder does not change, only the file.
			const victim = names[pick(names.length)];
			writeFileSync(ignore, `${victim}/\n`);
			return `ignore ${victim} in ${place}`;
		},
		() => {
			const marker = join(fixture.gitRoot, ".git");
			if (existsSync(marker)) rmSync(marker, { recursive: true });
			else mkdirSync(marker);
			return `toggle ${marker}`;
		},
		(pick) => {
			const settings = JSON.parse(readFileSync(settingsPath, "utf8"));
			const extra = join(env.root, "late-package");
			if (!existsSync(extra)) {
				mkdirSync(join(extra, "skills", "late-skill"), { recursive: true });
				writeFileSync(join(extra, "package.json"), JSON.stringify({ name: "late", pi: { skills: ["./skills"] } }));
				writeFileSync(
					join(extra, "skills", "late-skill", "SKILL.md"),
					skillText("late-skill", "From a package added late."),
				);
			}
			const has = settings.packages.includes("../late-package");
			settings.packages = has
				? settings.packages.filter((p: string) => p !== "../late-package")
				: [...settings.packages, "../late-package"];
			if (pick(2) === 0)
				settings.skills =
					settings.skills.length > 1 ? ["../listed-global"] : ["../listed-global", "-**/agent-skill"];
			writeFileSync(settingsPath, JSON.stringify(settings));
			return `settings: packages ${settings.packages.join(",")}, skills ${settings.skills.join(",")}`;
		},
		(pick) => {
			// The manifest decides where pi looks inside a package: a plain entry, a glob, or none (skills/).
			const pkg = join(env.root, "local-pkg");
			mkdirSync(join(pkg, "more", "extra-skill"), { recursive: true });
			writeFileSync(
				join(pkg, "more", "extra-skill", "SKILL.md"),
				skillText("extra-skill", "Only through the manifest."),
			);
			const manifests = [
				{ skills: ["./skills"] },
				{ skills: ["./more/*"] },
				{ skills: ["./skills", "!**/local-pkg-skill"] },
				undefined,
			];
			const pi = manifests[pick(manifests.length)];
			writeFileSync(
				join(pkg, "package.json"),
				JSON.stringify({ name: "local-pkg", version: "1.0.0", ...(pi ? { pi } : {}) }),
			);
			return `local-pkg manifest ${JSON.stringify(pi)}`;
		},
		(pick, step) => {
			const link = join(env.agentDir, "skills", "linked-out-skill");
			const target = join(env.root, "outside", `linked-${step}`);
			mkdirSync(target, { recursive: true });
			writeFileSync(join(target, "SKILL.md"), skillText(`linked-${pick(3)}-skill`, `Linked at step ${step}.`));
			rmSync(link, { force: true, recursive: false });
			symlinkSync(target, link);
			return `relink ${link} -> ${target}`;
		},
		(pick, step) => {
			const dir = anySkill(pick);
			if (!dir) return "bundle: none";
			mkdirSync(join(dir, "references"), { recursive: true });
			writeFileSync(join(dir, "references", `note-${step}.md`), "A bundled note.\n");
			return `bundled file in ${dir}`;
		},
		() => "nothing",
	];
}

describe("discovery cache: a reused discovery always equals a fresh one", function () {
	const getEnv = useTempEnv();

	async function walk(seed: number, steps: number, settle: boolean): Promise<{ hits: number; misses: number }> {
		const env = getEnv();
		const fixture = buildLocations(env);
		const cache = createDiscoveryCache();
		const options = optionsFor(env, fixture);
		// Entries older than the racy window are trusted on their stat alone: let the tree age.
		if (settle) await new Promise((done) => setTimeout(done, 3_500));
		await cache.discover(options);
		const changes = createChanges(env, fixture);
		const pick = createRandom(seed);
		for (let step = 0; step < steps; step++) {
			const what = changes[pick(changes.length)](pick, step);
			const cached = await cache.discover(options);
			const fresh = await discoverSkills(options);
			expect(summary(cached), `seed ${seed}, step ${step}: ${what}`).to.deep.equal(summary(fresh));
			// A second look without a change must be served from the cache, and still be right.
			const again = await cache.discover(options);
			expect(summary(again), `seed ${seed}, step ${step} again`).to.deep.equal(summary(fresh));
		}
		return cache.stats;
	}

	it("over 80 random changes made at once, in every place pi looks", async function () {
		this.timeout(240_000);
		const stats = await walk(7, 80, false);
		expect(stats.hits, "the cache was never used").to.be.greaterThan(70);
	});

	it("over 50 random changes to a tree old enough to be trusted on its stat", async function () {
		this.timeout(120_000);
		const stats = await walk(11, 50, true);
		expect(stats.hits).to.be.greaterThan(40);
	});

	it("sees a same-size edit a coarse clock cannot date (racy entries are compared by content)", async function () {
		const env = getEnv();
		const fixture = buildLocations(env);
		// As on a filesystem that keeps whole seconds: most rewrites below share a timestamp.
		const cache = createDiscoveryCache({ timestampGranularityMs: 1000 });
		const options = optionsFor(env, fixture);
		const file = fixture.files.get("agent-skill") ?? "";
		let sameSecond = 0;
		for (let i = 0; i < 20; i++) {
			const version = String(i).padStart(3, "0");
			writeFileSync(file, skillText("agent-skill", `Version ${version} A.`));
			await cache.discover(options);
			// A hit on unchanged content must not stop the content check while the entry is recent.
			await cache.discover(options);
			const before = statSync(file);
			writeFileSync(file, skillText("agent-skill", `Version ${version} B.`));
			const after = statSync(file);
			if (Math.floor(before.ctimeMs / 1000) === Math.floor(after.ctimeMs / 1000)) sameSecond++;
			const skill = (await cache.discover(options)).skills.find((s) => s.name === "agent-skill");
			expect(skill?.description, `round ${i}`).to.equal(`Version ${version} B.`);
		}
		expect(sameSecond, "no rewrite shared a second: the case was not exercised").to.be.greaterThan(0);
	});

	it("keeps no discovery while a configured package is missing, and finds it once installed", async function () {
		const env = getEnv();
		const fixture = buildLocations(env);
		const settingsPath = join(env.agentDir, "settings.json");
		const settings = JSON.parse(readFileSync(settingsPath, "utf8"));
		writeFileSync(settingsPath, JSON.stringify({ ...settings, packages: [...settings.packages, "../not-yet"] }));
		const cache = createDiscoveryCache();
		const options = optionsFor(env, fixture);
		await cache.discover(options);
		await cache.discover(options);
		expect(cache.stats).to.deep.include({ hits: 0, misses: 2, unkept: 2 });
		mkdirSync(join(env.root, "not-yet", "skills", "arrived"), { recursive: true });
		writeFileSync(
			join(env.root, "not-yet", "skills", "arrived", "SKILL.md"),
			skillText("arrived", "Installed late."),
		);
		const names = (await cache.discover(options)).skills.map((s) => s.name);
		expect(names).to.include("arrived");
		await cache.discover(options);
		expect(cache.stats.hits).to.equal(1);
	});

	it("sees at the next call a change made while pi was reading (stamped before the build)", async function () {
		this.timeout(60_000);
		const env = getEnv();
		const fixture = buildLocations(env);
		const cache = createDiscoveryCache();
		const options = optionsFor(env, fixture);
		const file = fixture.files.get("agent-skill") ?? "";
		const places = scannedPlaces(env, fixture);
		for (let i = 0; i < 12; i++) {
			await cache.discover(options);
			// Forces a rebuild, then changes the tree while it runs (pi's resolver awaits a child process).
			writeFileSync(file, skillText("agent-skill", `Before round ${i}.`));
			const building = cache.discover(options);
			await new Promise((done) => setTimeout(done, i % 4));
			if (i % 2 === 0) writeFileSync(file, skillText("agent-skill", `During round ${i}.`));
			else {
				const dir = join(places[i % places.length], `during-${i}`);
				mkdirSync(dir, { recursive: true });
				writeFileSync(join(dir, "SKILL.md"), skillText(`during-${i}`, "Made mid-build."));
			}
			await building;
			expect(summary(await cache.discover(options)), `round ${i}`).to.deep.equal(
				summary(await discoverSkills(options)),
			);
		}
	});

	describe("following the tool's own writes", function () {
		/** A rewrite of `file` as a commit reports it, with pi's loader's answer on the file now. */
		function landed(file: string, oldHash: string, newHash: string): LandedFile {
			return { absPath: file, oldHash, newHash, loaded: checkLanded(file, dirname(file), dirname(file)) };
		}

		/** The locations fixture and a cache that has discovered it once; `file` is agent-skill's SKILL.md. */
		async function primed(env: TempEnv) {
			const fixture = buildLocations(env);
			const cache = createDiscoveryCache();
			const options = optionsFor(env, fixture);
			const file = fixture.files.get("agent-skill") ?? "";
			await cache.discover(options);
			return { cache, options, file, oldHash: sha256(readFileSync(file)) };
		}

		it("keeps the entry with the new description when only the written file changed", async function () {
			const { cache, options, file, oldHash } = await primed(getEnv());
			const text = skillText("agent-skill", "Rewritten by the tool.");
			writeFileSync(file, text);
			cache.noteLanded([landed(file, oldHash, sha256(text))]);
			const skill = (await cache.discover(options)).skills.find((s) => s.name === "agent-skill");
			expect(skill?.description).to.equal("Rewritten by the tool.");
			expect(cache.stats).to.deep.include({ hits: 1, misses: 1 });
		});

		it("equals a fresh discovery after each of 30 random writes to a skill, warned or not", async function () {
			this.timeout(60_000);
			const env = getEnv();
			const fixture = buildLocations(env);
			const options = optionsFor(env, fixture);
			const file = join(env.agentDir, "skills", "warned", "SKILL.md");
			// Names pi takes, warns about (invalid characters; for pi 0.73 not the folder's) or the folder's
			// own; descriptions within and over pi's limit, and none (pi does not load it).
			const names = ["warned", "warned-skill", "Warned_Skill"];
			const descriptions = ["Use when warned.", `Use when warned. ${"Long. ".repeat(200)}`, ""];
			const pick = createRandom(41);
			const text = (step: number) =>
				`---\nname: ${names[pick(3) === 0 ? pick(names.length) : 0]}\n` +
				`description: ${descriptions[pick(4) === 0 ? pick(2) + 1 : 0]}\n---\n# Warned\n\nStep ${step}.\n`;
			mkdirSync(dirname(file), { recursive: true });
			let before = text(0);
			writeFileSync(file, before);
			const cache = createDiscoveryCache();
			await cache.discover(options);
			let followed = 0;
			for (let step = 1; step <= 30; step++) {
				const after = text(step);
				writeFileSync(file, after);
				cache.noteLanded([landed(file, sha256(before), sha256(after))]);
				const misses = cache.stats.misses;
				const cached = await cache.discover(options);
				if (cache.stats.misses === misses) followed++;
				expect(summary(cached), `step ${step}: ${JSON.stringify(after.split("\n").slice(1, 3))}`).to.deep.equal(
					summary(await discoverSkills(options)),
				);
				before = after;
			}
			// Renames, lost descriptions and warnings are discovered again; the rest are followed.
			expect(followed, "writes followed without a new discovery").to.be.at.least(5);
		});

		it("drops the entry when something else changed in the same folder", async function () {
			const { cache, options, file, oldHash } = await primed(getEnv());
			const text = skillText("agent-skill", "Rewritten by the tool.");
			writeFileSync(file, text);
			writeFileSync(join(dirname(file), ".ignore"), "SKILL.md\n");
			cache.noteLanded([landed(file, oldHash, sha256(text))]);
			const discovery = await cache.discover(options);
			expect(cache.stats.misses).to.equal(2);
			expect(summary(discovery)).to.deep.equal(summary(await discoverSkills(options)));
		});

		it("drops the entry when the bytes on disk are not what the tool wrote, or the name changed", async function () {
			const { cache, options, file, oldHash } = await primed(getEnv());
			writeFileSync(file, skillText("agent-skill", "Someone else's bytes."));
			cache.noteLanded([landed(file, oldHash, sha256("what the tool wrote"))]);
			await cache.discover(options);
			expect(cache.stats.misses).to.equal(2);
			const renamed = skillText("other-name", "Renamed.");
			writeFileSync(file, renamed);
			cache.noteLanded([landed(file, sha256(readFileSync(file)), sha256(renamed))]);
			const discovery = await cache.discover(options);
			expect(cache.stats.misses).to.equal(3);
			expect(summary(discovery)).to.deep.equal(summary(await discoverSkills(options)));
		});
	});
});
