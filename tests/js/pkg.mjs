// Loads the built package the way a user's resolver does: from the package
// directory's package.json `exports` (default: pkg/ at the repository root;
// BLINDMATCH_PKG=/path/to/pkg to test another copy).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const PKG_DIR = process.env.BLINDMATCH_PKG
  ? pathToFileURL(process.env.BLINDMATCH_PKG.replace(/\/?$/, '/'))
  : new URL('../../pkg/', import.meta.url);

export const packageJson = JSON.parse(readFileSync(new URL('package.json', PKG_DIR), 'utf8'));

/** The URL of a subpath export (`'.'`, `'./worker'`). */
export function exportUrl(subpath = '.') {
  const e = packageJson.exports[subpath];
  const target = typeof e === 'string' ? e : e.default;
  return new URL(target, PKG_DIR);
}

/** `import('blindmatch')`. */
export async function importPackage() {
  return import(exportUrl('.').href);
}

/** A deterministic pseudo-random embedding (not unit length). */
export function embedding(seed, dim = 128) {
  let x = BigInt.asUintN(64, BigInt(seed) * 0x9e3779b97f4a7c15n) | 1n;
  const out = new Float32Array(dim);
  for (let i = 0; i < dim; i++) {
    x ^= BigInt.asUintN(64, x << 13n);
    x ^= x >> 7n;
    x ^= BigInt.asUintN(64, x << 17n);
    out[i] = Number(x >> 40n) / 2 ** 24 - 0.5;
  }
  return out;
}

/** The crate's quantizer (src/matching/quantize.rs), in JS, for reference. */
export function quantize(e, t = 65537) {
  const d = e.length;
  const scale = Math.floor(Math.sqrt((t - 1) / 2) - Math.sqrt(d) / 2);
  let sum = 0;
  for (const v of e) sum += v * v;
  const s = scale / Math.sqrt(sum);
  // Rust's f64::round: half away from zero.
  return Array.from(e, (v) => Math.sign(v * s) * Math.round(Math.abs(v * s)));
}

export function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
