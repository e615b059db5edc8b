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

/** The crate's quantizer (src/matching/quantize.rs), in JS, for reference:
 * levels, scale, clipping and the squared-norm cap (n = 4096). */
export function quantizer(d, t = 65537, n = 4096) {
  let half = 1;
  while (d * (half + 1) ** 2 < t) half += 1;
  const levels = Math.min(2 * half, Math.max(n / d, 32)) & ~1;
  const scale = Math.floor(((levels / 2 - 0.5) * Math.sqrt(d)) / 3.7);
  return { levels, scale, maxNorm2: scale * scale + d / 4, lo: -levels / 2, hi: levels / 2 - 1 };
}

export function quantize(e, t = 65537) {
  const d = e.length;
  const { scale, maxNorm2, lo, hi } = quantizer(d, t);
  let sum = 0;
  for (const v of e) sum += v * v;
  const s = scale / Math.sqrt(sum);
  const exact = Array.from(e, (v) => v * s);
  // Rust's f64::round: half away from zero; then clipped.
  const q = exact.map((x) => Math.min(hi, Math.max(lo, Math.sign(x) * Math.round(Math.abs(x)))));
  let norm2 = q.reduce((a, x) => a + x * x, 0);
  while (norm2 > maxNorm2) {
    // The component rounded furthest away from zero steps back (first on a tie).
    let best = -1;
    let worst = -Infinity;
    q.forEach((a, i) => {
      if (a !== 0 && Math.abs(a) - Math.abs(exact[i]) > worst) {
        worst = Math.abs(a) - Math.abs(exact[i]);
        best = i;
      }
    });
    norm2 -= 2 * Math.abs(q[best]) - 1;
    q[best] -= Math.sign(q[best]);
  }
  return q;
}

export function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
