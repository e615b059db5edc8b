// Every bad input gives a JS Error with a message, and the instance keeps
// working afterwards (no trap, no stuck borrow).
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { importPackage, exportUrl, embedding, quantize, dot } from './pkg.mjs';

const bm = await importPackage();
await bm.init();
const params = bm.Params.auth4096();
const keys = bm.Keys.generate(params);
const verifier = new bm.Verifier(params, 128);

function stillWorks() {
  const e = embedding(42);
  const reply = verifier.verify(
    keys.encryptTemplates([e], 128),
    keys.encryptProbe(e, 128),
    keys.publicKey(),
  );
  const q = quantize(e);
  assert.deepEqual(keys.decryptScores(reply, 1).scores, [dot(q, q)]);
}

/** `fn()` throws an Error whose message matches every pattern. */
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
  for (const p of patterns) assert.match(thrown.message, p);
  stillWorks();
  return thrown.message;
}

const good = embedding(1);
const withAt = (i, v) => {
  const e = Float32Array.from(good);
  e[i] = v;
  return e;
};

test('bad embeddings', () => {
  fails(() => keys.encryptTemplates([good.subarray(0, 127)], 128), /Keys\.encryptTemplates/, /127/, /128/);
  fails(() => keys.encryptTemplates([withAt(5, NaN)], 128), /component 5/, /finite/);
  fails(() => keys.encryptTemplates([withAt(0, -Infinity)], 128), /finite/);
  fails(() => keys.encryptTemplates([new Float32Array(128)], 128), /zero vector/);
  fails(() => keys.encryptTemplates([Array.from(good)], 128), /Float32Array/, /an Array/);
  fails(() => keys.encryptTemplates(good, 128), /must be an Array/);
  fails(() => keys.encryptTemplates([], 128), /at least one/);
  fails(() => keys.encryptTemplates(new Array(33).fill(good), 128), /33/, /at most 32/);
  fails(() => keys.encryptTemplates({ length: 1e12 }, 128), /must be an Array/);
  fails(() => keys.encryptTemplates([good], 100), /dimension 100/);
  fails(() => keys.encryptTemplates([good], NaN), /dim/, /whole number/);
  fails(() => keys.encryptTemplates([good]), /dim/);
  fails(() => keys.encryptProbe(withAt(3, NaN), 128), /Keys\.encryptProbe/, /finite/);
  fails(() => keys.encryptProbe(good, 64), /128/, /64/);
  fails(() => keys.encryptProbe('face', 128), /Float32Array/, /a string/);
  fails(() => keys.encryptProbe(undefined, 128), /Float32Array/, /undefined/);
  const enc = bm.PublicKeyEncryptor.fromPublicKey(params, keys.publicKey());
  fails(() => enc.encryptTemplates([withAt(1, NaN)], 128), /PublicKeyEncryptor\.encryptTemplates/, /finite/);
  fails(() => enc.encryptProbe(withAt(1, NaN), 128), /PublicKeyEncryptor\.encryptProbe/, /finite/);
  fails(() => enc.encryptProbe(good, 64), /128/, /64/);
  // A getter that throws is reported, not propagated through wasm.
  const hostile = [good];
  Object.defineProperty(hostile, 0, { get() { throw new Error('boom'); } });
  fails(() => keys.encryptTemplates(hostile, 128), /reading the input threw/);
});

