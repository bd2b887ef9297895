// The package's settings (key `selfskills`): read from the trusted project's .pi/settings.json, then
// the global <agentDir>/settings.json; the first file holding the key wins. Every value is
// type-checked; a bad one is reported, never thrown, and the person's control fails closed: a bad
// approval is "propose", a bad pin entry is skipped alone, and a file that stops parsing keeps the
// last valid settings read from it in this process.

import { join, resolve } from "node:path";
import { type FsOps, realFs } from "../base/fs-ops.ts";
import {
	expandHome,
	findProjectRoot,
	getHomeDir,
	getPiPlaces,
	getRootProblem,
	isWithin,
	resolveReal,
	type PiPlaces,
} from "../base/paths.ts";

export interface SelfSkillsSettings {
	readonly enabled: boolean;
	readonly inject: boolean;
	readonly skillsDir: string;
	readonly backupCap: number;
	readonly patchPackages: boolean;
	readonly patchProjectAgents: boolean;
	/** Only ever read from the global settings file. */
	readonly trustedProjects: readonly string[];
	/** Who decides that a change lands; a trusted project may only make it stricter. */
	readonly approval: ApprovalSetting;
	/**
	 * Skill names (a trailing `*` matches a prefix) the agent may read but never change; a project's
	 * add to the global ones.
	 */
	readonly pinned: readonly string[];
	/** What pi's own edit, write and bash do to a skill file; a trusted project may only make it stricter. */
	readonly guardBuiltins: GuardMode;
	/** What a change that adds risky lines needs; a trusted project may only make it stricter. */
	readonly contentReview: ContentReviewMode;
	/** The near-duplicate score from which `create` refuses a new skill; false: no check. */
	readonly similarity: number | false;
	/** "commit": a landed change inside a git work tree becomes one commit there. */
	readonly git: GitMode;
	/** Only ever read from the global settings file: what else pi's tools may write while a control is on. */
	readonly sandbox: SandboxSettings;
}

/** `selfskills.sandbox`: what pi's tools may also write while a control is on; whether bash keeps the network. */
export interface SandboxSettings {
	/** Real paths, `~` expanded; `/`, the home folder and its ancestors are refused (reported). */
	readonly writable: readonly string[];
	readonly network: boolean;
}

export type ApprovalMode = "auto" | "ask" | "propose";
/** One mode for every skill, or one for skills this package created ("own") and one for the rest. */
export type ApprovalSetting = ApprovalMode | { readonly own: ApprovalMode; readonly others: ApprovalMode };
export type GuardMode = "off" | "backup" | "block";
export type ContentReviewMode = "off" | "escalate" | "refuse";
export type GitMode = "off" | "commit";

/** The near-duplicate threshold when `selfskills.similarity` is not set. */
export const DEFAULT_SIMILARITY = 0.37;

/** Least strict first: a project may move a value to the right, never to the left. */
const APPROVAL_ORDER: readonly ApprovalMode[] = ["auto", "ask", "propose"];
const GUARD_ORDER: readonly GuardMode[] = ["off", "backup", "block"];
const REVIEW_ORDER: readonly ContentReviewMode[] = ["off", "escalate", "refuse"];
const GIT_MODES: readonly GitMode[] = ["off", "commit"];

const stricter = <T>(order: readonly T[], a: T, b: T): T => (order.indexOf(a) >= order.indexOf(b) ? a : b);

/** The mode that applies to a skill of this origin. */
export function approvalFor(setting: ApprovalSetting, origin: "own" | "others"): ApprovalMode {
	return typeof setting === "string" ? setting : setting[origin];
}

/** The stricter of two approval settings, per origin (a trusted project never loosens the global one). */
export function stricterApproval(global: ApprovalSetting, project: ApprovalSetting): ApprovalSetting {
	const own = stricter(APPROVAL_ORDER, approvalFor(global, "own"), approvalFor(project, "own"));
	const others = stricter(APPROVAL_ORDER, approvalFor(global, "others"), approvalFor(project, "others"));
	return own === others ? own : { own, others };
}

/** The pin that holds `name`: the name itself, or a listed prefix ending in `*`; undefined when none does. */
export function findPin(pinned: readonly string[], name: string): string | undefined {
	return pinned.find((pin) => (pin.endsWith("*") ? name.startsWith(pin.slice(0, -1)) : name === pin));
}

