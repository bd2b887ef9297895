# Sourced by docs/make-tui-*.sh: the shared steps that photograph the real pi TUI (pi 0.73 from
# node_modules) in tmux, driven by the offline scripted model of test/fixtures/faux-cli-ext.ts.
# Needs tmux, aha and chromium (apt-get install -y tmux aha chromium); nothing in npm test uses it.
# After sourcing: $root, $cli, $tmp, $sock, $home, $agent, $project are set, HOME and PI_CODING_AGENT_DIR
# point into $tmp, the deploy-checks skill exists, and the tmux server is killed and $tmp removed on exit.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="$root/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"
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

# install_package: `pi install` of this checkout into the throw-away agent dir, as users install it.
install_package() {
	(cd "$project" && node "$cli" install "$root" >/dev/null)
}

# start_pi COLS ROWS SCRIPT: pi's TUI in a detached tmux session "shot", playing the FauxStep[] in SCRIPT.
start_pi() {
	# extended keys on, as pi asks of tmux (otherwise its start-up tip about them takes the top of the screen)
	printf 'set -g extended-keys on\nset -g status off\n' >"$tmp/tmux.conf"
	tmux -S "$sock" -f "$tmp/tmux.conf" new-session -d -s shot -x "$1" -y "$2" -c "$project" \
		env TERM=xterm-256color COLORTERM=truecolor FAUX_SCRIPT="$3" \
		node "$cli" --no-session -e "$root/test/fixtures/faux-cli-ext.ts" --provider faux --model faux-1
	wait_for "faux-1"
}

# wait_for TEXT: until TEXT is on screen (30 s).
wait_for() {
	for _ in $(seq 1 150); do
		tmux -S "$sock" capture-pane -p -t shot | grep -qF -- "$1" && return 0
		sleep 0.2
	done
	echo "timed out waiting for: $1" >&2
	tmux -S "$sock" capture-pane -p -t shot >&2
	return 1
}

# type_line TEXT: types TEXT into pi's editor and presses Enter.
type_line() {
	tmux -S "$sock" send-keys -t shot -l "$1"
	tmux -S "$sock" send-keys -t shot Enter
}

# type_command /CMD ARGS: like type_line, but a slash command's completion list ("→ …") takes the first
# Enter (it accepts the highlighted item), so that Enter is pressed first when the list is open.
type_command() {
	tmux -S "$sock" send-keys -t shot -l "$1"
	sleep 0.6
	if tmux -S "$sock" capture-pane -p -t shot | grep -qE '^→ '; then
		tmux -S "$sock" send-keys -t shot Enter
		sleep 0.3
	fi
	tmux -S "$sock" send-keys -t shot Enter
}

# shoot OUT COLS ROWS TITLE: the pane with its colours -> HTML (aha) -> PNG (headless Chromium).
shoot() {
	local out="$1" cols="$2" rows="$3" title="$4"
	tmux -S "$sock" capture-pane -e -N -p -t shot >"$tmp/pane.ansi"
	# aha keeps the colours; the page is sized to the pane so the screenshot has no margin to crop.
	aha --black --title "$title" <"$tmp/pane.ansi" >"$tmp/pane.html"
	sed -i 's|<head>|<head><style>body{margin:0;padding:12px 16px;background:#000;} pre{margin:0;font:15px/19px "DejaVu Sans Mono",monospace;} span{padding:1px 0;}</style>|' "$tmp/pane.html"
	local width=$((cols * 9 + 32)) height=$((rows * 19 + 24))
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
		--window-size="$width,$height" --screenshot="$out" "file://$tmp/pane.html" >/dev/null 2>&1
	echo "wrote $out ($(stat -c %s "$out") bytes)"
}
