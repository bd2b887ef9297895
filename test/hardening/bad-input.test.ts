// Hostile and sloppy arguments, through prepareArguments/normalizeArguments and execute: wrong
// types, missing and extra fields, strings over 1 MiB, empty and whitespace-only strings,
// old_string == new_string, overlapping matches, `$&` in new_string, CRLF, BOM, invalid UTF-8
// and binary files, and names that are not skill names. Every one is refused with its code, and
// nothing on disk changes unless the call was fine.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { ArgumentError, normalizeArguments } from "../../src/arguments.ts";
import { createSessionState } from "../../src/session-state.ts";
import { createSkillManageTool } from "../../src/tool.ts";
import { realFs } from "../../src/fs-ops.ts";
import { REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { createHarness, expectOk, expectRefused, expectSameTree, fingerprint, skillText, textOf, writeSkill, type Harness } from "./support.ts";

const MIB = 1024 * 1024;

describe("hardening: bad input", function () {
	const getEnv = useTempEnv({ prefix: "selfskills-input-" });
	let env: TempEnv;
	let tool: Harness;
	let skillsRoot: string;
	let refs: string;
	beforeEach(async function () {
		env = getEnv();
		skillsRoot = join(env.agentDir, "skills");
		writeSkill(skillsRoot, "deploy", skillText("deploy", "# Steps\n\n1. Run the build.\n2. Check the page.\nababa\n"));
		refs = join(skillsRoot, "deploy", "references");
		mkdirSync(refs);
		writeFileSync(join(refs, "crlf.md"), "line one\r\nline two\r\nline three\r\n");
		writeFileSync(join(refs, "bom.md"), "\uFEFF# Title\nbody\n");
		writeFileSync(join(refs, "latin1.md"), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
		writeFileSync(join(refs, "image.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00]));
		writeFileSync(join(refs, "big.md"), "x".repeat(MIB + 1));
		tool = createHarness(env);
		expectOk(await tool.call({ action: "read", skill: "deploy" }));
	});

	const untouched = async (args: Record<string, unknown>, code: string) => {
		const before = fingerprint(skillsRoot);
		const r = await tool.call(args);
		expectRefused(r, code);
		expectSameTree(before, fingerprint(skillsRoot), `skills after ${JSON.stringify(args).slice(0, 80)}`);
		return r;
	};

	it("refuses wrong types, unknown actions and non-object arguments as invalid_arguments", async function () {
		const cases: unknown[] = [
			null, 5, "patch", [], [{ action: "list" }],
			{}, { action: 5 }, { action: "nope" }, { action: "PATCH" }, { action: ["patch"] },
			{ action: "patch", skill: "deploy", old_string: 5, new_string: "x" },
			{ action: "patch", skill: "deploy", old_string: "a", new_string: { x: 1 } },
			{ action: "patch", skill: "deploy", old_string: "a", new_string: "b", replace_all: "true" },
			{ action: "patch", skill: "deploy", old_string: "a", new_string: "b", dry_run: 1 },
			{ action: "read", skill: ["deploy"] },
			{ action: "read", skill: "deploy", file: 7 },
			{ action: "operations", operations: "not json" },
			{ action: "operations", operations: { action: "patch" } },
			{ action: "operations", operations: [{ action: "create", name: "x", description: "d", body: "b" }] },
			{ action: "operations", operations: [{ action: "patch", skill: "deploy", old_string: "a", new_string: "b", dry_run: true }] },
			{ action: "operations", operations: [5] },
		];
		for (const raw of cases) {
			let code: unknown;
			try {
				normalizeArguments(raw);
			} catch (error) {
				expect(error, JSON.stringify(raw)).to.be.instanceOf(ArgumentError);
				code = (error as ArgumentError).refusal.code;
				expect((error as ArgumentError).message, JSON.stringify(raw)).to.match(/^invalid_arguments: /);
			}
			expect(code, JSON.stringify(raw)).to.equal("invalid_arguments");
		}
		// The tool's own prepareArguments applies the same checks.
		const defined = createSkillManageTool({ agentDir: () => env.agentDir, fs: realFs, state: createSessionState(), effects: { onLanded() {} } });
		expect(() => defined.prepareArguments?.({ action: "patch", skill: "deploy", old_string: 5 })).to.throw(ArgumentError, /^invalid_arguments: /);
		expect(defined.prepareArguments?.({ action: "read", skill_name: "deploy", file_path: undefined })).to.deep.include({ action: "read", skill: "deploy" });
	});

	it("refuses missing and extra fields per action", async function () {
		const cases: Array<Record<string, unknown>> = [
			{ action: "patch", skill: "deploy", old_string: "a" },
			{ action: "patch", skill: "deploy", new_string: "a" },
			{ action: "patch", old_string: "a", new_string: "b" },
			{ action: "create", name: "x", description: "d" },
			{ action: "write", skill: "deploy", file: "a.md" },
			{ action: "write", skill: "deploy", content: "a" },
			{ action: "read" },
			{ action: "delete" },
			{ action: "operations" },
			{ action: "read", skill: "deploy", content: "x" },
			{ action: "list", file: "x" },
			{ action: "create", name: "x", description: "d", body: "b", skill: "deploy" },
			{ action: "patch", skill: "deploy", old_string: "a", new_string: "b", content: "c" },
			{ action: "history", skill: "deploy", backup: "x" },
			{ action: "delete", skill: "deploy", replace_all: true },
			{ action: "read", skill: "deploy", __proto__: { polluted: true }, constructor: "x" },
		];
		for (const args of cases) await untouched(args, "invalid_arguments");
		expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
	});

	it("refuses content over 1 MiB as too_large, and reads of a larger file", async function () {
		expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/crlf.md" }));
		await untouched({ action: "write", skill: "deploy", file: "references/huge.md", content: "y".repeat(MIB + 1) }, "too_large");
		await untouched({ action: "write", skill: "deploy", file: "references/huge.md", content: "é".repeat(MIB / 2 + 1) }, "too_large");
		await untouched({ action: "patch", skill: "deploy", old_string: "Run the build.", new_string: "z".repeat(MIB) }, "too_large");
		await untouched({ action: "create", name: "huge", description: "Use when huge.", body: "b".repeat(MIB + 1) }, "too_large");
		await untouched({ action: "read", skill: "deploy", file: "references/big.md" }, "too_large");
		expectOk(await tool.call({ action: "write", skill: "deploy", file: "references/just-fits.md", content: "y".repeat(MIB) }));
	});

	it("refuses empty old_string, identical strings, empty content and blank create fields", async function () {
		await untouched({ action: "patch", skill: "deploy", old_string: "", new_string: "x" }, "empty_old_string");
		await untouched({ action: "patch", skill: "deploy", old_string: "Run", new_string: "Run" }, "no_change");
		await untouched({ action: "patch", skill: "deploy", old_string: "   \t", new_string: "x" }, "not_found");
		await untouched({ action: "write", skill: "deploy", file: "references/e.md", content: "" }, "empty_content");
		await untouched({ action: "create", name: "", description: "d", body: "b" }, "invalid_name");
		await untouched({ action: "create", name: "blank", description: "   ", body: "b" }, "invalid_arguments");
		await untouched({ action: "create", name: "blank", description: "Use when blank.", body: " \n\t " }, "invalid_arguments");
		await untouched({ action: "read", skill: "" }, "unknown_skill");
		await untouched({ action: "read", skill: "   " }, "unknown_skill");
		expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/crlf.md" }));
		await untouched({ action: "write", skill: "deploy", file: "references/crlf.md", content: "line one\r\nline two\r\nline three\r\n" }, "no_change");
	});

	it("refuses an old_string whose occurrences overlap as not unique", async function () {
		const r = await untouched({ action: "patch", skill: "deploy", old_string: "aba", new_string: "X" }, "not_unique");
		expect(r.details.count).to.equal(2);
		expectOk(await tool.call({ action: "patch", skill: "deploy", old_string: "ababa", new_string: "xyz" }));
	});

	it("takes $&, $1, $$ and $` in new_string literally, with and without replace_all", async function () {
		expectOk(await tool.call({ action: "patch", skill: "deploy", old_string: "Run the build.", new_string: "Run $& and $1 and $$ and $` and $'." }));
		expect(readFileSync(join(skillsRoot, "deploy", "SKILL.md"), "utf8")).to.contain("1. Run $& and $1 and $$ and $` and $'.\n");
		expectOk(await tool.call({ action: "patch", skill: "deploy", old_string: "$", new_string: "$&$&", replace_all: true }));
		expect(readFileSync(join(skillsRoot, "deploy", "SKILL.md"), "utf8")).to.contain("1. Run $&$&& and $&$&1 and $&$&$&$& and $&$&` and $&$&'.\n");
	});

	it("keeps CRLF and a BOM byte for byte, and says how to match CRLF", async function () {
		expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/crlf.md" }));
		const lf = await untouched({ action: "patch", skill: "deploy", file: "references/crlf.md", old_string: "line one\nline two", new_string: "x" }, "not_found");
		expect(textOf(lf)).to.match(/CRLF/);
		expectOk(await tool.call({ action: "patch", skill: "deploy", file: "references/crlf.md", old_string: "line two\r\n", new_string: "line 2\r\n" }));
		expect(readFileSync(join(refs, "crlf.md"), "latin1")).to.equal("line one\r\nline 2\r\nline three\r\n");
		expectOk(await tool.call({ action: "read", skill: "deploy", file: "references/bom.md" }));
		expectOk(await tool.call({ action: "patch", skill: "deploy", file: "references/bom.md", old_string: "body", new_string: "new body" }));
		expect([...readFileSync(join(refs, "bom.md")).subarray(0, 3)]).to.deep.equal([0xef, 0xbb, 0xbf]);
		expect(readFileSync(join(refs, "bom.md"), "utf8")).to.equal("\uFEFF# Title\nnew body\n");
	});

	it("refuses invalid UTF-8 and binary files for read, patch and write, leaving them untouched", async function () {
		for (const file of ["references/latin1.md", "references/image.png"]) {
			await untouched({ action: "read", skill: "deploy", file }, "binary_file");
			await untouched({ action: "patch", skill: "deploy", file, old_string: "caf", new_string: "x" }, "not_read");
			await untouched({ action: "write", skill: "deploy", file, content: "text\n" }, "not_read");
		}
		await untouched({ action: "write", skill: "deploy", file: "references/surrogate.md", content: "bad \uD800 half\n" }, "binary_file");
		await untouched({ action: "patch", skill: "deploy", old_string: "Run the build.", new_string: "Run \uDC00." }, "binary_file");
		await untouched({ action: "create", name: "half", description: "Use when \uD800.", body: "Body." }, "binary_file");
		await untouched({ action: "write", skill: "deploy", file: "references/nul.md", content: "a\0b\n" }, "binary_file");
	});

	it("refuses skill names with separators, dots, uppercase, bad hyphens and over 64 characters", async function () {
		const bad = ["a/b", "a\\b", "..", ".", ".hidden", "a.b", "Deploy", "ABC", "-a", "a-", "a--b", "a b", "a_b", "ä", "a\0", `${"a".repeat(65)}`, "__deleted__", "node_modules"];
		for (const name of bad) await untouched({ action: "create", name, description: "Use when testing names.", body: "Body." }, "invalid_name");
		expectOk(await tool.call({ action: "create", name: "a".repeat(64), description: "Use when testing names.", body: "Body." }));
	});

	describe("through pi", function () {
		let pi: PiSession | undefined;
		afterEach(() => pi?.dispose());
		it("turns malformed tool calls into error results without crashing the session", async function () {
			pi = await createPiSession({ env, packageDir: REPO_ROOT });
			const call = (args: Record<string, unknown>) => ({ toolCall: { name: "skill_manage", arguments: args } });
			const run = await pi.run("try bad calls", [
				call({ action: "patch", skill: "deploy", old_string: 5, new_string: "x" }),
				call({ action: "nope" }),
				call({ action: "read", skill: "deploy", content: "x" }),
				call({ action: "list" }),
				{ text: "done" },
			]);
			const [wrongType, unknownAction, extra, list] = run.toolResults;
			for (const r of [wrongType, unknownAction, extra]) expect(r.isError, r.text).to.equal(true);
			expect(extra.text).to.match(/^invalid_arguments: /);
			expect(list.isError, list.text).to.equal(false);
			expect(pi.extensionErrors).to.deep.equal([]);
		});
	});
});