/**
 * The approval a change to a skill needs, or undefined when it may land at once. `origin` is asked
 * only when some origin needs more than "auto" (it reads the record of what the package created).
 */
export function requiredApproval(
	setting: ApprovalSetting,
	origin: () => "own" | "others",
): { mode: ApprovalMode; origin: "own" | "others" } | undefined {
	if (setting === "auto") return undefined;
	const kind = origin();
	const mode = approvalFor(setting, kind);
	return mode === "auto" ? undefined : { mode, origin: kind };
}

/**
 * Whether the person's control is on: some origin needs more than "auto", a pin holds, or risky
 * content is refused. While it is, the protected set is out of reach of pi's edit, write and bash.
 */
export function controlIsOn(settings: Pick<SelfSkillsSettings, "approval" | "pinned" | "contentReview">): boolean {
	const { approval } = settings;
	const needsMore = approvalFor(approval, "own") !== "auto" || approvalFor(approval, "others") !== "auto";
	return needsMore || settings.pinned.length > 0 || settings.contentReview === "refuse";
}

export interface SettingsReport {
	readonly settings: SelfSkillsSettings;
	/** The file the `selfskills` key came from, or undefined when defaults apply. */
	readonly source: string | undefined;
	readonly problems: readonly string[];
}

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function getGlobalSettingsPath(agentDir: string): string {
	return join(agentDir, "settings.json");
}

export function getProjectSettingsPath(cwd: string): string {
	return join(cwd, ".pi", "settings.json");
}

/**
 * Reads a settings file; a missing file is `{}`, an unreadable or malformed one is `{}` plus a
 * problem. Through `fs` (regular files only in production: a FIFO named settings.json is a problem,
 * never a read that blocks pi).
 */
export function readSettingsFile(path: string, fs: FsOps = realFs): { json: JsonObject; problem?: string } {
	let text: string;
	try {
		text = fs.readFile(path).toString("utf8");
	} catch (error) {
		if (typeof error === "object" && error !== null && "code" in error && error.code === "ENOENT")
			return { json: {} };
		return lastValid(path, `cannot read (${String(error)})`);
	}
	if (text.trim() === "") return lastValidSeen.has(path) ? lastValid(path, "empty") : { json: {} };
	try {
		const json: unknown = JSON.parse(text);
		if (!isJsonObject(json)) return lastValid(path, "not a JSON object");
		lastValidSeen.set(path, json);
		return { json };
	} catch (error) {
		return lastValid(path, `invalid JSON (${error instanceof Error ? error.message : String(error)})`);
	}
}

const LAST_VALID = Symbol.for("pi-selfskills.lastValidSettings");

/**
 * The last settings each file held that parsed, in this process: a file that stops parsing keeps them.
 * One map on globalThis, since the start-up half (dist/start.ts) carries its own copy of this module.
 */
const lastValidSeen = processWideMap();

function processWideMap(): Map<string, JsonObject> {
	const shared = globalThis as { [LAST_VALID]?: Map<string, JsonObject> };
	shared[LAST_VALID] ??= new Map();
	return shared[LAST_VALID];
}

/** A settings file that does not parse now: the last valid settings read from it hold, reported. */
function lastValid(path: string, problem: string): { json: JsonObject; problem: string } {
	const kept = lastValidSeen.get(path);
	return kept
		? { json: kept, problem: `${path}: ${problem}; the last valid settings read from it are kept (fails closed)` }
		: { json: {}, problem: `${path}: ${problem}` };
}

function defaults(agentDir: string): SelfSkillsSettings {
	return {
		enabled: true,
		inject: true,
		skillsDir: join(agentDir, "skills"),
		backupCap: 10,
		patchPackages: true,
		patchProjectAgents: true,
		trustedProjects: [],
		approval: "auto",
		pinned: [],
		guardBuiltins: "backup",
		contentReview: "escalate",
		similarity: DEFAULT_SIMILARITY,
		git: "off",
		sandbox: { writable: [], network: true },
	};
}

type Checker = (value: unknown) => boolean;
const isBool: Checker = (v) => typeof v === "boolean";
const isCap: Checker = (v) => typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= 1000;
const isPath: Checker = (v) => typeof v === "string" && v.trim() !== "" && !v.includes("\0");
const isPathList: Checker = (v) => Array.isArray(v) && v.every(isPath);
const isMode = (v: unknown): v is ApprovalMode =>
	typeof v === "string" && (APPROVAL_ORDER as readonly string[]).includes(v);
