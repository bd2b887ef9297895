// Scripted faux-model turns shared by the in-process session (pi-session.ts) and the CLI extension
// (test/fixtures/faux-cli-ext.ts), plus a line-neutral view of what the model was sent on each call.
import * as piAi from "@mariozechner/pi-ai";
import {
	fauxAssistantMessage,
	fauxToolCall,
	getApiProvider,
	registerFauxProvider,
	type AssistantMessage,
	type Context,
} from "@mariozechner/pi-ai";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

export interface FauxToolCallSpec {
	name: string;
	arguments: Record<string, unknown>;
}

/** One model turn: plain text, one tool call, or several tool calls in one assistant message. */
export type FauxStep = { text: string } | { toolCall: FauxToolCallSpec } | { toolCalls: FauxToolCallSpec[] };

/** The model calls skill_manage with `args`: the step most scripts are made of. */
export const call = (args: Record<string, unknown>): FauxStep => ({
	toolCall: { name: "skill_manage", arguments: args },
});

/** What the model saw on one call. */
export interface CapturedCall {
	systemPrompt: string;
	toolNames: string[];
	/** Last non-system message of the context (usually the prompt or the latest tool result). */
	lastMessage: unknown;
}

export function stepToAssistantMessage(step: FauxStep): AssistantMessage {
	if ("text" in step) return fauxAssistantMessage(step.text);
	const calls = "toolCall" in step ? [step.toolCall] : step.toolCalls;
	return fauxAssistantMessage(
		calls.map((call) => fauxToolCall(call.name, call.arguments)),
		{ stopReason: "toolUse" },
	);
}

interface NamedTool {
	name: string;
}
interface RoleMessage {
	role: string;
}
/** pi-ai 1.6 helpers: its contexts carry prompt and tools as system messages instead of fields. */
interface TranscriptHelpers {
	getCurrentSystemPrompt(messages: readonly RoleMessage[]): string;
	getCurrentTools(messages: readonly RoleMessage[]): NamedTool[];
}

function getTranscriptHelpers(): TranscriptHelpers | undefined {
	const helpers = piAi as unknown as Partial<TranscriptHelpers>;
	if (!helpers.getCurrentSystemPrompt || !helpers.getCurrentTools) return undefined;
	return { getCurrentSystemPrompt: helpers.getCurrentSystemPrompt, getCurrentTools: helpers.getCurrentTools };
}

/** Reads a faux context on either line: 0.73 `{systemPrompt, tools, messages}`, 1.6 transcript `{messages}`. */
export function captureContext(context: Context): CapturedCall {
	const messages: readonly RoleMessage[] = context.messages;
	const lastMessage = [...messages].reverse().find((message) => message.role !== "system");
	const helpers = getTranscriptHelpers();
	if (typeof context.systemPrompt === "string" || !helpers) {
		return {
			systemPrompt: context.systemPrompt ?? "",
			toolNames: (context.tools ?? []).map((tool) => tool.name),
			lastMessage,
		};
	}
	const toolNames = helpers.getCurrentTools(messages).map((tool) => tool.name);
	return { systemPrompt: helpers.getCurrentSystemPrompt(messages), toolNames, lastMessage };
}

/**
 * For a CLI test extension: registers pi-ai's faux provider under `api`, answering with `replies`
 * in turn, and hands it to pi as provider "faux", model "faux-1".
 */
export function registerFauxModel(
	pi: ExtensionAPI,
	api: string,
	replies: ReadonlyArray<(context: Context) => AssistantMessage>,
	cost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
): void {
	const faux = registerFauxProvider({ provider: "faux", api, models: [{ id: "faux-1" }] });
	faux.setResponses([...replies]);
	const provider = getApiProvider(api);
	if (!provider) throw new Error("faux api provider was not registered");
	pi.registerProvider("faux", {
		api,
		baseUrl: "http://localhost:0",
		apiKey: "faux-key",
		streamSimple: provider.streamSimple,
		models: [
			{
				id: "faux-1",
				name: "Faux",
				reasoning: false,
				input: ["text"],
				cost,
				contextWindow: 128000,
				maxTokens: 16384,
			},
		],
	});
}
