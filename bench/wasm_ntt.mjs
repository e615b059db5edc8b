// Times the NTT in WebAssembly under Node: the simd128 build against the
// baseline (no SIMD) build of the same crate, and within the simd128 build the
// simd128 kernels against the scalar ones. Prints one TSV line per figure:
//   wasm<TAB>op<TAB>simd128_us<TAB>baseline_us<TAB>ratio
// Usage: node bench/wasm_ntt.mjs <pkg-dir> [--quick]
// where <pkg-dir> is the npm package of scripts/build-wasm.sh (one glue
// module, blindmatch_bg.wasm and blindmatch_baseline_bg.wasm): the glue is
// imported twice, one instance per .wasm file.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const dirs = args.filter((a) => a !== '--quick');
if (dirs.length !== 1 || args.some((a) => a.startsWith('--') && a !== '--quick')) {
  console.error('usage: node bench/wasm_ntt.mjs <pkg-dir> [--quick]');
  process.exit(2);
}
const pkgUrl = pathToFileURL(path.resolve(dirs[0]) + path.sep);

async function load(instance, wasmFile) {
  const glue = await import(new URL(`blindmatch.js?instance=${instance}`, pkgUrl).href);
  await glue.default({ module_or_path: await readFile(new URL(wasmFile, pkgUrl)) });
  return glue;
}
const simd = await load('simd128', 'blindmatch_bg.wasm');
const base = await load('baseline', 'blindmatch_baseline_bg.wasm');

// The largest 30-bit NTT prime for each n, found by the library itself.
const PRIMES = Object.fromEntries([2048, 4096, 8192].map((n) => [n, simd.nttPrimes(30, n, 1)[0]]));

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// Microseconds per call: the loop runs inside wasm (`times`), so the JS <-> wasm
// copy of the buffer is paid once per batch and divided out.
function time(plan, op, n) {
  const data = new Uint32Array(n);
  for (let i = 0; i < n; i++) data[i] = (i * 2654435761) % PRIMES[n];
  const batch = quick ? 50 : 200;
  // Warm up long enough for the engine to tier up from its baseline compiler.
  for (let i = 0; i < 5; i++) plan[op](data, 100);
  const samples = [];
  for (let r = 0; r < (quick ? 5 : 15); r++) {
    const t0 = performance.now();
    plan[op](data, batch);
    samples.push(((performance.now() - t0) * 1000) / batch);
  }
  return median(samples);
}

const rows = [];
for (const n of [2048, 4096, 8192]) {
  const q = PRIMES[n];
  const s = new simd.NttPlan(n, q);
  const sScalar = simd.NttPlan.scalar(n, q);
  const b = new base.NttPlan(n, q);
  if (s.backend !== 'simd128') throw new Error(`simd build picked ${s.backend}`);
  if (b.backend !== 'scalar') throw new Error(`baseline build picked ${b.backend}`);
  for (const op of ['forward', 'inverse']) {
    const ts = time(s, op, n);
    const tb = time(b, op, n);
    const tss = time(sScalar, op, n);
    rows.push(['wasm', `${op}/${n}/simd128-vs-baseline-build`, ts, tb]);
    rows.push(['wasm', `${op}/${n}/simd128-vs-scalar-kernels`, ts, tss]);
  }
}
for (const [area, op, ours, peer] of rows) {
  console.log([area, op, ours.toFixed(3), peer.toFixed(3), (peer / ours).toFixed(2)].join('\t'));
}
