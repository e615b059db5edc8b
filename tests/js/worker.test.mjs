// blindmatch/worker through BlindmatchWorker, in Node's worker_threads:
// keygen, encryption and decryption in the worker, verification here.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPackage, exportUrl, embedding, quantize, dot } from './pkg.mjs';

const bm = await importPackage();
await bm.init();

test('the worker entry is the package export ./worker', () => {
  assert.match(exportUrl('./worker').href, /\/worker\.js$/);
});

test('keygen, encrypt and decrypt in a worker, promise-based', async () => {
  const w = await bm.BlindmatchWorker.create();
  try {
    assert.deepEqual(w.info, { simd: true, build: 'simd128' });
    const params = bm.Params.auth4096();
    const h = await w.generate();
    const pk = await w.publicKey(h);
    assert.ok(pk instanceof Uint8Array);
    assert.equal(pk.length, 44592);
    const e = [embedding(1), embedding(2), embedding(3)];
    const template = await w.encryptTemplates(h, e, 128);
    const probe = await w.encryptProbe(h, e[2], 128);
    const reply = new bm.Verifier(params, 128).verify(template, probe, pk, await w.relinKey(h));
    const r = await w.decryptScores(h, reply, 3);
    const b = quantize(e[2]);
    assert.deepEqual(r.scores, e.map((x) => dot(quantize(x), b)));
    // Restoring from the exported secret key gives the same key.
    const secret = await w.exportSecretKey(h);
    // (a copy: fromSecretKey transfers the array it is given)
    const h2 = await w.fromSecretKey(secret.slice());
    assert.deepEqual(await w.exportSecretKey(h2), secret);
    assert.deepEqual((await w.decryptScores(h2, reply, 3)).scores, r.scores);
    // Several calls in flight at once resolve to their own results.
    const many = await Promise.all([1, 2, 3, 4].map((i) => w.encryptProbe(h, embedding(i), 128)));
    assert.equal(new Set(many.map((b) => b.length)).size, 1);
    await w.free(h);
    await w.free(h2);
  } finally {
    w.terminate();
  }
});

test('a public-key handle encrypts in the worker and decrypts nothing', async () => {
  const w = await bm.BlindmatchWorker.create();
  try {
    const params = bm.Params.auth4096();
    const keys = bm.Keys.generate(params);
    const h = await w.fromPublicKey(keys.publicKey());
    const e = [embedding(4), embedding(5)];
    const template = await w.encryptTemplates(h, e, 128);
    const probe = await w.encryptProbe(h, e[1], 128);
    // The key holder reads what the handle encrypted.
    const reply = new bm.Verifier(params, 128).verify(template, probe, keys.publicKey(), keys.relinKey());
    const b = quantize(e[1]);
    assert.deepEqual(keys.decryptScores(reply, 2).scores, e.map((x) => dot(quantize(x), b)));
    // It holds no secret key: every secret-key operation is refused.
    for (const [op, call] of [
      ['decryptScores', () => w.decryptScores(h, reply, 2)],
      ['exportSecretKey', () => w.exportSecretKey(h)],
      ['relinKey', () => w.relinKey(h)],
    ]) {
      await assert.rejects(call(), (err) => err instanceof Error && new RegExp(`${op}: handle \\d+ holds a public key only`).test(err.message));
    }
    await assert.rejects(w.fromPublicKey(new Uint8Array(5)), /PublicKeyEncryptor\.fromPublicKey/);
    await w.free(h);
    keys.free();
  } finally {
    w.terminate();
  }
});

test('worker errors reject with an Error and the worker keeps working', async () => {
  const w = await bm.BlindmatchWorker.create({ init: { simd: false } });
  try {
    assert.equal(w.info.build, 'baseline');
    const h = await w.generate();
    const bad = Float32Array.from(embedding(1));
    bad[9] = NaN;
    await assert.rejects(w.encryptProbe(h, bad, 128), (e) => e instanceof Error && /component 9.*finite/.test(e.message));
    await assert.rejects(w.fromSecretKey(new Uint8Array(3)), /Keys\.fromSecretKey/);
    await assert.rejects(w.publicKey(9999), /no keys with handle 9999/);
    await assert.rejects(w.generate('other'), /unknown parameter preset/);
    await w.free(h);
    await assert.rejects(w.publicKey(h), /no keys with handle/);
    const h2 = await w.generate();
    assert.equal((await w.publicKey(h2)).length, 44592);
  } finally {
    w.terminate();
  }
});

test('a secret key goes to the worker by transfer, and the worker zeroes what it received', async () => {
  const { Worker } = await import('node:worker_threads');
  const raw = new Worker(new URL('./secret-spy-worker.mjs', import.meta.url), {
    workerData: { worker: exportUrl('./worker').href },
  });
  const w = new bm.BlindmatchWorker(raw, 'node');
  const spy = () =>
    new Promise((resolve) => {
      const on = (m) => {
        if (!m?.spy) return;
        raw.off('message', on);
        resolve(m.spy);
      };
      raw.on('message', on);
      raw.postMessage({ spy: true });
    });
  try {
    const secret = await w.exportSecretKey(await w.generate());
    const copy = secret.slice();
    const h = await w.fromSecretKey(secret);
    // The sender's array is detached: its bytes moved, none were copied.
    assert.equal(secret.buffer.byteLength, 0);
    assert.equal(secret.length, 0);
    // A view of part of a larger buffer: sent as a copy, and zeroed here.
    const big = new Uint8Array(copy.length + 16);
    big.set(copy, 16);
    big[0] = 7;
    const view = big.subarray(16);
    const h2 = await w.fromSecretKey(view);
    assert.equal(big.buffer.byteLength, copy.length + 16, 'the larger buffer stays');
    assert.ok(view.every((x) => x === 0), 'the view is zeroed');
    assert.equal(big[0], 7);
    // What the worker received held the key, and is zero now.
    assert.deepEqual(await spy(), [
      { atReceipt: true, length: copy.length, now: false },
      { atReceipt: true, length: copy.length, now: false },
    ]);
    // A key that fails to load is zeroed too.
    const bad = copy.slice(0, 100);
    await assert.rejects(w.fromSecretKey(bad), /truncated/);
    assert.equal((await spy())[2].now, false);
    // And the keys are the ones sent.
    assert.deepEqual(await w.exportSecretKey(h), copy);
    assert.deepEqual(await w.exportSecretKey(h2), copy);
  } finally {
    w.terminate();
  }
});

test('terminate() rejects pending calls', async () => {
  const w = await bm.BlindmatchWorker.create();
  const p = w.generate();
  w.terminate();
  await assert.rejects(p, /terminated/);
});
