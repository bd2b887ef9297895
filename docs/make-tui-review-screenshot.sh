#!/usr/bin/env bash
# Remakes docs/tui-review.png: a proposal and its review in the real pi TUI (pi 0.73 from node_modules).
# With "approval": "propose" the offline scripted model (test/fixtures/faux-cli-ext.ts) reads a skill
# and patches it; the patch becomes a proposal (its diff in the tool result). The person then types
# /selfskills pending and /selfskills approve <id> (the id read off the screen), and the picture is
# taken while the approve dialog shows the reason and the diff. Same capture as docs/make-tui-screenshot.sh
# (docs/tui-shot-lib.sh): tmux pane with colours -> aha -> headless Chromium.
# Needs tmux, aha and chromium (apt-get install -y tmux aha chromium); nothing in npm test uses it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tui-shot-lib.sh"
out="${1:-$root/docs/tui-review.png}"
cols=${COLS:-110} rows=${ROWS:-52}

cat >"$tmp/script.json" <<'SCRIPT'
[
  { "toolCall": { "name": "skill_manage", "arguments": { "action": "read", "skill": "deploy-checks" } } },
  { "toolCall": { "name": "skill_manage", "arguments": { "action": "patch", "skill": "deploy-checks",
      "old_string": "1. Build with `npm build`.", "new_string": "1. Build with `npm run build` (there is no `npm build` script).",
      "reason": "npm build fails; the script is npm run build" } } },
  { "text": "I proposed the fix to deploy-checks (step 1: `npm run build`); it lands when you approve it." }
]
SCRIPT

install_package
# the person reviews every change before it lands (merged into the settings pi install wrote)
node -e 'const fs = require("fs"), f = process.argv[1]; const s = fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, "utf8")) : {};
s.selfskills = { ...(s.selfskills ?? {}), approval: "propose" }; fs.writeFileSync(f, JSON.stringify(s, null, 2));' "$agent/settings.json"

start_pi "$cols" "$rows" "$tmp/script.json"
type_line "npm build failed on staging: there is no build script by that name. Fix the deploy skill."
wait_for "when you approve it."
sleep 0.3
type_command "/selfskills pending"
wait_for "pending proposal"
sleep 0.3
id="$(tmux -S "$sock" capture-pane -p -t shot | grep -oE 'p-[0-9a-f]{8}' | tail -n 1)"
[ -n "$id" ] || { echo "no proposal id on screen" >&2; exit 1; }
type_command "/selfskills approve $id"
wait_for "Approve proposal $id?"
sleep 0.5
if [ -n "${DUMP:-}" ]; then tmux -S "$sock" capture-pane -p -t shot; fi
shoot "$out" "$cols" "$rows" "pi-selfskills: a proposal and its review in pi's TUI"
# then say yes, to check that the dialog photographed is the one that lands the change
tmux -S "$sock" send-keys -t shot Enter
wait_for "approved $id"
