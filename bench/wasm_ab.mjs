// A/B of two builds of the package in one Node process: the same operations
// timed in alternating rounds (30 rounds of about 60 ms each per build), so
// both builds see the same machine state, after half a second of warm-up
// each. Prints the medians and their ratio.
// This is the tool for "before and after" figures of one change in
// bench/HISTORY.md.
//
// Build each side as a `--target web` package, e.g. (with `git worktree` for
// the "before" commit):
//   wasm-pack build --profiling --target web --no-pack --out-dir /tmp/a \
//     --out-name blindmatch .
// then:
//   node bench/wasm_ab.mjs /tmp/a /tmp/b encrypt_secret keygen
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const OPS = ['relinearize', 'keygen', 'keygen_relin', 'encrypt_secret', 'encrypt_public', 'decrypt', 'multiply', 'multiply_relin'];

async function load(dir) {
  const url = pathToFileURL(path.join(path.resolve(dir), 'blindmatch.js'));
  const bm = await import(url.href);
  bm.initSync({ module: readFileSync(path.join(dir, 'blindmatch_bg.wasm')) });
  const params = bm.Params.auth4096();
  const pa = new bm.BatchEncoder(params).encode([1, 2, 3]);
  const ev = new bm.Evaluator(params);
  const sk = bm.SecretKey.generate(params);
  const pk = sk.publicKey();
  const rk = sk.relinKey();
  const [ca, cb] = [sk.encrypt(pa), pk.encrypt(pa)];
  const prod = ev.multiply(ca, cb);
  return {
    keygen: () => {
      const s = bm.SecretKey.generate(params);
      s.publicKey().free();
      s.free();
    },
    keygen_relin: () => sk.relinKey().free(),
    encrypt_secret: () => sk.encrypt(pa).free(),
    encrypt_public: () => pk.encrypt(pa).free(),
    decrypt: () => sk.decrypt(ca).free(),
    multiply: () => ev.multiply(ca, cb).free(),
    multiply_relin: () => ev.multiplyRelin(ca, cb, rk).free(),
    relinearize: () => ev.relinearize(prod, rk).free(),
  };
}

const [dirA, dirB, ...ops] = process.argv.slice(2);
if (!dirB || ops.some((op) => !OPS.includes(op))) {
  console.error(`usage: node bench/wasm_ab.mjs <build A> <build B> [op ...]\nops: ${OPS.join(' ')}`);
  process.exit(2);
}
const builds = { A: await load(dirA), B: await load(dirB) };
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const op of ops.length ? ops : OPS) {
  const us = { A: [], B: [] };
  // Both builds warm (tiered up) before the first timed round.
  for (const side of ['A', 'B']) {
    const t = performance.now();
    while (performance.now() - t < 500) builds[side][op]();
  }
  for (let round = 0; round < 30; round++) {
    for (const side of ['A', 'B']) {
      const f = builds[side][op];
      for (let i = 0; i < 5; i++) f();
      const t = performance.now();
      let n = 0;
      while (performance.now() - t < 60) {
        f();
        n++;
      }
      us[side].push(((performance.now() - t) * 1000) / n);
    }
  }
  const [a, b] = [median(us.A), median(us.B)];
  console.log(`${op.padEnd(15)} A ${a.toFixed(1).padStart(7)} µs   B ${b.toFixed(1).padStart(7)} µs   B/A ${(b / a).toFixed(3)}`);
}
