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
import type { LandedChange } from "../../../src/pipeline/commit.ts";
import { createDiscoveryCache } from "../../../src/policy/discovery-cache.ts";
import { discoverSkills, type DiscoverOptions, type Discovery } from "../../../src/policy/discovery.ts";
import { sha256 } from "../../../src/store/read-ledger.ts";
import { loadSettings } from "../../../src/policy/settings.ts";
import { buildLocations, LOCATIONS, type LocationsFixture } from "../../fixtures/locations/build-locations.ts";
import { faultyFs } from "../../support/faulty-fs.ts";
import { createRandom } from "../../support/random.ts";
import { useTempEnv, type TempEnv } from "../../support/temp-env.ts";

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
		const stats = await walk(7, 80, false);
		expect(stats.hits, "the cache was never used").to.be.greaterThan(70);
	});

	it("over 50 random changes to a tree old enough to be trusted on its stat", async function () {
		this.timeout(120_000);
		const stats = await walk(11, 50, true);
		expect(stats.hits).to.be.greaterThan(40);
	});

	it(
		"sees a same-size edit that a coarse clock cannot date " + "(racy entries are compared by content)",
		async function () {
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
		},
	);

	it(
		"never keeps a discovery while a configured package is not installed, " + "and finds it once it is",
		async function () {
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
		},
	);

	it(
		"sees at the next call a change made while pi was reading (one walk, " + "stamped before the build)",
		async function () {
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
		},
	);

	describe("following the tool's own writes", function () {
		function landed(file: string, oldHash: string, newHash: string): LandedChange {
			return {
				skill: "agent-skill",
				relPath: "SKILL.md",
				absPath: file,
				oldHash,
				newHash,
				backupId: null,
				backupPath: null,
			};
		}

		/** The locations fixture and a cache that has discovered it once; `file` is agent-skill's SKILL.md. */
		async function primed(env: TempEnv) {
			const fixture = buildLocations(env);
			const cache = createDiscoveryCache();
			const options = optionsFor(env, fixture);
			const file = fixture.files.get("agent-skill") ?? "";
			await cache.discover(options);
			// The first discovery is stamped after the call: the tool writes in a later call, after the stamps.
			await cache.settled();
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

		it("keeps the entry for a skill pi loads with warnings, which follow the new text", async function () {
			const env = getEnv();
			const fixture = buildLocations(env);
			const options = optionsFor(env, fixture);
			// Its description is over pi's limit (and, for pi 0.73, its name is not its folder's): warnings.
			const file = join(env.agentDir, "skills", "warned", "SKILL.md");
			const text = (description: string, body: string) =>
				`---\nname: warned-skill\ndescription: ${description}\n---\n# Warned\n\n${body}\n`;
			const long = `Use when warned. ${"Long. ".repeat(200)}`;
			mkdirSync(dirname(file), { recursive: true });
			writeFileSync(file, text(long, "Step 0."));
			const cache = createDiscoveryCache();
			await cache.discover(options);
			await cache.settled();
			const own = (discovery: Discovery) => discovery.diagnostics.filter((d) => d.path === file).length;
			const warned = own(await discoverSkills(options));
			expect(warned, "pi's warnings for the file").to.be.greaterThan(0);
			let before = readFileSync(file);
			for (const [step, after] of [
				["the body", text(long, "Step 1.")],
				["the description, shortened", text("Use when warned.", "Step 1.")],
			] as const) {
				writeFileSync(file, after);
				cache.noteLanded([{ ...landed(file, sha256(before), sha256(after)), after: Buffer.from(after) }]);
				const misses = cache.stats.misses;
				const cached = await cache.discover(options);
				expect(cache.stats.misses, `${step}: followed, not discovered again`).to.equal(misses);
				const fresh = await discoverSkills(options);
				expect(summary(cached), step).to.deep.equal(summary(fresh));
				before = Buffer.from(after);
			}
			expect(own(await discoverSkills(options)), "the description's warning gone").to.equal(warned - 1);
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
				`description: ${descriptions[pick(4) === 0 ? 2 : pick(2)]}\n---\n# Warned\n\nStep ${step}.\n`;
			mkdirSync(dirname(file), { recursive: true });
			let before = text(0);
			writeFileSync(file, before);
			const cache = createDiscoveryCache();
			await cache.discover(options);
			await cache.settled();
			let followed = 0;
			for (let step = 1; step <= 30; step++) {
				const after = text(step);
				writeFileSync(file, after);
				cache.noteLanded([{ ...landed(file, sha256(before), sha256(after)), after: Buffer.from(after) }]);
				const misses = cache.stats.misses;
				const cached = await cache.discover(options);
				if (cache.stats.misses === misses) followed++;
				expect(summary(cached), `step ${step}: ${JSON.stringify(after.split("\n").slice(1, 3))}`).to.deep.equal(
					summary(await discoverSkills(options)),
				);
				before = after;
			}
			// Renames, lost descriptions and new warnings are discovered again; the rest are followed.
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

		it(
			"drops the entry when the bytes on disk are not the ones the tool wrote, " + "or the name changed",
			async function () {
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
			},
		);
	});
});

/**
 * What a call that names one skill can depend on: that skill as discovered (or, when missing,
 * every name, for the nearest-names refusal), the diagnostics on its files and the writable roots
 * that hold it. The other names (gate 6 refuses a rename onto one) are compared by the walk.
 */
/** summary's skills, up to and including the one named (all of them when none is). */
function summaryUpTo(discovery: Discovery, name: string): unknown {
	const at = discovery.skills.findIndex((s) => s.name === name);
	const skills = at === -1 ? discovery.skills : discovery.skills.slice(0, at + 1);
	return (summary({ ...discovery, skills }) as { skills: unknown }).skills;
}

function targetOutcome(discovery: Discovery, name: string): unknown {
	const skill = discovery.skills.find((s) => s.name === name);
	const names = discovery.skills.map((s) => s.name).sort();
	if (!skill) return { missing: name, names };
	const own = skill.dir ?? skill.filePath;
	return {
		skill: [
			skill.name,
			skill.description,
			skill.filePath,
			skill.dir,
			skill.patchable,
			skill.reason,
			skill.origin,
			skill.writeDenied,
		],
		diagnostics: discovery.diagnostics
			.filter((d) => d.path !== undefined && (d.path === own || d.path.startsWith(`${own}/`)))
			.map((d) => [d.type, d.message, d.path]),
		roots: discovery.roots.filter((r) => skill.filePath.startsWith(`${r.path}/`)).map((r) => [r.kind, r.path]),
	};
}

describe("discovery cache: a call naming its skill checks only what can change its outcome", function () {
	const getEnv = useTempEnv();
	const targets = LOCATIONS.map((l) => l.skill);

	/** Changes aimed at the named skills, on top of the general ones: the skill itself, a twin, the policy inputs. */
	function targetedChanges(
		env: TempEnv,
		fixture: LocationsFixture,
		trust: { trusted: boolean },
		focus: { name: string },
	): Change[] {
		const places = scannedPlaces(env, fixture);
		const findDir = (name: string) =>
			places
				.flatMap(skillDirs)
				.find((dir) => readFileSync(join(dir, "SKILL.md"), "utf8").includes(`name: ${name}\n`));
		const projectSettings = join(fixture.cwd, ".pi", "settings.json");
		const globalSettings = join(env.agentDir, "settings.json");
		return [
			(pick, step) => {
				const name = focus.name;
				const dir = findDir(name);
				if (!dir) return `rewrite ${name}: gone`;
				const file = join(dir, "SKILL.md");
				// Same length, mtime put back: only ctime (or the content) tells.
				const { mtime, atime } = statSync(file);
				writeFileSync(
					file,
					readFileSync(file, "utf8").replace(
						/description: .{4}/,
						`description: ${String(step % 10000).padStart(4, "0")}`,
					),
				);
				utimesSync(file, atime, mtime);
				return `rewrite ${file}`;
			},
			(pick, step) => {
				// A twin: a new folder (under the same name, or another, or nested in a new group) claiming the name.
				const name = pick(3) === 0 ? targets[pick(targets.length)] : focus.name;
				const place = places[pick(places.length)];
				const folder = [name, `twin-${step}`, join(`group-${step}`, name)][pick(3)];
				mkdirSync(join(place, folder), { recursive: true });
				writeFileSync(join(place, folder, "SKILL.md"), skillText(name, `A twin made at step ${step}.`));
				return `twin of ${name} at ${join(place, folder)}`;
			},
			(pick, step) => {
				const dir = findDir(focus.name);
				if (!dir) return "rename target: gone";
				const to = join(dirname(dir), `renamed-${step}`);
				renameSync(dir, to);
				return `rename ${dir} -> ${to}`;
			},
			(pick) => {
				const dir = findDir(pick(3) === 0 ? targets[pick(targets.length)] : focus.name);
				if (!dir) return "ignore target: gone";
				writeFileSync(join(dir, ".ignore"), pick(2) === 0 ? "SKILL.md\n" : "nothing\n");
				return `ignore file in ${dir}`;
			},
			(pick) => {
				const settings = JSON.parse(readFileSync(projectSettings, "utf8"));
				const has = settings.packages.includes("../proj-local-pkg");
				settings.packages = has
					? settings.packages.filter((p: string) => p !== "../proj-local-pkg")
					: [...settings.packages, "../proj-local-pkg"];
				if (pick(2) === 0) settings.skills = settings.skills.length > 0 ? [] : ["../listed-project"];
				writeFileSync(projectSettings, JSON.stringify(settings));
				return `project settings: ${JSON.stringify(settings)}`;
			},
			(pick) => {
				const settings = JSON.parse(readFileSync(globalSettings, "utf8"));
				settings.selfskills = {
					...settings.selfskills,
					patchPackages: pick(2) === 0,
					patchProjectAgents: pick(2) === 0,
				};
				writeFileSync(globalSettings, JSON.stringify(settings));
				return `selfskills settings ${JSON.stringify(settings.selfskills)}`;
			},
			() => {
				trust.trusted = !trust.trusted;
				return `trusted: ${trust.trusted}`;
			},
			(pick, step) => {
				// Another skill renamed in place into a twin (or away from one): its folder does not move.
				const dirs = places.flatMap(skillDirs);
				if (dirs.length === 0) return "rename in place: none";
				const file = join(dirs[pick(dirs.length)], "SKILL.md");
				const name = [focus.name, targets[pick(targets.length)], `other-${step}`][pick(3)];
				const { mtime, atime } = statSync(file);
				writeFileSync(file, readFileSync(file, "utf8").replace(/name: \S+/, `name: ${name}`));
				if (pick(2) === 0) utimesSync(file, atime, mtime);
				return `rename in place ${file} -> ${name}`;
			},
			(pick, step) => {
				// A twin nested inside another skill, which pi only finds once that skill's SKILL.md is ignored.
				const dirs = places.flatMap(skillDirs);
				if (dirs.length === 0) return "nested twin: none";
				const dir = dirs[pick(dirs.length)];
				const name = pick(2) === 0 ? focus.name : targets[pick(targets.length)];
				mkdirSync(join(dir, `sub-${step}`, name), { recursive: true });
				writeFileSync(join(dir, `sub-${step}`, name, "SKILL.md"), skillText(name, `Nested at step ${step}.`));
				if (pick(2) === 0) writeFileSync(join(dir, pick(2) === 0 ? ".ignore" : ".gitignore"), "SKILL.md\n");
				return `nested twin of ${name} in ${dir}`;
			},
			(pick, step) => {
				const dirs = places.flatMap(skillDirs);
				if (dirs.length === 0) return "hide: none";
				const dir = dirs[pick(dirs.length)];
				writeFileSync(join(dir, ".fdignore"), "SKILL.md\n");
				return `hide ${dir} (step ${step})`;
			},
			(pick, step) => {
				// An edit of a bundled file in any skill: pi never reads it while the SKILL.md loads.
				const dirs = places.flatMap(skillDirs);
				if (dirs.length === 0) return "bundled edit: none";
				const dir = dirs[pick(dirs.length)];
				mkdirSync(join(dir, "references"), { recursive: true });
				writeFileSync(join(dir, "references", "notes.md"), `name: ${focus.name}\nStep ${step}.\n`);
				return `bundled edit in ${dir}`;
			},
		];
	}

	function currentOptions(env: TempEnv, fixture: LocationsFixture, trusted: boolean): DiscoverOptions {
		const settings = loadSettings({ cwd: fixture.cwd, agentDir: env.agentDir, trusted }).settings;
		return {
			cwd: fixture.cwd,
			agentDir: env.agentDir,
			trusted,
			settings,
			runtimeSkillFiles: fixture.runtimeSkillFiles,
		};
	}

	async function walk(
		seed: number,
		steps: number,
		settle: boolean,
	): Promise<{ hits: number; misses: number; namesConfirmed: number; namesOutdated: number }> {
		const env = getEnv();
		const fixture = buildLocations(env);
		const cache = createDiscoveryCache();
		const trust = { trusted: true };
		if (settle) await new Promise((done) => setTimeout(done, 3_500));
		await cache.discover(currentOptions(env, fixture, trust.trusted));
		// The call's target is drawn first, so the changes aimed at a skill mostly hit the one called.
		const focus = { name: targets[0] };
		const changes = [
			...createChanges(env, fixture),
			...targetedChanges(env, fixture, trust, focus),
			...targetedChanges(env, fixture, trust, focus),
		];
		const pick = createRandom(seed);
		let namesConfirmed = 0;
		let namesOutdated = 0;
		for (let step = 0; step < steps; step++) {
			const name = (focus.name = targets[pick(targets.length)]);
			const what = changes[pick(changes.length)](pick, step);
			const options = currentOptions(env, fixture, trust.trusted);
			const fresh = await discoverSkills(options);
			const cached = await cache.discover(options, [name]);
			expect(targetOutcome(cached, name), `seed ${seed}, step ${step}: ${what}; target ${name}`).to.deep.equal(
				targetOutcome(fresh, name),
			);
			// More than the call needs: every skill pi loads up to the target, under its name (a twin
			// before it decides which skill is meant), and, whenever the cache says the later skills
			// are current, every skill with its diagnostics (a new name must differ from all of them).
			const whole = (discovery: Discovery, label: string) => {
				const upTo = (d: Discovery) => summaryUpTo(d, name);
				expect(upTo(discovery), `seed ${seed}, step ${step}: ${what}; ${label} up to ${name}`).to.deep.equal(
					upTo(fresh),
				);
				if (cache.laterNamesCurrent(discovery, [name])) {
					namesConfirmed++;
					expect(summary(discovery), `seed ${seed}, step ${step}: ${what}; ${label}`).to.deep.equal(
						summary(fresh),
					);
				} else namesOutdated++;
			};
			whole(cached, "whole discovery");
			const again = await cache.discover(options, [name]);
			expect(targetOutcome(again, name), `seed ${seed}, step ${step} again`).to.deep.equal(
				targetOutcome(fresh, name),
			);
			whole(again, "again, whole discovery");
			// A full check after targeted ones still sees everything that changed.
			if (step % 4 === 3)
				expect(summary(await cache.discover(options)), `seed ${seed}, step ${step}, full`).to.deep.equal(
					summary(fresh),
				);
		}
		return { ...cache.stats, namesConfirmed, namesOutdated };
	}

	it(
		"over 80 random changes made at once (other skills, " + "twins, folders, settings, packages, trust)",
		async function () {
			this.timeout(120_000);
			const stats = await walk(23, 80, false);
			expect(stats.hits, "the cache was never used").to.be.greaterThan(60);
			// Both answers were given: a later skill renamed in place (or hidden) is no miss for the call, yet
			// a call that renames its target learns that the later names changed.
			expect(stats.namesOutdated, "no later skill ever changed").to.be.greaterThan(0);
			expect(stats.namesConfirmed).to.be.greaterThan(40);
		},
	);

	it("over 50 random changes to a tree old enough to be trusted on its stat", async function () {
		this.timeout(120_000);
		const stats = await walk(29, 50, true);
		expect(stats.hits).to.be.greaterThan(40);
	});

	it("skips other skills' bundled files: an edit there is no miss for a targeted call", async function () {
		const env = getEnv();
		const fixture = buildLocations(env);
		const other = dirname(fixture.files.get("pi-project-skill") ?? "");
		mkdirSync(join(other, "references"), { recursive: true });
		writeFileSync(join(other, "references", "api.md"), "Version 1.\n");
		const cache = createDiscoveryCache();
		const options = currentOptions(env, fixture, true);
		await cache.discover(options);
		await cache.settled();
		writeFileSync(join(other, "references", "api.md"), "Version 2, edited by another process.\n");
		const targeted = await cache.discover(options, ["agent-skill"]);
		expect(cache.stats).to.deep.include({ hits: 1, misses: 1 });
		expect(summary(targeted)).to.deep.equal(summary(await discoverSkills(options)));
		// The full check (list, create) stamps them too.
		await cache.discover(options);
		expect(cache.stats.misses).to.equal(2);
	});

	it(
		"sees another skill's SKILL.md renamed in place " + "into a twin of the target earlier in pi's order",
		async function () {
			const env = getEnv();
			const fixture = buildLocations(env);
			const cache = createDiscoveryCache();
			const options = currentOptions(env, fixture, true);
			const before = await cache.discover(options, ["agent-skill"]);
			await cache.settled();
			// The project's .pi/skills come before <agentDir>/skills: the renamed skill takes the name.
			const other = fixture.files.get("pi-project-skill") ?? "";
			const { mtime, atime } = statSync(other);
			writeFileSync(other, readFileSync(other, "utf8").replace("name: pi-project-skill", "name: agent-skill"));
			utimesSync(other, atime, mtime);
			const cached = await cache.discover(options, ["agent-skill"]);
			const fresh = await discoverSkills(options);
			expect(fresh.skills.find((s) => s.name === "agent-skill")?.filePath).to.equal(other);
			expect(before.skills.find((s) => s.name === "agent-skill")?.filePath).to.not.equal(other);
			expect(targetOutcome(cached, "agent-skill")).to.deep.equal(targetOutcome(fresh, "agent-skill"));
			expect(cache.stats.misses).to.equal(2);
		},
	);

	it("sees a twin in a place pi scans that lies inside another skill's folder (a settings entry)", async function () {
		const env = getEnv();
		const fixture = buildLocations(env);
		const nested = join(env.agentDir, "skills", "holder", "nested");
		mkdirSync(nested, { recursive: true });
		writeFileSync(join(env.agentDir, "skills", "holder", "SKILL.md"), skillText("holder", "Holds a listed folder."));
		const settingsPath = join(env.agentDir, "settings.json");
		const settings = JSON.parse(readFileSync(settingsPath, "utf8"));
		writeFileSync(settingsPath, JSON.stringify({ ...settings, skills: [...settings.skills, nested] }));
		const cache = createDiscoveryCache();
		const options = currentOptions(env, fixture, true);
		await cache.discover(options);
		// Global settings entries come before <agentDir>/skills: the twin takes the name.
		mkdirSync(join(nested, "agent-skill"));
		writeFileSync(join(nested, "agent-skill", "SKILL.md"), skillText("agent-skill", "The twin inside holder."));
		const cached = await cache.discover(options, ["agent-skill"]);
		const fresh = await discoverSkills(options);
		expect(fresh.skills.find((s) => s.name === "agent-skill")?.description).to.equal("The twin inside holder.");
		expect(targetOutcome(cached, "agent-skill")).to.deep.equal(targetOutcome(fresh, "agent-skill"));
	});

	it("takes the full check for a name the cached discovery lacks", async function () {
		const env = getEnv();
		const fixture = buildLocations(env);
		const cache = createDiscoveryCache();
		const options = currentOptions(env, fixture, true);
		await cache.discover(options);
		await cache.settled();
		// A skill renamed in place to the missing name: visible only in its own folder.
		writeFileSync(fixture.files.get("pi-project-skill") ?? "", skillText("brand-new-name", "Renamed in place."));
		const found = await cache.discover(options, ["brand-new-name"]);
		expect(found.skills.map((s) => s.name)).to.include("brand-new-name");
		expect(cache.stats.misses).to.equal(2);
	});
});

describe("discovery cache: a session's first discovery, stamped after pi read", function () {
	const getEnv = useTempEnv();

	/** The locations fixture, older than the racy window: the late stamps trust what did not change since. */
	async function agedFixture(env: TempEnv): Promise<{ fixture: LocationsFixture; options: DiscoverOptions }> {
		const fixture = buildLocations(env);
		await new Promise((done) => setTimeout(done, 3_500));
		return { fixture, options: optionsFor(env, fixture) };
	}

	/** Same length, mtime put back: only ctime tells (the stamp, taken after, would see the new bytes). */
	function editInPlace(file: string, description: string): void {
		const { mtime, atime } = statSync(file);
		writeFileSync(file, readFileSync(file, "utf8").replace(/description: .*/, `description: ${description}`));
		utimesSync(file, atime, mtime);
	}

	it("trusts the late stamps of an old tree: the next call is a hit, with no second discovery", async function () {
		this.timeout(30_000);
		const { options } = await agedFixture(getEnv());
		const cache = createDiscoveryCache();
		const first = await cache.discover(options);
		expect(summary(await cache.discover(options))).to.deep.equal(summary(first));
		expect(cache.stats).to.deep.include({ hits: 1, misses: 1, rebuilt: 0 });
	});

	it("sees a change made after the call returned, before the late walk stamped it", async function () {
		this.timeout(30_000);
		const { fixture, options } = await agedFixture(getEnv());
		const file = fixture.files.get("agent-skill") ?? "";
		const cache = createDiscoveryCache();
		const first = await cache.discover(options);
		editInPlace(file, "Edited between pi's read and the stamp.");
		const fresh = await discoverSkills(options);
		expect(summary(fresh)).to.not.deep.equal(summary(first));
		expect(summary(await cache.discover(options))).to.deep.equal(summary(fresh));
		expect(cache.stats.rebuilt).to.equal(1);
		// Stamped before that second build: a later change is a plain miss.
		editInPlace(file, "Edited again, after the second build....");
		expect(summary(await cache.discover(options))).to.deep.equal(summary(await discoverSkills(options)));
		expect(cache.stats.misses).to.equal(2);
	});

	it("sees a change made while the late walk runs, through the fs it stamps with", async function () {
		this.timeout(30_000);
		const env = getEnv();
		const { fixture, options } = await agedFixture(env);
		const file = fixture.files.get("pi-project-skill") ?? "";
		let planted = false;
		// The walk stats the skill's folder, then lists it, then stats its SKILL.md: the edit lands in between.
		const fs = faultyFs({
			stat: (call) => {
				if (planted || call.args[0] !== dirname(file)) return;
				planted = true;
				editInPlace(file, "Edited during the walk.");
			},
		});
		const cache = createDiscoveryCache();
		const first = await cache.discover({ ...options, fs });
		expect(planted, "the build itself stat'ed the folder").to.equal(false);
		const cached = await cache.discover({ ...options, fs });
		expect(planted).to.equal(true);
		const fresh = await discoverSkills(options);
		expect(summary(fresh)).to.not.deep.equal(summary(first));
		expect(summary(cached)).to.deep.equal(summary(fresh));
		expect(cache.stats.rebuilt).to.equal(1);
	});

	it("sees a place pi read from removed before the late walk (no timestamp is left)", async function () {
		this.timeout(30_000);
		const env = getEnv();
		const { fixture, options } = await agedFixture(env);
		const cache = createDiscoveryCache();
		const first = await cache.discover(options);
		// Without the marker pi looks for .agents/skills above the old project root as well.
		rmSync(join(fixture.gitRoot, ".git"), { recursive: true });
		const fresh = await discoverSkills(options);
		expect(summary(fresh)).to.not.deep.equal(summary(first));
		expect(summary(await cache.discover(options))).to.deep.equal(summary(fresh));
		expect(cache.stats.rebuilt).to.equal(1);
	});

	it("drops the entry when the call that built it writes before the late walk", async function () {
		this.timeout(30_000);
		const { fixture, options } = await agedFixture(getEnv());
		const file = fixture.files.get("agent-skill") ?? "";
		const cache = createDiscoveryCache();
		await cache.discover(options);
		const oldHash = sha256(readFileSync(file));
		const text = skillText("agent-skill", "Rewritten by the first call.");
		writeFileSync(file, text);
		cache.noteLanded([
			{
				skill: "agent-skill",
				relPath: "SKILL.md",
				absPath: file,
				oldHash,
				newHash: sha256(text),
				backupId: null,
				backupPath: null,
			},
		]);
		await cache.settled();
		expect(summary(await cache.discover(options))).to.deep.equal(summary(await discoverSkills(options)));
		expect(cache.stats.misses).to.equal(2);
	});
});