const isApproval: Checker = (v) =>
	isMode(v) || (isJsonObject(v) && Object.keys(v).sort().join() === "others,own" && isMode(v.own) && isMode(v.others));
/** A pin entry: a skill name, or a prefix ending in `*` (`*` alone pins every skill); no spaces or controls. */
const PIN_PATTERN = /^[^\s*\u0000-\u001f\u007f-\u009f/\\]*\*?$/u;
const isPinList: Checker = (v) => Array.isArray(v) && v.every((p) => pinProblem(p) === undefined);

/** Why `entry` is no pin entry the settings accept, or undefined when it is one. */
export function pinProblem(entry: unknown): string | undefined {
	if (typeof entry !== "string") return "not text";
	if (entry === "") return "empty";
	if (!PIN_PATTERN.test(entry))
		return "a pin is a skill name or a prefix ending in * (no spaces, slashes, control characters or inner *)";
	return undefined;
}
const isGuard: Checker = (v) => typeof v === "string" && (GUARD_ORDER as readonly string[]).includes(v);
const isReview: Checker = (v) => typeof v === "string" && (REVIEW_ORDER as readonly string[]).includes(v);
const isSimilarity: Checker = (v) => v === false || (typeof v === "number" && v > 0 && v <= 1);
const isGit: Checker = (v) => typeof v === "string" && (GIT_MODES as readonly string[]).includes(v);
const isSandbox: Checker = (v) =>
	isJsonObject(v) &&
	Object.keys(v).every((k) => k === "writable" || k === "network") &&
	(v.writable === undefined || isPathList(v.writable)) &&
	(v.network === undefined || isBool(v.network));

const CHECKS: Record<keyof SelfSkillsSettings, { check: Checker; expected: string }> = {
	enabled: { check: isBool, expected: "true or false" },
	inject: { check: isBool, expected: "true or false" },
	skillsDir: { check: isPath, expected: "a folder path" },
	backupCap: { check: isCap, expected: "an integer from 1 to 1000" },
	patchPackages: { check: isBool, expected: "true or false" },
	patchProjectAgents: { check: isBool, expected: "true or false" },
	trustedProjects: { check: isPathList, expected: "a list of folder paths" },
	approval: { check: isApproval, expected: '"auto", "ask", "propose" or { "own": mode, "others": mode }' },
	pinned: {
		check: isPinList,
		expected: 'a list of skill names (a trailing "*" matches a prefix; "*" alone pins every skill)',
	},
	guardBuiltins: { check: isGuard, expected: '"block", "backup" or "off"' },
	contentReview: { check: isReview, expected: '"escalate", "refuse" or "off"' },
	similarity: { check: isSimilarity, expected: "a number above 0 and at most 1, or false" },
	git: { check: isGit, expected: '"commit" or "off"' },
	sandbox: { check: isSandbox, expected: '{ "writable": [folder paths], "network": true or false }' },
};

function parseBlock(block: unknown, origin: string, base: SelfSkillsSettings, problems: string[]): SelfSkillsSettings {
	if (!isJsonObject(block)) {
		problems.push(`${origin}: "selfskills" must be an object; defaults used`);
		return base;
	}
	const out: Record<string, unknown> = { ...base };
	for (const [key, value] of Object.entries(block)) {
		const rule = CHECKS[key as keyof SelfSkillsSettings];
		if (!rule) problems.push(`${origin}: unknown key selfskills.${key} ignored`);
		else if (key === "sandbox" && rule.check(value))
			out.sandbox = sandboxSettings(value as JsonObject, origin, problems);
		else if (rule.check(value)) out[key] = value;
		else if (key === "approval") out.approval = closedApproval(value, `${origin}: selfskills.approval`, problems);
		else if (key === "pinned") out.pinned = validPins(value, `${origin}: selfskills.pinned`, problems);
		else problems.push(`${origin}: selfskills.${key} must be ${rule.expected}; default used`);
	}
	return out as unknown as SelfSkillsSettings;
}

/**
 * `selfskills.sandbox` with each writable folder `~`-expanded and resolved; the filesystem root, the
 * home folder and its ancestors would leave nothing read-only: each is reported and left out.
 */
