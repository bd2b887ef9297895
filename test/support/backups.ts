// Where the backup store keeps a skill's backups in a test's agent dir: one folder per skill folder,
// `<name>@<hash of name and place>`, found here by the skill's name so tests need not know the hash;
// and the audit log beside it, as its lines.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ChangeRecord } from "../../src/store/audit.ts";
import { getAuditPath } from "../../src/base/paths.ts";

/** Every line of the audit log, oldest first (none when there is no log); a line that does not parse throws. */
export function auditLines(agentDir: string): ChangeRecord[] {
	const path = getAuditPath(agentDir);
	if (!existsSync(path)) return [];
	const lines = readFileSync(path, "utf8").split("\n").filter(Boolean);
	return lines.map((line) => JSON.parse(line) as ChangeRecord);
}

/** The backup folder of the one skill named `name` that has backups (throws when there is not exactly one). */
export function skillBackupDir(agentDir: string, name: string): string {
	const root = join(agentDir, "selfskills", "backups");
	const found = readdirSync(root).filter((n) => n.startsWith(`${name}@`) && !n.endsWith(".json"));
	if (found.length !== 1)
		throw new Error(`expected one backup folder of ${name} in ${root}, found: ${found.join(", ") || "none"}`);
	return join(root, found[0]);
}
