#!/usr/bin/env bash
# blindmatch benchmarks (not tests): criterion benches for the native NTT and
# pointwise kernels against tfhe-ntt on the same prime, BFV operations and the
# matching circuits against Microsoft SEAL 4.x (tenseal.sealapi, in a venv
# this script creates), sizes on the wire, and a Node bench of the wasm build
# with and without simd128.
#
# Writes bench/results.tsv (area, op, ours_us, peer, peer_us, ratio; ratio =
# peer_us / ours_us, so > 1 means blindmatch is faster) and bench/REPORT.md.
#
#   scripts/bench.sh                    full run
#   scripts/bench.sh --quick            short measurement times, smaller
#                                       galleries, no Chromium page bench and
#                                       no HTTP load, hostile-traffic or scale run (about 2 minutes once
#                                       everything is built)
#   scripts/bench.sh [--quick] --check-rows FILE
#                                       only checks that FILE (a results.tsv)
#                                       has every row such a run must write
#
# The run stops with a non-zero exit and says why when a step fails (a bench
# that does not build or panics, a peer that fails) or when bench/results.tsv
# lacks a row it must have. The wasm packages come from scripts/build-wasm.sh
# (into pkg/), which both the NTT bench and the node-seal comparison load.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

usage() {
  echo "usage: scripts/bench.sh [--quick] [--check-rows RESULTS_TSV]"
}
die() {
  echo "bench.sh: $*" >&2
  exit 1
}

QUICK=0
QFLAG=()
CHECK_ONLY=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --quick)
      QUICK=1
      QFLAG=(--quick)
      ;;
    --check-rows)
      [ "$#" -ge 2 ] || { usage >&2; exit 2; }
      CHECK_ONLY="$2"
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      echo "bench.sh: unknown argument: $1" >&2
      usage >&2
      exit 2
      ;;
  esac
  shift
done
COMMAND="scripts/bench.sh"
[ "$QUICK" = 0 ] || COMMAND="scripts/bench.sh --quick"

# The (area, op) rows every run writes, one "area<TAB>op" per line; the
# chromium page, the HTTP load run and its floors only in full runs, the
# native SIMD kernels when this CPU has them.
expected_rows() {
  local n op b
  local kernels=(scalar)
  grep -qw avx2 /proc/cpuinfo 2>/dev/null && kernels+=(avx2)
  for n in 2048 4096 8192; do
    for b in "${kernels[@]}"; do
      printf 'ntt\tforward/%s/%s\nntt\tinverse/%s/%s\n' "$n" "$b" "$n" "$b"
      printf 'pointwise\tmul_acc/%s/%s\n' "$n" "$b"
    done
    for op in forward inverse; do
      printf 'wasm\t%s/%s/simd128-vs-baseline-build\n' "$op" "$n"
      printf 'wasm\t%s/%s/simd128-vs-scalar-kernels\n' "$op" "$n"
    done
  done
  if [ "${#kernels[@]}" -gt 1 ]; then
    printf 'pointwise\tdot2_blocks/4096/avx2\npointwise\tdot2_blocks_pair/4096/avx2\n'
  fi
  for op in keygen_secret keygen_public keygen_relin encrypt_public encrypt_secret decrypt \
    multiply relinearize multiply_relin multiply_plain multiply_plain_ntt rotate_rows add; do
    printf 'bfv\t%s\n' "$op"
  done
  for op in verify verify_compact verify_unprepared verify_no_relin identify_scores_1core \
    identify_full_1core identify_encrypted_probe_1core client_encrypt_probe \
    client_decrypt_scores client_decrypt_score_reply; do
    printf 'matching\t%s\n' "$op"
  done
  local engines=(node)
  [ "$QUICK" = 1 ] || engines+=(chromium)
  local e
  for e in "${engines[@]}"; do
    for op in keygen keygen_secret keygen_public keygen_relin encode encrypt_secret \
      encrypt_public decrypt decode add multiply relinearize multiply_relin multiply_plain; do
      printf 'wasm-%s\t%s\n' "$e" "$op"
    done
    for op in keygen encrypt_secret encrypt_public decrypt multiply_relin; do
      printf 'floor\twasm-%s/%s\n' "$e" "$op"
    done
  done
  for op in matcher decider total hardened_matcher hardened_decider hardened_total total_allcores_per_verdict \
    identify_1k_matcher identify_1k_decider; do
    printf 'login\t%s\n' "$op"
  done
  printf 'server\tverify_1to1/threads=1\nserver\tidentify_1toN/threads=1\n'
  if [ "$QUICK" = 0 ]; then
    printf 'http\tverify/4clients/rate\nhttp\tverify/4clients/p50\nhttp\tverify/4clients/p99\n'
  fi
}

