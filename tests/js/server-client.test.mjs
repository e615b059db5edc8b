// ServerClient against the REAL blindmatch-server (temporary database, free
// loopback port): the whole 1:1 flow, and every failure as a ServerError
// with the server's status and code, or a plain Error when the server cannot
// be reached.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importPackage, embedding, quantize, dot } from './pkg.mjs';
import { serverBinary, startServer, stopServer } from './server.mjs';

const bm = await importPackage();
await bm.init();

/** Awaits `promise`, expecting a ServerError with this status and code. */
async function refused(promise, status, code) {
  const e = await promise.then(
    () => assert.fail(`expected a ServerError ${status} ${code}`),
    (err) => err,
  );
  assert.ok(e instanceof bm.ServerError, `a ServerError, got ${e}`);
  assert.equal(e.status, status, e.message);
  assert.equal(e.code, code, e.message);
  return e;
}

test('ServerClient: register, enroll, verify, delete, and the server\'s errors', { timeout: 120_000 }, async () => {
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-client-'));
  let server;
  try {
    server = await startServer(serverBinary(), work);
    const client = new bm.ServerClient(`${server.url}/`);
    assert.equal(client.base, server.url, 'a trailing slash is dropped');
    const params = bm.Params.auth4096();
    const info = await client.params();
    assert.equal(info.id, params.id);
    assert.equal(info.dimension, 128);

    const keys = bm.Keys.generate(params);
    const samples = [embedding(11), embedding(12)];
    await client.register('carol', keys.publicKey(), keys.relinKey());
    await refused(client.register('carol', keys.publicKey()), 409, 'user_exists');
    await refused(client.verify('carol', keys.encryptProbe(samples[0], 128)), 404, 'no_template');
    await client.enroll('carol', keys.encryptTemplates(samples, 128), 2);

    const probe = embedding(13);
    const { reply, count, serverMs } = await client.verify('carol', keys.encryptProbe(probe, 128));
    assert.equal(count, 2);
    assert.ok(serverMs.match > 0, `Server-Timing read: ${JSON.stringify(serverMs)}`);
    const q = quantize(probe);
    assert.deepEqual(keys.decryptScores(reply, count).scores, samples.map((s) => dot(quantize(s), q)));

    // Names are escaped in the path, so the server sees (and refuses) them
    // as given; an allowed one with punctuation works.
    const odd = bm.Keys.generate(params);
    await refused(client.register('dave o/brien?', odd.publicKey()), 400, 'bad_name');
    await client.register('dave.o-brien_2', odd.publicKey());
    assert.equal(await client.deleteUser('dave.o-brien_2'), true);

    await refused(client.verify('nobody', keys.encryptProbe(probe, 128)), 404, 'unknown_user');
    const bad = await refused(client.enroll('carol', new Uint8Array(10), 1), 400, 'malformed');
    assert.match(bad.message, /^enrolling the template: the server answered 400 \(malformed\): /);
    assert.equal(await client.deleteUser('carol'), true);
    assert.equal(await client.deleteUser('carol'), false, 'deleting a user who is gone is not an error');

    await assert.rejects(client.register('', keys.publicKey()), TypeError);
    await assert.rejects(client.register('x', 'not bytes'), /frameKeys: the public key must be a Uint8Array/);
    await assert.rejects(client.enroll('x', new Uint8Array(1), 0), /count must be a positive integer/);
  } finally {
    if (server) await stopServer(server.proc);
    rmSync(work, { recursive: true, force: true });
  }
  // Nothing listens there any more.
  const gone = new bm.ServerClient(server.url);
  await assert.rejects(gone.params(), (e) => !(e instanceof bm.ServerError) && /cannot be reached/.test(e.message));
});

test('frameKeys: u32 LE length, public key, u32 LE length, relinearization key', () => {
  const framed = bm.frameKeys(Uint8Array.of(1, 2, 3), Uint8Array.of(9));
  assert.deepEqual(Array.from(framed), [3, 0, 0, 0, 1, 2, 3, 1, 0, 0, 0, 9]);
  assert.deepEqual(Array.from(bm.frameKeys(Uint8Array.of(7))), [1, 0, 0, 0, 7, 0, 0, 0, 0]);
});

// A server that answers with headers but holds the body back, or never
// answers at all, and records the headers it was sent.
async function stallingServer() {
  const { createServer } = await import('node:http');
  const seen = [];
  const open = new Set();
  const srv = createServer((req, res) => {
    seen.push({ path: req.url, authorization: req.headers.authorization ?? null });
    open.add(res);
    req.resume();
    if (req.url.startsWith('/v1/params')) {
      // Headers now, the body never: the timeout must cover the body too.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":');
    }
  });
  srv.on('connection', (s) => s.unref());
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    seen,
    close: () => {
      for (const r of open) r.destroy();
      srv.close();
    },
  };
}

