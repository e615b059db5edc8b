#!/usr/bin/env bash
# Python environment for the Microsoft SEAL peer benchmark (scripts/bench_seal.py).
#
# Idempotent: creates a venv at <repo>/target/seal-venv if it is missing and
# installs `tenseal` (which ships Microsoft SEAL 4.x and exposes SEAL's own
# classes as `tenseal.sealapi`) if it is not importable there, plus
# `zstandard`, which bench_seal.py uses only to unpack SEAL's own zstd-saved
# bytes to measure the uncompressed (compr_mode none) serialization size:
# tenseal's `save` always uses SEAL's default compression. Works from any
# working directory. Prints the venv's python path on stdout, and nothing else;
# all progress goes to stderr. Usage:
#
#   PY="$(bash scripts/seal_env.sh)" && "$PY" scripts/bench_seal.py --quick
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/seal-venv"
PY="$VENV/bin/python"

log() { printf '[seal_env] %s\n' "$*" >&2; }

# A base interpreter with the venv module; SEAL_ENV_PYTHON overrides.
base_python() {
  local c
  for c in "${SEAL_ENV_PYTHON:-}" python3 python; do
    [ -n "$c" ] || continue
    # Resolve to the real interpreter (not, e.g., a pyenv shim).
    if command -v "$c" >/dev/null 2>&1 \
       && "$c" -c 'import sys, venv, ensurepip; print(sys.executable)' 2>/dev/null; then
      return 0
    fi
  done
  return 1
}

if [ ! -x "$PY" ] || ! "$PY" -c 'import sys' >/dev/null 2>&1; then
  BASE="$(base_python)" || {
    log "no python3 with the venv and ensurepip modules found (on Debian: apt-get install -y python3-venv)"
    exit 1
  }
  log "creating venv $VENV with $BASE"
  rm -rf "$VENV"
  mkdir -p "$ROOT/target"
  "$BASE" -m venv "$VENV" >&2
fi

if ! "$PY" -c 'import tenseal.sealapi, zstandard' >/dev/null 2>&1; then
  log "installing tenseal and zstandard into $VENV"
  "$PY" -m pip install --quiet --disable-pip-version-check tenseal zstandard >&2
  "$PY" -c 'import tenseal.sealapi, zstandard' >&2 || { log "tenseal.sealapi or zstandard is still not importable"; exit 1; }
fi

printf '%s\n' "$PY"
