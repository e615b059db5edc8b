#!/usr/bin/env bash
# The main command: prepares the machine, builds the npm package (pkg/) and
# the server, and serves the demo login page with the embedded database.
#
#   scripts/demo.sh            # http://127.0.0.1:8080/
#
# Environment (all optional): BLINDMATCH_BIND (default 127.0.0.1:8080),
# BLINDMATCH_DB (default ./data/blindmatch.db), BLINDMATCH_THREADS (default:
# one per core), SKIP_SETUP=1 (do not run scripts/setup.sh),
# SKIP_WASM=1 (keep an existing pkg/). Any arguments are passed to `serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

log() { printf '[demo] %s\n' "$*" >&2; }

if [ "${SKIP_SETUP:-0}" != 1 ]; then
  log "setup (installs only what is missing)"
  scripts/setup.sh
fi

if [ "${SKIP_WASM:-0}" != 1 ] && [ -x scripts/build-wasm.sh ]; then
  log "building the npm package into pkg/"
  scripts/build-wasm.sh pkg
elif [ ! -d pkg ]; then
  log "warning: no pkg/ (scripts/build-wasm.sh missing or SKIP_WASM=1); the page will not load the package"
fi

log "building blindmatch-server (release)"
cargo build --release --features server --bin blindmatch-server

BIND="${BLINDMATCH_BIND:-127.0.0.1:8080}"
DB="${BLINDMATCH_DB:-./data/blindmatch.db}"
mkdir -p "$(dirname "$DB")"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"

log "database: $DB"
log "open http://$BIND/ in a browser (Ctrl-C stops the server)"
exec "$TARGET_DIR/release/blindmatch-server" serve \
  --bind "$BIND" --db "$DB" --www www --pkg pkg "$@"
