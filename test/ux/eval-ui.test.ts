// /selfskills eval in a session with a UI (in-process pi, the package installed from settings): the
// cost is asked in a dialog before any run, progress goes to the status line, and Esc stops the eval
// and removes its folders. The runs themselves are real `pi -p` processes of this pi line.
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { EVAL_FOLDER_PREFIX } from "../../src/eval/workspace.ts";
import { createPiSession, type PiSession, type UiScript } from "../support/pi-session.ts";
import { getPiLine, REPO_ROOT } from "../support/pi-line.ts";
import { useTempEnv, type TempEnv } from "../support/temp-env.ts";
import { writeSkill } from "../support/fixtures.ts";

const EVAL_EXTENSION = join(REPO_ROOT, "test", "fixtures", "eval-faux-ext.ts");
const SLOW_SKILL = '---\nname: slow\ndescription: "eval-bash: sleep 60"\n---\n# slow\n';

/** What the session showed the person: its /selfskills output messages. */
function shown(pi: PiSession): string {
	return pi.session.messages
		.flatMap((m) => (m.role === "custom" && m.customType === "selfskills" ? [String(m.content)] : []))
		.join("\n");
}

describe(`/selfskills eval with a UI (pi ${getPiLine()})`, function () {
	this.timeout(120_000);
	const getEnv = useTempEnv({ prefix: "selfskills-evalui-" });
	let savedTmp: string | undefined;
	let pi: PiSession | undefined;

	/** The person's temp folder inside the test's folder, so leftovers are this test's alone. */
	function useTmp(env: TempEnv): string {
		const tmp = join(env.root, "tmp");
		mkdirSync(tmp);
		savedTmp = process.env.TMPDIR;
		process.env.TMPDIR = tmp;
		return tmp;
	}

	afterEach(() => {
		pi?.dispose();
		pi = undefined;
		if (savedTmp === undefined) delete process.env.TMPDIR;
		else process.env.TMPDIR = savedTmp;
	});

	const leftovers = (tmp: string) => readdirSync(tmp).filter((n) => n.startsWith(EVAL_FOLDER_PREFIX));
	const command = `/selfskills eval slow --task wait --expect done --runs 2 --extension ${EVAL_EXTENSION}`;

	it("asks before any run, naming the runs and the model; no means nothing ran", async function () {
		const env = getEnv();
		const tmp = useTmp(env);
		writeSkill(join(env.agentDir, "skills"), "slow", SLOW_SKILL);
		const asked: string[] = [];
		const ui: UiScript = {
			confirm: (title, message) => {
				asked.push(`${title} ${message}`);
				return false;
			},
		};
		pi = await createPiSession({ env, packageDir: REPO_ROOT, ui });
		await pi.runCommand(command);
		expect(asked).to.have.length(1);
		expect(asked[0]).to.match(/^Run this eval\? 4 runs \(2 per arm: without slow \/ with slow\) on faux\/faux-1/);
		expect(shown(pi)).to.include("eval cancelled; nothing ran");
		expect(leftovers(tmp)).to.deep.equal([]);
	});

	it("shows progress in the status line, and Esc stops it, keeps nothing and removes its folders", async function () {
		const env = getEnv();
		const tmp = useTmp(env);
		writeSkill(join(env.agentDir, "skills"), "slow", SLOW_SKILL);
		let press: ((data: string) => unknown) | undefined;
		const statuses: string[] = [];
		let seenDuringRun: string[] = [];
		let pressed = false;
		const ui: UiScript = {
			confirm: true,
			onTerminalInput: (handler) => {
				press = handler;
				return () => {
					press = undefined;
				};
			},
			setStatus: (_key, text) => {
				if (text === undefined || statuses.includes(text)) return;
				statuses.push(text);
				if (!pressed && /with slow, run 1 of 2/.test(text)) {
					pressed = true;
					setTimeout(() => {
						seenDuringRun = leftovers(tmp);
						expect(press?.("\x1b")).to.deep.equal({ consume: true });
					}, 1000);
				}
			},
		};
		pi = await createPiSession({ env, packageDir: REPO_ROOT, ui });
		await pi.runCommand(command);
		expect(statuses.some((s) => /^eval: without slow, run 1 of 2, \d+:\d\d \(Esc stops\)$/.test(s))).to.equal(true);
		expect(seenDuringRun).to.have.length(1);
		expect(shown(pi)).to.match(/without slow, run 1 of 2: failed/);
		expect(shown(pi)).to.include("eval stopped before any pair of runs finished; nothing kept.");
		expect(press).to.equal(undefined);
		expect(leftovers(tmp)).to.deep.equal([]);
	});
});