# Fails, listing them, when rows that expected_rows names are missing from
# the results file $1.
check_rows() {
  local file="$1"
  [ -f "$file" ] || die "no results file $file"
  local missing
  missing="$(expected_rows | grep -vxF -f <(cut -f1,2 "$file") || true)"
  if [ -n "$missing" ]; then
    echo "bench.sh: $file lacks $(wc -l <<<"$missing") expected row(s) (area, op):" >&2
    sed 's/\t/ /; s/^/  /' <<<"$missing" >&2
    exit 1
  fi
  echo "bench.sh: $file has all $(expected_rows | wc -l) expected rows"
}

if [ -n "$CHECK_ONLY" ]; then
  check_rows "$CHECK_ONLY"
  exit 0
fi

LOGS="$ROOT/target/bench-logs"
mkdir -p "$LOGS"

# Runs "$@" with its output in $LOGS/$1.log (the first argument is the log's
# name, the rest the command); on failure shows the log's end and stops.
logged() {
  local name="$1"
  shift
  if ! "$@" >"$LOGS/$name.log" 2>&1; then
    tail -n 40 "$LOGS/$name.log" >&2
    die "$name failed (exit status above; full log: $LOGS/$name.log)"
  fi
}

# The output of "$@" (stdout only; stderr to $LOGS/$1.log), which must
# succeed and print something.
rows_of() {
  local name="$1" out
  shift
  if ! out="$("$@" 2>"$LOGS/$name.log")"; then
    tail -n 40 "$LOGS/$name.log" >&2
    die "$name failed (full log: $LOGS/$name.log)"
  fi
  [ -n "$out" ] || die "$name printed no rows (log: $LOGS/$name.log)"
  printf '%s\n' "$out"
}

bash scripts/setup.sh

if [ "$QUICK" = 1 ]; then
  CRIT_ARGS=(--warm-up-time 0.1 --measurement-time 0.3 --sample-size 10)
else
  CRIT_ARGS=(--warm-up-time 1 --measurement-time 3)
fi

echo "== native: criterion (cargo bench --features server --bench ntt --bench bfv --bench matching --bench login) =="
rm -rf target/criterion
# The bench names and times as they come; everything in the log.
set +e
cargo bench --features server --bench ntt --bench bfv --bench matching --bench login -- "${CRIT_ARGS[@]}" 2>&1 \
  | tee "$LOGS/criterion.log" | { grep -E '^(forward|inverse|mul|mul_acc|bfv|matching|login)/|time:' || true; }
rc="${PIPESTATUS[0]}"
set -e
if [ "$rc" != 0 ]; then
  tail -n 40 "$LOGS/criterion.log" >&2
  die "cargo bench failed (exit $rc; full log: $LOGS/criterion.log)"
fi

echo "== server: blindmatch-server bench (1:1 and 1:N throughput, one core and all cores) =="
logged server-build cargo build --quiet --release --features server --bin blindmatch-server
if [ "$QUICK" = 1 ]; then GALLERY=32768; else GALLERY=1000000; fi
SERVER_ROWS="$(rows_of server-bench target/release/blindmatch-server bench --verifications 300 --gallery "$GALLERY")"
echo "$SERVER_ROWS"

# Verify over HTTP: full runs only (a release build of the server tests).
HTTP_ROWS=""
HOSTILE_ROWS=""
SCALE_ROWS=""
if [ "$QUICK" = 0 ]; then
  echo "== server: verify over HTTP on loopback (the bounded load test, release build) =="
  logged http-load env BLINDMATCH_LOAD_N=2000 cargo test --quiet --release --features server --test server \
    concurrent_load_loses_nothing -- --nocapture
  HTTP_ROWS="$(grep -E '^load:' "$LOGS/http-load.log" || true)"
  [ -n "$HTTP_ROWS" ] || die "the HTTP load test printed no 'load:' line (log: $LOGS/http-load.log)"
  echo "$HTTP_ROWS"
  echo "== server: under hostile traffic (the bounded attack run, release build) =="
  logged hostile cargo test --quiet --release --features server --test server \
    hostile_traffic_loses_nothing_acknowledged -- --nocapture
  HOSTILE_ROWS="$(grep -E '^hostile:' "$LOGS/hostile.log" || true)"
  [ -n "$HOSTILE_ROWS" ] || die "the hostile-traffic test printed no 'hostile:' line (log: $LOGS/hostile.log)"
  echo "$HOSTILE_ROWS"
  echo "== server: PostgreSQL, replicas and sharded galleries (release; identify over 1,000,000 templates) =="
  logged scale cargo test --quiet --release --features server --test server scale_ -- \
    --ignored --nocapture --test-threads 1
  SCALE_ROWS="$(grep -oE 'scale: .*' "$LOGS/scale.log" | sed 's/^scale: //' || true)"
  [ -n "$SCALE_ROWS" ] || die "the scale benches printed no 'scale:' line (log: $LOGS/scale.log)"
  echo "$SCALE_ROWS"
