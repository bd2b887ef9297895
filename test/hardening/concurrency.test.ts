// Many writers at once: parallel in-process calls on one file and on several files of one skill,
// several tool calls in one assistant message through a real pi session, and separate processes
// hammering one skill, each with its own read ledger (and, for a project skill, its own agent dir).
// No update is lost, every loser is told `stale`, and nothing deadlocks. Counts are printed for the report.
import { execFile, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { skillText, writeSkill } from "../support/fixtures.ts";
import { createHarness, expectOk, expectRefused, textOf } from "../support/harness.ts";

const run = promisify(execFile);
const HAMMER = join(REPO_ROOT, "test", "hardening", "fixtures", "hammer.ts");
const HOLDER = join(REPO_ROOT, "test", "hardening", "fixtures", "lock-holder.ts");
const BASE = skillText("shared", "# Log\n\n<!-- end -->\n");

function landedLines(text: string): string[] {
	return text.split("\n").filter((l) => /^- /.test(l));
}

describe("hardening: concurrent writers", function () {
	this.timeout(240_000);
	const getEnv = useTempEnv({ prefix: "selfskills-race-" });
	let env: TempEnv;
	let file: string;
	beforeEach(function () {
		env = getEnv();
		file = writeSkill(join(env.agentDir, "skills"), "shared", BASE);
	});

	it("lands all 24 parallel patches of one file from one session (the ledger follows each)", async function () {
		const tool = createHarness(env);
		expectOk(await tool.call({ action: "read", skill: "shared" }));
		const results = await Promise.all(
			Array.from({ length: 24 }, (_, i) =>
				tool.call({
					action: "patch",
					skill: "shared",
					old_string: "<!-- end -->",
					new_string: `- p${i}\n<!-- end -->`,
				}),
			),
		);
		const ok = results.filter((r) => r.details.ok === true).length;
		const lines = landedLines(readFileSync(file, "utf8"));
		const codes = [...new Set(results.filter((r) => !r.details.ok).map((r) => r.details.code))].join(",");
		console.log(`      in-process, one session: ${ok}/24 landed, ${24 - ok} refused (${codes || "-"})`);
		expect(lines.sort()).to.deep.equal(results.flatMap((r, i) => (r.details.ok ? [`- p${i}`] : [])).sort());
		expect(ok).to.equal(24);
	});

	it("lets exactly one of 12 sessions that read the same bytes land; the 11 others get stale", async function () {
		const sessions = Array.from({ length: 12 }, () => createHarness(env));
		for (const s of sessions) expectOk(await s.call({ action: "read", skill: "shared" }));
		const results = await Promise.all(
			sessions.map((s, i) =>
				s.call({
					action: "patch",
					skill: "shared",
					old_string: "<!-- end -->",
					new_string: `- s${i}\n<!-- end -->`,
				}),
			),
		);
		const winners = results.flatMap((r, i) => (r.details.ok ? [i] : []));
		const codes = results.filter((r) => !r.details.ok).map((r) => r.details.code);
		console.log(
			`      in-process, 12 sessions: ${winners.length} landed, ${codes.filter((c) => c === "stale").length} stale`,
		);
		expect(winners).to.have.length(1);
		expect(codes).to.deep.equal(Array(11).fill("stale"));
		for (const r of results.filter((x) => !x.details.ok)) expect(textOf(r)).to.match(/^stale: /);
		expect(landedLines(readFileSync(file, "utf8"))).to.deep.equal([`- s${winners[0]}`]);
	});

	it("writes and patches different files of one skill in parallel without losing any", async function () {
		const refs = join(env.agentDir, "skills", "shared", "references");
		mkdirSync(refs);
		for (let i = 0; i < 8; i++) writeFileSync(join(refs, `f${i}.md`), "<!-- end -->\n");
		const tool = createHarness(env);
		expectOk(await tool.call({ action: "read", skill: "shared" }));
		for (let i = 0; i < 8; i++)
			expectOk(await tool.call({ action: "read", skill: "shared", file: `references/f${i}.md` }));
		const calls = [
			...Array.from({ length: 8 }, (_, i) =>
				tool.call({
					action: "patch",
					skill: "shared",
					file: `references/f${i}.md`,
					old_string: "<!-- end -->",
					new_string: `- f${i}\n<!-- end -->`,
				}),
			),
			...Array.from({ length: 8 }, (_, i) =>
				tool.call({ action: "write", skill: "shared", file: `references/new${i}.md`, content: `new ${i}\n` }),
			),
			tool.call({
				action: "patch",
				skill: "shared",
				old_string: "<!-- end -->",
				new_string: "- skill\n<!-- end -->",
			}),
		];
		const results = await Promise.all(calls);
		for (const r of results) expectOk(r);
		for (let i = 0; i < 8; i++) {
			expect(readFileSync(join(refs, `f${i}.md`), "utf8")).to.equal(`- f${i}\n<!-- end -->\n`);
			expect(readFileSync(join(refs, `new${i}.md`), "utf8")).to.equal(`new ${i}\n`);
		}
		expect(landedLines(readFileSync(file, "utf8"))).to.deep.equal(["- skill"]);
		console.log(`      in-process, 17 calls on 17 files of one skill: ${results.length} landed`);
	});

	describe("through pi, several tool calls in one assistant message", function () {
		let pi: PiSession | undefined;
		afterEach(() => pi?.dispose());
		it("runs 6 patches of one file sent in one message and keeps all six", async function () {
			pi = await createPiSession({ env, packageDir: REPO_ROOT });
			const patch = (i: number) => ({
				name: "skill_manage",
				arguments: {
					action: "patch",
					skill: "shared",
					old_string: "<!-- end -->",
					new_string: `- m${i}\n<!-- end -->`,
				},
			});
			const result = await pi.run("log six things", [
				{ toolCall: { name: "skill_manage", arguments: { action: "read", skill: "shared" } } },
				{ toolCalls: Array.from({ length: 6 }, (_, i) => patch(i)) },
				{ text: "done" },
			]);
			const patches = result.toolResults.slice(1);
			expect(patches).to.have.length(6);
			for (const r of patches) expect(r.isError, r.text).to.equal(false);
			expect(landedLines(readFileSync(file, "utf8"))).to.deep.equal([
				"- m0",
				"- m1",
				"- m2",
				"- m3",
				"- m4",
				"- m5",
			]);
			console.log("      through pi, one message with 6 patches: 6 landed");
		});
	});

	describe("two pi processes with different agent dirs on one project skill", function () {
		let project: string;
		const agentDirs = () => ["agent-a", "agent-b"].map((name) => join(env.root, name));
		beforeEach(function () {
			project = writeSkill(join(env.projectDir, ".pi", "skills"), "shared", BASE);
			for (const dir of agentDirs()) {
				mkdirSync(dir);
				writeFileSync(
					join(dir, "settings.json"),
					JSON.stringify({ selfskills: { trustedProjects: [env.projectDir] } }),
				);
			}
		});

		it("makes a patch wait for the other process's lock, so its read-modify-write is not lost", async function () {
			const [agentA, agentB] = agentDirs();
			const tool = createHarness({ ...env, agentDir: agentB });
			expectOk(await tool.call({ action: "read", skill: "shared" }));
			// The other process locks the file, reads it, and writes it back with a line added 1.5 s later.
			const holder = spawn(process.execPath, ["--import", "tsx", HOLDER], {
				cwd: REPO_ROOT,
				env: { ...process.env, PI_CODING_AGENT_DIR: agentA, TARGET: project, HOLD_MS: "1500" },
				stdio: ["ignore", "pipe", "inherit"],
			});
			let out = "";
			holder.stdout.on("data", (chunk: Buffer) => {
				out += chunk.toString();
			});
			const done = new Promise<number | null>((resolve) => holder.on("exit", resolve));
			while (!out.includes("held") && holder.exitCode === null)
				await new Promise((resolve) => setTimeout(resolve, 20));
			const r = await tool.call({
				action: "patch",
				skill: "shared",
				old_string: "<!-- end -->",
				new_string: "- mine\n<!-- end -->",
			});
			expect(await done).to.equal(0);
			expect(out).to.include("released");
			const lines = landedLines(readFileSync(project, "utf8"));
			// Serialised on one lock, the patch comes after the holder's write and finds the file changed.
			expectRefused(r, "stale");
			expect(lines).to.deep.equal(["- holder"]);
		});

		it("loses no update when 2 processes with different PI_CODING_AGENT_DIRs hammer it", async function () {
			const reports = await Promise.all(
				agentDirs().map((agentDir, i) =>
					run(process.execPath, ["--import", "tsx", HAMMER], {
						cwd: REPO_ROOT,
						timeout: 200_000,
						env: {
							...process.env,
							PI_CODING_AGENT_DIR: agentDir,
							WORKER: `d${i}`,
							LANDINGS: "8",
							SKILL: "shared",
							PROJECT: env.projectDir,
						},
					}).then(
						({ stdout }) =>
							JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as {
								worker: string;
								landed: string[];
								stale: number;
								other: string[];
							},
					),
				),
			);
			for (const r of reports) expect(r.other, `${r.worker}: ${r.other.join(",")}`).to.deep.equal([]);
			const landed = reports.flatMap((r) => r.landed);
			expect(landed).to.have.length(16);
			expect(landedLines(readFileSync(project, "utf8")).sort()).to.deep.equal(landed.sort());
			const stale = reports.reduce((n, r) => n + r.stale, 0);
			console.log(
				`      2 processes, 2 agent dirs, one project skill: ${landed.length} landed, ${stale} stale, 0 lost`,
			);
		});
	});

	it("loses no update when 3 processes hammer one SKILL.md and 3 others one bundled file", async function () {
		const refs = join(env.agentDir, "skills", "shared", "references");
		mkdirSync(refs);
		const bundled = join(refs, "log.md");
		writeFileSync(bundled, "<!-- end -->\n");
		const spawnWorker = (worker: string, extra: Record<string, string>) =>
			run(process.execPath, ["--import", "tsx", HAMMER], {
				cwd: REPO_ROOT,
				timeout: 200_000,
				env: { ...process.env, WORKER: worker, LANDINGS: "6", SKILL: "shared", PROJECT: env.projectDir, ...extra },
			}).then(
				({ stdout }) =>
					JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as {
						worker: string;
						landed: string[];
						stale: number;
						other: string[];
						attempts: number;
					},
			);
		const reports = await Promise.all([
			...["a", "b", "c"].map((w) => spawnWorker(w, {})),
			...["x", "y", "z"].map((w) => spawnWorker(w, { FILE: "references/log.md" })),
		]);
		const skillLanded = reports.slice(0, 3).flatMap((r) => r.landed);
		const fileLanded = reports.slice(3).flatMap((r) => r.landed);
		for (const r of reports) expect(r.other, `${r.worker}: ${r.other.join(",")}`).to.deep.equal([]);
		expect(landedLines(readFileSync(file, "utf8")).sort()).to.deep.equal(skillLanded.sort());
		expect(landedLines(readFileSync(bundled, "utf8")).sort()).to.deep.equal(fileLanded.sort());
		expect(skillLanded).to.have.length(18);
		expect(fileLanded).to.have.length(18);
		expect(
			readdirSync(join(env.agentDir, "skills", "shared")).filter((n) => n.includes("selfskills-tmp")),
		).to.deep.equal([]);
		const stale = reports.reduce((n, r) => n + r.stale, 0);
		const perWorker = reports.map((r) => `${r.worker}:${r.stale}`).join(" ");
		console.log(
			`      6 processes: ${skillLanded.length + fileLanded.length} landed, ${stale} stale (${perWorker}), ` +
				"0 lost, 0 other",
		);
	});
});
