// Shell forms an agent uses to reach a pinned skill through pi's own bash where bash is not sandboxed
// (no bwrap on PATH when the extension probes): each is blocked by the side-door guard (a real pi
// session, the faux model calling bash), a command that only reads the skill or writes elsewhere still
// runs, and pi run from bash to approve is stopped.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { createPiSession, type PiSession } from "../support/pi-session.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { DEPLOY_SKILL, writeSkill } from "../support/fixtures.ts";

const bash = (command: string) => ({ toolCall: { name: "bash", arguments: { command } } });

describe(`bash forms against a pinned skill (pi ${getPiLine()})`, function () {
	const getEnv = useTempEnv();
	let pi: PiSession | undefined;
	afterEach(() => pi?.dispose());

	/** A session whose extension finds no bubblewrap (an empty PATH while it probes): the matcher is the guard. */
	async function startUnsandboxed(env: TempEnv, selfskills: Record<string, unknown>): Promise<PiSession> {
		const empty = join(env.root, "empty-path");
		mkdirSync(empty, { recursive: true });
		const saved = process.env.PATH;
		process.env.PATH = empty;
		try {
			return await createPiSession({ env, packageDir: REPO_ROOT, settings: { selfskills } });
		} finally {
			process.env.PATH = saved;
		}
	}

	it("blocks each wrapped, nested, git, link and archive form, and runs the read-only neighbour", async function () {
		const env = getEnv();
		const skillFile = writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		const dir = join(env.agentDir, "skills", "deploy-checks");
		writeFileSync(join(env.projectDir, "notes.txt"), "");
		pi = await startUnsandboxed(env, { pinned: ["deploy-checks"] });
		const forms = [
			`perl -0pi -e 's/npm build/make/' ${skillFile}`,
			`timeout 5 sed -i 's/npm build/make/' ${skillFile}`,
			`find ${dir} -name '*.md' -exec sed -i 's/npm build/make/' {} \\;`,
			`sh -c 'echo gone > ${skillFile}'`,
			`cd ${dir} && git checkout HEAD -- SKILL.md`,
			`ln -sf /etc/hostname ${skillFile}`,
			`tar -xf /tmp/none.tar -C ${dir}`,
			`unzip -o /tmp/none.zip -d ${dir}`,
		];
		const run = await pi.run("try", [
			...forms.map(bash),
			bash(`(cd ${dir} && ls); echo x > notes.txt`),
			{ text: "done" },
		]);
		const results = run.toolResults;
		forms.forEach((form, k) => {
			expect(results[k].isError, form).to.equal(true);
			expect(results[k].text, form).to.contain('skill "deploy-checks" is pinned');
		});
		const readOnly = results[forms.length];
		expect(readOnly.isError, readOnly.text).to.equal(false);
		expect(readOnly.text).to.contain("SKILL.md");
		expect(readFileSync(join(env.projectDir, "notes.txt"), "utf8")).to.equal("x\n");
		expect(readFileSync(skillFile, "utf8")).to.equal(DEPLOY_SKILL);
		expect(readdirSync(dir)).to.deep.equal(["SKILL.md"]);
	});

	it("stops pi run from bash to approve while a control is on, and lets it be otherwise", async function () {
		const env = getEnv();
		writeSkill(join(env.agentDir, "skills"), "deploy-checks", DEPLOY_SKILL);
		pi = await startUnsandboxed(env, { approval: "propose" });
		const command = `timeout 5 sh -c 'npx pi -p "/selfskills approve 3f2a --yes" || true'`;
		const run = await pi.run("try", [bash(command), { text: "done" }]);
		expect(run.toolResults[0].isError).to.equal(true);
		expect(run.toolResults[0].text).to.contain("the person's decision");
		pi.dispose();
		pi = await startUnsandboxed(env, { approval: "auto" });
		const free = await pi.run("try", [bash("true || pi -p '/selfskills approve 3f2a --yes'"), { text: "done" }]);
		expect(free.toolResults[0].isError, free.toolResults[0].text).to.equal(false);
	});
});
