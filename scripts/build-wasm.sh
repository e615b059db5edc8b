#!/usr/bin/env bash
# Builds the npm package `blindmatch` into pkg/ (or $1).
#
#   scripts/build-wasm.sh [OUT_DIR]
#
# Two release builds of the same crate with wasm-pack (`--target web`: plain
# ES modules, which browsers, bundlers such as Vite/webpack 5 and Node 18+
# all load):
#
#   simd128   RUSTFLAGS="-C target-feature=+simd128,-reference-types"
#   baseline  RUSTFLAGS="-C target-feature=-simd128,-reference-types"
#             (see SIMD_FLAGS below for why reference-types is off), each in
#             a target directory of its own so the builds never invalidate
#             each other or the test builds
#
# The JS glue that wasm-bindgen writes depends only on the exported API, so
# both builds must produce the same glue (checked here). The package ships one
# glue module and two .wasm files; js/index.js's `init()` picks
# blindmatch_bg.wasm (simd128) when `WebAssembly.validate` accepts a tiny
# simd128 module, else blindmatch_baseline_bg.wasm.
#
# Environment: CARGO_TARGET_DIR (default target/): the builds use
# $CARGO_TARGET_DIR/wasm-simd128 and $CARGO_TARGET_DIR/wasm-baseline (their
# RUSTFLAGS differ from the config's, so they get directories of their own). Sizes of the two
# .wasm files (raw and gzip -9) are printed and written to
# $CARGO_TARGET_DIR/wasm-sizes.tsv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="${CARGO_HOME:-${HOME:-/root}/.cargo}/bin:$PATH"

OUT="$(realpath -m "${1:-$ROOT/pkg}")"
TARGET="$(realpath -m "${CARGO_TARGET_DIR:-$ROOT/target}")"
STAGE="$TARGET/wasm-stage"
NAME=blindmatch

for tool in wasm-pack wasm-bindgen wasm-dis node gzip; do
  command -v "$tool" >/dev/null || { echo "build-wasm: $tool not found (run scripts/setup.sh)" >&2; exit 1; }
done
if [ -n "${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-}${CARGO_BUILD_RUSTFLAGS:-}" ]; then
  echo "build-wasm: RUSTFLAGS is set; it would replace the +simd128 flags of .cargo/config.toml" >&2
  exit 1
fi

# RUSTFLAGS replaces .cargo/config.toml's flags, so both builds set theirs.
SIMD_FLAGS="-C target-feature=+simd128"
BASE_FLAGS="-C target-feature=-simd128"

# wasm-opt: wasm-bindgen 0.2.130 keeps JS values in an externref table and
# its output uses `table.fill`, which Debian's binaryen 108 cannot parse
# ("invalid code after misc prefix: 17"); turning reference-types off does
# not help (the precompiled std has it on, and wasm-bindgen then requires
# it). So wasm-pack runs with --no-opt, and this script runs wasm-opt itself
# only when it is binaryen 116 or newer (set WASM_OPT to use another binary).
# The release profile (LTO, one codegen unit) is already size- and
# speed-optimized by LLVM; the sizes below are without wasm-opt.
WASM_OPT="${WASM_OPT:-wasm-opt}"
WASM_OPT_FEATURES=(--enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int
  --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue)
wasm_opt_ok() {
  local v
  v="$("$WASM_OPT" --version 2>/dev/null | sed -n 's/.*version \([0-9]*\).*/\1/p')"
  [ -n "$v" ] && [ "$v" -ge 116 ]
}

rm -rf "$STAGE"
mkdir -p "$STAGE"

echo "== simd128 build"
CARGO_TARGET_DIR="$TARGET/wasm-simd128" RUSTFLAGS="$SIMD_FLAGS" wasm-pack build --release --target web --no-pack --no-opt \
  --out-dir "$STAGE/simd" --out-name "$NAME" "$ROOT"

echo "== baseline build (no simd128)"
CARGO_TARGET_DIR="$TARGET/wasm-baseline" RUSTFLAGS="$BASE_FLAGS" \
  wasm-pack build --release --target web --no-pack --no-opt \
  --out-dir "$STAGE/baseline" --out-name "$NAME" "$ROOT"

if wasm_opt_ok; then
  echo "== $WASM_OPT -O3"
  for b in simd baseline; do
    f="$STAGE/$b/${NAME}_bg.wasm"
    "$WASM_OPT" -O3 "${WASM_OPT_FEATURES[@]}" "$f" -o "$f.opt"
    mv "$f.opt" "$f"
  done
else
  echo "== wasm-opt skipped: $("$WASM_OPT" --version 2>/dev/null || echo none) cannot read wasm-bindgen 0.2.130 output (needs binaryen >= 116)"
fi

# One glue for both .wasm files.
for f in "$NAME.js" "$NAME.d.ts"; do
  if ! cmp -s "$STAGE/simd/$f" "$STAGE/baseline/$f"; then
    echo "build-wasm: $f differs between the simd128 and baseline builds" >&2
    diff "$STAGE/simd/$f" "$STAGE/baseline/$f" | head -20 >&2 || true
    exit 1
  fi
