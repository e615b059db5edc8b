#!/usr/bin/env bash
# The main command: prepares the machine, builds the npm package (pkg/) and
# the server, and runs the demo login on loopback with the embedded database:
# the decider (127.0.0.1:8081, the key holder that signs verdicts), the
# matcher (127.0.0.1:8082, no secret key) and a small relying party
# (examples/relying-party/server.mjs, 127.0.0.1:8080: the page's origin, the
# API key's holder, the verifier of verdicts; it passes the page's other
# requests to the matcher). Secrets are generated on first run under ./data/
# (data/api.keys, data/decider/). Ctrl-C stops all three.
#
#   scripts/demo.sh                 # http://127.0.0.1:8080/
#   DEMO_MODE=private scripts/demo.sh   # the matcher alone, the browser holding the key
#
# Environment (all optional): BLINDMATCH_BIND (the page's address, default
# 127.0.0.1:8080), BLINDMATCH_DB (default ./data/blindmatch.db),
# BLINDMATCH_THREADS (default: one per core), DEMO_MODE (login or private),
# SKIP_SETUP=1 (do not run scripts/setup.sh), SKIP_WASM=1 (keep an existing
# pkg/). Any arguments are passed to `serve`.
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
DATA="$(dirname "$DB")"
mkdir -p "$DATA"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
BIN="$TARGET_DIR/release/blindmatch-server"

log "database: $DB"
# The demo's face model (scripts/setup.sh lays it out in target/face): the
# page offers the camera when the server serves it, and the decider takes the
# threshold measured for its descriptors (docs/ACCURACY.md); without it, the
# simulated identities' policy.
FACE_ARGS=()
FACE_THRESHOLD=0.18
if [ -f target/face/VERSION ]; then
  FACE_ARGS=(--face target/face)
  FACE_THRESHOLD=0.96
else
  log "no face model in target/face: the page offers the simulated identities only"
fi
if [ "${DEMO_MODE:-login}" = private ]; then
  log "private mode: open http://$BIND/ in a browser (Ctrl-C stops the server)"
  exec "$BIN" serve --bind "$BIND" --db "$DB" --www www --pkg pkg "${FACE_ARGS[@]}" "$@"
fi

HOST="${BIND%:*}"
DECIDER="$HOST:${DECIDER_PORT:-8081}"
MATCHER="$HOST:${MATCHER_PORT:-8082}"
if [ ! -s "$DATA/api.keys" ]; then
  log "generating the relying party's API key in $DATA/api.keys"
  (umask 077 && printf '# the demo relying party\n%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$DATA/api.keys")
fi

pids=()
stop() {
  trap - INT TERM EXIT
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

# Waits until $1 answers GET /healthz (or /rp/config).
wait_up() {
  for _ in $(seq 1 100); do
    if curl -fsS -o /dev/null "http://$1$2" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  log "nothing answers at http://$1$2"
  return 1
}

# The policy: the mean over the enrolled captures, at the face model's
# threshold (0.96 for face-api's descriptors; the demo identities are then
# simulated in their geometry) or, without the model, at 0.18 (the
# simulated identities' equal-error point: www/embeddings.js).
"$BIN" decide --init --dir "$DATA/decider" --bind "$DECIDER" --issuer "http://$DECIDER" \
  --rule "${DEMO_RULE:-mean}" --threshold "${DEMO_THRESHOLD:-$FACE_THRESHOLD}" &
pids+=($!)
wait_up "$DECIDER" /healthz
"$BIN" serve --bind "$MATCHER" --db "$DB" --www www --pkg pkg "${FACE_ARGS[@]}" \
  --api-key-file "$DATA/api.keys" --decider "http://$DECIDER" \
  --decider-token-file "$DATA/decider/matcher.token" \
  --audience "http://$BIND" --trusted-proxy "$HOST" "$@" &
pids+=($!)
wait_up "$MATCHER" /healthz
node examples/relying-party/server.mjs --bind "$BIND" --matcher "http://$MATCHER" \
  --api-key-file "$DATA/api.keys" --issuer "http://$DECIDER" --audience "http://$BIND" \
  --jwks "http://$DECIDER/.well-known/jwks.json" &
pids+=($!)
wait_up "$BIND" /rp/config
log "open http://$BIND/ in a browser (Ctrl-C stops the decider, the matcher and the relying party)"
wait -n "${pids[@]}"
