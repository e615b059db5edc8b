#!/usr/bin/env bash
# A local cluster to try: PostgreSQL (a private data directory, started as the
# `postgres` user on a loopback port), the decider, two matcher replicas on
# that one database, HAProxy in front of them (deploy/haproxy.cfg) and the
# demo's relying party, whose page talks to the replicas through HAProxy.
# Prints the URL; Ctrl-C (or SIGTERM) stops everything it started.
#
#   scripts/cluster.sh              # http://127.0.0.1:8080/
#
# Ports (environment, all optional): BLINDMATCH_BIND (the page, 127.0.0.1:8080),
# DECIDER_PORT (8081), MATCHER_PORTS ("8082 8083"), HAPROXY_PORT (8090),
# PG_PORT (55432). CLUSTER_DIR (target/cluster) holds the database, the
# secrets and the logs; it is kept between runs. SKIP_SETUP=1, SKIP_WASM=1
# and SKIP_BUILD=1 skip scripts/setup.sh, the npm package build and the
# server build; BLINDMATCH_BIN names another server binary.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

log() { printf '[cluster] %s\n' "$*" >&2; }

if [ "${SKIP_SETUP:-0}" != 1 ]; then
  log "setup (installs only what is missing: PostgreSQL and HAProxy among it)"
  scripts/setup.sh
fi
if [ "${SKIP_WASM:-0}" != 1 ]; then
  log "building the npm package into pkg/"
  scripts/build-wasm.sh pkg
fi
BIN="${BLINDMATCH_BIN:-${CARGO_TARGET_DIR:-target}/release/blindmatch-server}"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  log "building blindmatch-server (release)"
  cargo build --release --features server --bin blindmatch-server
fi

BIND="${BLINDMATCH_BIND:-127.0.0.1:8080}"
HOST="${BIND%:*}"
DECIDER="$HOST:${DECIDER_PORT:-8081}"
read -r -a MATCHER_PORT_LIST <<<"${MATCHER_PORTS:-8082 8083}"
MATCHER_A="$HOST:${MATCHER_PORT_LIST[0]}"
MATCHER_B="$HOST:${MATCHER_PORT_LIST[1]}"
FRONT="$HOST:${HAPROXY_PORT:-8090}"
PG_PORT="${PG_PORT:-55432}"
DIR="$(mkdir -p "${CLUSTER_DIR:-target/cluster}" && cd "${CLUSTER_DIR:-target/cluster}" && pwd)"

PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
if [ -z "$PG_BIN" ]; then
  log "PostgreSQL is not installed (run scripts/setup.sh)"
  exit 1
fi
# PostgreSQL refuses to run as root: as root, its tools run as `postgres`.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pids=()
pg_started=0
stop() {
  trap - INT TERM EXIT
  log "stopping"
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  if [ "$pg_started" = 1 ]; then
    as_pg "$PG_BIN/pg_ctl" -D "$DIR/pg/data" -m fast -w stop >/dev/null || true
  fi
}
trap stop INT TERM EXIT

# --- PostgreSQL ---------------------------------------------------------------
if [ ! -f "$DIR/pg/data/PG_VERSION" ]; then
  log "creating a PostgreSQL cluster in $DIR/pg (role bm, trust on loopback)"
  mkdir -p "$DIR/pg"
  [ "$(id -u)" = 0 ] && chown postgres "$DIR/pg"
  as_pg "$PG_BIN/initdb" -D "$DIR/pg/data" -A trust -U bm >"$DIR/pg/initdb.log"
fi
[ "$(id -u)" = 0 ] && chown postgres "$DIR/pg"
as_pg "$PG_BIN/pg_ctl" -D "$DIR/pg/data" -l "$DIR/pg/log" -w \
  -o "-k $DIR/pg -p $PG_PORT -c listen_addresses=$HOST" start >/dev/null
pg_started=1
DB="postgres://bm@$HOST:$PG_PORT/postgres"
log "PostgreSQL on $HOST:$PG_PORT"

wait_up() {
  for _ in $(seq 1 150); do
    if curl -fsS -o /dev/null -H "Host: ${3:-$1}" "http://$1$2" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  log "nothing answers at http://$1$2"
  return 1
}

if [ ! -s "$DIR/api.keys" ]; then
  (umask 077 && printf '# the demo relying party\n%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$DIR/api.keys")
fi
FACE_ARGS=()
THRESHOLD=0.18
if [ -f target/face/VERSION ]; then
  FACE_ARGS=(--face target/face)
  THRESHOLD=0.96
fi

# --- the decider, the replicas, HAProxy, the relying party ---------------------
"$BIN" decide --init --dir "$DIR/decider" --bind "$DECIDER" --issuer "http://$DECIDER" \
  --rule mean --threshold "$THRESHOLD" >/dev/null 2>>"$DIR/decider.log" &
pids+=($!)
wait_up "$DECIDER" /healthz
for m in "$MATCHER_A" "$MATCHER_B"; do
  "$BIN" serve --bind "$m" --db "$DB" --www www --pkg pkg "${FACE_ARGS[@]}" \
    --api-key-file "$DIR/api.keys" --decider "http://$DECIDER" \
    --decider-token-file "$DIR/decider/matcher.token" \
    --audience "http://$BIND" --trusted-proxy "$HOST" --allowed-host "$FRONT" --allowed-host "$m" \
    >/dev/null 2>>"$DIR/matcher-${m##*:}.log" &
  pids+=($!)
  wait_up "$m" /healthz
done
BM_FRONT="$FRONT" BM_MATCHER_A="$MATCHER_A" BM_MATCHER_B="$MATCHER_B" \
  haproxy -db -f deploy/haproxy.cfg >>"$DIR/haproxy.log" 2>&1 &
pids+=($!)
wait_up "$FRONT" /healthz
node examples/relying-party/server.mjs --bind "$BIND" --matcher "http://$FRONT" \
  --api-key-file "$DIR/api.keys" --issuer "http://$DECIDER" --audience "http://$BIND" \
  --jwks "http://$DECIDER/.well-known/jwks.json" >/dev/null 2>>"$DIR/relying-party.log" &
pids+=($!)
wait_up "$BIND" /rp/config

log "PostgreSQL $HOST:$PG_PORT, decider $DECIDER, matchers $MATCHER_A $MATCHER_B, HAProxy $FRONT"
log "logs in $DIR; Ctrl-C stops everything"
echo "blindmatch cluster at http://$BIND/"
wait -n "${pids[@]}"
