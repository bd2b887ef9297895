// A skill created by skill_manage is usable at once: the next prompt's injected block names it (name,
// description, path), the tool result says /reload adds it to pi's list, and after /reload pi lists it.
import { expect } from "chai";
import { join } from "node:path";
import { REPO_ROOT, getPiLine } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv } from "../support/temp-env.ts";
import { call } from "../support/faux-script.ts";

const DESCRIPTION = "Use when a staging deploy must be undone: finds the previous release and redeploys it.";
const create = call({
	action: "create",
	name: "staging-rollback",
	description: DESCRIPTION,
	body: "# Staging rollback\n\n1. Find the previous tag.\n2. Redeploy it.\n",
});

describe(`a created skill is visible at once (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	it("is named in the next prompt, its result points at /reload, and pi lists it after /reload", async function () {
		const env = getEnv();
		const path = join(env.agentDir, "skills", "staging-rollback", "SKILL.md");
		pi = await createPiSession({ env, packageDir: REPO_ROOT });
		const first = await pi.run("keep the rollback as a skill", [create, { text: "saved" }]);
		const [created] = first.toolResults;
		expect(created.isError, created.text).to.equal(false);
		expect(created.text).to.contain("/reload");
		expect(first.calls[0].systemPrompt, "not before it exists").not.to.contain("staging-rollback");

		const next = await pi.run("roll back staging", [{ text: "ok" }]);
		const prompt = next.calls[0].systemPrompt;
		const block = prompt.slice(prompt.indexOf("<selfskills-changed>"), prompt.indexOf("</selfskills-changed>"));
		expect(block).to.contain(`- staging-rollback (create): ${DESCRIPTION} — ${path}`);
		expect(prompt, "pi's own list is the startup snapshot").not.to.contain("<name>staging-rollback</name>");

		await pi.session.reload();
		const afterReload = await pi.run("roll back staging", [{ text: "ok" }]);
		const reloaded = afterReload.calls[0].systemPrompt;
		expect(reloaded).to.contain("<name>staging-rollback</name>");
		expect(reloaded).to.contain(`<location>${path}</location>`);
		expect(reloaded, "a reload starts a fresh selfskills session; pi's list takes over").not.to.contain(
			"<selfskills-changed>",
		);
		expect(reloaded).to.contain("<selfskills-rules>");
	});
});