done

# The simd128 build must be compiled with simd128, the baseline build
# without: the linker's target_features section lists what was enabled (the
# runtime backend of each build is checked after assembling, below).
features() {
  node -e '
    const m = new WebAssembly.Module(require("fs").readFileSync(process.argv[1]));
    const s = WebAssembly.Module.customSections(m, "target_features");
    process.stdout.write(s.length ? Buffer.from(s[0]).toString("latin1") : "");
  ' "$1"
}
if ! features "$STAGE/simd/${NAME}_bg.wasm" | grep -q 'simd128'; then
  echo "build-wasm: the simd128 build was not compiled with simd128" >&2
  exit 1
fi
if features "$STAGE/baseline/${NAME}_bg.wasm" | grep -q 'simd128'; then
  echo "build-wasm: the baseline build was compiled with simd128" >&2
  exit 1
fi

echo "== assembling $OUT"
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$STAGE/simd/$NAME.js" "$OUT/$NAME.js"
cp "$STAGE/simd/$NAME.d.ts" "$OUT/$NAME.d.ts"
cp "$STAGE/simd/${NAME}_bg.wasm" "$OUT/${NAME}_bg.wasm"
cp "$STAGE/baseline/${NAME}_bg.wasm" "$OUT/${NAME}_baseline_bg.wasm"
cp js/index.js js/index.d.ts js/worker.js js/worker.d.ts js/worker-client.js js/worker-client.d.ts js/server-client.js js/server-client.d.ts js/key-statement.js js/key-statement.d.ts js/README.md "$OUT/"
VERSION="$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -1)"
sed "s/\"0.0.0-set-by-build-wasm\"/\"$VERSION\"/" js/package.json >"$OUT/package.json"
for f in LICENSE LICENSE-MIT LICENSE-APACHE; do
  [ -f "$f" ] && cp "$f" "$OUT/"
done

# Every file the package lists must exist, and the loader must import.
node -e '
  const fs = require("fs"), path = require("path");
  const dir = process.argv[1];
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  for (const f of pkg.files) if (!fs.existsSync(path.join(dir, f))) { console.error("missing " + f); process.exit(1); }
' "$OUT"
# The loader picks the simd128 build here (Node 18+ has SIMD), each build
# runs its own NTT backend, and a small BFV round trip works in both.
for want in simd128 baseline; do
  if [ "$want" = simd128 ]; then opts='{}'; else opts='{ simd: false }'; fi
  node --input-type=module -e "
    const m = await import('$OUT/index.js');
    const r = await m.init($opts);
    if (r.build !== '$want') throw new Error('init() picked ' + r.build + ', expected $want');
    const backend = new m.NttPlan(4096, m.nttPrimes(29, 4096, 1)[0]).backend;
    if (backend !== ('$want' === 'simd128' ? 'simd128' : 'scalar')) throw new Error('$want build runs the ' + backend + ' backend');
    const p = m.Params.auth4096();
    const sk = m.SecretKey.generate(p);
    const enc = new m.BatchEncoder(p);
    const got = enc.decode(sk.decrypt(sk.encrypt(enc.encode([1, -2, 3]))));
    if (got[0] !== 1 || got[1] !== -2 || got[2] !== 3) throw new Error('round trip failed');
    console.log('pkg: init() -> ' + r.build + ', NTT backend ' + backend + ', BFV round trip ok');
  "
done

if command -v npm >/dev/null; then
  (cd "$OUT" && npm pack --dry-run --json 2>/dev/null) | node -e '
    const j = JSON.parse(require("fs").readFileSync(0, "utf8"))[0];
    console.log(`npm pack: ${j.name}@${j.version}, ${j.files.length} files, ${j.size} bytes packed, ${j.unpackedSize} unpacked`);
  '
fi

echo "== sizes"
SIZES="$TARGET/wasm-sizes.tsv"
printf 'file\traw_bytes\tgzip9_bytes\n' >"$SIZES"
for f in "${NAME}_bg.wasm" "${NAME}_baseline_bg.wasm" "$NAME.js"; do
  raw=$(stat -c %s "$OUT/$f")
  gz=$(gzip -9 -c "$OUT/$f" | wc -c)
  printf '%s\t%s\t%s\n' "$f" "$raw" "$gz" >>"$SIZES"
  printf '%-28s %8d bytes raw  %8d bytes gzip -9\n' "$f" "$raw" "$gz"
done
SIMD_RAW=$(stat -c %s "$OUT/${NAME}_bg.wasm")
SIMD_GZ=$(gzip -9 -c "$OUT/${NAME}_bg.wasm" | wc -c)
if [ "$SIMD_RAW" -gt 409600 ] || [ "$SIMD_GZ" -gt 153600 ]; then
  echo "build-wasm: WARNING: the simd128 .wasm is over the 400 KB raw / 150 KB gzip budget" >&2
fi
echo "build-wasm: done: $OUT"
