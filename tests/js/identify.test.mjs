// 1:N in login mode from Node, the way a relying party's backend does it,
// against the REAL decider and matcher (two processes, temp dirs,
// 127.0.0.1): the package creates a gallery, checks the decider's statement
// of its key (and refuses it as a user's), encrypts template and probe
// bundles under it (bare ciphertexts are refused), and gets the decider's signed identification, which `jose`
// verifies (examples/relying-party/verify.mjs, checkIdentification).
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importPackage, embedding } from './pkg.mjs';
import { serverBinary, startDecider, startServer, stopServer } from './server.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ISSUER = 'https://login.example';
const APP = 'https://app.example';
const KEY = 'id-test-key-0123456789abcdefghij';
const joseInstalled = existsSync(join(ROOT, 'examples/relying-party/node_modules/jose'));

const bm = await importPackage();
await bm.init();

test('identifyEncrypted: a signed identification, indices only, that jose verifies', {
  skip: !joseInstalled && 'jose is not installed in examples/relying-party (scripts/setup.sh)',
  timeout: 120_000,
}, async () => {
  const { checkIdentification } = await import(pathToFileURL(join(ROOT, 'examples/relying-party/verify.mjs')).href);
  const bin = serverBinary();
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-identify-'));
  writeFileSync(join(work, 'api.keys'), `${KEY}\n`);
  let decider;
  let matcher;
  try {
    decider = await startDecider(bin, work, ISSUER);
    matcher = await startServer(bin, work, ['--api-key-file', join(work, 'api.keys'), '--decider', decider.url,
      '--decider-token-file', decider.tokenFile]);
    const backend = new bm.ServerClient(matcher.url, { apiKey: KEY });
    const anyone = new bm.ServerClient(matcher.url);
    const jwks = await (await fetch(`${decider.url}/.well-known/jwks.json`)).json();

    await assert.rejects(anyone.createGallery('staff'), (e) => e instanceof bm.ServerError && e.code === 'unauthorized');
    const created = await backend.createGallery('staff');
    assert.equal(created.gallery, 'staff');
    assert.deepEqual(await backend.createGallery('staff'), created);
    const key = await anyone.galleryPublicKey('staff');
    assert.equal(key.epoch, created.epoch);
    const claims = await bm.checkKeyStatement({ ...key, jwks, issuer: ISSUER, gallery: 'staff' });
    assert.equal(claims.sub, 'staff');
    // A gallery's statement is no user's.
    await assert.rejects(bm.checkKeyStatement({ ...key, jwks, issuer: ISSUER, user: 'staff' }), (e) => e.name === 'KeyStatementError');

    const params = bm.Params.auth4096();
    const enc = bm.PublicKeyEncryptor.fromPublicKey(params, key.publicKey);
    const people = Array.from({ length: 40 }, (_, i) => embedding(2000 + i));
    await backend.addGalleryTemplates('staff', enc.encryptTemplateBundle(people.slice(0, 32), 128), 32);
    // A bare ciphertext, as a page without the checks sends it: refused.
    await assert.rejects(backend.addGalleryTemplates('staff', enc.encryptTemplates(people.slice(32), 128), 8),
      (e) => e instanceof bm.ServerError && e.code === 'wrong_kind');
    await backend.addGalleryTemplates('staff', enc.encryptTemplateBundle(people.slice(32), 128), 8);

    const capture = Float32Array.from(people[35], (v, i) => v + 0.01 * Math.sin(i));
    const r = await backend.identifyEncrypted('staff', enc.encryptProbeBundle(capture, 128), { audience: APP, nonce: 'n-1', topK: 3 });
    assert.deepEqual(Object.keys(r).sort(), ['gallery', 'identification']);
    const payload = await checkIdentification(r.identification, { jwks, issuer: ISSUER, audience: APP, nonce: 'n-1' });
    assert.equal(payload.sub, 'staff');
    assert.equal(payload.matches[0], 35);
    assert.ok(payload.matches.length <= 3);
    assert.equal(payload.score, undefined);
    await assert.rejects(checkIdentification(r.identification, { jwks, issuer: ISSUER, audience: APP, nonce: 'n-2' }),
      (e) => e.code === 'ERR_NONCE_MISMATCH');

    // A bare probe ciphertext, with no one-hot encoding to check: refused.
    await assert.rejects(backend.identifyEncrypted('staff', enc.encryptProbe(capture, 128), { audience: APP, nonce: 'n' }),
      (e) => e instanceof bm.ServerError && e.code === 'wrong_kind');

    const stranger = await backend.identifyEncrypted('staff', enc.encryptProbeBundle(embedding(9999), 128), { audience: APP, nonce: 'n-3' });
    const none = await checkIdentification(stranger.identification, { jwks, issuer: ISSUER, audience: APP, nonce: 'n-3' });
    assert.deepEqual(none.matches, []);

    await assert.rejects(anyone.identifyEncrypted('staff', enc.encryptProbeBundle(capture, 128), { audience: APP, nonce: 'n' }),
      (e) => e instanceof bm.ServerError && e.status === 401);
    await assert.rejects(backend.identifyEncrypted('staff', new Uint8Array(4), {}), TypeError);
    await assert.rejects(backend.identifyEncrypted('nobody', enc.encryptProbeBundle(capture, 128), { audience: APP, nonce: 'n' }),
      (e) => e instanceof bm.ServerError && e.code === 'unknown_gallery');
  } finally {
    if (matcher) await stopServer(matcher.proc);
    if (decider) await stopServer(decider.proc);
    rmSync(work, { recursive: true, force: true });
  }
});
