// A selfskills.skillsDir outside the folders pi scans: what `create` writes there must load in
// every later session (handed to pi through resources_discover), and stay patchable there.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { call } from "../support/faux-script.ts";

describe(`a skillsDir outside pi's own folders (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	it("is loaded by pi in the next session, and its skills stay patchable", async function () {
		const env = getEnv();
		const skillsDir = join(env.root, "my-skills");
		mkdirSync(skillsDir);
		writeFileSync(join(env.agentDir, "settings.json"), JSON.stringify({ selfskills: { skillsDir } }));
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		const created = await pi.run("make a skill", [
			call({
				action: "create",
				name: "release-notes",
				description: "Use when writing release notes. Gives the format.",
				body: "# Release notes\n\nWrite them.\n",
			}),
			{ text: "done" },
		]);
		expect(created.toolResults[0].isError, created.toolResults[0].text).to.equal(false);
		pi.dispose();
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		const next = await pi.run("what skills are there?", [
			call({ action: "list", skill: "release-notes" }),
			{ text: "ok" },
		]);
		const skillFile = join(skillsDir, "release-notes", "SKILL.md");
		// pi's own skills list in the system prompt, not only the selfskills note of this session's changes.
		expect(next.calls[0].systemPrompt).to.contain(skillFile);
		expect(next.calls[0].systemPrompt).not.to.contain("- release-notes (create)");
		expect(next.toolResults[0].text).to.match(/release-notes — .* — patchable: yes/);
	});
});
