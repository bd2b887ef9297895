// A throw-away npm registry for tests: verdaccio on 127.0.0.1 in its own process group, with its own storage
// and config under a temp folder, proxying every package it does not hold to the registry npm is configured for.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { REPO_ROOT } from "./pi-line.ts";

const VERDACCIO_BIN = join(REPO_ROOT, "node_modules", "verdaccio", "bin", "verdaccio");
/** The only package the local registry serves itself; everything else comes from the uplink. */
const LOCAL_PACKAGE = "pi-selfskills";

export interface LocalRegistry {
	/** `http://127.0.0.1:<port>/` */
	url: string;
	/** An `.npmrc` naming this registry and a token that may publish to it. */
	npmrc: string;
	/** Stops the server (its whole process group); safe to call twice. */
	stop(): Promise<void>;
}

/** Environment for an npm/pi child: no NODE_OPTIONS (the pi 1.6 run's loader hooks are not for npm). */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
	const { NODE_OPTIONS: _dropped, ...inherited } = process.env;
	return { ...inherited, ...extra };
}

/** `npm <args>` synchronously; throws with npm's output when it fails. */
export function runNpm(args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): string {
	const result = spawnSync("npm", args, {
		cwd: options.cwd,
		env: options.env ?? childEnv(),
		encoding: "utf8",
		timeout: options.timeoutMs ?? 120000,
	});
	if (result.status !== 0)
		throw new Error(
			`npm ${args.join(" ")} failed (${result.status ?? result.signal}):\n${result.stdout}\n${result.stderr}`,
		);
	return result.stdout;
}

/** The registry and CA file npm is configured for here (read at run time, so CI and a developer's machine agree). */
function readNpmUplink(): { registry: string; cafile?: string } {
	const registry = runNpm(["config", "get", "registry"], { cwd: REPO_ROOT }).trim();
	const cafile = runNpm(["config", "get", "cafile"], { cwd: REPO_ROOT }).trim();
	return { registry, cafile: cafile && cafile !== "null" && cafile !== "undefined" ? cafile : undefined };
}

function getFreePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			const address = server.address();
			const port = typeof address === "object" && address ? address.port : 0;
			server.close(() => resolve(port));
		});
	});
}

function writeConfig(root: string, port: number, uplink: string): string {
	// JSON is YAML, so verdaccio reads this as its config.yaml
	const config = {
		storage: join(root, "storage"),
		auth: { htpasswd: { file: join(root, "htpasswd"), max_users: 1 } },
		uplinks: { upstream: { url: uplink, timeout: "60s", max_fails: 5 } },
		packages: {
			// never proxied: the test must install the tarball it just published, not anything of that name upstream
			[LOCAL_PACKAGE]: { access: "$all", publish: "$authenticated" },
			"**": { access: "$all", publish: "$authenticated", proxy: "upstream" },
		},
		web: { enable: false },
		middlewares: { audit: { enabled: false } },
		listen: `127.0.0.1:${port}`,
		log: { type: "stdout", format: "pretty", level: "warn" },
	};
	const path = join(root, "config.yaml");
	writeFileSync(path, JSON.stringify(config, null, 2));
	return path;
}

async function waitUntilUp(url: string, child: ChildProcess, output: () => string): Promise<void> {
	const deadline = Date.now() + 30000;
	while (Date.now() < deadline) {
		if (child.exitCode !== null || child.signalCode !== null)
			throw new Error(`verdaccio exited (${child.exitCode ?? child.signalCode}):\n${output()}`);
		try {
			const response = await fetch(new URL("-/ping", url));
			if (response.ok) return;
		} catch {
			// not listening yet
		}
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
	throw new Error(`verdaccio did not answer on ${url} within 30 s:\n${output()}`);
}

/** A user that may publish, made the way `npm adduser` does; returns its token. */
async function addUser(url: string): Promise<string> {
	const response = await fetch(new URL("-/user/org.couchdb.user:selfskills-test", url), {
		method: "PUT",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ name: "selfskills-test", password: "selfskills-test-password" }),
	});
	const body = (await response.json()) as { token?: string };
	if (!response.ok || !body.token)
		throw new Error(`verdaccio adduser failed (${response.status}): ${JSON.stringify(body)}`);
	return body.token;
}

function stopGroup(child: ChildProcess): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve();
	const pid = child.pid;
	return new Promise((resolve) => {
		const killer = setTimeout(() => signalGroup(pid, "SIGKILL"), 5000);
		child.once("exit", () => {
			clearTimeout(killer);
			resolve();
		});
		signalGroup(pid, "SIGTERM");
	});
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
	if (pid <= 0) return;
	try {
		process.kill(-pid, signal);
	} catch {
		// the group is already gone
	}
}

/** Starts verdaccio under `root` (which must exist) on a free port; call `stop()` in an after hook. */
export async function startLocalRegistry(root: string): Promise<LocalRegistry> {
	const { registry: uplink, cafile } = readNpmUplink();
	mkdirSync(join(root, "storage"), { recursive: true });
	const port = await getFreePort();
	const configPath = writeConfig(root, port, uplink);
	const url = `http://127.0.0.1:${port}/`;
	// the uplink may sit behind a CA that npm trusts through `cafile`; verdaccio's Node must trust it too
	const env = childEnv(cafile ? { NODE_EXTRA_CA_CERTS: cafile } : {});
	const child = spawn(process.execPath, [VERDACCIO_BIN, "--config", configPath], {
		cwd: root,
		env,
		detached: true,
		stdio: ["ignore", "pipe", "pipe"],
	});
	let output = "";
	child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
	child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
	// A test run that ends without its after hook (Ctrl-C, a crash) must not leave a server behind.
	const killOnExit = (): void => signalGroup(child.pid ?? 0, "SIGKILL");
	if (child.pid !== undefined) process.once("exit", killOnExit);
	const stop = (): Promise<void> => {
		process.removeListener("exit", killOnExit);
		return stopGroup(child);
	};
	try {
		await waitUntilUp(url, child, () => output);
		const token = await addUser(url);
		const npmrc = join(root, "publish.npmrc");
		writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
		return { url, npmrc, stop };
	} catch (error) {
		await stop();
		throw error;
	}
}

/** `npm pack` of the checkout into `destDir`; returns the tarball's path. */
export function packPackage(destDir: string): string {
	const stdout = runNpm(["pack", "--json", "--pack-destination", destDir], { cwd: REPO_ROOT });
	const [entry] = JSON.parse(stdout) as Array<{ filename: string }>;
	return join(destDir, entry.filename);
}

/** Publishes a tarball to the local registry with the registry's own token. */
export function publishTarball(registry: LocalRegistry, tarball: string, cwd: string): void {
	runNpm(["publish", tarball, "--registry", registry.url, "--userconfig", registry.npmrc], { cwd });
}