fi

echo "== transforms per BFV operation (the floors' counts) =="
TRANSFORM_ROWS="$(rows_of transforms cargo run --quiet --release --example transforms --features count-transforms)"
echo "$TRANSFORM_ROWS"

echo "== sizes on the wire =="
SIZE_ROWS="$(rows_of sizes cargo run --quiet --release --example sizes)"
echo "$SIZE_ROWS"

echo "== Microsoft SEAL (through tenseal.sealapi, same machine, same run) =="
SEAL_PY="$(bash scripts/seal_env.sh)" || die "scripts/seal_env.sh failed"
SEAL_ROWS="$(rows_of seal "$SEAL_PY" scripts/bench_seal.py "${QFLAG[@]}")"
echo "$SEAL_ROWS"

echo "== wasm: the npm package, simd128 and baseline builds (scripts/build-wasm.sh) =="
logged build-wasm bash scripts/build-wasm.sh "$ROOT/pkg"

# A login in headless Chromium on loopback, release server: full runs only.
LOGIN_E2E_ROWS=""
if [ "$QUICK" = 0 ]; then
  echo "== login mode in Chromium: decider, matcher, relying party on loopback (release) =="
  logged login-e2e env BLINDMATCH_SERVER="$ROOT/target/release/blindmatch-server" \
    node --test tests/js/login.test.mjs
  LOGIN_E2E_ROWS="$(sed -n 's/^# genuine login: //p' "$LOGS/login-e2e.log")"
  [ -n "$LOGIN_E2E_ROWS" ] || die "the Chromium login test printed no timings (log: $LOGS/login-e2e.log)"
  echo "$LOGIN_E2E_ROWS"
fi

# The demo's face model in headless Chromium (bench/face_model.mjs): full runs only.
FACE_ROWS=""
if [ "$QUICK" = 0 ]; then
  echo "== the demo's face model in Chromium: load, one 640x480 frame (page thread, Worker) =="
  FACE_ROWS="$(rows_of face-model node bench/face_model.mjs)"
  echo "$FACE_ROWS"
fi


echo "== wasm: Node bench =="
WASM_ROWS="$(rows_of wasm-ntt node bench/wasm_ntt.mjs "$ROOT/pkg" "${QFLAG[@]}")"
echo "$WASM_ROWS"

echo "== npm package against node-seal 7 (Node 22 and headless Chromium, same process / same page) =="
NODE22="$(bash bench/node_seal/setup.sh)" || die "bench/node_seal/setup.sh failed"
NODESEAL_ROWS="$(rows_of node-seal "$NODE22" bench/node_seal/bench.mjs --pkg "$ROOT/pkg" "${QFLAG[@]}")"
# The headless-Chromium page bench runs in full runs only (it adds ~20 s).
if [ "$QUICK" = 0 ]; then
  NODESEAL_ROWS="$NODESEAL_ROWS
$(rows_of node-seal-page node bench/node_seal/page.mjs --pkg "$ROOT/pkg")"
fi
echo "$NODESEAL_ROWS"

LOGIN_E2E_ROWS="$LOGIN_E2E_ROWS" FACE_ROWS="$FACE_ROWS" TRANSFORM_ROWS="$TRANSFORM_ROWS" HTTP_ROWS="$HTTP_ROWS" HOSTILE_ROWS="$HOSTILE_ROWS" SCALE_ROWS="$SCALE_ROWS" NODESEAL_ROWS="$NODESEAL_ROWS" \
  SERVER_ROWS="$SERVER_ROWS" SIZE_ROWS="$SIZE_ROWS" SEAL_ROWS="$SEAL_ROWS" WASM_ROWS="$WASM_ROWS" \
  COMMAND="$COMMAND" python3 scripts/bench_report.py
echo
cat bench/results.tsv
echo
check_rows bench/results.tsv
echo "wrote bench/results.tsv and bench/REPORT.md"
