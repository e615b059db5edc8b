// Inputs built to throw inside the facade: getters that throw, detached
// buffers, values of the wrong type, arrays far larger than any object.
// Each gives a JS Error, never an exception thrown through Rust frames (which
// would leave a wasm-bindgen borrow set and the instance unusable) and never
// a copy into wasm memory of something too large to be valid.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPackage, exportUrl, embedding, quantize, dot } from './pkg.mjs';

const bm = await importPackage();
await bm.init();
// The glue's own init returns the instance's exports (it is loaded already).
const wbg = await import(new URL('blindmatch.js', exportUrl('.')).href);
const { memory } = await wbg.default();
const params = bm.Params.auth4096();
const keys = bm.Keys.generate(params);
const verifier = new bm.Verifier(params, 128);
const good = embedding(1);
const pk = keys.publicKey();
const probe = keys.encryptProbe(good, 128);
const template = keys.encryptTemplates([good], 128);

function stillWorks() {
  const e = embedding(42);
  const reply = verifier.verify(keys.encryptTemplates([e], 128), keys.encryptProbe(e, 128), pk);
  const q = quantize(e);
  assert.deepEqual(keys.decryptScores(reply, 1).scores, [dot(q, q)]);
  assert.equal(bm.Ciphertext.fromBytes(params, probe).size, 2);
}

/** `fn()` throws a JS Error (not a trap, not the getter's own error) matching every pattern; the instance still works. */
function fails(fn, ...patterns) {
  let thrown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown !== undefined, `expected an error matching ${patterns}`);
  assert.ok(thrown instanceof Error, `a JS Error, got ${thrown}`);
  assert.ok(!(thrown instanceof WebAssembly.RuntimeError), `not a trap: ${thrown.message}`);
  assert.ok(!/^hostile/.test(thrown.message), `the input's own exception escaped: ${thrown.message}`);
  for (const p of patterns) assert.match(thrown.message, p);
  stillWorks();
  return thrown.message;
}

/** `fn()` returns (the input's own getters were never called); the instance still works. */
function works(fn) {
  const r = fn();
  stillWorks();
  return r;
}

/** A subclass of `Base` (a typed array class) whose `length` and `byteLength` getters throw. */
function throwingLength(Base, from) {
  class Hostile extends Base {
    get length() {
      throw new Error('hostile length');
    }
    get byteLength() {
      throw new Error('hostile byteLength');
    }
  }
  return new Hostile(from);
}

/** A copy of `bytes` whose buffer has been transferred away (detached). */
function detached(bytes) {
  const a = Uint8Array.from(bytes);
  structuredClone(a.buffer, { transfer: [a.buffer] });
  assert.equal(a.buffer.byteLength, 0);
  return a;
}

test('typed arrays whose length getter throws are read by their contents', () => {
  // The facade measures and copies typed arrays with the built-in
  // %TypedArray% length getter and `set`: a subclass's getters are never
  // called, and its contents are what counts.
  const sk = keys.exportSecretKey();
  const u8 = (b) => throwingLength(Uint8Array, b);
  assert.deepEqual(works(() => bm.Keys.fromSecretKey(params, u8(sk))).exportSecretKey(), sk);
  assert.equal(works(() => bm.Ciphertext.fromBytes(params, u8(probe))).size, 2);
  assert.equal(works(() => bm.Ciphertext.fromBytesUntrusted(params, u8(probe))).size, 2);
  works(() => bm.PublicKey.fromBytes(params, u8(pk)));
  works(() => bm.PublicKeyEncryptor.fromPublicKey(params, u8(pk)));
  const reply = verifier.verify(template, u8(probe), pk);
  works(() => verifier.verify(u8(template), probe, u8(pk)));
  const q = quantize(good);
  assert.deepEqual(works(() => keys.decryptScores(u8(reply), 1)).scores, [dot(q, q)]);
  works(() => keys.encryptProbe(throwingLength(Float32Array, good), 128));
  works(() => keys.encryptTemplates([throwingLength(Float32Array, good)], 128));
  works(() => keys.secretKey().galoisKeys(throwingLength(Int32Array, [1])));
  works(() => new bm.BatchEncoder(params).encode(throwingLength(Int32Array, [1, 2])));
  works(() => new bm.BatchEncoder(params).encode(throwingLength(BigInt64Array, [1n])));
  works(() => bm.Plaintext.fromCoefficients(params, throwingLength(Uint32Array, [1])));
  // Bad contents behind a hostile getter are still an error about the contents.
  fails(() => bm.Keys.fromSecretKey(params, u8(sk.subarray(0, 100))), /Keys\.fromSecretKey/, /truncated/);
  fails(() => keys.encryptProbe(throwingLength(Float32Array, good.subarray(0, 64)), 128), /64/, /128/);
  fails(() => keys.secretKey().galoisKeys(throwingLength(Int32Array, new Int32Array(65))), /at most 64/);
});

