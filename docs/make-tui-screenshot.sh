#!/usr/bin/env bash
# Remakes docs/tui-patch.png, the gallery image: the real pi TUI (pi 0.73 from node_modules) in tmux with
# the offline scripted model of test/fixtures/faux-cli-ext.ts, which reads a skill and patches it; the pane
# is captured with its colours, turned into HTML by aha and photographed by headless Chromium.
# Needs tmux, aha and chromium (apt-get install -y tmux aha chromium); nothing in npm test uses it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/docs/tui-patch.png}"
cli="$root/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"
cols=100 rows=42
tmp="$(mktemp -d /tmp/pi-XXXXXX)"
sock="$tmp/tmux.sock"
trap 'tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
# pi's default places under a fresh HOME, so its footer shows ~/webapp rather than a temp path
home="$tmp" agent="$tmp/.pi/agent" project="$tmp/webapp"
mkdir -p "$agent/skills/deploy-checks" "$project"
export HOME="$home" PI_CODING_AGENT_DIR="$agent" PI_OFFLINE=1
unset NODE_OPTIONS

cat >"$agent/skills/deploy-checks/SKILL.md" <<'SKILL'
---
name: deploy-checks
description: Use when deploying the web app to staging. Lists the build and health checks to run.
---
# Deploy checks

1. Build with `npm build`.
2. Check that https://staging.example.com/health answers 200.

If the build fails, read the log before retrying.
SKILL

cat >"$tmp/script.json" <<'SCRIPT'
[
  { "toolCall": { "name": "skill_manage", "arguments": { "action": "read", "skill": "deploy-checks" } } },
  { "toolCall": { "name": "skill_manage", "arguments": { "action": "patch", "skill": "deploy-checks",
      "old_string": "1. Build with `npm build`.", "new_string": "1. Build with `npm run build` (there is no `npm build` script)." } } },
  { "text": "Fixed deploy-checks: step 1 now says `npm run build`. The old text is backed up; `/selfskills history deploy-checks` lists it." }
]
SCRIPT

(cd "$project" && node "$cli" install "$root" >/dev/null)

wait_for() {
	for _ in $(seq 1 150); do
		tmux -S "$sock" capture-pane -p -t shot | grep -qF -- "$1" && return 0
		sleep 0.2
	done
	echo "timed out waiting for: $1" >&2
	tmux -S "$sock" capture-pane -p -t shot >&2
	return 1
}

# extended keys on, as pi asks of tmux (otherwise its start-up tip about them takes the top of the screen)
printf 'set -g extended-keys on\nset -g status off\n' >"$tmp/tmux.conf"
tmux -S "$sock" -f "$tmp/tmux.conf" new-session -d -s shot -x "$cols" -y "$rows" -c "$project" \
	env TERM=xterm-256color COLORTERM=truecolor FAUX_SCRIPT="$tmp/script.json" \
	node "$cli" --no-session -e "$root/test/fixtures/faux-cli-ext.ts" --provider faux --model faux-1
wait_for "faux-1"
tmux -S "$sock" send-keys -t shot -l "npm build failed on staging: there is no build script by that name. Fix the deploy skill."
tmux -S "$sock" send-keys -t shot Enter
wait_for "lists it."
sleep 0.5
tmux -S "$sock" capture-pane -e -N -p -t shot >"$tmp/pane.ansi"

# aha keeps the colours; the page is sized to the pane so the screenshot has no margin to crop.
aha --black --title "pi-selfskills: a skill_manage patch in pi's TUI" <"$tmp/pane.ansi" >"$tmp/pane.html"
sed -i 's|<head>|<head><style>body{margin:0;padding:12px 16px;background:#000;} pre{margin:0;font:15px/19px "DejaVu Sans Mono",monospace;} span{padding:1px 0;}</style>|' "$tmp/pane.html"
width=$((cols * 9 + 32)) height=$((rows * 19 + 24))
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
	--window-size="$width,$height" --screenshot="$out" "file://$tmp/pane.html" >/dev/null 2>&1
echo "wrote $out ($(stat -c %s "$out") bytes)"