test('bad bytes', () => {
  const sk = keys.exportSecretKey();
  const pk = keys.publicKey();
  const probe = keys.encryptProbe(good, 128);
  const flip = (b, i) => {
    const c = Uint8Array.from(b);
    c[i] ^= 0xff;
    return c;
  };
  fails(() => bm.Keys.fromSecretKey(params, new Uint8Array(0)), /Keys\.fromSecretKey/, /truncated/);
  fails(() => bm.Keys.fromSecretKey(params, sk.subarray(0, 1000)), /truncated/);
  fails(() => bm.Keys.fromSecretKey(params, Uint8Array.from([...sk, 0])), /1041 bytes/, /at most 1040/);
  fails(() => bm.Keys.fromSecretKey(params, pk), /kind/);
  fails(() => bm.Keys.fromSecretKey(params, flip(sk, 0)), /magic/);
  fails(() => bm.Keys.fromSecretKey(params, sk.buffer), /Uint8Array/, /ArrayBuffer/);
  fails(() => bm.Keys.fromSecretKey(params, Array.from(sk)), /Uint8Array/, /an Array/);
  fails(() => bm.Keys.fromSecretKey(params, null), /Uint8Array/, /null/);
  fails(() => bm.PublicKeyEncryptor.fromPublicKey(params, sk), /fromPublicKey/, /kind/);
  fails(() => bm.PublicKeyEncryptor.fromPublicKey(params, pk.subarray(0, 99)), /truncated/);
  fails(() => keys.decryptScores(probe.subarray(0, probe.length - 1)), /Keys\.decryptScores/, /truncated/);
  fails(() => keys.decryptScores(pk), /kind/);
  fails(() => keys.decryptScores(probe, 33), /count/, /32/);
  fails(() => keys.decryptScores(probe, -1), /count/);
  fails(() => bm.Ciphertext.fromBytes(params, sk), /Ciphertext\.fromBytes/, /kind/);
  fails(() => bm.SecretKey.fromBytes(params, probe), /SecretKey\.fromBytes/, /kind/);
  fails(() => bm.RelinKey.fromBytes(params, pk), /RelinKey\.fromBytes/, /kind/);
  fails(() => bm.GaloisKeys.fromBytes(params, pk), /GaloisKeys\.fromBytes/, /kind/);
  fails(() => bm.Plaintext.fromBytes(params, pk), /Plaintext\.fromBytes/, /kind/);
  // Bytes for other parameters.
  const q = new Uint32Array(bm.nttPrimes(20, 2048, 2));
  const other = bm.Params.custom(2048, 65537, q, bm.nttPrimes(14, 2048, 1)[0], false);
  const otherSk = bm.Keys.generate(other).exportSecretKey();
  fails(() => bm.Keys.fromSecretKey(params, otherSk), /parameter id/);
  // The verifier checks everything it is given.
  const t = keys.encryptTemplates([good], 128);
  fails(() => verifier.verify(t, probe.subarray(0, 60), pk), /Verifier\.verify/, /probe/, /truncated/);
  fails(() => verifier.verify(t, probe, sk), /publicKey/, /kind/);
  fails(() => verifier.verify(t, probe, pk, pk), /relinKey/, /kind/);
  const ev = new bm.Evaluator(params);
  const ct = bm.Ciphertext.fromBytes(params, probe);
  const zero = ev.sub(ct, ct); // c1 = 0: transparent
  fails(() => verifier.verify(t, zero.toBytes(), pk), /transparent/);
  fails(() => bm.Ciphertext.fromBytesUntrusted(params, zero.toBytes()), /transparent/);
  // A large input is refused before it is copied into wasm memory.
  fails(() => bm.Keys.fromSecretKey(params, new Uint8Array(65 * 1024 * 1024)), /bytes/, /at most/);
});

test('bad objects and parameters', () => {
  const ev = new bm.Evaluator(params);
  const sk = keys.secretKey();
  const enc = new bm.BatchEncoder(params);
  const ct = sk.encrypt(enc.encode([1, 2]));
  fails(() => ev.multiply(ev.multiply(ct, ct), ct), /Evaluator\.multiply/, /size/);
  fails(() => ev.rotateRows(ct, 3, sk.galoisKeys([1])), /Galois key/);
  // Below the top level addPlain scales by that level's delta: exact.
  assert.deepEqual(Array.from(enc.decode(sk.decrypt(ev.addPlain(ev.modSwitchToNext(ct), enc.encode([1, 5])))).slice(0, 3)), [2, 7, 0]);
  fails(() => ev.modSwitchToNext(ev.modSwitchToNext(ev.modSwitchToNext(ct))), /modSwitchToNext/);
  fails(() => sk.galoisKeys(new Int32Array(65)), /at most 64/);
  fails(() => enc.encode(new Int32Array(4097)), /4097/, /at most 4096/);
  fails(() => enc.encode([1.5]), /safe integer/);
  fails(() => enc.encode([70000]), /BatchEncoder\.encode/);
  fails(() => enc.encode('123'), /Int32Array/);
  fails(() => bm.Plaintext.fromCoefficients(params, new Uint32Array([65537])), /65537/);
  fails(() => bm.Params.custom(4096, 65537, new Uint32Array([536813569, 528916481, 501882881]), 8380417, true), /Params\.custom/);
  fails(() => bm.Params.custom(NaN, 65537, new Uint32Array([7681]), 12289, true), /degree/);
  const q = new Uint32Array(bm.nttPrimes(20, 2048, 2));
  const other = bm.Params.custom(2048, 65537, q, bm.nttPrimes(14, 2048, 1)[0], false);
  const osk = bm.SecretKey.generate(other);
  const oct = osk.encrypt(new bm.CoefficientEncoder(other).encode([1]));
  fails(() => ev.add(ct, oct), /Evaluator\.add/, /parameter/);
  fails(() => sk.decrypt(oct), /SecretKey\.decrypt/);
  fails(() => new bm.BatchEncoder(other), /BatchEncoder/);
  // Wrong classes and freed objects: errors from the glue, not traps.
  fails(() => ev.add(ct, enc), /Ciphertext/);
  const freed = sk.encrypt(enc.encode([1]));
  freed.free();
  fails(() => ev.add(ct, freed), /null pointer|pointer/);
  assert.equal(ev.add(ct, ct).size, 2, 'the evaluator is not left borrowed');
  const k2 = bm.Keys.generate(params);
  k2.free();
  fails(() => k2.publicKey(), /null pointer|pointer/);
});

