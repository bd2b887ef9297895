// bash-writes.ts: which paths a command writes, for the side-door guard. Every writing form the
// contract names is found, behind prefixes and inside nested shells too; reading commands, descriptors
// and here-document bodies write nothing; a self-approval through pi is found; the cost is bounded.
import { expect } from "chai";
import { findBashWrites, findSelfApproval } from "../../../src/guard/bash-writes.ts";
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
		// The link is written; its target counts too (a link pointing into a skill is a way in).
		["ln -sf /etc/passwd skills/a/SKILL.md", ["/etc/passwd", "/w/project/skills/a/SKILL.md"]],
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

	describe("a write into a skill folder, wrapped or not", function () {
		const SKILL = "/w/project/skills/a";
		/** A path inside the skill, or a folder holding it (the guard takes every skill below a written folder). */
		const reachesSkill = (paths: readonly string[]) =>
			paths.some((p) => p === SKILL || p.startsWith(`${SKILL}/`) || SKILL.startsWith(`${p}/`));
		const forms = [
			"timeout 5 sed -i 's/a/b/' skills/a/SKILL.md",
			"timeout -s KILL 5s sed -i.bak 's/a/b/' skills/a/SKILL.md",
			"nice -n 10 sed --in-place=.orig 's/a/b/' skills/a/SKILL.md",
			"nice sed -Ei 's/a/b/' skills/a/SKILL.md",
			"env FOO=1 BAR=2 rm skills/a/SKILL.md",
			"env -i PATH=/bin truncate -s 0 skills/a/SKILL.md",
			"command rm skills/a/SKILL.md",
			"exec tee skills/a/SKILL.md",
			"nohup rm -rf skills/a &",
			"stdbuf -oL sed -i 's/a/b/' skills/a/SKILL.md",
			"sudo -u root rm skills/a/SKILL.md",
			"find skills/a -name '*.md' | xargs sed -i 's/a/b/'",
			"ls skills/a/*.md | xargs -0 -n 1 perl -pi -e 's/a/b/'",
			"echo skills/a/SKILL.md | xargs -I{} cp /tmp/x {}",
			"find skills/a -name '*.md' -exec sed -i 's/a/b/' {} \\;",
			"find skills -type f -execdir perl -0pi -e 's/a/b/' {} +",
			"find skills/a -name '*.bak' -delete",
			"sh -c 'echo x > skills/a/SKILL.md'",
			'bash -c "sed -i s/a/b/ skills/a/SKILL.md"',
			"bash -lc 'cd skills/a && rm SKILL.md'",
			"eval 'rm skills/a/SKILL.md'",
			"sh -c 'sh -c \"rm skills/a/SKILL.md\"'",
			"sh -c 'rm \"$1\"' _ skills/a/SKILL.md",
			"bash <<'EOF'\nrm skills/a/SKILL.md\nEOF",
			"perl -0pi -e 's/a/b/' skills/a/SKILL.md",
			"perl -pi.bak -e 's/a/b/' skills/a/SKILL.md",
			"perl -i.bak -pe 's/a/b/' skills/a/SKILL.md",
			"perl -0777 -pi -e 's/a/b/s' skills/a/SKILL.md",
			"sed -i.bak 's/a/b/' skills/a/SKILL.md",
			"sed --in-place 's/a/b/' skills/a/SKILL.md",
			`python3 -c "open('skills/a/SKILL.md', 'w').write('x')"`,
			`python -c "import pathlib; pathlib.Path('skills/a/SKILL.md').write_text('x')"`,
			`python3 -c "import shutil; shutil.rmtree('skills/a')"`,
			`node -e "require('fs').writeFileSync('skills/a/SKILL.md', 'x')"`,
			`node -e "fs.rmSync('skills/a', { recursive: true })"`,
			"python3 - <<'EOF'\nopen('skills/a/SKILL.md', 'a').write('x')\nEOF",
			"git checkout HEAD~1 -- skills/a/SKILL.md",
			"git checkout skills/a",
			"git -C skills restore a/SKILL.md",
			"cd skills/a && git apply /tmp/x.patch",
			"cd skills/a && git stash",
			"ln -sf /etc/passwd skills/a/SKILL.md",
			"ln -s $PWD/skills/a /tmp/way-in",
			"tar -xzf /tmp/a.tgz -C skills/a",
			"tar xf /tmp/a.tar -C skills/a",
			"tar --extract --file=/tmp/a.tar --directory=skills/a",
			"cd skills/a && tar xf /tmp/a.tar",
			"unzip -o /tmp/a.zip -d skills/a",
			"unzip -o /tmp/a.zip -dskills/a",
			"cp -r /tmp/evil skills/a",
			"rsync -a /tmp/evil/ skills/a/",
			"install -m 644 /tmp/x skills/a/SKILL.md",
			"dd if=/tmp/x of=skills/a/SKILL.md",
			"touch skills/a/x",
			"mkdir -p skills/a/scripts",
			"touch skills/{b,a}/x",
			"rm skills/{a,b}/SKILL.md",
			"cd skills && rm -r a",
			"(cd skills/a && rm SKILL.md)",
			"echo x >| skills/a/SKILL.md",
			"echo x &> skills/a/SKILL.md",
			"ls 2> skills/a/SKILL.md",
			"cat > skills/a/SKILL.md <<EOF\nx\nEOF",
			"D=skills/a; rm -rf $D",
			"for f in skills/a/*.md; do sed -i 's/a/b/' \"$f\"; done",
			"rm $(find skills/a -name '*.md')",
			"echo $(rm skills/a/SKILL.md)",
			'find skills/a -type f | while read f; do rm "$f"; done',
			"curl -o skills/a/SKILL.md https://example.com/x",
			"gunzip skills/a/x.gz",
			"time -o skills/a/t.txt ls",
		];
		for (const command of forms) {
			it(`is found in ${JSON.stringify(command)}`, function () {
				expect(reachesSkill(findBashWrites(command, CWD)), String(findBashWrites(command, CWD))).to.equal(true);
			});
		}

		const readOnly = [
			"(cd skills/a && ls); echo x > notes.txt",
			"(cd skills/a; cat SKILL.md) > /tmp/out.txt",
			"cat skills/a/SKILL.md",
			"grep -rn deploy skills/a",
			"ls -la skills/a",
			"git log -- skills/a",
			"git diff skills/a",
			"git show HEAD:skills/a/SKILL.md",
			"git checkout -b feature",
			"git restore --staged skills/a/SKILL.md",
			"find skills/a -name x",
			"find skills/a -name '*.md' -exec cat {} \\;",
			"find skills/a -exec cp {} /tmp/ \\;",
			"tar -tf /tmp/a.tar",
			"tar -czf /tmp/a.tgz skills/a",
			"unzip -l /tmp/a.zip",
			"sed -n 1,5p skills/a/SKILL.md",
			"sed 's/a/b/' skills/a/SKILL.md > /tmp/x",
			"perl -ne 'print if /x/' skills/a/SKILL.md",
			"awk '{print}' skills/a/SKILL.md",
			"cp skills/a/x /tmp/",
			"cp -r skills/a /tmp/copy",
			"rsync -a skills/a/ /tmp/copy/",
			"ln -s /tmp/x /tmp/y",
			"timeout 5 cat skills/a/SKILL.md",
			"sh -c 'cat skills/a/SKILL.md'",
			"find skills/a | xargs grep -l x",
			`python3 -c "print(open('skills/a/SKILL.md').read())"`,
			`node -e "console.log(require('fs').readFileSync('skills/a/SKILL.md', 'utf8'))"`,
			"echo '{a,b}' > /tmp/x",
			"cd skills/a; cd /tmp && rm -rf build",
			"echo 'rm skills/a/SKILL.md'",
			"wc -l skills/a/* | sort -n",
			"diff <(cat skills/a/SKILL.md) /tmp/x",
		];
		for (const command of readOnly) {
			it(`is not found in ${JSON.stringify(command)}`, function () {
				expect(findBashWrites(command, CWD).filter((p) => reachesSkill([p]))).to.deep.equal([]);
			});
		}
	});

	describe("findSelfApproval", function () {
		const approving = [
			'pi -p "/selfskills approve 3f2a --yes"',
			"pi --print '/selfskills reject 3f2a'",
			'npx pi -p "/selfskills pin deploy-*"',
			'npx @mariozechner/pi-coding-agent -p "/selfskills unpin deploy-checks"',
			'timeout 60 pi -p "/selfskills trust"',
			"sh -c 'pi -p \"/selfskills untrust\"'",
			'echo "/selfskills approve 3f2a --yes" | pi -p',
			"pi -p <<'EOF'\n/selfskills approve 3f2a --yes\nEOF",
			'pi -p "/selfskills restore deploy-checks SKILL.md 20260101-000000.000-abc --yes"',
			'pi -p "/selfskills export 3f2a --branch"',
			'pi -p "/selfskills eval 3f2a --task fix --expect ok --yes"',
		];
		for (const command of approving) {
			it(`finds pi run to decide in ${JSON.stringify(command)}`, function () {
				expect(findSelfApproval(command)).to.match(
					/^\/selfskills (approve|reject|pin|unpin|trust|untrust|restore|export|eval)$/,
				);
			});
		}
		const other = [
			'pi -p "/selfskills pending"',
			'pi -p "/selfskills show 3f2a"',
			'pi -p "/selfskills doctor"',
			'pi -p "summarize the README"',
			"echo '/selfskills approve 3f2a' >> notes.md",
			"grep -rn '/selfskills approve' src/",
		];
		for (const command of other) {
			it(`finds none in ${JSON.stringify(command)}`, function () {
				expect(findSelfApproval(command)).to.equal(undefined);
			});
		}
	});

	describe("cost", function () {
		// A megabyte of each shape: plain words, braces, parentheses, substitutions, quotes, nested shells,
		// here-documents, interpreter code. The bound is loose for loaded test machines; `npm run bench`
		// measures the worst shape.
		const M = 1 << 20;
		const fill = (unit: string) => unit.repeat(Math.ceil(M / unit.length)).slice(0, M);
		const shapes = [
			"rm skills/a/x ",
			"{a,b}",
			"{",
			"(",
			"$(",
			"$a",
			"'",
			'"$(',
			"cat <<E\n",
			"a;",
			"sh -c '",
			"`",
			"${",
			"ls a | xargs rm; ",
			"find a -exec rm {} ; ",
			"cd a; ",
			"pi -p /selfskills approve ",
			`${"{a,b}".repeat(800)} `,
			`python3 -c "open${" ".repeat(60_000)}"; `,
		];
		for (const unit of shapes) {
			it(`reads a megabyte of ${JSON.stringify(unit.slice(0, 20))} in bounded time`, function () {
				const command = fill(unit);
				const start = performance.now();
				findBashWrites(command, CWD);
				findSelfApproval(command);
				expect(performance.now() - start).to.be.below(1000);
			});
		}

		it("takes a command past its bounds to write anywhere", function () {
			expect(findBashWrites(fill("rm x "), CWD)).to.include("/");
			expect(findBashWrites('sh -c \'sh -c "sh -c \\"sh -c x\\""\'', CWD)).to.not.include("/");
		});

		it("takes a variable that doubles past its bounds to write anywhere", function () {
			expect(findBashWrites(`a=x; ${"a=$a$a; ".repeat(40)}rm $a`, CWD)).to.include("/");
		});

		it("takes subshells nested past their bounds to write anywhere", function () {
			const command = `${"(".repeat(300)}cd /tmp${")".repeat(300)}; rm -rf skills`;
			expect(findBashWrites(command, CWD)).to.include("/");
		});
	});
});
