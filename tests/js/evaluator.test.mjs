// Lower-level BFV of the built package: encoders, keys, Evaluator.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPackage } from './pkg.mjs';

const bm = await importPackage();
await bm.init();

const T = 65537;
const centred = (v) => {
  const r = ((v % T) + T) % T;
  return r > T / 2 ? r - T : r;
};

test('encrypt, evaluate, decrypt: slot-wise identities mod t', () => {
  const params = bm.Params.auth4096();
  const sk = bm.SecretKey.generate(params);
  const pk = sk.publicKey();
  const rk = sk.relinKey();
  const enc = new bm.BatchEncoder(params);
  const ev = new bm.Evaluator(params);
  const a = Int32Array.from({ length: 4096 }, (_, i) => ((i * 37) % 2001) - 1000);
  const b = Int32Array.from({ length: 4096 }, (_, i) => ((i * 91) % 3001) - 1500);
  const pa = enc.encode(a);
  const pb = enc.encode(b);
  const ca = sk.encrypt(pa);
  const cb = pk.encrypt(pb);
  const dec = (c) => Array.from(enc.decode(sk.decrypt(c)));
  const map2 = (f) => Array.from(a, (x, i) => centred(f(x, b[i])));
  assert.deepEqual(dec(ca), Array.from(a));
  assert.deepEqual(dec(ev.add(ca, cb)), map2((x, y) => x + y));
  assert.deepEqual(dec(ev.sub(ca, cb)), map2((x, y) => x - y));
  assert.deepEqual(dec(ev.negate(ca)), map2((x) => -x));
  assert.deepEqual(dec(ev.addPlain(ca, pb)), map2((x, y) => x + y));
  assert.deepEqual(dec(ev.multiplyPlain(ca, pb)), map2((x, y) => x * y));
  const prod = ev.multiply(ca, cb);
  assert.equal(prod.size, 3);
  assert.deepEqual(dec(prod), map2((x, y) => x * y));
  const lin = ev.relinearize(prod, rk);
  assert.equal(lin.size, 2);
  assert.deepEqual(dec(lin), map2((x, y) => x * y));
  assert.ok(sk.noiseBudget(lin) > 10);
  const fused = ev.multiplyRelin(ca, cb, rk);
  assert.equal(fused.size, 2);
  assert.deepEqual(dec(fused), map2((x, y) => x * y));
  const down = ev.modSwitchToNext(lin);
  assert.equal(down.level, 2);
  assert.deepEqual(dec(down), map2((x, y) => x * y));
  const gk = sk.galoisKeys([1]);
  const rot = Array.from(a, (_, i) => a[Math.floor(i / 2048) * 2048 + ((i % 2048) + 1) % 2048]);
  assert.deepEqual(dec(ev.rotateRows(ca, 1, gk)), rot);
  assert.deepEqual(dec(ev.rotateColumns(ca, gk)), Array.from(a, (_, i) => a[(i + 2048) % 4096]));
});

test('wire bytes round trip for every object', () => {
  const params = bm.Params.auth4096();
  const sk = bm.SecretKey.generate(params);
  const enc = new bm.BatchEncoder(params);
  const pt = enc.encode([5, -6, 7]);
  const ct = sk.encrypt(pt);
  assert.equal(ct.seeded, true);
  const ct2 = bm.Ciphertext.fromBytes(params, ct.toBytes());
  const sk2 = bm.SecretKey.fromBytes(params, sk.toBytes());
  assert.deepEqual(Array.from(enc.decode(sk2.decrypt(ct2))).slice(0, 4), [5, -6, 7, 0]);
  const pk2 = bm.PublicKey.fromBytes(params, sk.publicKey().toBytes());
  assert.deepEqual(Array.from(enc.decode(sk.decrypt(pk2.encrypt(pt)))).slice(0, 3), [5, -6, 7]);
  const rk = sk.relinKey();
  assert.deepEqual(bm.RelinKey.fromBytes(params, rk.toBytes()).toBytes(), rk.toBytes());
  const gk = sk.galoisKeys(new Int32Array([1, -1]));
  assert.deepEqual(bm.GaloisKeys.fromBytes(params, gk.toBytes()).toBytes(), gk.toBytes());
  assert.deepEqual(bm.Plaintext.fromBytes(params, pt.toBytes()).coefficients(), pt.coefficients());
});

test('encoders accept Int32Array, BigInt64Array and number[]', () => {
  const params = bm.Params.auth4096();
  const enc = new bm.BatchEncoder(params);
  const want = [1, -2, 32768, -32768];
  for (const input of [Int32Array.from(want), BigInt64Array.from(want.map(BigInt)), want]) {
    assert.deepEqual(Array.from(enc.decode(enc.encode(input))).slice(0, 4), want);
  }
  assert.deepEqual(Array.from(enc.decodeBigInt64(enc.encode(want))).slice(0, 4), want.map(BigInt));
  const ce = new bm.CoefficientEncoder(params);
  const sk = bm.SecretKey.generate(params);
  const ev = new bm.Evaluator(params);
  // X · (2 + 5X^2) = 2X + 5X^3
  const xy = ev.multiplyPlain(sk.encrypt(ce.encode([0, 1])), ce.encode([2, 0, 5]));
  assert.deepEqual(Array.from(ce.decode(sk.decrypt(xy))).slice(0, 4), [0, 2, 0, 5]);
});

test('keys.secretKey() shares the key with the lower-level API', () => {
  const params = bm.Params.auth4096();
  const keys = bm.Keys.generate(params);
  const sk = keys.secretKey();
  keys.free(); // the shared key stays alive until sk is freed too
  const enc = new bm.BatchEncoder(params);
  assert.deepEqual(Array.from(enc.decode(sk.decrypt(sk.encrypt(enc.encode([9]))))).slice(0, 1), [9]);
  sk.free();
});
