#!/usr/bin/env bash
# Installs whatever blindmatch's tests, package build and benchmarks need and
# is missing or at another version than pinned here: Debian packages (the
# distribution's versions), the wasm32 and aarch64 Rust targets, clippy and
# rustfmt, wasm-pack and wasm-bindgen-cli (exact versions), and the npm tools
# of the package tests (exact versions) under target/tools, and jose for the
# relying-party example (examples/relying-party, at its lockfile's version),
# and the demo's face model (face-api and the tfjs wasm backend, exact
# versions) under target/face.
# Idempotent: on a machine that is already set up it finishes in seconds.
# Called by scripts/test.sh and scripts/bench.sh; the benchmarks' own peers
# (SEAL through tenseal, node-seal) are set up by scripts/seal_env.sh and
# bench/node_seal/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }

# wasm-pack, built from the registry with its own Cargo.lock.
WASM_PACK_VERSION=0.15.1
# The wasm-bindgen version pinned in Cargo.toml; wasm-bindgen-cli must match it exactly.
WASM_BINDGEN_VERSION="$(sed -n 's/^wasm-bindgen = { version = "=\([0-9.]*\)".*/\1/p; s/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' Cargo.toml | head -n1)"
if [ -z "$WASM_BINDGEN_VERSION" ]; then
  echo "setup: could not read the pinned wasm-bindgen version from Cargo.toml" >&2
  exit 1
fi

export PATH="$HOME/.cargo/bin:$PATH"

# --- Debian packages ---------------------------------------------------------
# postgresql: the PostgreSQL store's tests start private clusters; haproxy: scripts/cluster.sh;
# bochs (with its text display, bochs-term, not the GUI one) to busybox-static:
# scripts/avx512.sh's emulated AVX-512 machine and its boot CD.
APT_PKGS=(chromium chromium-driver qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross binaryen postgresql haproxy
  bochs bochs-term bochsbios vgabios busybox-static isolinux syslinux-common genisoimage cpio)
missing=()
for p in "${APT_PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- Rust targets ------------------------------------------------------------
installed_targets="$(rustup target list --installed)"
for t in wasm32-unknown-unknown aarch64-unknown-linux-gnu; do
  if ! grep -qx "$t" <<<"$installed_targets"; then
    log "adding Rust target $t"
    rustup target add "$t"
  fi
done
if ! rustup component list --installed 2>/dev/null | grep -q '^clippy'; then rustup component add clippy; fi
if ! rustup component list --installed 2>/dev/null | grep -q '^rustfmt'; then rustup component add rustfmt; fi

# --- cargo-installed tools -----------------------------------------------------
if ! command -v wasm-pack >/dev/null 2>&1 \
   || [ "$(wasm-pack --version | awk '{print $2}')" != "$WASM_PACK_VERSION" ]; then
  log "building wasm-pack $WASM_PACK_VERSION (a few minutes)"
  cargo install wasm-pack --version "=$WASM_PACK_VERSION" --locked --force
fi
if ! command -v wasm-bindgen >/dev/null 2>&1 \
   || [ "$(wasm-bindgen --version | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
  log "building wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes)"
  # No --locked: one locked dependency is missing from the registry mirror.
  cargo install wasm-bindgen-cli --version "=$WASM_BINDGEN_VERSION" --force
fi

# --- npm tools for the package tests --------------------------------------------
# TypeScript checks the package's declarations (tests/js/types.test.mjs).
# playwright-core drives Debian's Chromium in the end-to-end login test
# (tests/js/e2e.test.mjs); it never downloads a browser of its own. Vite and
# webpack build an app that uses the package (tests/js/bundlers.test.mjs).
NPM_TOOLS=(typescript@5.9.3 playwright-core@1.65.1 vite@8.4.0 webpack@5.113.0)
# The installed version of an npm package under target/tools, or nothing.
npm_installed() {
  local f="target/tools/node_modules/$1/package.json"
  [ -f "$f" ] && node -p "require('./$f').version" 2>/dev/null || true
}
npm_missing=()
for spec in "${NPM_TOOLS[@]}"; do
  if [ "$(npm_installed "${spec%@*}")" != "${spec##*@}" ]; then
    npm_missing+=("$spec")
  fi
done
if [ "${#npm_missing[@]}" -gt 0 ] || [ ! -x target/tools/node_modules/.bin/tsc ]; then
  log "installing ${NPM_TOOLS[*]} into target/tools"
  mkdir -p target/tools
  npm install --prefix target/tools --save-exact --no-audit --no-fund --loglevel=error "${NPM_TOOLS[@]}"
fi

# --- the demo's face model ----------------------------------------------------------
# face-api (its bundle with tfjs, its weights and its sample photos) and the
# tfjs wasm backend's .wasm files, from npm at pinned versions, into
# target/face-npm; the files the demo page loads are laid out in target/face
# (served at /face/ by `serve --face target/face`): face-api.esm.js, model/
# (detector, landmarks, recognition), wasm/. Not committed: about 13 MB.
FACE_API_VERSION=1.7.15
TFJS_WASM_VERSION=4.22.0
FACE_STAMP="face-api@$FACE_API_VERSION tfjs-backend-wasm@$TFJS_WASM_VERSION"
if [ "$(cat target/face/VERSION 2>/dev/null || true)" != "$FACE_STAMP" ]; then
  log "installing the demo's face model ($FACE_STAMP) into target/face"
  mkdir -p target/face-npm
  npm install --prefix target/face-npm --save-exact --no-audit --no-fund --loglevel=error \
    "@vladmandic/face-api@$FACE_API_VERSION" "@tensorflow/tfjs-backend-wasm@$TFJS_WASM_VERSION"
  fa=target/face-npm/node_modules/@vladmandic/face-api
  rm -rf target/face.new && mkdir -p target/face.new/model target/face.new/wasm
  cp "$fa/dist/face-api.esm.js" "$fa/LICENSE" target/face.new/
  for net in ssd_mobilenetv1_model tiny_face_detector_model face_landmark_68_model face_recognition_model; do
    cp "$fa/model/$net.bin" "$fa/model/$net-weights_manifest.json" target/face.new/model/
  done
  cp target/face-npm/node_modules/@tensorflow/tfjs-backend-wasm/dist/*.wasm target/face.new/wasm/
  printf '%s\n' "$FACE_STAMP" >target/face.new/VERSION
  rm -rf target/face && mv target/face.new target/face
fi

# --- the relying-party example ----------------------------------------------------
# examples/relying-party checks verdicts with jose (tests/relying_party.rs), at
# the version its package-lock.json pins.
RP=examples/relying-party
rp_want="$(node -p "require('./$RP/package.json').dependencies.jose")"
rp_have="$( [ -f "$RP/node_modules/jose/package.json" ] && node -p "require('./$RP/node_modules/jose/package.json').version" 2>/dev/null || true)"
if [ "$rp_have" != "$rp_want" ]; then
  log "installing jose@$rp_want into $RP"
  npm ci --prefix "$RP" --no-audit --no-fund --loglevel=error
fi

log "ready"
