// Face login end to end with a camera: headless Chromium's fake camera plays
// MJPEG files made from face-api's sample photos (tests/js/faces.mjs), the
// demo page reads them with face-api in its Worker, and the login goes
// through the REAL decider, matcher (serving the face model at /face/) and
// relying party, as in tests/js/login.test.mjs. Person A registers from five
// frames of one camera file (scales, shifts, brightness), logs in from
// another file (accepted: the relying party verifies the signed verdict and
// sets a session); person B's face logs in as A (a signed reject). The
// descriptors the page computed from the camera are checked against those
// computed from the photos. A camera showing no face gets a message and sends
// nothing; a model file that fails to load is named on the page; a browser
// whose camera is refused falls back to the demo identities, under the same
// policy. Screenshots: bench/face-*.png.
//
//   node --test tests/js/face-login.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { act, browserSkip, engineReady, openPage } from './chromium.mjs';
import { serverBinary, startLoginStack } from './server.mjs';
import { FACE_THRESHOLD } from '../../www/camera.js';
import { FACE_DIR, VARIANTS, cameraFrame, cosine, distance, faceSkip, openFaceTools, photoFaces } from './faces.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ISSUER = 'https://login.example';
const KEY = 'rp-face-key-0123456789abcdefghijkl';
/** A face's camera descriptors lie this close to its photo's (Euclidean; measured 0.03-0.32). */
const GENUINE_DISTANCE = 0.35;

const joseInstalled = existsSync(join(ROOT, 'examples/relying-party/node_modules/jose'));
const skip = browserSkip || faceSkip || (!joseInstalled && 'jose is not installed in examples/relying-party (scripts/setup.sh)');

const camera = (file) => ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream',
  `--use-file-for-fake-video-capture=${file}`, '--autoplay-policy=no-user-gesture-required'];

