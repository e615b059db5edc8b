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
#   scripts/bench.sh           full run
#   scripts/bench.sh --quick   short measurement times, smaller galleries, no
#                              Chromium page bench and no HTTP load run (about
#                              2 minutes once everything is built)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

QUICK=0
QFLAG=()
COMMAND="scripts/bench.sh"
if [ "${1:-}" = "--quick" ]; then
  QUICK=1
  QFLAG=(--quick)
  COMMAND="scripts/bench.sh --quick"
fi

bash scripts/setup.sh

if [ "$QUICK" = 1 ]; then
  CRIT_ARGS=(--warm-up-time 0.1 --measurement-time 0.3 --sample-size 10)
else
  CRIT_ARGS=(--warm-up-time 1 --measurement-time 3)
fi

echo "== native: criterion (cargo bench --bench ntt --bench bfv --bench matching) =="
rm -rf target/criterion
cargo bench --bench ntt --bench bfv --bench matching -- "${CRIT_ARGS[@]}" 2>&1 | grep -E '^(forward|inverse|mul|mul_acc|bfv|matching)/|time:' || true

echo "== server: blindmatch-server bench (1:1 and 1:N throughput, one core and all cores) =="
cargo build --quiet --release --features server --bin blindmatch-server
if [ "$QUICK" = 1 ]; then GALLERY=32768; else GALLERY=1000000; fi
SERVER_ROWS="$(target/release/blindmatch-server bench --verifications 300 --gallery "$GALLERY" 2>/dev/null)"
echo "$SERVER_ROWS"

# Verify over HTTP: full runs only (a release build of the server tests).
HTTP_ROWS=""
if [ "$QUICK" = 0 ]; then
  echo "== server: verify over HTTP on loopback (the bounded load test, release build) =="
  HTTP_ROWS="$(BLINDMATCH_LOAD_N=2000 cargo test --quiet --release --features server --test server \
    concurrent_load_loses_nothing -- --nocapture 2>&1 | grep -E '^load:' || true)"
  echo "$HTTP_ROWS"
fi

echo "== transforms per BFV operation (the floors' counts) =="
TRANSFORM_ROWS="$(cargo run --quiet --release --example transforms --features count-transforms)"
echo "$TRANSFORM_ROWS"

echo "== sizes on the wire =="
SIZE_ROWS="$(cargo run --quiet --release --example sizes)"
echo "$SIZE_ROWS"

echo "== Microsoft SEAL (through tenseal.sealapi, same machine, same run) =="
SEAL_PY="$(bash scripts/seal_env.sh)"
SEAL_ROWS="$("$SEAL_PY" scripts/bench_seal.py "${QFLAG[@]}")"
echo "$SEAL_ROWS"

echo "== wasm: building simd128 and baseline packages for Node =="
WASM_TMP="$ROOT/target/bench-wasm"
rm -rf "$WASM_TMP"
wasm-pack build --release --target nodejs --out-dir "$WASM_TMP/simd" --out-name blindmatch . >/dev/null 2>&1 \
  || wasm-pack build --release --target nodejs --out-dir "$WASM_TMP/simd" --out-name blindmatch .
# RUSTFLAGS replaces the +simd128 flag of .cargo/config.toml: this is the no-SIMD build.
RUSTFLAGS="-C target-feature=-simd128" CARGO_TARGET_DIR="$ROOT/target/wasm-baseline" \
  wasm-pack build --release --target nodejs --out-dir "$WASM_TMP/baseline" --out-name blindmatch . >/dev/null 2>&1 \
  || RUSTFLAGS="-C target-feature=-simd128" CARGO_TARGET_DIR="$ROOT/target/wasm-baseline" \
    wasm-pack build --release --target nodejs --out-dir "$WASM_TMP/baseline" --out-name blindmatch .

echo "== wasm: Node bench =="
WASM_ROWS="$(node bench/wasm_ntt.mjs "$WASM_TMP/simd" "$WASM_TMP/baseline" "${QFLAG[@]}")"
echo "$WASM_ROWS"

echo "== npm package against node-seal 7 (Node 22 and headless Chromium, same process / same page) =="
bash scripts/build-wasm.sh >/dev/null
NODE22="$(bash bench/node_seal/setup.sh)"
NODESEAL_ROWS="$("$NODE22" bench/node_seal/bench.mjs "${QFLAG[@]}")"
# The headless-Chromium page bench runs in full runs only (it adds ~20 s).
if [ "$QUICK" = 0 ]; then
  NODESEAL_ROWS="$NODESEAL_ROWS
$(node bench/node_seal/page.mjs)"
fi
echo "$NODESEAL_ROWS"

TRANSFORM_ROWS="$TRANSFORM_ROWS" HTTP_ROWS="$HTTP_ROWS" NODESEAL_ROWS="$NODESEAL_ROWS" SERVER_ROWS="$SERVER_ROWS" SIZE_ROWS="$SIZE_ROWS" SEAL_ROWS="$SEAL_ROWS" WASM_ROWS="$WASM_ROWS" COMMAND="$COMMAND" python3 scripts/bench_report.py
echo
cat bench/results.tsv
echo
echo "wrote bench/results.tsv and bench/REPORT.md"
