// Randomly corrupted bytes into every entry point of the package that takes
// bytes: each call either succeeds (a flip inside a residue can leave a valid
// object) or throws a JS Error whose message names the call, never a trap;
// the instance keeps working after every batch. Seeded, so a failure
// reproduces.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPackage, embedding, quantize, dot } from './pkg.mjs';

const bm = await importPackage();
await bm.init();
const params = bm.Params.auth4096();
const keys = bm.Keys.generate(params);
const verifier = new bm.Verifier(params, 128);

/** Corrupted copies per entry point (per argument for `Verifier.verify`). */
const PER_ENTRY = 300;

/** xorshift64*: a reproducible stream of 32-bit values. */
function rng(seed) {
  let x = BigInt.asUintN(64, BigInt(seed) * 0x9e3779b97f4a7c15n) | 1n;
  return () => {
    x ^= x >> 12n;
    x ^= BigInt.asUintN(64, x << 25n);
    x ^= x >> 27n;
    return Number(BigInt.asUintN(64, x * 0x2545f4914f6cdd1dn) >> 32n);
  };
}

/**
 * A corrupted copy of `bytes`: bit flips (mostly in the header, where the
 * parser decides what follows), a truncation, an extension, an overwritten
 * word, or another object's header.
 */
function mutate(bytes, next, headers) {
  const below = (k) => next() % Math.max(k, 1);
  const out = Uint8Array.from(bytes);
  switch (below(5)) {
    case 0: {
      const flips = 1 + below(8);
      for (let i = 0; i < flips; i++) {
        const at = below(2) === 0 ? below(Math.min(64, out.length)) : below(out.length);
        out[at] ^= 1 << below(8);
      }
      return out;
    }
    case 1:
      return out.subarray(0, below(out.length));
    case 2: {
      const extra = Uint8Array.from({ length: 1 + below(64) }, () => below(256));
      return Uint8Array.from([...out, ...extra]);
    }
    case 3: {
      const at = below(Math.max(out.length - 3, 1));
      const word = below(2) === 0 ? 0xffffffff : next();
      for (let i = 0; i < 4 && at + i < out.length; i++) out[at + i] = (word >>> (8 * i)) & 0xff;
      return out;
    }
    default: {
      const h = headers[below(headers.length)];
      out.set(h.subarray(0, Math.min(h.length, out.length, 16)));
      return out;
    }
  }
}

function stillWorks() {
  const e = embedding(42);
  const reply = verifier.verify(keys.encryptTemplates([e], 128), keys.encryptProbe(e, 128), keys.publicKey());
  const q = quantize(e);
  assert.deepEqual(keys.decryptScores(reply, 1).scores, [dot(q, q)]);
}

const release = (v) => {
  if (v && typeof v.free === 'function') v.free();
};

test('corrupted bytes give JS errors that name the call, never a trap', () => {
  const sk = keys.exportSecretKey();
  const pk = keys.publicKey();
  const rk = keys.relinKey();
  const secret = keys.secretKey();
  const gk = secret.galoisKeys([1]).toBytes();
  const e = embedding(7);
  const template = keys.encryptTemplates([e, embedding(8)], 128);
  const probe = keys.encryptProbe(e, 128);
  const reply = verifier.verify(template, probe, pk, rk);
  const pt = new bm.BatchEncoder(params).encode([1, 2, 3]).toBytes();
  const headers = [sk, pk, rk, gk, template, reply, pt];

  // [call, name in its messages, valid bytes, how to call it with bytes]
  const entries = [
    ['Keys.fromSecretKey', sk, (b) => bm.Keys.fromSecretKey(params, b)],
    ['SecretKey.fromBytes', sk, (b) => bm.SecretKey.fromBytes(params, b)],
    ['PublicKey.fromBytes', pk, (b) => bm.PublicKey.fromBytes(params, b)],
    ['PublicKeyEncryptor.fromPublicKey', pk, (b) => bm.PublicKeyEncryptor.fromPublicKey(params, b)],
    ['RelinKey.fromBytes', rk, (b) => bm.RelinKey.fromBytes(params, b)],
    ['GaloisKeys.fromBytes', gk, (b) => bm.GaloisKeys.fromBytes(params, b)],
    ['Plaintext.fromBytes', pt, (b) => bm.Plaintext.fromBytes(params, b)],
    ['Ciphertext.fromBytes', probe, (b) => bm.Ciphertext.fromBytes(params, b)],
    ['Ciphertext.fromBytesUntrusted', probe, (b) => bm.Ciphertext.fromBytesUntrusted(params, b)],
    ['Keys.decryptScores', reply, (b) => keys.decryptScores(b)],
    ['Verifier.verify', template, (b) => verifier.verify(b, probe, pk, rk)],
    ['Verifier.verify', probe, (b) => verifier.verify(template, b, pk, rk)],
    ['Verifier.verify', pk, (b) => verifier.verify(template, probe, b, rk)],
    ['Verifier.verify', rk, (b) => verifier.verify(template, probe, pk, b)],
  ];
  const next = rng(20261130);
  const tally = [];
  for (const [name, bytes, call] of entries) {
    let refused = 0;
    for (let i = 0; i < PER_ENTRY; i++) {
      const bad = mutate(bytes, next, headers);
      let result;
      try {
        result = call(bad);
      } catch (err) {
        assert.ok(!(err instanceof WebAssembly.RuntimeError), `${name}: a trap (${err.message}), case ${i}`);
        assert.ok(err instanceof Error, `${name}: not a JS Error: ${err}`);
        assert.ok(err.message.includes(name.split('.')[1]), `${name}: the message does not name the call: ${err.message}`);
        refused++;
        continue;
      }
      release(result);
    }
    // Truncations alone are a fifth of the cases, and every one is refused.
    assert.ok(refused >= PER_ENTRY / 10, `${name}: only ${refused} of ${PER_ENTRY} refused`);
    tally.push(`${name} ${refused}/${PER_ENTRY}`);
    stillWorks();
  }
  secret.free();
  console.log(`# refused: ${tally.join(', ')}`);
});
