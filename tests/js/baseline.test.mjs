// The baseline (no simd128) build, forced with init({ simd: false }); each
// test file runs in a process of its own, so this one loads only it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPackage, embedding, quantize, dot } from './pkg.mjs';

const bm = await importPackage();
const info = await bm.init({ simd: false });

test('init({ simd: false }) loads the baseline build', () => {
  assert.deepEqual(info, { simd: false, build: 'baseline' });
  assert.equal(new bm.NttPlan(4096, bm.nttPrimes(29, 4096, 1)[0]).backend, 'scalar');
});

test('the baseline build runs the same flow with the same results', () => {
  const params = bm.Params.auth4096();
  const keys = bm.Keys.generate(params);
  const e = [embedding(5), embedding(6)];
  const reply = new bm.Verifier(params, 128).verify(
    keys.encryptTemplates(e, 128),
    keys.encryptProbe(e[1], 128),
    keys.publicKey(),
    keys.relinKey(),
  );
  const b = quantize(e[1]);
  assert.deepEqual(keys.decryptScores(reply, 2).scores, e.map((x) => dot(quantize(x), b)));
});
