// bash-writes.ts: which paths a command writes, for the side-door guard. Every writing form the
// contract names is found; reading commands, descriptors and here-document bodies write nothing.
import { expect } from "chai";
import { findBashWrites } from "../../../src/guard/bash-writes.ts";
import { getHomeDir } from "../../../src/base/paths.ts";

const CWD = "/w/project";

describe("findBashWrites", function () {
	const writes: Array<[string, string[]]> = [
		["echo x > skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["echo x >>skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["printf x 2> err.log", ["/w/project/err.log"]],
		["make &> /tmp/build.log", ["/tmp/build.log"]],
		["echo x | tee -a skills/a/notes.md skills/b/x.md", ["/w/project/skills/a/notes.md", "/w/project/skills/b/x.md"]],
		["sed -i 's/a/b/' skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["sed -i.bak -e 's/a/b/' skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["perl -pi -e 's/a/b/' skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["mv skills/a/SKILL.md /tmp/x", ["/w/project/skills/a/SKILL.md", "/tmp/x"]],
		["cp /tmp/x skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["cp -t skills/a /tmp/x /tmp/y", ["/w/project/skills/a"]],
		["rm -rf skills/a", ["/w/project/skills/a"]],
		["truncate -s 0 skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["chmod +x skills/a/scripts/run.sh", ["/w/project/skills/a/scripts/run.sh"]],
		["chmod --reference=/tmp/x skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["ln -sf /etc/passwd skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["git checkout -- skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["git restore skills/a/SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["cat > skills/a/SKILL.md <<'EOF'\n---\nname: a\nrm -rf /\nEOF\necho done", ["/w/project/skills/a/SKILL.md"]],
		["cd skills/a && rm SKILL.md", ["/w/project/skills/a/SKILL.md"]],
		["FOO=1 rm 'skills/my skill/SKILL.md'", ["/w/project/skills/my skill/SKILL.md"]],
		["rm skills/a/refs/*.md", ["/w/project/skills/a/refs"]],
		["dd if=/dev/zero of=skills/a/x.bin", ["/w/project/skills/a/x.bin"]],
	];
	for (const [command, expected] of writes) {
		it(`finds what ${JSON.stringify(command)} writes`, function () {
			expect(findBashWrites(command, CWD)).to.deep.equal(expected);
		});
	}

	it("expands ~ against the home folder at the time of the call", function () {
		expect(findBashWrites("sudo rm ~/x", CWD)).to.deep.equal([`${getHomeDir()}/x`]);
	});

	const reads = [
		"cat skills/a/SKILL.md",
		"grep -rn deploy skills/",
		"less skills/a/SKILL.md",
		"head -5 skills/a/SKILL.md | wc -l",
		"ls -la skills/a 2>&1",
		"echo hi >&2",
		"diff skills/a/SKILL.md /tmp/x",
		"sed -n 1,5p skills/a/SKILL.md",
		"git diff skills/a",
		"# rm skills/a",
	];
	for (const command of reads) {
		it(`finds no write in ${JSON.stringify(command)}`, function () {
			expect(findBashWrites(command, CWD)).to.deep.equal([]);
		});
	}
});
