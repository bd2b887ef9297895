// src/checks/agent-text.ts: text from the agent as the person sees it, escaped and bounded.
import { expect } from "chai";
import { MAX_REASON_CHARS, shownDiff, shownName, shownReason } from "../../../src/checks/agent-text.ts";

const RAW_CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;

describe("agent text (src/checks/agent-text.ts)", function () {
	it("escapes ESC, OSC 52, a lone CR, C1, line separators and bidi controls in a reason", function () {
		const shown = shownReason("a\u001b]52;c;eA==\u0007b\rc\u0085d\u2028e\u202Ef\u2066g");
		expect(shown).to.not.match(RAW_CONTROL);
		expect(shown).to.equal("a\\u001b]52;c;eA==\\u0007b\\u000dc\\u0085d\\u2028e\\u202ef\\u2066g");
	});

	it("keeps a reason and a name on one line: tab and newline are escaped too", function () {
		expect(shownReason("one\nAllow once\tx")).to.equal("one\\u000aAllow once\\u0009x");
		expect(shownName("a\nb")).to.equal("a\\u000ab");
	});

	it("bounds a reason to 500 characters and says so", function () {
		const shown = shownReason("x".repeat(1024 * 1024));
		expect(shown.startsWith("x".repeat(MAX_REASON_CHARS))).to.equal(true);
		expect(shown).to.match(/… \[reason cut at 500 of 1048576 characters\]$/);
		expect(shown.length).to.be.below(MAX_REASON_CHARS + 60);
	});

	it("escapes a diff but keeps its lines, and cuts it at 30,000 characters with a note", function () {
		expect(shownDiff("-a\r\n+b\u001b[2J\n")).to.equal("-a\r\n+b\\u001b[2J\n");
		const cut = shownDiff(`+${"y".repeat(40_000)}\n`);
		expect(cut).to.contain("[diff cut at 30000 of 40002 characters]");
	});

	it("is idempotent: text escaped when stored shows the same", function () {
		const once = shownReason("a\u001bb");
		expect(shownReason(once)).to.equal(once);
	});
});
