// bubblewrap's arguments: a read-only root, writable places, then the protected set in an order no later
// mount can undo, every writable folder between a protected place and its writable holder bound too (so
// renaming it fails), and the same layout run through real bwrap holds.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { buildBwrapArgs, pinningBinds, shellQuote, type SandboxLayout } from "../../../src/guard/bwrap-args.ts";
import { probeSandbox } from "../../../src/guard/sandbox.ts";
import { useTempEnv } from "../../support/temp-env.ts";

describe("bwrap arguments", function () {
	const getEnv = useTempEnv();

	it("mounts the root read-only, then writable places, then protected places, outermost first", function () {
		const args = buildBwrapArgs({
			readOnlyRoot: "/",
			writable: ["/w/project", "/tmp/s"],
			protected: ["/w/project/a/b/.agents", "/w/project/.pi"],
			hide: ["/run/user/0"],
			network: false,
			tmpdir: "/tmp/s",
			cwd: "/w/project/a/b",
		});
		const at = (flag: string, path: string) => args.findIndex((a, i) => a === flag && args[i + 1] === path);
		expect(args.slice(0, 3)).to.deep.equal(["--ro-bind", "/", "/"]);
		expect(at("--tmpfs", "/run/user/0")).to.be.greaterThan(0);
		expect(at("--bind", "/w/project")).to.be.lessThan(at("--bind", "/w/project/a"));
		expect(at("--bind", "/w/project/a")).to.be.lessThan(at("--bind", "/w/project/a/b"));
		const lastBind = Math.max(
			...["/w/project", "/tmp/s", "/w/project/a", "/w/project/a/b"].map((p) => at("--bind", p)),
		);
		expect(at("--ro-bind", "/w/project/.pi")).to.be.greaterThan(lastBind);
		expect(at("--ro-bind", "/w/project/a/b/.agents")).to.be.greaterThan(lastBind);
		for (const flag of ["--unshare-user", "--unshare-pid", "--new-session", "--die-with-parent", "--unshare-net"])
			expect(args, flag).to.include(flag);
		expect(args.join(" ")).to.contain("--cap-drop ALL").and.to.contain("--setenv TMPDIR /tmp/s");
		expect(args.join(" "))
			.to.contain("--setenv npm_config_cache /tmp/s/npm-cache")
			.and.to.contain("--unsetenv SSH_AUTH_SOCK");
		expect(args.join(" ")).to.contain("--chdir /w/project/a/b");
		const online = buildBwrapArgs({
			readOnlyRoot: "/",
			writable: [],
			protected: [],
			hide: [],
			network: true,
			tmpdir: "/t",
		});
		expect(online).to.not.include("--unshare-net");
	});

	it("binds nothing between a protected place and a writable place that does not hold it", function () {
		expect(pinningBinds(["/w/p"], ["/elsewhere/x", "/w/p/.pi"])).to.deep.equal([]);
		expect(pinningBinds(["/w/p", "/w/p/sub"], ["/w/p/sub/a/.agents"])).to.deep.equal(["/w/p/sub/a"]);
	});

	it("holds in real bwrap: protected places and the folders above them cannot be renamed or written", function () {
		const probe = probeSandbox();
		expect(probe, "bubblewrap must work here").to.include({ available: true });
		if (!probe.available) return;
		const env = getEnv();
		const project = env.projectDir;
		const cwd = join(project, "a", "b");
		const agents = join(cwd, ".agents");
		mkdirSync(agents, { recursive: true });
		writeFileSync(join(agents, "keep.md"), "keep\n");
		const tmp = join(env.root, "session-tmp");
		mkdirSync(tmp);
		const layout: SandboxLayout = {
			readOnlyRoot: "/",
			writable: [project, tmp],
			protected: [agents],
			hide: [],
			network: false,
			tmpdir: tmp,
			cwd,
		};
		const run = (command: string) =>
			spawnSync(probe.bwrap, [...buildBwrapArgs(layout), "--", "/bin/sh", "-c", command], { encoding: "utf8" });
		const attempts = [
			"mv ../../a ../../a2",
			"mv ../b ../b2",
			"mv .agents .agents2",
			"echo x > .agents/keep.md",
			`mv ${shellQuote(project)} ${shellQuote(`${project}2`)}`,
			"echo x > $HOME/x",
			"mount -o remount,rw /",
		];
		for (const command of attempts) {
			const result = run(command);
			expect(result.status, `${command}: ${result.stdout}${result.stderr}`).to.not.equal(0);
		}
		expect(run("echo ok > here.txt && echo t > $TMPDIR/t && echo $TMPDIR").stdout.trim()).to.equal(tmp);
		expect(existsSync(join(cwd, "here.txt"))).to.equal(true);
		expect(existsSync(join(tmp, "t"))).to.equal(true);
		expect(existsSync(join(project, "a"))).to.equal(true);
		// Different mounts: a rename from $TMPDIR into the project is refused (mv copies instead).
		const rename = run(`echo r > $TMPDIR/r && python3 -c "import os; os.rename(os.environ['TMPDIR'] + '/r', 'r')"`);
		expect(rename.stderr).to.contain("Invalid cross-device link");
		expect(execFileSync("cat", [join(agents, "keep.md")], { encoding: "utf8" })).to.equal("keep\n");
	});

	it("cuts the network with network: false, and keeps it by default", function () {
		const probe = probeSandbox();
		if (!probe.available) expect.fail("bubblewrap must work here");
		const env = getEnv();
		const base = { readOnlyRoot: "/", writable: [env.projectDir], protected: [], hide: [], tmpdir: env.projectDir };
		const links = (network: boolean) =>
			spawnSync(probe.bwrap, [...buildBwrapArgs({ ...base, network }), "--", "/bin/cat", "/proc/net/dev"], {
				encoding: "utf8",
			})
				.stdout.split("\n")
				.flatMap((line) => /^\s*([^\s:]+):/.exec(line)?.[1] ?? [])
				.sort();
		expect(links(false)).to.deep.equal(["lo"]);
		expect(links(true)).to.deep.equal(readdirSync("/sys/class/net").sort());
	});

	it("quotes any text for a POSIX shell", function () {
		const text = `echo 'it''s' "$HOME" \`x\` $(y) \\ ; exit`;
		expect(execFileSync("/bin/sh", ["-c", `printf %s ${shellQuote(text)}`], { encoding: "utf8" })).to.equal(text);
	});
});