function sandboxSettings(block: JsonObject, origin: string, problems: string[]): SandboxSettings {
	const home = resolveReal(getHomeDir());
	const writable: string[] = [];
	for (const entry of (block.writable ?? []) as string[]) {
		const real = resolveReal(resolve(expandHome(entry)));
		if (!isWithin(real, home)) {
			writable.push(real);
			continue;
		}
		const what = real === home ? "the home folder" : real === "/" ? "the filesystem root" : "above the home folder";
		problems.push(
			`${origin}: selfskills.sandbox.writable entry ${JSON.stringify(entry)} is ${what}, which is never ` +
				"writable while a control is on; left out",
		);
	}
	return { writable, network: block.network !== false };
}

/**
 * An approval value that is not valid, failing closed: "propose" for every origin it may govern; in
 * `{ own, others }` a missing or invalid side is "propose" and a valid one holds.
 */
function closedApproval(value: unknown, where: string, problems: string[]): ApprovalSetting {
	const expected = CHECKS.approval.expected;
	if (!isJsonObject(value)) {
		problems.push(`${where} must be ${expected}, not ${JSON.stringify(value)}; "propose" used (fails closed)`);
		return "propose";
	}
	const extra = Object.keys(value).filter((k) => k !== "own" && k !== "others");
	if (extra.length > 0) problems.push(`${where}: unknown key(s) ${extra.join(", ")} ignored`);
	const side = (origin: "own" | "others"): ApprovalMode => {
		if (isMode(value[origin])) return value[origin];
		const found = origin in value ? `is ${JSON.stringify(value[origin])}` : "is missing";
		const governs = origin === "own" ? "skills it created" : "other skills";
		problems.push(
			`${where}.${origin} ${found}, not "auto", "ask" or "propose"; "propose" used for ${governs} (fails closed)`,
		);
		return "propose";
	};
	const own = side("own");
	const others = side("others");
	return own === others ? own : { own, others };
}

/** The valid entries of a pin list; each invalid one is reported and skipped, the others hold. */
function validPins(value: unknown, where: string, problems: string[]): string[] {
	const entries = Array.isArray(value) ? value : [value];
	if (!Array.isArray(value)) problems.push(`${where} must be a list; taken as the one entry ${JSON.stringify(value)}`);
	return entries.flatMap((entry) => {
		const problem = pinProblem(entry);
		if (problem === undefined) return [entry as string];
		problems.push(`${where}: entry ${JSON.stringify(entry)} skipped (${problem}); the other pins hold`);
		return [];
	});
}

export interface LoadSettingsOptions {
	readonly cwd: string;
	readonly agentDir: string;
	readonly trusted: boolean;
	/** Where the settings files are read and paths resolved (default realFs; tests inject faults). */
	readonly fs?: FsOps;
	/** pi's places, when the caller resolves them once for the whole call (default: resolved here, once). */
	readonly places?: () => PiPlaces;
}

/** pi's places, resolved once for every skillsDir one reading of the settings checks. */
type PlacesOnce = () => PiPlaces;

/** A skillsDir in pi's own places (or holding them) is never writable: reported, and the default used. */
function checkSkillsDir(
	skillsDir: string,
	origin: string,
	options: LoadSettingsOptions,
	places: PlacesOnce,
	problems: string[],
): string {
	const problem = getRootProblem(places(), skillsDir, options.fs ?? realFs);
	if (problem === undefined) return skillsDir;
	const fallback = join(options.agentDir, "skills");
	problems.push(`${origin}: selfskills.skillsDir ${problem}, where nothing may be written; ${fallback} used`);
	return fallback;
}

/**
 * A project's skillsDir must lie inside that project (symlinks resolved), or a repository could aim
 * writes anywhere.
 */
function checkProjectSkillsDir(
	skillsDir: string,
	origin: string,
	fallback: string,
	options: LoadSettingsOptions,
	places: PlacesOnce,
	problems: string[],
): string {
	const fs = options.fs ?? realFs;
	const projectRoot = findProjectRoot(options.cwd, fs);
	if (!isWithin(resolveReal(projectRoot, fs), resolveReal(skillsDir, fs))) {
		problems.push(
			`${origin}: selfskills.skillsDir ${skillsDir} lies outside the project ${projectRoot} ` +
				`(a project's skillsDir must stay inside it); ${fallback} used`,
		);
		return fallback;
	}
	return checkSkillsDir(skillsDir, origin, options, places, problems) === skillsDir ? skillsDir : fallback;
}

/**
 * A trusted project's say over who decides: it may make approval and the side-door guard stricter
 * than the global settings, never looser, and its pins add to the global ones.
 */
