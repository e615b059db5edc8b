#!/usr/bin/env bash
# blindmatch's full check: formatting, clippy on every target, and the shared
# correctness suite (tests/suite/) natively, on aarch64 under qemu, and on
# wasm32 in Node and in headless Chromium. This is what CI runs (.ci/run).
#
#   scripts/test.sh              every step (what CI runs); from any directory,
#                                needs no tty and no stdin
#   scripts/test.sh STEP...      only the named steps, in the usual order (not
#                                the order given), e.g. `scripts/test.sh fmt kat`
#   scripts/test.sh --help       the list of steps
#
# `setup` always runs first, named or not: nothing below means anything
# without the toolchain, and it takes seconds when everything is installed.
# `js` needs the package, so naming it also runs `build-wasm`. An unknown
# step name is refused (exit 2, before anything runs) with the list of steps.
#
# Steps, in order (each one's output is shown and also saved to
# target/test-logs/NN-<step>.log):
#
#   setup           scripts/setup.sh installs whatever is missing (fatal on failure)
#   fmt             cargo fmt --check
#   clippy-*        -D warnings for x86_64 (all targets), aarch64+neon (all
#                   targets) and wasm32 (lib + tests)
#   kat             python3 scripts/gen_kat.py --check (if the script exists)
#   native          cargo test --all-targets, then the doc tests
#   attacks         the well-formedness attacks at full count, release build
#   avx512          scripts/avx512.sh: the unit tests and the suite with every
#                   family on AVX-512, on an emulated Skylake-X (Bochs) when
#                   this CPU has no AVX-512F
#   aarch64         the native tests cross-compiled with --features neon, run by qemu
#   wasm-node       wasm-pack test --node              (tests/node.rs)
#   wasm-browser    wasm-pack test --headless --chrome (tests/web.rs)
#   build-wasm      scripts/build-wasm.sh: the npm package into pkg/
#   js              node --test tests/js/ against that package
#
# Each test build is compiled with BLINDMATCH_REQUIRE_BACKEND (avx2 when the
# CPU has it, avx512, neon, simd128), so a build that silently fell back to the scalar
# kernels fails instead of passing while testing scalar against itself (see
# backends() in tests/suite/oracle.rs). The native step tests avx512 when the
# CPU has it; the avx512 step tests it on every machine, emulated where the
# CPU lacks it.
#
# The browser step runs once more, and says so in its note, when ChromeDriver
# loses the headless renderer ("Timed out receiving message from renderer")
# before any test has failed: that is the driver's failure, and only the
# second run counts; a second loss, or any failed test, fails the step.
#
# Every step runs even if an earlier one failed. A test step fails if it exits
# non-zero, reports a failed test, executes zero tests, or executes zero tests
# in the binary it exists for (e.g. tests/web.rs in the browser: a
# browser-only binary is silently skipped by the Node runner and vice versa).
# Counts come from the `test result: ok. N passed; M failed; ...` lines that
# both libtest and wasm-bindgen-test-runner (Node and browser) print.
#
# The last line of output is always exactly `N passed, M failed`: N and M are
# the executed tests summed over all test steps; M also counts one for each
# step that failed without reporting a failed test (a compile error, fmt,
# clippy, a timeout, zero tests run), so M is 0 exactly when the script
# exits 0. (A refused command line prints the usage instead.)
#
# Do not set RUSTFLAGS: it replaces the `+simd128` flags of .cargo/config.toml
# (the script stops with an error, after setup, if any of them is set).

set -euo pipefail
shopt -s inherit_errexit 2>/dev/null || true

STEPS=(setup fmt clippy-x86_64 clippy-aarch64 clippy-wasm32 kat native native-doc attacks avx512
  aarch64 aarch64-doc aarch64-server wasm-node wasm-browser build-wasm js)

usage() {
  printf 'usage: scripts/test.sh [STEP...]\n'
  printf 'steps (run in this order; setup always runs): %s\n' "${STEPS[*]}"
}

# Whether $1 is one of the words after it.
one_of() {
  local x="$1" w
  shift
  for w in "$@"; do [ "$w" = "$x" ] && return 0; done
  return 1
}

