#!/usr/bin/env bash
# Remakes docs/tui-patch.png: the real pi TUI (pi 0.73 from node_modules) in tmux with the offline
# scripted model of test/fixtures/faux-cli-ext.ts, which reads a skill and patches it; the pane is
# captured with its colours, turned into HTML by aha and photographed by headless Chromium.
# Needs tmux, aha and chromium (apt-get install -y tmux aha chromium); nothing in npm test uses it.
# The shared steps are in docs/tui-shot-lib.sh; docs/make-tui-review-screenshot.sh makes the review image.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tui-shot-lib.sh"
out="${1:-$root/docs/tui-patch.png}"
cols=100 rows=42

cat >"$tmp/script.json" <<'SCRIPT'
[
  { "toolCall": { "name": "skill_manage", "arguments": { "action": "read", "skill": "deploy-checks" } } },
  { "toolCall": { "name": "skill_manage", "arguments": { "action": "patch", "skill": "deploy-checks",
      "old_string": "1. Build with `npm build`.", "new_string": "1. Build with `npm run build` (there is no `npm build` script)." } } },
  { "text": "Fixed deploy-checks: step 1 now says `npm run build`. The old text is backed up; `/selfskills history deploy-checks` lists it." }
]
SCRIPT

install_package
start_pi "$cols" "$rows" "$tmp/script.json"
type_line "npm build failed on staging: there is no build script by that name. Fix the deploy skill."
wait_for "lists it."
sleep 0.5
shoot "$out" "$cols" "$rows" "pi-selfskills: a skill_manage patch in pi's TUI"
