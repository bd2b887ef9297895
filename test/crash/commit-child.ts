// Child process of the crash tests: runs the scenario's multi-file commit with a filesystem that
// counts every call that changes the disk and SIGKILLs its own process right before call number
// <killAt> (0: never). With <failRenameTo>, the rename onto the file whose path ends with it fails
// with EIO, so the kill points also cover the rollback. Prints {"calls":n,"journalRemovedAt":k,"ok":…} when it ends.
// Argv: <agentDir> <killAt> [failRenameTo]
import { sep } from "node:path";
import { createBackupStore } from "../../src/store/backup-store.ts";
import { commitPlan } from "../../src/pipeline/commit.ts";
import { realFs } from "../../src/base/fs-ops.ts";
import { changesDisk, errno, faultyFs } from "../support/faulty-fs.ts";
import { scenarioPlan } from "./scenario.ts";

const [agentDir, killAtText, failRenameTo] = process.argv.slice(2);
const killAt = Number(killAtText);
let calls = 0;
let failedAt: number | undefined;
/** The call that removes the commit journal: the commit point. */
let journalRemovedAt: number | undefined;

const fs = faultyFs((call) => {
	const { op, args } = call;
	if (changesDisk(call)) {
		calls++;
		if (op === "unlink" && String(args[0]).includes(`${sep}journal${sep}`)) journalRemovedAt ??= calls;
		if (calls === killAt) process.kill(process.pid, "SIGKILL");
	}
	if (op === "rename" && failRenameTo && String(args[1]).endsWith(failRenameTo)) {
		failedAt ??= calls;
		return errno("EIO", `injected failure, rename onto ${String(args[1])}`);
	}
	return undefined;
});
const outcome = await commitPlan(scenarioPlan(agentDir), {
	fs,
	agentDir,
	store: createBackupStore(fs, agentDir),
	backupCap: 10,
	guard: { assertHeld() {} },
	checkLanded: (filePath) => {
		const name = /^name: (.+)$/m.exec(realFs.readFile(filePath).toString("utf8"))?.[1];
		return { loaded: name !== undefined, name, description: undefined, diagnostics: [] };
	},
	changedCode: "conflict",
});
process.stdout.write(`${JSON.stringify({ calls, failedAt, journalRemovedAt, ok: outcome.ok })}\n`);