SELECTED=()
for arg in "$@"; do
  case "$arg" in
    -h | --help)
      usage
      exit 0
      ;;
  esac
  if ! one_of "$arg" "${STEPS[@]}"; then
    printf 'test.sh: unknown step %q\n' "$arg" >&2
    usage >&2
    exit 2
  fi
  SELECTED+=("$arg")
done
if one_of js "${SELECTED[@]}"; then SELECTED+=(build-wasm); fi

# Whether step $1 runs: every step when none is named.
want() {
  [ "${#SELECTED[@]}" = 0 ] || one_of "$1" "${SELECTED[@]}"
}

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

export PATH="${CARGO_HOME:-${HOME:-/root}/.cargo}/bin:$PATH"
export CARGO_TERM_COLOR=never
export CARGO_TERM_PROGRESS_WHEN=never
# Only the steps below decide which backend a build must exercise.
unset BLINDMATCH_REQUIRE_BACKEND
# Browser (and Node) tests: the runner's default is 20 s.
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-300}"

LOG_DIR="$ROOT/target/test-logs"
mkdir -p "$LOG_DIR"
rm -f "$LOG_DIR"/*.log "$LOG_DIR"/.pgid "$LOG_DIR"/.rc

T0=$SECONDS
STEP_NO=0
TOTAL_PASSED=0
TOTAL_FAILED=0
ANY_FAILED=0
SUMMARY=()
CUR_PGID_FILE=""

section() {
  printf '\n======================================================================\n'
  printf '== %s\n' "$*"
  printf '======================================================================\n'
}

# Runs "$@" with stdin from /dev/null, output shown and saved to $LOG, in a
# session of its own, stopped after $LIMIT seconds. Whatever it leaves behind
# in that session (a Chromium after a browser-test timeout, which would also
# keep the log pipe open) is killed afterwards. Sets RC.
run_logged() {
  local name="$1" limit="$2"
  shift 2
  STEP_NO=$((STEP_NO + 1))
  LOG="$LOG_DIR/$(printf '%02d' "$STEP_NO")-$name.log"
  local pgid_file="$LOG_DIR/.pgid" rc_file="$LOG_DIR/.rc"
  rm -f "$pgid_file" "$rc_file"
  CUR_PGID_FILE="$pgid_file"
  printf '$ %s\n' "$*" | tee "$LOG"
  (
    set +e
    # shellcheck disable=SC2016
    setsid -w bash -c 'echo $$ >"$1"; shift; exec timeout --foreground -k 30 "$@"' \
      _ "$pgid_file" "$limit" "$@" </dev/null 2>&1
    rc=$?
    echo "$rc" >"$rc_file"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      echo "*** $name: stopped after the ${limit}s limit (exit $rc)"
    fi
    kill_session "$pgid_file"
    exit 0
  ) | tee -a "$LOG" &
  wait $! || true
  CUR_PGID_FILE=""
  RC="$(cat "$rc_file" 2>/dev/null || echo 1)"
}

kill_session() {
  local pg
  pg="$(cat "$1" 2>/dev/null || true)"
  [ -n "$pg" ] || return 0
  if kill -0 -- "-$pg" 2>/dev/null; then
    kill -TERM -- "-$pg" 2>/dev/null || true
    sleep 2
    kill -KILL -- "-$pg" 2>/dev/null || true
  fi
}

record() { # name result passed failed seconds note
  SUMMARY+=("$(printf '%-16s %-5s %7s %7s %6ss  %s' "$1" "$2" "$3" "$4" "$5" "$6")")
}

finish() {
  local code="$1"
  section "summary (logs in $LOG_DIR)"
  printf '%-16s %-5s %7s %7s %7s  %s\n' step result passed failed time note
  local line
  for line in "${SUMMARY[@]}"; do printf '%s\n' "$line"; done
  printf 'total wall time: %ss\n' "$((SECONDS - T0))"
  if [ "$code" = 0 ]; then
    printf 'all steps passed\n'
  else
    printf 'FAILED (exit %s)\n' "$code"
  fi
  printf '%s passed, %s failed\n' "$TOTAL_PASSED" "$TOTAL_FAILED"
  exit "$code"
}

on_signal() {
  trap - INT TERM
  [ -n "$CUR_PGID_FILE" ] && kill_session "$CUR_PGID_FILE"
  wait 2>/dev/null || true
  record "(interrupted)" FAIL - 1 0 "stopped by a signal"
  TOTAL_FAILED=$((TOTAL_FAILED + 1))
  finish 130
}
trap on_signal INT TERM

# A step that passes or fails as a whole (setup, fmt, clippy, kat).
check() { # name limit cmd...
  local name="$1" limit="$2"
  shift 2
  section "$name"
  local start=$SECONDS
  run_logged "$name" "$limit" "$@"
  local secs=$((SECONDS - start))
  if [ "$RC" = 0 ]; then
    record "$name" ok - - "$secs" ""
    return 0
  fi
  record "$name" FAIL - 1 "$secs" "exit $RC"
  TOTAL_FAILED=$((TOTAL_FAILED + 1))
  ANY_FAILED=1
  return 1
}

# Sums the `test result:` lines of a log. Prints "passed failed in_binary":
# in_binary is the number executed by the binary whose cargo header
# ("Running tests/x.rs (...)" or "Doc-tests crate") contains $2.
count_tests() { # log binary
  # Line 1 is the command itself.
  sed '1d; s/\x1b\[[0-9;]*[A-Za-z]//g' "$1" | awk -v want="$2" '
    # cargo: "     Running tests/web.rs (target/.../web-0123.wasm)"; not
    # the browser runner line "Running headless tests in Chrome on `http://...`".
    /^ +Running .* \([^()]*\)[[:space:]]*$/ { cur = $0; next }
    /^ +Doc-tests [^ ]+[[:space:]]*$/ { cur = $0; next }
    # node --test --test-reporter=tap closes with "# pass N" / "# fail M".
    /^# pass [0-9]+[[:space:]]*$/ { P += $3; if (want != "") B += $3; next }
    /^# fail [0-9]+[[:space:]]*$/ { F += $3; if (want != "") B += $3; next }
    /test result: (ok|FAILED)\. [0-9]+ passed; [0-9]+ failed/ {
      match($0, /[0-9]+ passed/); p = substr($0, RSTART, RLENGTH) + 0
      match($0, /[0-9]+ failed/); f = substr($0, RSTART, RLENGTH) + 0
      P += p; F += f
      if (want != "" && index(cur, want) > 0) B += p + f
    }
    END { printf "%d %d %d\n", P, F, B }'
}

# Whether the log $1 shows ChromeDriver losing the headless renderer (its
# "Timed out receiving message from renderer") with no test reported failed.
lost_renderer() {
  grep -q 'Timed out receiving message from renderer' "$1" && ! grep -q 'test result: FAILED' "$1"
}

# A step that runs tests: fails on a non-zero exit, a failed test, zero tests
# executed, or zero tests executed by the binary named $2 (if given).
test_run() { # name binary limit cmd...
  local name="$1" binary="$2" limit="$3"
  shift 3
  section "$name"
  local start=$SECONDS
  run_logged "$name" "$limit" "$@"
  local retried=""
  if [ "${RETRY_LOST_RENDERER:-0}" = 1 ] && [ "$RC" != 0 ] && lost_renderer "$LOG"; then
    # ChromeDriver lost the headless renderer: the driver's failure, not a
    # test's. The step runs once more and only that run counts; the first
    # run's log is kept beside it.
    mv "$LOG" "${LOG%.log}.lost-renderer.log"
    echo "*** $name: ChromeDriver lost the renderer before any test failed; running the step once more"
    STEP_NO=$((STEP_NO - 1))
    run_logged "$name" "$limit" "$@"
    retried="retried once after ChromeDriver lost the renderer"
  fi
  local secs=$((SECONDS - start)) passed failed in_bin
  read -r passed failed in_bin < <(count_tests "$LOG" "$binary")
  local notes=()
  [ "$RC" = 0 ] || notes+=("exit $RC")
  [ -z "$retried" ] || [ "$RC" = 0 ] || notes+=("$retried")
  [ "$failed" = 0 ] || notes+=("$failed test(s) failed")
  [ $((passed + failed)) -gt 0 ] || notes+=("executed zero tests")
  if [ -n "$binary" ] && [ "$in_bin" = 0 ] && [ $((passed + failed)) -gt 0 ]; then
    notes+=("executed zero tests in $binary")
  fi
  TOTAL_PASSED=$((TOTAL_PASSED + passed))
  TOTAL_FAILED=$((TOTAL_FAILED + failed))
  if [ "${#notes[@]}" = 0 ]; then
    local note="${binary:+$binary: $in_bin}"
    [ -z "$retried" ] || note="${note:+$note; }$retried"
    record "$name" ok "$passed" "$failed" "$secs" "$note"
    echo "--> $name: ok, $passed passed, $failed failed"
    return 0
  fi
  # Count a step that failed without a failed test as one failure.
  if [ "$failed" = 0 ]; then TOTAL_FAILED=$((TOTAL_FAILED + 1)); failed=1; fi
  local why n
  why="${notes[0]}"
  for n in "${notes[@]:1}"; do why="$why; $n"; done
  record "$name" FAIL "$passed" "$failed" "$secs" "$why"
  echo "--> $name: FAILED ($why)"
  ANY_FAILED=1
  return 1
}

MIN=60

# --- setup -------------------------------------------------------------------
# Without the toolchain nothing below means anything, so this one is fatal.
check setup $((45 * MIN)) bash scripts/setup.sh || finish 1

if [ -n "${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-}${CARGO_BUILD_RUSTFLAGS:-}" ]; then
  echo "RUSTFLAGS / CARGO_ENCODED_RUSTFLAGS / CARGO_BUILD_RUSTFLAGS is set; it would" >&2
  echo "replace the +simd128 flags of .cargo/config.toml. Unset it and run again." >&2
  record rustflags FAIL - 1 0 "RUSTFLAGS set in the environment"
  TOTAL_FAILED=$((TOTAL_FAILED + 1))
  finish 1
fi

# --- static checks -------------------------------------------------------------
if want fmt; then
  check fmt $((5 * MIN)) cargo fmt --check -- --color=never || true
fi
# count-transforms adds examples/transforms.rs (the bench's floor counts).
if want clippy-x86_64; then
  check clippy-x86_64 $((20 * MIN)) \
    cargo clippy --all-targets --features server,count-transforms -- -D warnings || true
fi
if want clippy-aarch64; then
  check clippy-aarch64 $((20 * MIN)) \
    cargo clippy --all-targets --target aarch64-unknown-linux-gnu --features neon -- -D warnings || true
fi
# Benches are native only (criterion is not a wasm32 dependency).
if want clippy-wasm32; then
  check clippy-wasm32 $((20 * MIN)) \
    cargo clippy --lib --tests --target wasm32-unknown-unknown -- -D warnings || true
fi
# The known answers and docs/FORMAT.md's worked examples.
if want kat && [ -f scripts/gen_kat.py ]; then
  check kat $((10 * MIN)) python3 scripts/gen_kat.py --check || true
fi

# --- native (x86_64) -------------------------------------------------------------
if grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
  NATIVE_ENV=(env BLINDMATCH_REQUIRE_BACKEND=avx2)
else
  if want native || want native-doc; then
    echo "NOTE: this CPU has no AVX2; the native run tests the scalar backend only" >&2
  fi
  NATIVE_ENV=(env)
fi
# avx512 is compiled in and tested natively whenever the CPU has it, but not
# required there (CI machines may lack it); the avx512 step below covers it.
# Benches are left out of test runs (their setup builds a 100 000-template
# gallery); clippy above still compiles them.
TEST_TARGETS=(--lib --bins --tests --examples)
# With the server feature: tests/server/ starts the real blindmatch-server
# binary on loopback (full flows, errors, 10 000 corrupted bodies, kill -9
# durability, a bounded load test).
if want native; then
  test_run native tests/native.rs $((30 * MIN)) \
    "${NATIVE_ENV[@]}" cargo test --features server "${TEST_TARGETS[@]}" --no-fail-fast || true
fi
if want native-doc; then
  test_run native-doc "" $((15 * MIN)) \
    "${NATIVE_ENV[@]}" cargo test --doc --no-fail-fast || true
fi

# --- the well-formedness attacks at full count (release build) -------------------
# 10 000 probes with coefficients uniform mod t, each through the matcher's
# checks and the decider's reads; debug builds and emulation run 8.
if want attacks; then
  test_run attacks "" $((15 * MIN)) \
    "${NATIVE_ENV[@]}" cargo test --release --lib wellformed --no-fail-fast || true
fi

# --- AVX-512, natively or on an emulated CPU ----------------------------------------
if want avx512; then
  test_run avx512 tests/native.rs $((30 * MIN)) bash scripts/avx512.sh || true
fi

# --- aarch64 + NEON under qemu (.cargo/config.toml sets linker and runner) -------
A64=(--target aarch64-unknown-linux-gnu --features neon)
if want aarch64; then
  test_run aarch64 tests/native.rs $((40 * MIN)) \
    env BLINDMATCH_REQUIRE_BACKEND=neon cargo test "${A64[@]}" "${TEST_TARGETS[@]}" --no-fail-fast || true
fi
if want aarch64-doc; then
  test_run aarch64-doc "" $((15 * MIN)) \
    env BLINDMATCH_REQUIRE_BACKEND=neon cargo test "${A64[@]}" --doc --no-fail-fast || true
fi
# The server on aarch64 (NEON multiply path), its binary run under qemu by the
# test itself; release build, with the load and mutation counts scaled to
# emulation speed.
if want aarch64-server; then
  test_run aarch64-server tests/server/main.rs $((40 * MIN)) \
    env BLINDMATCH_REQUIRE_BACKEND=neon \
    BLINDMATCH_TEST_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" \
    BLINDMATCH_LOAD_N=200 BLINDMATCH_MUTATIONS=2000 \
    cargo test --release --target aarch64-unknown-linux-gnu --features server,neon --test server || true
fi

# --- wasm32 + simd128 --------------------------------------------------------------
# `--lib --test '*'` (passed to both cargo build and cargo test by wasm-pack)
# leaves out the doc tests: on wasm32 they are built but the runner finds no
# #[wasm_bindgen_test] in them and exits 0, so they would "pass" unrun.
# Debug builds: the whole suite takes seconds in either runner.
if want wasm-node; then
  test_run wasm-node tests/node.rs $((30 * MIN)) \
    env BLINDMATCH_REQUIRE_BACKEND=simd128 wasm-pack test --node -- --lib --test '*' || true
fi
if want wasm-browser; then
  RETRY_LOST_RENDERER=1 test_run wasm-browser tests/web.rs $((30 * MIN)) \
    env BLINDMATCH_REQUIRE_BACKEND=simd128 wasm-pack test --headless --chrome -- --lib --test '*' || true
fi


# --- the npm package ------------------------------------------------------------
# Release builds (simd128 and baseline) into pkg/, then Node's test runner
# against the package as a user imports it, including a headless-Chromium page
# with a Web Worker and a strict TypeScript check of the declarations. A
# skipped test fails the step: here every prerequisite is installed.
if want build-wasm && check build-wasm $((30 * MIN)) bash scripts/build-wasm.sh && want js; then
  export TSC="$ROOT/target/tools/node_modules/.bin/tsc"
  export CHROMIUM=/usr/bin/chromium
  test_run js "" $((15 * MIN)) node --test --test-reporter=tap tests/js/ || true
  if grep -Eq '^# skipped [1-9]' "$LOG"; then
    record js-skips FAIL - 1 0 "tests were skipped: $(grep -E '^# skipped' "$LOG")"
    TOTAL_FAILED=$((TOTAL_FAILED + 1))
    ANY_FAILED=1
  fi
fi

finish "$ANY_FAILED"
