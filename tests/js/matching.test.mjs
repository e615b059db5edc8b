// The face-matching API of the built package, used as an npm user would.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPackage, packageJson, embedding, quantize, dot } from './pkg.mjs';

const bm = await importPackage();
const info = await bm.init();

test('package.json is an ESM package with exports, types and files', () => {
  assert.equal(packageJson.name, 'blindmatch');
  assert.equal(packageJson.type, 'module');
  assert.ok(packageJson.exports['.'] && packageJson.exports['./worker']);
  assert.equal(packageJson.types, './index.d.ts');
  assert.ok(packageJson.files.includes('blindmatch_bg.wasm'));
  assert.ok(packageJson.files.includes('blindmatch_baseline_bg.wasm'));
});

test('init() picks the simd128 build on this Node and is idempotent', async () => {
  assert.equal(bm.simdSupported(), true);
  assert.deepEqual(info, { simd: true, build: 'simd128' });
  assert.deepEqual(await bm.init({ simd: false }), info);
  const q = bm.nttPrimes(29, 4096, 1)[0];
  assert.equal(new bm.NttPlan(4096, q).backend, 'simd128');
});

test('Params.auth4096 getters', () => {
  const p = bm.Params.auth4096();
  assert.equal(p.id, 'd22069770380e00c');
  assert.equal(p.degree, 4096);
  assert.equal(p.plaintextModulus, 65537);
  assert.deepEqual([...p.ciphertextPrimes], [536813569, 528916481, 501882881]);
  assert.equal(p.specialPrime, 4169729);
  assert.equal(p.modulusBits, 109);
});

test('keys: generate, export and restore, public and relinearization keys', () => {
  const params = bm.Params.auth4096();
  const keys = bm.Keys.generate(params);
  const secret = keys.exportSecretKey();
  assert.ok(secret instanceof Uint8Array);
  assert.equal(secret.length, 1040);
  const again = bm.Keys.fromSecretKey(params, secret);
  assert.deepEqual(again.exportSecretKey(), secret);
  const pk = keys.publicKey();
  assert.ok(pk instanceof Uint8Array);
  assert.equal(pk.length, 44592);
  const rk = keys.relinKey();
  assert.equal(rk.length, 167536);
  assert.deepEqual(keys.relinKey(), rk, 'cached');
  assert.notDeepEqual(bm.Keys.generate(params).exportSecretKey(), secret);
  keys.free();
  again.free();
});

test('full 1:1 flow: scores equal the integer inner products', () => {
  const params = bm.Params.auth4096();
  const keys = bm.Keys.generate(params);
  const embs = [0, 1, 2, 3].map((i) => embedding(i));
  const template = keys.encryptTemplates(embs, 128);
  assert.ok(template instanceof Uint8Array);
  const probeEmb = embedding(1);
  const probe = keys.encryptProbe(probeEmb, 128);
  const verifier = new bm.Verifier(params, 128);
  const b = quantize(probeEmb);
  const want = embs.map((e) => dot(quantize(e), b));
  for (const rk of [undefined, keys.relinKey()]) {
    const reply = verifier.verify(template, probe, keys.publicKey(), rk);
    const r = keys.decryptScores(reply, 4);
    assert.deepEqual(Object.keys(r).sort(), ['cosines', 'scores']);
    assert.ok(Array.isArray(r.scores) && Array.isArray(r.cosines));
    assert.deepEqual(r.scores, want);
    assert.ok(Math.abs(r.cosines[1] - 1) < 0.02, `self-similarity ${r.cosines[1]}`);
    assert.ok(r.cosines.every((c, i) => Math.abs(c - want[i] / 47 ** 2) < 1e-12));
    assert.equal(keys.decryptScores(reply).scores.length, 32);
  }
});

test('service-key mode: PublicKeyEncryptor templates', () => {
  const params = bm.Params.auth4096();
  const keys = bm.Keys.generate(params);
  const enc = bm.PublicKeyEncryptor.fromPublicKey(params, keys.publicKey());
  const embs = [embedding(7), embedding(8)];
  const template = enc.encryptTemplates(embs, 128);
  const probe = keys.encryptProbe(embs[0], 128);
  const reply = new bm.Verifier(params, 128).verify(template, probe, keys.publicKey());
  const b = quantize(embs[0]);
  assert.deepEqual(keys.decryptScores(reply, 2).scores, embs.map((e) => dot(quantize(e), b)));
  // A probe hidden from the matcher: encrypted with the public key too,
  // never seeded (two full polynomials), the same exact scores.
  const hidden = enc.encryptProbe(embs[1], 128);
  assert.ok(hidden.length > probe.length + 40000, `${hidden.length} vs ${probe.length}`);
  const again = new bm.Verifier(params, 128).verify(template, hidden, keys.publicKey());
  const c = quantize(embs[1]);
  assert.deepEqual(keys.decryptScores(again, 2).scores, embs.map((e) => dot(quantize(e), c)));
});

test('other dimensions: 64, 256, 512', () => {
  const params = bm.Params.auth4096();
  const keys = bm.Keys.generate(params);
  for (const dim of [64, 256, 512]) {
    const e = [embedding(1, dim), embedding(2, dim)];
    const reply = new bm.Verifier(params, dim).verify(
      keys.encryptTemplates(e, dim),
      keys.encryptProbe(e[1], dim),
      keys.publicKey(),
    );
    const t = 65537;
    const b = quantize(e[1], t);
    assert.deepEqual(keys.decryptScores(reply, 2, dim).scores, e.map((x) => dot(quantize(x, t), b)));
  }
});

test('login mode: probe and template bundles carry their one-hot ciphertexts', () => {
  const params = bm.Params.auth4096();
  const keys = bm.Keys.generate(params);
  const enc = bm.PublicKeyEncryptor.fromPublicKey(params, keys.publicKey());
  const e = embedding(7);
  // A probe bundle: a u32 count (2), then the probe and one one-hot
  // ciphertext, each after its u32 length.
  const probe = enc.encryptProbeBundle(e, 128);
  assert.ok(probe instanceof Uint8Array);
  assert.equal(probe.length, 178224);
  const view = new DataView(probe.buffer, probe.byteOffset, probe.byteLength);
  assert.equal(view.getUint32(0, true), 2);
  const template = enc.encryptTemplateBundle([e, embedding(8), embedding(9)], 128);
  assert.equal(new DataView(template.buffer, template.byteOffset).getUint32(0, true), 4);
  // Bad input: a JS Error naming the method, and the instance keeps working.
  assert.throws(() => enc.encryptProbeBundle(new Float32Array(127), 128), /PublicKeyEncryptor\.encryptProbeBundle.*127/s);
  const nan = new Float32Array(e);
  nan[3] = NaN;
  assert.throws(() => enc.encryptTemplateBundle([nan], 128), /encryptTemplateBundle.*finite/s);
  assert.throws(() => enc.encryptTemplateBundle([], 128), /at least one/);
  assert.equal(enc.encryptProbeBundle(e, 128).length, 178224);
});
