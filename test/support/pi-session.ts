// An in-process pi session that loads a package exactly like a user install (pi-sdk.md §8): the package is
// added with pi's own DefaultPackageManager.installAndPersist (what `pi install` calls), loaded by
// DefaultResourceLoader from settings.packages, and driven by a scripted faux model on either pi line.
import { readFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
	getApiProvider,
	registerFauxProvider,
	type Context,
	type TextContent,
	type ImageContent,
} from "@mariozechner/pi-ai";
import {
	createAgentSession,
	DefaultPackageManager,
	DefaultResourceLoader,
	SessionManager,
	SettingsManager,
	type AgentSession,
	type ExtensionAPI,
	type ExtensionCommandContextActions,
	type ExtensionError,
	type ExtensionUIContext,
} from "@mariozechner/pi-coding-agent";
import { captureContext, stepToAssistantMessage, type CapturedCall, type FauxStep } from "./faux-script.ts";
import type { TempEnv } from "./temp-env.ts";

/** Scripted answers for dialogs; a function sees the dialog's title. Defaults: confirm false, others undefined. */
export interface UiScript {
	confirm?: boolean | ((title: string, message: string) => boolean);
	select?: string | ((title: string, options: string[]) => string | undefined);
	input?: string | ((title: string) => string | undefined);
	/** ui.onTerminalInput: the extension's key handler (a test presses keys through it); default: ignored. */
	onTerminalInput?: (handler: (data: string) => unknown) => () => void;
	/** ui.setStatus, observed; default: ignored. */
	setStatus?: (key: string, text: string | undefined) => void;
}

export interface PiSessionOptions {
	env: TempEnv;
	/** Package installed into the global settings the way `pi install <dir>` does it. */
	packageDir?: string;
	/** Merged into `<agentDir>/settings.json` before the package is installed. */
	settings?: Record<string, unknown>;
	/** `false` binds no UI (print-mode behaviour: `ctx.hasUI === false`, notify is a no-op). */
	ui?: UiScript | false;
	/** pi 1.6 project trust for this session (SDK default: trusted). Ignored by pi 0.73, which has no trust. */
	projectTrusted?: boolean;
	/** Tool allowlist passed to createAgentSession (include the extension's tools). */
	tools?: string[];
}

export interface Notification {
	message: string;
	type?: "info" | "warning" | "error";
}

export interface ToolResultView {
	toolName: string;
	toolCallId: string;
	isError: boolean;
	content: (TextContent | ImageContent)[];
	details: unknown;
	/** All text blocks joined with newlines. */
	text: string;
}

export interface RunResult {
	toolResults: ToolResultView[];
	calls: CapturedCall[];
	/** Steps the model never asked for (a run that stopped early leaves some). */
	pendingSteps: number;
}

export interface PiSession {
	session: AgentSession;
	notifications: Notification[];
	/** Every model call of the session, in order. */
	calls: CapturedCall[];
	/** Extension errors reported through bindExtensions' onError, as `path event: message`. */
	extensionErrors: string[];
	run(prompt: string, steps: FauxStep[]): Promise<RunResult>;
	/** Runs a slash command through `session.prompt` (no model call). */
	runCommand(text: string): Promise<void>;
	toolResults(): ToolResultView[];
	dispose(): void;
}

const FAUX_MODEL = {
	id: "faux-1",
	name: "Faux",
	reasoning: false,
	input: ["text" as const],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 128000,
	maxTokens: 16384,
};

export async function createPiSession(options: PiSessionOptions): Promise<PiSession> {
	const { agentDir, projectDir: cwd } = options.env;
	if (options.settings) mergeGlobalSettings(agentDir, options.settings);
	const settingsManager = createSettingsManager(cwd, agentDir, options.projectTrusted ?? true);
	if (options.packageDir) await installPackage(options.packageDir, { cwd, agentDir, settingsManager });
	const calls: CapturedCall[] = [];
	const faux = registerFauxProvider({ provider: "faux", models: [{ id: "faux-1" }] });
	const resourceLoader = new DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager,
		extensionFactories: [createFauxProviderExtension(faux.api)],
	});
	await resourceLoader.reload();
	const { session } = await createAgentSession({
		cwd,
		agentDir,
		model: faux.getModel(),
		resourceLoader,
		settingsManager,
		sessionManager: SessionManager.inMemory(cwd),
		tools: options.tools,
	});
	const notifications: Notification[] = [];
	const extensionErrors: string[] = [];
	await session.bindExtensions({
		uiContext: options.ui === false ? undefined : createCapturingUi(options.ui ?? {}, notifications),
		commandContextActions: createCommandActions(session),
		onError: (error: ExtensionError) => extensionErrors.push(`${error.extensionPath} ${error.event}: ${error.error}`),
	});
	const toolResults = (): ToolResultView[] => session.messages.flatMap(toToolResultView);
	const run = async (prompt: string, steps: FauxStep[]): Promise<RunResult> => {
		const firstCall = calls.length;
		const firstResult = toolResults().length;
		faux.setResponses(
			steps.map((step) => (context: Context) => {
				calls.push(captureContext(context));
				return stepToAssistantMessage(step);
			}),
		);
		await session.prompt(prompt);
		return {
			toolResults: toolResults().slice(firstResult),
			calls: calls.slice(firstCall),
			pendingSteps: faux.getPendingResponseCount(),
		};
	};
	const runCommand = async (text: string): Promise<void> => {
		await session.prompt(text);
	};
	const dispose = (): void => {
		// As pi's own runtime does on quit: extensions end their session (the package removes its
		// session temp folder and lets go of what it holds open). The handlers start now; none awaits.
		session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" }).catch(() => undefined);
		session.dispose();
		faux.unregister();
	};
	return { session, notifications, calls, extensionErrors, run, runCommand, toolResults, dispose };
}

