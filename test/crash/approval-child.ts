// Child process of the approval crash tests: approves or rejects a pending proposal the parent
// filed, through review.ts as `/selfskills approve|reject` does (findProposal, previewApproval,
// landApproval or rejectProposal: approval-crash-support.ts `review`), with a filesystem that
// counts every call that changes the disk
// and SIGKILLs its own process right before call number <killAt> (0: never). It imports pi (the
// approval plans again with pi's discovery), so it runs under tsx, not as transpiled JS.
// With `fail-journal-sync`, the first fsync of the journal folder fails (EIO) and the person, told
// the approval failed, approves again in the same process, which then ends normally.
// Prints {"calls":n,"ops":[…],"ok":…,"code":…} when it ends.
// Argv: <agentDir> <projectDir> <proposalId> <approve|reject> <killAt> [fail-journal-sync]
import { describeCall, review } from "../hardening/approval-crash-support.ts";
import { getJournalDir } from "../../src/base/paths.ts";
import { changesDisk, errno, faultyFs } from "../support/faulty-fs.ts";

const [agentDir, projectDir, id, verdict, killAtText, fault] = process.argv.slice(2);
const killAt = Number(killAtText);
let calls = 0;
/** Each disk-changing call, in order, for the parent's report of where a kill fell. */
const ops: string[] = [];

let lastOpen = "";
let syncFailed = false;

const fs = faultyFs((call) => {
	if (call.op === "open") lastOpen = String(call.args[0]);
	if (fault === "fail-journal-sync" && call.op === "fsync" && !syncFailed && lastOpen === getJournalDir(agentDir)) {
		syncFailed = true;
		return errno("EIO", "injected: the journal folder's sync failed");
	}
	if (!changesDisk(call)) return undefined;
	calls++;
	ops.push(describeCall(call, agentDir));
	if (calls === killAt) process.kill(process.pid, "SIGKILL");
	return undefined;
});

const target = { agentDir, projectDir, id };
const first = await review(target, verdict === "reject" ? "reject" : "approve", fs);
const outcome = syncFailed && !first.ok ? { first, ...(await review(target, "approve", fs)) } : first;
process.stdout.write(`${JSON.stringify({ calls, ops, ...outcome })}\n`);
