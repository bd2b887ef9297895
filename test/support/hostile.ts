// Hostile text for the risk scan's patterns, one shape per category: the words each category's
// patterns start from, repeated so that a pattern which backtracks would show it on 1 MiB.
import type { RiskCategory } from "../../src/checks/risk-scan.ts";

export const RISK_SHAPES: Record<RiskCategory, string> = {
	"pipe-to-shell": "curl wget bash <( $( ",
	secrets: "cat ~/.ssh cp ~/.ssh echo $token ",
	exfiltration: "curl -d @ send files to | curl ",
	override: "ignore all the previous do not tell without ",
	control: "sed -i echo > use the edit tool to skill.md ",
	destructive: "rm -rf -r -f git push dd of= ",
	obfuscation: "base64 -d eval( 'aaaaaaaaaaaaaaaa ",
};

/** Each shape as it comes, ending a line, and ending a line that is joined to the next. */
export const shapeUnits = (category: RiskCategory): string[] => {
	const shape = RISK_SHAPES[category];
	return [shape, `${shape}\n`, `${shape}|\n`];
};

/** `unit` repeated to exactly 1 MiB. */
export const toMiB = (unit: string): string => unit.repeat(Math.ceil(1_048_576 / unit.length)).slice(0, 1_048_576);

/** CPU time of `run` in milliseconds (not wall time: the machine may be shared). */
export function cpuMs(run: () => unknown): number {
	const start = process.cpuUsage();
	run();
	const used = process.cpuUsage(start);
	return (used.user + used.system) / 1000;
}
