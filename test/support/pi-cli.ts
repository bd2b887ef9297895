// Runs the REAL pi CLI of the active line as a child process in a TempEnv: `pi install <dir>`, print mode
// with the faux model from test/fixtures/faux-cli-ext.ts, and RPC mode (JSONL on stdin/stdout).
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CapturedCall, FauxStep } from "./faux-script.ts";
import { getPiLineInfo, REPO_ROOT } from "./pi-line.ts";
import type { TempEnv } from "./temp-env.ts";

export const FAUX_CLI_EXTENSION = join(REPO_ROOT, "test", "fixtures", "faux-cli-ext.ts");
/** Loads the faux provider and selects it; append your own flags after these. */
export const FAUX_CLI_ARGS = ["-e", FAUX_CLI_EXTENSION, "--provider", "faux", "--model", "faux-1"];

export interface PiCliOptions {
	env: TempEnv;
	/** Written to the child's stdin, which is then closed. */
	input?: string;
	/** Extra environment for the child (HOME, PI_CODING_AGENT_DIR and PI_OFFLINE come from `env`). */
	extraEnv?: Record<string, string>;
	timeoutMs?: number;
	/** Another pi's CLI script (a throw-away install); the active line's by default. */
	cliPath?: string;
}

export interface PiCliResult {
	stdout: string;
	stderr: string;
	exitCode: number | null;
}

/** `node <cli.js> ...args` with the active line's node, cwd = the project dir, and no inherited NODE_OPTIONS. */
export function runPiCli(args: string[], options: PiCliOptions): Promise<PiCliResult> {
	const { cliPath, nodeBinary } = getPiLineInfo();
	const child = spawn(nodeBinary, [options.cliPath ?? cliPath, ...args], {
		cwd: options.env.projectDir,
		env: createChildEnv(options),
		stdio: ["pipe", "pipe", "pipe"],
	});
	let stdout = "";
	let stderr = "";
	child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
	child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
	child.stdin.end(options.input ?? "");
	const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30000);
	return new Promise((resolve, reject) => {
		child.on("error", reject);
		child.on("close", (exitCode) => {
			clearTimeout(timer);
			resolve({ stdout, stderr, exitCode });
		});
	});
}

function createChildEnv(options: PiCliOptions): NodeJS.ProcessEnv {
	const { NODE_OPTIONS: _dropped, ...inherited } = process.env;
	const { agentDir, home } = options.env;
	return { ...inherited, HOME: home, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", ...options.extraEnv };
}

/** `pi install <packageDir>` into the temp agent dir; throws with the CLI output when it fails. */
export async function piInstall(env: TempEnv, packageDir: string): Promise<PiCliResult> {
	const result = await runPiCli(["install", packageDir], { env });
	if (result.exitCode !== 0)
		throw new Error(`pi install failed (${result.exitCode}):\n${result.stdout}\n${result.stderr}`);
	return result;
}

export interface PiPrintOptions {
	env: TempEnv;
	prompt: string;
	steps?: FauxStep[];
	/** Flags placed before the prompt, e.g. `["--approve"]` (see getProjectTrustCliArgs). */
	extraArgs?: string[];
	/** Kill the run after this long (default 30 s). */
	timeoutMs?: number;
	/** Another pi's CLI script (a throw-away install); the active line's by default. */
	cliPath?: string;
}

export interface PiPrintResult extends PiCliResult {
	/** What the faux model was sent on each call. */
	calls: CapturedCall[];
}

/** `pi -p --no-session <faux flags> <extraArgs> "<prompt>"` with the steps as FAUX_SCRIPT. */
export async function runPiPrint(options: PiPrintOptions): Promise<PiPrintResult> {
	const args = ["-p", "--no-session", ...FAUX_CLI_ARGS, ...(options.extraArgs ?? []), options.prompt];
	const { extraEnv, capturePath } = writeFauxFiles(options.env, options.steps ?? []);
	const { env, timeoutMs, cliPath } = options;
	const result = await runPiCli(args, { env, extraEnv, timeoutMs, cliPath });
	return { ...result, calls: readCaptures(capturePath) };
}

/** Fresh FAUX_SCRIPT / FAUX_CAPTURE files for one CLI run. */
function writeFauxFiles(env: TempEnv, steps: FauxStep[]): { extraEnv: Record<string, string>; capturePath: string } {
	const stamp = `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
	const scriptPath = join(env.root, `faux-script-${stamp}.json`);
	const capturePath = join(env.root, `faux-capture-${stamp}.jsonl`);
	writeFileSync(scriptPath, JSON.stringify(steps));
	return { extraEnv: { FAUX_SCRIPT: scriptPath, FAUX_CAPTURE: capturePath }, capturePath };
}

function readCaptures(capturePath: string): CapturedCall[] {
	if (!existsSync(capturePath)) return [];
	return readFileSync(capturePath, "utf8")
		.split("\n")
		.filter(Boolean)
		.map((line) => JSON.parse(line) as CapturedCall);
}

export interface RpcCommand {
	id: string;
	type: string;
	[key: string]: unknown;
}

export interface RpcLine {
	type?: string;
	id?: string;
	command?: string;
	success?: boolean;
	data?: unknown;
	[key: string]: unknown;
}

export interface PiRpcResult extends PiCliResult {
	/** Every JSON line pi wrote to stdout (responses, events, extension_ui_request). */
	lines: RpcLine[];
	/** `type:"response"` lines by command id. */
	responses: Map<string, RpcLine>;
	calls: CapturedCall[];
}

/** `pi --mode rpc --no-session <faux flags>` fed the commands as JSONL; stdin closes after the last one. */
export async function runPiRpc(options: {
	env: TempEnv;
	commands: RpcCommand[];
	steps?: FauxStep[];
	extraArgs?: string[];
}): Promise<PiRpcResult> {
	const args = ["--mode", "rpc", "--no-session", ...FAUX_CLI_ARGS, ...(options.extraArgs ?? [])];
	const { extraEnv, capturePath } = writeFauxFiles(options.env, options.steps ?? []);
	const input = `${options.commands.map((command) => JSON.stringify(command)).join("\n")}\n`;
	const result = await runPiCli(args, { env: options.env, extraEnv, input });
	const lines = result.stdout.split("\n").flatMap(parseJsonLine);
	const responses = new Map(
		lines
			.filter((line) => line.type === "response" && typeof line.id === "string")
			.map((line) => [String(line.id), line]),
	);
	return { ...result, lines, responses, calls: readCaptures(capturePath) };
}

function parseJsonLine(line: string): RpcLine[] {
	if (!line.trim().startsWith("{")) return [];
	try {
		return [JSON.parse(line) as RpcLine];
	} catch {
		return [];
	}
}

export interface RpcCommandInfo {
	name: string;
	description?: string;
	source?: string;
}

/** Slash commands pi reports over RPC `get_commands` (extension commands, skills, prompt templates). */
export async function getRpcCommands(env: TempEnv): Promise<RpcCommandInfo[]> {
	const result = await runPiRpc({ env, commands: [{ id: "commands", type: "get_commands" }] });
	const data = result.responses.get("commands")?.data as { commands?: RpcCommandInfo[] } | undefined;
	if (!data?.commands) throw new Error(`get_commands failed:\n${result.stdout}\n${result.stderr}`);
	return data.commands;
}