test('a failing crypto.getRandomValues is an error, never a fallback', () => {
  const orig = Object.getOwnPropertyDescriptor(globalThis.crypto, 'getRandomValues');
  globalThis.crypto.getRandomValues = () => {
    throw new Error('entropy source unavailable');
  };
  let caught = [];
  try {
    for (const f of [
      () => bm.Keys.generate(params),
      () => keys.encryptProbe(good, 128),
      () => keys.encryptTemplates([good], 128),
      () => verifier.verify(keys.encryptTemplates([good], 128), keys.encryptProbe(good, 128), keys.publicKey()),
    ]) {
      try {
        f();
        caught.push(null);
      } catch (e) {
        caught.push(e);
      }
    }
  } finally {
    if (orig) Object.defineProperty(globalThis.crypto, 'getRandomValues', orig);
    else delete globalThis.crypto.getRandomValues;
  }
  assert.ok(caught[0] instanceof Error && /Keys\.generate/.test(caught[0].message), String(caught[0]));
  assert.match(caught[0].message, /random number generator/);
  assert.match(caught[1].message, /Keys\.encryptProbe.*random number generator/);
  assert.match(caught[2].message, /Keys\.encryptTemplates.*random number generator/);
  // (the fourth call failed already while encrypting its inputs)
  assert.ok(caught[3] instanceof Error);
  stillWorks();
});

test('calls before init() say so, and work once it has finished', () => {
  // A fresh Node process: this file's module instance is initialized already.
  const script = `
    const bm = await import(${JSON.stringify(exportUrl('.').href)});
    const errors = [];
    for (const f of [() => bm.Params.auth4096(), () => bm.Params.custom(4096, 65537, new Uint32Array(0), 0, true),
                     () => bm.nttPrimes(29, 4096, 1), () => new bm.NttPlan(4096, 12289), () => bm.NttPlan.scalar(4096, 12289)]) {
      try { f(); errors.push(null); } catch (e) { errors.push(e instanceof Error ? e.message : String(e)); }
    }
    await bm.init();
    const q = bm.nttPrimes(29, 4096, 1)[0];
    const after = [bm.Params.auth4096().degree, new bm.NttPlan(4096, q).backend,
                   bm.NttPlan.scalar(4096, q) instanceof bm.NttPlan, bm.NttPlan.scalar(4096, q).backend];
    console.log(JSON.stringify({ errors, after }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  const { errors, after } = JSON.parse(out);
  const names = ['Params.auth4096', 'Params.custom', 'nttPrimes', 'new NttPlan', 'NttPlan.scalar'];
  errors.forEach((m, i) => {
    assert.ok(m !== null, `${names[i]} before init() did not fail`);
    assert.ok(m.startsWith(`${names[i]}: `) && /call \(and await\) init\(\) first/.test(m), m);
  });
  assert.deepEqual(after, [4096, 'simd128', true, 'scalar']);
});