/** `SettingsManager.create(cwd, agentDir, { projectTrusted })`; pi 0.73 takes (and needs) only two arguments. */
function createSettingsManager(cwd: string, agentDir: string, projectTrusted: boolean): SettingsManager {
	const create = SettingsManager.create as (
		cwd: string,
		agentDir: string,
		options?: { projectTrusted?: boolean },
	) => SettingsManager;
	return create(cwd, agentDir, { projectTrusted });
}

/** Same call `pi install <dir>` makes: stores the path relative to agentDir in `<agentDir>/settings.json`. */
async function installPackage(
	packageDir: string,
	context: { cwd: string; agentDir: string; settingsManager: SettingsManager },
): Promise<void> {
	const packageManager = new DefaultPackageManager(context);
	await packageManager.installAndPersist(packageDir, { local: false });
	await context.settingsManager.flush();
}

function mergeGlobalSettings(agentDir: string, settings: Record<string, unknown>): void {
	const path = join(agentDir, "settings.json");
	const current = existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>) : {};
	writeFileSync(path, `${JSON.stringify({ ...current, ...settings }, null, 2)}\n`);
}

/** Registered through an inline extension so it survives `reload()`, which resets host-side api providers. */
function createFauxProviderExtension(api: string): (pi: ExtensionAPI) => void {
	const provider = getApiProvider(api);
	if (!provider) throw new Error(`faux api ${api} is not registered`);
	return (pi) =>
		pi.registerProvider("faux", {
			api,
			baseUrl: "http://localhost:0",
			apiKey: "faux-key",
			streamSimple: provider.streamSimple,
			models: [FAUX_MODEL],
		});
}

function createCommandActions(session: AgentSession): ExtensionCommandContextActions {
	return {
		waitForIdle: () => session.agent.waitForIdle(),
		newSession: async () => ({ cancelled: true }),
		fork: async () => ({ cancelled: true }),
		navigateTree: async () => ({ cancelled: true }),
		switchSession: async () => ({ cancelled: true }),
		reload: () => session.reload(),
	};
}

/** UI methods answered with a no-op; pi 1.6 spreads the context (`{...ui}`), so they must be own properties. */
const NO_OP_UI_METHODS = [
	"onTerminalInput",
	"setStatus",
	"setWorkingMessage",
	"setWorkingVisible",
	"setWorkingIndicator",
	"setHiddenThinkingLabel",
	"setWidget",
	"setFooter",
	"setHeader",
	"setTitle",
	"pasteToEditor",
	"setEditorText",
	"addAutocompleteProvider",
	"setEditorComponent",
	"getEditorComponent",
	"getTheme",
	"setTheme",
	"getToolsExpanded",
	"setToolsExpanded",
];

/** A UI context that records notify() and answers dialogs from the script; everything else is a no-op. */
function createCapturingUi(script: UiScript, notifications: Notification[]): ExtensionUIContext {
	const answers: Record<string, unknown> = {
		...Object.fromEntries(NO_OP_UI_METHODS.map((name) => [name, () => undefined])),
		notify: (message: string, type?: Notification["type"]) => notifications.push({ message, type }),
		confirm: async (title: string, message: string) =>
			typeof script.confirm === "function" ? script.confirm(title, message) : (script.confirm ?? false),
		select: async (title: string, choices: string[]) =>
			typeof script.select === "function" ? script.select(title, choices) : script.select,
		input: async (title: string) => (typeof script.input === "function" ? script.input(title) : script.input),
		...(script.onTerminalInput ? { onTerminalInput: script.onTerminalInput } : {}),
		...(script.setStatus ? { setStatus: script.setStatus } : {}),
		editor: async () => undefined,
		custom: async () => undefined,
		getEditorText: () => "",
		getAllThemes: () => [],
		theme: undefined,
	};
	// Any method a newer pi adds is a no-op too.
	return new Proxy(answers, {
		get: (target, prop) => (typeof prop === "string" && prop in target ? target[prop] : () => undefined),
	}) as unknown as ExtensionUIContext;
}

function toToolResultView(message: AgentSession["messages"][number]): ToolResultView[] {
	if (message.role !== "toolResult") return [];
	const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
	return [
		{
			toolName: message.toolName,
			toolCallId: message.toolCallId,
			isError: message.isError,
			content: message.content,
			details: message.details,
			text,
		},
	];
}
