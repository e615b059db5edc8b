// blindmatch vs node-seal 7 (Microsoft SEAL in wasm), and blindmatch's
// simd128 build vs its baseline build, in ONE Node 22 process, at n = 4096,
// t = 65537. The measuring code is core.mjs (shared with the page bench).
//
//   NODE22="$(bash bench/node_seal/setup.sh)"
//   "$NODE22" bench/node_seal/bench.mjs [--quick] [--pkg DIR] [--seal DIR]
//
// --pkg   the built npm package (default: pkg/ at the repository root)
// --seal  the node-seal package directory (default: the one setup.sh installs
//         under target/tools/node-seal-bench/)
//
// stdout, TSV, nothing else:
//   node-seal<TAB>op<TAB>ours_simd_us<TAB>seal_us
//   wasm-builds<TAB>op<TAB>simd_us<TAB>baseline_us
//   transform-time<TAB>ntt_forward|ntt_inverse<TAB>simd_us<TAB>-
// stderr: `# ...` notes (versions, spreads, ratios).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { formatRows, formatTransformRows, measureTransforms, ratioNotes, runComparison } from './core.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? path.resolve(args[i + 1]) : dflt;
};
const pkgDir = opt('--pkg', path.join(ROOT, 'pkg'));
const sealDir = opt('--seal', path.join(ROOT, 'target/tools/node-seal-bench/node_modules/node-seal'));

const log = (msg) => process.stderr.write(`# ${msg}\n`);

const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  log(`node-seal 7 needs Node 22 or newer; this is ${process.version}. Run it with: "$(bash bench/node_seal/setup.sh)" bench/node_seal/bench.mjs`);
  process.exit(2);
}

const started = performance.now();
log(`Node ${process.version} (V8 ${process.versions.v8}), ${quick ? 'quick' : 'full'} run`);

// Our package exactly as an npm user loads it, forcing the simd128 build.
const pkgUrl = pathToFileURL(pkgDir + path.sep);
const bm = await import(new URL('index.js', pkgUrl).href);
let t0 = performance.now();
const got = await bm.init({ simd: true });
log(`blindmatch ${got.build} loaded in ${(performance.now() - t0).toFixed(1)} ms (simdSupported: ${bm.simdSupported()})`);
if (got.build !== 'simd128') throw new Error(`init({simd: true}) loaded ${got.build}`);

// init() keeps its first result, so the baseline build is a second instance
// of the wasm-bindgen glue (a distinct module URL) fed the baseline .wasm.
const base = await import(new URL('blindmatch.js?instance=baseline', pkgUrl).href);
t0 = performance.now();
await base.default({ module_or_path: await readFile(new URL('blindmatch_baseline_bg.wasm', pkgUrl)) });
log(`blindmatch baseline loaded in ${(performance.now() - t0).toFixed(1)} ms (second instance)`);

const sealPkg = JSON.parse(await readFile(path.join(sealDir, 'package.json'), 'utf8'));
const SEAL = (await import(pathToFileURL(path.join(sealDir, 'dist/index_throws.js')).href)).default;
t0 = performance.now();
const seal = await SEAL();
log(`node-seal ${sealPkg.version} (node-seal/throws) loaded in ${(performance.now() - t0).toFixed(1)} ms`);

const rows = await runComparison({ simd: bm, base, seal }, { quick, log });
for (const line of formatRows(rows, 'node-seal', 'wasm-builds')) console.log(line);
for (const line of formatTransformRows(measureTransforms(bm, { quick, log }), 'transform-time')) console.log(line);
for (const line of ratioNotes(rows, 'node')) log(line);
log(`total ${((performance.now() - started) / 1000).toFixed(1)} s`);
