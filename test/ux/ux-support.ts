// What /selfskills showed the human in an in-process session, as the UX and ops tests read it.
import type { PiSession } from "../support/pi-session.ts";
import { OUTPUT_MESSAGE_TYPE } from "../../src/face/command.ts";

/** Every /selfskills output of the session, oldest first: each is a message of the conversation. */
export function commandOutputs(pi: PiSession): string[] {
	return pi.session.messages.flatMap((m) =>
		m.role === "custom" && m.customType === OUTPUT_MESSAGE_TYPE && typeof m.content === "string" ? [m.content] : [],
	);
}

/** Runs `fn` with process.stderr.write captured (where /selfskills prints without a UI). */
export async function captureStderr(fn: () => Promise<void>): Promise<string> {
	const original = process.stderr.write.bind(process.stderr);
	let text = "";
	process.stderr.write = ((chunk: string | Uint8Array) => {
		text += chunk.toString();
		return true;
	}) as typeof process.stderr.write;
	try {
		await fn();
	} finally {
		process.stderr.write = original;
	}
	return text;
}