test('ServerClient: headers on every request, a timeout over the whole exchange, cancellation', { timeout: 60_000 }, async () => {
  const s = await stallingServer();
  try {
    let n = 0;
    const client = new bm.ServerClient(s.url, {
      headers: async (path) => ({ authorization: `Bearer t${++n}:${path}` }),
      timeoutMs: 300,
    });
    assert.equal(client.timeoutMs, 300);
    const t0 = Date.now();
    const e = await client.verify('alice', new Uint8Array(8)).then(() => assert.fail('answered'), (x) => x);
    assert.equal(e.name, 'TimeoutError');
    assert.match(e.message, /^verifying: no answer from the server within 300 ms$/);
    const waited = Date.now() - t0;
    assert.ok(waited >= 250 && waited < 5000, `${waited} ms`);
    // Headers arrived, the body did not: still a timeout.
    const e2 = await client.params().then(() => assert.fail('answered'), (x) => x);
    assert.equal(e2.name, 'TimeoutError');
    assert.deepEqual(s.seen, [
      { path: '/v1/users/alice/verify', authorization: 'Bearer t1:/v1/users/alice/verify' },
      { path: '/v1/params', authorization: 'Bearer t2:/v1/params' },
    ]);

    // The caller's signal: its reason, at once, whatever the timeout.
    const patient = new bm.ServerClient(s.url, { headers: { authorization: 'Basic x' }, timeoutMs: 0 });
    const ac = new AbortController();
    const pending = patient.deleteUser('bob', { signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    const e3 = await pending.then(() => assert.fail('answered'), (x) => x);
    assert.equal(e3.name, 'AbortError');
    assert.equal(s.seen.at(-1).authorization, 'Basic x');
    // Already aborted: no request at all.
    const before = s.seen.length;
    const e4 = await patient.params({ signal: AbortSignal.abort() }).then(() => assert.fail('answered'), (x) => x);
    assert.equal(e4.name, 'AbortError');
    assert.equal(s.seen.length, before);

    assert.throws(() => new bm.ServerClient(s.url, { timeoutMs: -1 }), TypeError);
    assert.throws(() => new bm.ServerClient(s.url, { headers: 'x' }), TypeError);
  } finally {
    s.close();
  }
});

test('ServerClient, 1:N: service key, gallery templates, identify, erase, delete', { timeout: 120_000 }, async () => {
  const { spawnSync } = await import('node:child_process');
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-gallery-'));
  let server;
  try {
    const bin = serverBinary();
    const keys = spawnSync(bin, ['keygen', '--out', join(work, 'keys')], { encoding: 'utf8' });
    assert.equal(keys.status, 0, keys.stderr);
    server = await startServer(bin, work, ['--service-key', join(work, 'keys', 'service.sk')]);
    const client = new bm.ServerClient(server.url);
    const params = bm.Params.auth4096();
    const pk = await client.servicePublicKey();
    assert.ok(pk instanceof Uint8Array && pk.length > 0);
    const enc = bm.PublicKeyEncryptor.fromPublicKey(params, pk);
    const people = Array.from({ length: 40 }, (_, i) => embedding(1000 + i));
    const first = await client.addGalleryTemplates('staff', enc.encryptTemplates(people.slice(0, 32), 128), 32);
    assert.deepEqual(first, { gallery: 'staff', firstIndex: 0, count: 32, templates: 32 });
    const second = await client.addGalleryTemplates('staff', enc.encryptTemplates(people.slice(32), 128), 8);
    assert.deepEqual(second, { gallery: 'staff', firstIndex: 32, count: 8, templates: 40 });
    assert.deepEqual(await client.galleries(), [{ gallery: 'staff', templates: 40, erased: 0, ciphertexts: 2 }]);

    // A fresh capture of person 35: found first, every score exact.
    const probe = people[35].map((v, i) => v + 0.01 * Math.sin(i));
    const r = await client.identify('staff', probe, 40);
    assert.equal(r.matches.length, 40);
    assert.equal(r.matches[0].index, 35);
    const pq = quantize(Float32Array.from(probe));
    for (const m of r.matches) assert.equal(m.score, dot(quantize(people[m.index]), pq), `template ${m.index}`);

    await client.eraseGalleryTemplate('staff', 35);
    const after = await client.identify('staff', Array.from(probe), 40);
    assert.equal(after.matches.length, 39);
    assert.ok(after.matches.every((m) => m.index !== 35));
    assert.deepEqual(await client.galleries(), [{ gallery: 'staff', templates: 39, erased: 1, ciphertexts: 2 }]);
    await refused(client.eraseGalleryTemplate('staff', 35), 404, 'unknown_template');
    await refused(client.identify('nobody', probe), 404, 'unknown_gallery');
    await refused(client.identify('staff', probe, 0), 400, 'bad_top_k');
    await refused(client.identify('staff', [1, 2, 3]), 400, 'bad_input');
    await assert.rejects(client.eraseGalleryTemplate('staff', -1), TypeError);
    await assert.rejects(client.identify('staff', 'x'), TypeError);

    assert.equal(await client.deleteGallery('staff'), true);
    assert.equal(await client.deleteGallery('staff'), false);
    assert.deepEqual(await client.galleries(), []);
  } finally {
    if (server) await stopServer(server.proc);
    rmSync(work, { recursive: true, force: true });
  }
});