function humanControlOfProject(
	global: SelfSkillsSettings,
	project: SelfSkillsSettings,
	origin: string,
	problems: string[],
): Pick<SelfSkillsSettings, "approval" | "pinned" | "guardBuiltins" | "contentReview"> {
	// A key the project block leaves out holds the default; only a value it chose is reported.
	const approval = stricterApproval(global.approval, project.approval);
	const asked = stricterApproval(project.approval, project.approval);
	if (project.approval !== "auto" && JSON.stringify(approval) !== JSON.stringify(asked)) {
		problems.push(
			`${origin}: selfskills.approval may only be stricter than the global one; ${JSON.stringify(approval)} used`,
		);
	}
	const guardBuiltins = stricter(GUARD_ORDER, global.guardBuiltins, project.guardBuiltins);
	if (project.guardBuiltins !== "backup" && guardBuiltins !== project.guardBuiltins) {
		problems.push(
			`${origin}: selfskills.guardBuiltins may only be stricter than the global one; "${guardBuiltins}" used`,
		);
	}
	const contentReview = stricter(REVIEW_ORDER, global.contentReview, project.contentReview);
	if (project.contentReview !== "escalate" && contentReview !== project.contentReview) {
		problems.push(
			`${origin}: selfskills.contentReview may only be stricter than the global one; "${contentReview}" used`,
		);
	}
	return { approval, guardBuiltins, contentReview, pinned: [...new Set([...global.pinned, ...project.pinned])] };
}

export function loadSettings(options: LoadSettingsOptions): SettingsReport {
	return readSettings(options)(options.trusted);
}

/**
 * The settings as an untrusted or a trusted project sees them, from one read of the global file and
 * one resolution of pi's places (a call asks for the untrusted view, then, once trust is known, for
 * the trusted one).
 */
export function readSettings(options: Omit<LoadSettingsOptions, "trusted">): (trusted: boolean) => SettingsReport {
	let places: PiPlaces | undefined;
	const placesOnce: PlacesOnce =
		options.places ?? (() => (places ??= getPiPlaces(options.agentDir, options.fs ?? realFs)));
	const globalProblems: string[] = [];
	const base = defaults(options.agentDir);
	const globalPath = getGlobalSettingsPath(options.agentDir);
	const global = readSettingsFile(globalPath, options.fs);
	if (global.problem) globalProblems.push(global.problem);
	const globalSettings =
		"selfskills" in global.json ? parseBlock(global.json.selfskills, globalPath, base, globalProblems) : base;
	const skillsDirProblems: string[] = [];
	const globalSkillsDir = checkSkillsDir(
		resolve(options.agentDir, expandHome(globalSettings.skillsDir)),
		globalPath,
		{ ...options, trusted: false },
		placesOnce,
		skillsDirProblems,
	);
	return (trusted) => {
		const problems = [...globalProblems];
		let chosen = globalSettings;
		let source = "selfskills" in global.json ? globalPath : undefined;
		if (trusted) {
			const projectPath = getProjectSettingsPath(options.cwd);
			const project = readSettingsFile(projectPath, options.fs);
			if (project.problem) problems.push(project.problem);
			if ("selfskills" in project.json) {
				chosen = parseBlock(project.json.selfskills, projectPath, base, problems);
				source = projectPath;
				for (const key of ["trustedProjects", "sandbox"]) {
					if (isJsonObject(project.json.selfskills) && key in project.json.selfskills)
						problems.push(`${projectPath}: selfskills.${key} is read from the global settings only; ignored`);
				}
			}
		}
		problems.push(...skillsDirProblems);
		const fromProject = source !== globalPath && source !== undefined;
		const settings: SelfSkillsSettings = {
			...chosen,
			skillsDir: !fromProject
				? globalSkillsDir
				: chosen.skillsDir === base.skillsDir
					? base.skillsDir
					: checkProjectSkillsDir(
							resolve(options.cwd, ".pi", expandHome(chosen.skillsDir)),
							source ?? "",
							globalSkillsDir,
							{ ...options, trusted },
							placesOnce,
							problems,
						),
			trustedProjects: globalSettings.trustedProjects.map((p) => resolve(expandHome(p))),
			sandbox: globalSettings.sandbox,
			...(fromProject ? humanControlOfProject(globalSettings, chosen, source ?? "", problems) : {}),
		};
		return { settings, source, problems };
	};
}