test('face login from a camera: register A, A accepted, B rejected, descriptors as from the photos', { skip, timeout: 900_000 }, async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-face-login-'));
  mkdirSync(join(ROOT, 'bench'), { recursive: true });
  const contexts = [];
  let stack;
  try {
    stack = await startLoginStack(serverBinary(), work, {
      key: KEY, issuer: ISSUER, decider: ['--rule', 'mean', '--threshold', String(FACE_THRESHOLD)], matcher: ['--face', FACE_DIR],
    });
    const { matcher, base } = stack;

    /** A page is done with: nothing it asked for left 127.0.0.1, no uncaught error; closed (its camera loop stops). */
    const finish = async (c) => {
      assert.deepEqual(c.offsite, [], 'requests left 127.0.0.1');
      assert.deepEqual(c.pageErrors, [], 'uncaught page errors');
      await c.context.close();
    };

    // The camera files, from the photos: A = the first face of sample1, B = the second.
    const tools = await openPage(join(work, 'tools'), base);
    contexts.push(tools.context);
    await openFaceTools(tools.page, base);
    const faces = await photoFaces(tools.page);
    const [A, B] = [faces.find((f) => f.id === 'sample1#1'), faces.find((f) => f.id === 'sample1#2')];
    assert.ok(A && B, 'sample1 has two faces');
    const mjpeg = async (face, variants, name) => {
      const frames = [];
      for (const v of variants) frames.push((await cameraFrame(tools.page, face, v)).jpeg);
      const file = join(work, name);
      writeFileSync(file, Buffer.concat(frames));
      return file;
    };
    const registerFile = await mjpeg(A, VARIANTS.slice(0, 5), 'a-register.mjpeg');
    const loginA = await mjpeg(A, [VARIANTS[5]], 'a-login.mjpeg');
    const loginB = await mjpeg(B, [VARIANTS[0]], 'b-login.mjpeg');

    const blank = join(work, 'blank.mjpeg');
    writeFileSync(blank, Buffer.from(await tools.page.evaluate(async () => {
      const c = document.createElement('canvas');
      c.width = 640;
      c.height = 480;
      const g = c.getContext('2d');
      g.fillStyle = '#6b7280';
      g.fillRect(0, 0, 640, 480);
      const blob = await new Promise((res) => c.toBlob(res, 'image/jpeg', 0.9));
      return btoa(String.fromCharCode(...new Uint8Array(await blob.arrayBuffer())));
    }), 'base64'));
    await finish(tools);

    const user = 'ada-face';
    /** The demo page in a browser whose camera plays `file`; the descriptors it reads. */
    const cameraPage = async (name, file) => {
      const opened = await openPage(join(work, name), base, camera(file));
      contexts.push(opened.context);
      const { page } = opened;
      const read = [];
      await page.exposeFunction('__faces', (d) => read.push(...d));
      await page.addInitScript(() => document.addEventListener('blindmatch:faces', (e) => window.__faces(e.detail.descriptors)));
      await page.goto(`${base}/`);
      await engineReady(opened);
      await page.waitForSelector('#camera-box[data-ready]', { timeout: 120_000 });
      assert.equal(await page.getAttribute('#camera-box', 'data-ready'), 'true', await page.textContent('#camera-status'));
      assert.ok(await page.isChecked('#source-camera'), 'the camera is the chosen source');
      return { ...opened, read };
    };
    const me = (page) => page.evaluate(async () => (await fetch('/rp/me')).status);
    const rows = (page, table) => page.$$eval(`${table} tbody tr`, (l) => l.map((tr) => [...tr.cells].map((c) => c.textContent)));

    // Register A from the camera: five frames, five samples.
    const reg = await cameraPage('register', registerFile);
    t.diagnostic(`camera: ${await reg.page.textContent('#camera-status')}`);
    await reg.page.fill('#user', user);
    await reg.page.fill('#captures', '5');
    let r = await act(reg.page, '#register');
    assert.equal(r.error, null, `register failed: ${r.error}`);
    assert.equal(r.kind, 'registered', r.text);
    await reg.page.screenshot({ path: join(ROOT, 'bench/face-register.png'), fullPage: true });
    for (const [step, ms] of await rows(reg.page, '#timings-register')) t.diagnostic(`register: ${step} ${ms} ms`);
    const info = await (await fetch(`${matcher.url}/v1/users/${user}`, { headers: { authorization: `Bearer ${KEY}` } })).json();
    assert.equal(info.template_count, 5);
    assert.equal(reg.read.length, 5);
    for (const d of reg.read) {
      const dist = distance(d, A.descriptor);
      assert.ok(dist < GENUINE_DISTANCE, `a registration frame's descriptor is ${dist} from A's photo`);
    }
    t.diagnostic(`registration descriptors from A's photo: ${reg.read.map((d) => distance(d, A.descriptor).toFixed(3)).join(', ')} (Euclidean)`);
    await finish(reg);

    /** Logs in as `user` with the camera playing `file`: the verdict, the session, a screenshot. */
    const loginFrom = async (name, file, kind) => {
      const opened = await cameraPage(name, file);
      await opened.page.fill('#user', user);
      const got = await act(opened.page, '#login');
      assert.equal(got.error, null, `login failed: ${got.error}`);
      assert.equal(got.kind, kind, got.text);
      assert.equal(got.verdict, kind === 'accepted' ? 'accept' : 'reject');
      assert.equal(await me(opened.page), kind === 'accepted' ? 200 : 401);
      await opened.page.screenshot({ path: join(ROOT, `bench/face-login-${kind}.png`), fullPage: true });
      return opened;
    };

    // A logs in from another camera file: accepted, and a session.
    const la = await loginFrom('login-a', loginA, 'accepted');
    for (const [step, ms] of await rows(la.page, '#timings-login')) t.diagnostic(`login A: ${step} ${ms} ms`);
    assert.equal(la.read.length, 1);
    const dA = distance(la.read[0], A.descriptor);
    t.diagnostic(`login A: descriptor ${dA.toFixed(3)} from A's photo, cosine ${cosine(la.read[0], A.descriptor).toFixed(4)}`);
    assert.ok(dA < GENUINE_DISTANCE, `A's login descriptor is ${dA} from A's photo`);
    await finish(la);

    // B's face logs in as A: a signed reject, no session.
    const lb = await loginFrom('login-b', loginB, 'rejected');
    const dB = distance(lb.read[0], B.descriptor);
    t.diagnostic(`login B: descriptor ${dB.toFixed(3)} from B's photo, ${distance(lb.read[0], A.descriptor).toFixed(3)} from A's`);
    assert.ok(dB < GENUINE_DISTANCE, `B's login descriptor is ${dB} from B's photo`);
    await finish(lb);

    // A camera that shows no face: the page says so and sends nothing.
    const empty = await cameraPage('empty', blank);
    const logins = [];
    empty.page.on('request', (q) => { if (q.url().includes('/login?') || q.url().includes('/rp/challenge')) logins.push(q.url()); });
    await empty.page.fill('#user', user);
    r = await act(empty.page, '#login');
    assert.match(r.error ?? '', /no face in the frame: look into the camera/);
    assert.deepEqual(logins, [], 'nothing is sent without a face');
    await empty.page.waitForFunction(() => /no face in the frame/.test(document.getElementById('camera-status').textContent), null, { timeout: 30_000 });
    await finish(empty);

    // A model file that does not load: named on the page, the other sources stay.
    const broken = await openPage(join(work, 'broken'), base, camera(loginA));
    contexts.push(broken.context);
    await broken.page.route(`${base}/face/model/face_recognition_model.bin`, (route) => route.fulfill({ status: 404, body: '' }));
    await broken.page.goto(`${base}/`);
    await broken.page.waitForSelector('#camera-box[data-ready]', { timeout: 120_000 });
    assert.equal(await broken.page.getAttribute('#camera-box', 'data-code'), 'model_failed');
    assert.match(await broken.page.textContent('#camera-status'), /face_recognition_model\) did not load.*demo identities/);
    assert.ok(await broken.page.isDisabled('#source-camera'));
    assert.ok(await broken.page.isChecked('#source-demo'));
    await finish(broken);

    // A browser with no camera at all: said so, and the other sources stay.
    const none = await openPage(join(work, 'none'), base);
    contexts.push(none.context);
    await none.page.goto(`${base}/`);
    await none.page.waitForSelector('#camera-box[data-ready]', { timeout: 60_000 });
    assert.equal(await none.page.getAttribute('#camera-box', 'data-code'), 'no_camera');
    assert.match(await none.page.textContent('#camera-status'), /no camera was found.*demo identities/);
    await finish(none);

    // A browser that refuses the camera: a clear word, and the demo identities
    // (simulated in face-api's geometry) under the same policy.
    // (A fake camera without the fake permission prompt: getUserMedia is refused.)
    const plain = await openPage(join(work, 'no-camera'), base, ['--use-fake-device-for-media-stream']);
    contexts.push(plain.context);
    await plain.page.goto(`${base}/`);
    await engineReady(plain);
    await plain.page.waitForSelector('#camera-box[data-ready]', { timeout: 60_000 });
    assert.equal(await plain.page.getAttribute('#camera-box', 'data-code'), 'camera_refused');
    assert.match(await plain.page.textContent('#camera-status'), /camera permission was refused.*demo identities/);
    assert.ok(await plain.page.isDisabled('#source-camera'));
    await plain.page.fill('#user', 'grace-demo');
    await plain.page.selectOption('#identity', 'Grace');
    r = await act(plain.page, '#register');
    assert.equal(r.kind, 'registered', r.error ?? r.text);
    r = await act(plain.page, '#login');
    assert.equal(r.kind, 'accepted', r.error ?? r.text);
    await plain.page.evaluate(() => fetch('/rp/logout', { method: 'POST' }));
    await plain.page.selectOption('#identity', 'Alan');
    r = await act(plain.page, '#login');
    assert.equal(r.kind, 'rejected', r.error ?? r.text);

    await finish(plain);
  } finally {
    for (const c of contexts) await c.close().catch(() => {});
    await stack?.stop();
    rmSync(work, { recursive: true, force: true });
  }
});
