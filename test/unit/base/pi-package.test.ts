// src/base/pi-package.ts findPiPackageDir: the running pi's folder from what its module says
// (getPackageDir, else a frame of its own code), else the caller's stack, else the CLI path; on the
// real pi of the active line and on given sources (a stack with a pi frame, none, getPackageDir).
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as codingAgent from "@mariozechner/pi-coding-agent";
import { expect } from "chai";
import { findPiPackageDir, type PiSources } from "../../../src/base/pi-package.ts";
import { getPiLine, getPiLineInfo } from "../../support/pi-line.ts";

const piDir = realpathSync(getPiLineInfo().packageDir);
const none: PiSources = { exports: {}, stack: "", argv1: undefined, packageDirEnv: undefined };
const frame = (file: string) => `Error\n    at check (${file}:12:34)\n    at run (node:internal/x:1:2)`;
const mocha = process.argv[1];

describe(`findPiPackageDir (src/base/pi-package.ts, pi ${getPiLine()})`, function () {
	let temp: string | undefined;
	afterEach(() => {
		if (temp) rmSync(temp, { recursive: true, force: true });
		temp = undefined;
	});

	it("names the running pi's folder under mocha, where argv[1] is the test runner", function () {
		expect(process.argv[1]).to.not.contain("pi-coding-agent");
		expect(findPiPackageDir()).to.equal(piDir);
	});

	it("reads a frame of pi's own code through its exported isToolCallEventType, with nothing else given", function () {
		const exports = { isToolCallEventType: Reflect.get(codingAgent, "isToolCallEventType") };
		expect(findPiPackageDir({ ...none, exports })).to.equal(piDir);
	});

	it("takes a pi frame from the caller's stack, as a path or a file URL", function () {
		const file = join(piDir, "dist", "core", "extensions", "runner.js");
		expect(findPiPackageDir({ ...none, stack: frame(file) })).to.equal(piDir);
		expect(findPiPackageDir({ ...none, stack: frame(pathToFileURL(file).href) })).to.equal(piDir);
	});

	it("falls back to argv[1] when no frame is pi's, and says nothing when argv[1] is not pi either", function () {
		const stack = frame(join(process.cwd(), "src", "guard", "boundary.ts"));
		const cli = join(piDir, "dist", "cli.js");
		expect(findPiPackageDir({ ...none, stack, argv1: cli })).to.equal(piDir);
		expect(findPiPackageDir({ ...none, stack, argv1: mocha })).to.equal(undefined);
		expect(findPiPackageDir(none)).to.equal(undefined);
	});

	it("uses getPackageDir where pi exports it, unless PI_PACKAGE_DIR redirects it away from the code", function () {
		temp = realpathSync(mkdtempSync(join(tmpdir(), "pi-package-")));
		const other = join(temp, "node_modules", "@x", "pi-coding-agent");
		mkdirSync(other, { recursive: true });
		writeFileSync(join(other, "package.json"), JSON.stringify({ name: "@x/pi-coding-agent" }));
		const getPackageDir = () => other;
		expect(findPiPackageDir({ ...none, exports: { getPackageDir } })).to.equal(other);
		// PI_PACKAGE_DIR set: getPackageDir returns it; the folder of the code that runs is what is protected.
		const isToolCallEventType = Reflect.get(codingAgent, "isToolCallEventType");
		const redirected = { ...none, exports: { getPackageDir, isToolCallEventType }, packageDirEnv: other };
		expect(findPiPackageDir(redirected)).to.equal(piDir);
		// A folder that holds no pi manifest is not taken for pi's.
		expect(findPiPackageDir({ ...none, exports: { getPackageDir: () => temp } })).to.equal(undefined);
	});

	it("does not take a package installed inside pi's folder, or a file with no manifest above, for pi", function () {
		temp = realpathSync(mkdtempSync(join(tmpdir(), "pi-package-")));
		const pi = join(temp, "pi-coding-agent");
		const dep = join(pi, "node_modules", "dep");
		mkdirSync(join(dep, "lib"), { recursive: true });
		mkdirSync(join(pi, "dist"), { recursive: true });
		writeFileSync(join(pi, "package.json"), JSON.stringify({ name: "@x/pi-coding-agent" }));
		writeFileSync(join(dep, "package.json"), JSON.stringify({ name: "dep" }));
		writeFileSync(join(pi, "dist", "package.json"), JSON.stringify({ type: "module" }));
		expect(findPiPackageDir({ ...none, stack: frame(join(dep, "lib", "x.js")) })).to.equal(undefined);
		expect(findPiPackageDir({ ...none, stack: frame(join(pi, "dist", "x.js")) })).to.equal(pi);
		expect(findPiPackageDir({ ...none, stack: frame(join(temp, "x.js")) })).to.equal(undefined);
	});
});
