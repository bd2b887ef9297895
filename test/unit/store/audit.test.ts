// audit.ts: one line per landed change; past AUDIT_ROTATE_BYTES the log is moved aside whole and a new
// one starts with the counts so far, so /selfskills reads a bounded file and every line is kept.
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { expect } from "chai";
import { realFs } from "../../../src/base/fs-ops.ts";
import { getAuditPath } from "../../../src/base/paths.ts";
import { AUDIT_ROTATE_BYTES, appendAudit, countChanges, type ChangeRecord } from "../../../src/store/audit.ts";
import { useTempEnv } from "../../support/temp-env.ts";

const record = (skill: string, i: number): ChangeRecord => ({
	time: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
	cwd: "/w/project",
	action: "patch",
	skill,
	file: "SKILL.md",
	oldHash: "a".repeat(64),
	newHash: "b".repeat(64),
	backup: `20260101-000000.000-${i}.md`,
	reason: "the step named a flag the tool no longer has",
});

describe("audit", function () {
	const getEnv = useTempEnv();

	it("counts landed changes per skill from a private log", function () {
		const { agentDir } = getEnv();
		expect(appendAudit(realFs, agentDir, [record("deploy", 1), record("deploy", 2), record("notes", 3)])).to.equal(
			undefined,
		);
		expect(Object.fromEntries(countChanges(realFs, agentDir))).to.deep.equal({ deploy: 2, notes: 1 });
		expect(statSync(getAuditPath(agentDir)).mode & 0o777).to.equal(0o600);
	});

	it("moves a full log aside whole and keeps every count in a small new one", function () {
		const { agentDir } = getEnv();
		const path = getAuditPath(agentDir);
		mkdirSync(dirname(path), { recursive: true });
		const lines: string[] = [];
		for (let size = 0, i = 0; size < AUDIT_ROTATE_BYTES; i++) {
			const line = `${JSON.stringify(record(`s${i % 7}`, i))}\n`;
			lines.push(line);
			size += line.length;
		}
		writeFileSync(path, lines.join(""), { mode: 0o600 });
		appendAudit(realFs, agentDir, [record("s0", lines.length)]);
		const counts = countChanges(realFs, agentDir);
		expect([...counts.values()].reduce((a, b) => a + b, 0)).to.equal(lines.length + 1);
		expect(statSync(path).size, "the new log holds the counts alone").to.be.below(1000);
		const archived = readdirSync(dirname(path)).filter((n) => /^audit-.+\.jsonl$/.test(n));
		expect(archived).to.have.length(1);
		const kept = readFileSync(join(dirname(path), archived[0]), "utf8");
		expect(kept).to.equal(`${lines.join("")}${JSON.stringify(record("s0", lines.length))}\n`);
		appendAudit(realFs, agentDir, [record("s1", lines.length + 1)]);
		expect(countChanges(realFs, agentDir).get("s1")).to.equal((counts.get("s1") ?? 0) + 1);
	});

	it("keeps every line through many rotations in one second", function () {
		const { agentDir } = getEnv();
		const dir = dirname(getAuditPath(agentDir));
		const line = `${JSON.stringify(record("s0", 0))}\n`;
		const total = Math.ceil((AUDIT_ROTATE_BYTES * 5) / line.length);
		for (let i = 0; i < total; i++) appendAudit(realFs, agentDir, [record(`s${i % 3}`, i)]);
		const files = readdirSync(dir).filter((n) => /^audit.*\.jsonl$/.test(n));
		expect(files.length, "four rotations or more").to.be.above(4);
		const kept = files.flatMap((n) =>
			readFileSync(join(dir, n), "utf8")
				.split("\n")
				.filter((l) => l.includes('"action"')),
		);
		expect(kept).to.have.length(total);
		expect([...countChanges(realFs, agentDir).values()].reduce((a, b) => a + b, 0)).to.equal(total);
	});
});