test('detached buffers', () => {
  fails(() => bm.Keys.fromSecretKey(params, detached(keys.exportSecretKey())), /Keys\.fromSecretKey/);
  fails(() => bm.Ciphertext.fromBytes(params, detached(probe)), /Ciphertext\.fromBytes/);
  fails(() => verifier.verify(template, detached(probe), pk), /Verifier\.verify/);
  fails(() => keys.decryptScores(detached(probe), 1), /Keys\.decryptScores/);
  const f = Float32Array.from(good);
  structuredClone(f.buffer, { transfer: [f.buffer] });
  fails(() => keys.encryptProbe(f, 128), /Keys\.encryptProbe/);
  const i = Int32Array.from([1, 2]);
  structuredClone(i.buffer, { transfer: [i.buffer] });
  // An empty (detached) array of values encodes as zeros, like `[]`.
  assert.ok(new bm.BatchEncoder(params).encode(i) instanceof bm.Plaintext);
  stillWorks();
});

test('proxies and values of other types', () => {
  const trap = () => {
    throw new Error('hostile trap');
  };
  const proxied = new Proxy(Uint8Array.from(probe), { get: trap, getPrototypeOf: trap });
  fails(() => bm.Ciphertext.fromBytes(params, proxied), /Ciphertext\.fromBytes/);
  const lying = new Proxy(Uint8Array.from(probe), { get: trap });
  fails(() => bm.Ciphertext.fromBytes(params, lying), /Ciphertext\.fromBytes/);
  fails(() => bm.Ciphertext.fromBytes(params, Object.create(Uint8Array.prototype)), /Ciphertext\.fromBytes/);
  fails(() => keys.encryptProbe(Object.create(Float32Array.prototype), 128), /Keys\.encryptProbe/);
  for (const v of [undefined, null, 7, 'bytes', {}, [1, 2, 3], new ArrayBuffer(8), new DataView(new ArrayBuffer(8)), () => 1, Symbol('x'), 10n]) {
    fails(() => bm.Ciphertext.fromBytes(params, v), /Ciphertext\.fromBytes/, /Uint8Array/);
    fails(() => keys.encryptProbe(v, 128), /Keys\.encryptProbe/);
    fails(() => keys.encryptTemplates(v, 128), /Keys\.encryptTemplates/);
  }
  const hostileArray = new Proxy([good], { get: trap, getPrototypeOf: trap });
  fails(() => keys.encryptTemplates(hostileArray, 128), /Keys\.encryptTemplates/);
});

test('byte inputs longer than the largest valid object are refused before any copy', () => {
  const cases = [
    ['Ciphertext.fromBytes', (b) => bm.Ciphertext.fromBytes(params, b)],
    ['Ciphertext.fromBytesUntrusted', (b) => bm.Ciphertext.fromBytesUntrusted(params, b)],
    ['Keys.decryptScores', (b) => keys.decryptScores(b, 1)],
    ['Verifier.verify', (b) => verifier.verify(template, b, pk)],
    ['Keys.fromSecretKey', (b) => bm.Keys.fromSecretKey(params, b)],
    ['PublicKey.fromBytes', (b) => bm.PublicKey.fromBytes(params, b)],
    ['RelinKey.fromBytes', (b) => bm.RelinKey.fromBytes(params, b)],
    ['GaloisKeys.fromBytes', (b) => bm.GaloisKeys.fromBytes(params, b)],
    ['Plaintext.fromBytes', (b) => bm.Plaintext.fromBytes(params, b)],
  ];
  for (const size of [32 << 20, 100 << 20]) {
    const big = new Uint8Array(size);
    big.set(probe);
    for (const [name, f] of cases) {
      const before = memory.buffer.byteLength;
      let thrown;
      try {
        f(big);
      } catch (e) {
        thrown = e;
      }
      assert.equal(memory.buffer.byteLength, before, `${name} of ${size} bytes grew wasm memory`);
      fails(() => {
        throw thrown;
      }, new RegExp(name.replace('.', '\\.')), /bytes/, /at most/);
    }
  }
  // The largest valid objects themselves are accepted.
  const sk = keys.secretKey();
  const full = new bm.Evaluator(params).multiply(bm.Ciphertext.fromBytes(params, probe), bm.Ciphertext.fromBytes(params, probe));
  assert.equal(bm.Ciphertext.fromBytes(params, full.toBytes()).size, 3);
  const gk = sk.galoisKeys(Int32Array.from({ length: 64 }, (_, i) => i + 1));
  assert.ok(bm.GaloisKeys.fromBytes(params, gk.toBytesExpanded?.() ?? gk.toBytes()) instanceof bm.GaloisKeys);
  stillWorks();
});
