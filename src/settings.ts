// The package's settings (key `selfskills`): read from the trusted project's .pi/settings.json, then
// the global <agentDir>/settings.json; the first file holding the key wins. Every value is
// type-checked; a bad one falls back to its default and is reported, never thrown.

import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { expandHome, findProjectRoot, getPiPlaces, getRootProblem, isWithin, resolveReal } from "./paths.ts";

export interface SelfSkillsSettings {
	readonly enabled: boolean;
	readonly inject: boolean;
	readonly skillsDir: string;
	readonly backupCap: number;
	readonly patchPackages: boolean;
	readonly patchProjectAgents: boolean;
	/** Only ever read from the global settings file. */
	readonly trustedProjects: readonly string[];
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

/** Reads a settings file; a missing file is `{}`, an unreadable or malformed one is `{}` plus a problem. */
export function readSettingsFile(path: string): { json: JsonObject; problem?: string } {
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch (error) {
		if (typeof error === "object" && error !== null && "code" in error && error.code === "ENOENT") return { json: {} };
		return { json: {}, problem: `${path}: cannot read (${String(error)})` };
	}
	if (text.trim() === "") return { json: {} };
	try {
		const json: unknown = JSON.parse(text);
		return isJsonObject(json) ? { json } : { json: {}, problem: `${path}: not a JSON object` };
	} catch (error) {
		return { json: {}, problem: `${path}: invalid JSON (${error instanceof Error ? error.message : String(error)})` };
	}
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
	};
}

type Checker = (value: unknown) => boolean;
const isBool: Checker = (v) => typeof v === "boolean";
const isCap: Checker = (v) => typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= 1000;
const isPath: Checker = (v) => typeof v === "string" && v.trim() !== "" && !v.includes("\0");
const isPathList: Checker = (v) => Array.isArray(v) && v.every(isPath);

const CHECKS: Record<keyof SelfSkillsSettings, { check: Checker; expected: string }> = {
	enabled: { check: isBool, expected: "true or false" },
	inject: { check: isBool, expected: "true or false" },
	skillsDir: { check: isPath, expected: "a folder path" },
	backupCap: { check: isCap, expected: "an integer from 1 to 1000" },
	patchPackages: { check: isBool, expected: "true or false" },
	patchProjectAgents: { check: isBool, expected: "true or false" },
	trustedProjects: { check: isPathList, expected: "a list of folder paths" },
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
		else if (!rule.check(value)) problems.push(`${origin}: selfskills.${key} must be ${rule.expected}; default used`);
		else out[key] = value;
	}
	return out as unknown as SelfSkillsSettings;
}

export interface LoadSettingsOptions {
	readonly cwd: string;
	readonly agentDir: string;
	readonly trusted: boolean;
}

/** A skillsDir in pi's own places (or holding them) is never writable: reported, and the default used. */
function checkSkillsDir(skillsDir: string, origin: string, options: LoadSettingsOptions, problems: string[]): string {
	const problem = getRootProblem(getPiPlaces(options.agentDir), skillsDir);
	if (problem === undefined) return skillsDir;
	const fallback = join(options.agentDir, "skills");
	problems.push(`${origin}: selfskills.skillsDir ${problem}, where nothing may be written; ${fallback} used`);
	return fallback;
}

/** A project's skillsDir must lie inside that project (symlinks resolved), or a repository could aim writes anywhere. */
function checkProjectSkillsDir(skillsDir: string, origin: string, fallback: string, options: LoadSettingsOptions, problems: string[]): string {
	const projectRoot = findProjectRoot(options.cwd);
	if (!isWithin(resolveReal(projectRoot), resolveReal(skillsDir))) {
		problems.push(`${origin}: selfskills.skillsDir ${skillsDir} lies outside the project ${projectRoot} (a project's skillsDir must stay inside it); ${fallback} used`);
		return fallback;
	}
	return checkSkillsDir(skillsDir, origin, options, problems) === skillsDir ? skillsDir : fallback;
}

export function loadSettings(options: LoadSettingsOptions): SettingsReport {
	const problems: string[] = [];
	const base = defaults(options.agentDir);
	const globalPath = getGlobalSettingsPath(options.agentDir);
	const global = readSettingsFile(globalPath);
	if (global.problem) problems.push(global.problem);
	const globalSettings = "selfskills" in global.json ? parseBlock(global.json.selfskills, globalPath, base, problems) : base;
	let chosen = globalSettings;
	let source = "selfskills" in global.json ? globalPath : undefined;
	if (options.trusted) {
		const projectPath = getProjectSettingsPath(options.cwd);
		const project = readSettingsFile(projectPath);
		if (project.problem) problems.push(project.problem);
		if ("selfskills" in project.json) {
			chosen = parseBlock(project.json.selfskills, projectPath, base, problems);
			source = projectPath;
			if (isJsonObject(project.json.selfskills) && "trustedProjects" in project.json.selfskills) {
				problems.push(`${projectPath}: selfskills.trustedProjects is read from the global settings only; ignored`);
			}
		}
	}
	const fromProject = source !== globalPath && source !== undefined;
	const globalSkillsDir = checkSkillsDir(resolve(options.agentDir, expandHome(globalSettings.skillsDir)), globalPath, options, problems);
	const settings: SelfSkillsSettings = {
		...chosen,
		skillsDir: !fromProject ? globalSkillsDir : chosen.skillsDir === base.skillsDir ? base.skillsDir : checkProjectSkillsDir(resolve(options.cwd, ".pi", expandHome(chosen.skillsDir)), source ?? "", globalSkillsDir, options, problems),
		trustedProjects: globalSettings.trustedProjects.map((p) => resolve(expandHome(p))),
	};
	return { settings, source, problems };
}
