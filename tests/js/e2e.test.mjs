// End to end: the demo login page (www/) served by the REAL blindmatch-server
// (temp database, 127.0.0.1, free port) in headless Chromium driven by
// playwright-core. Registers a demo identity (keys made in the Web Worker,
// the secret key wrapped in IndexedDB), logs in as that identity (accepted),
// logs in with another identity's sample (rejected), checks the page's error
// display, and saves a screenshot.
//
// Needs: pkg/ built (bash scripts/build-wasm.sh), Chromium (/usr/bin/chromium
// or CHROMIUM=...), playwright-core (npm install --prefix target/tools
// playwright-core). The server binary is target/{release,debug}/blindmatch-server
// (or BLINDMATCH_SERVER=...); if there is none it is built with
// `cargo build --features server --bin blindmatch-server`.
// SCREENSHOT=path chooses where the screenshot goes (default:
// target/e2e/e2e.png, replaced by each run).
//
//   node --test tests/js/e2e.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { act, browserSkip, engineReady, openPage } from './chromium.mjs';
import { serverBinary, startServer, stopServer } from './server.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const THRESHOLD = 0.18; // the page's default (www/embeddings.js)

const skip = browserSkip;

test('demo login page end to end: register, genuine login accepted, impostor rejected', { skip, timeout: 600_000 }, async (t) => {
  assert.ok(existsSync(join(ROOT, 'pkg/index.js')), 'pkg/ is not built: run bash scripts/build-wasm.sh');
  const bin = serverBinary();
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-e2e-'));
  const screenshot = process.env.SCREENSHOT ?? join(ROOT, 'target/e2e/e2e.png');
  mkdirSync(dirname(screenshot), { recursive: true });
  let server;
  let context;
  try {
    server = await startServer(bin, work);
    const base = server.url;

    // Everything must stay on the server under test.
    const opened = await openPage(join(work, 'profile'), base);
    context = opened.context;
    const { page, offsite, pageErrors, consoleLines } = opened;
    const cspViolations = () => consoleLines.filter((l) => /Content.Security.Policy|Refused to/i.test(l));

    await page.goto(`${base}/`);
    await engineReady(opened);
    const engine = await page.textContent('#engine');
    t.diagnostic(engine.trim());
    assert.match(engine, /simd128|baseline/);

    const user = 'ada-e2e';
    // A login before registering: a clear error, no outcome.
    await page.fill('#user', user);
    let r = await act(page, '#login');
    assert.match(r.error ?? '', /no key for .*register first/, 'unregistered login must show an error');

    // Register Ada with 5 captures.
    await page.selectOption('#identity', 'Ada');
    await page.fill('#captures', '5');
    r = await act(page, '#register');
    assert.equal(r.error, null, `register failed: ${r.error}`);
    assert.equal(r.kind, 'registered', r.text);
    t.diagnostic(`register: ${r.ms.toFixed(0)} ms`);
    assert.match(await page.textContent('#users'), new RegExp(user));

    // The server holds keys (public + relinearization) and a 5-sample template, no secret.
    const info = await (await fetch(`${base}/v1/users/${user}`)).json();
    assert.equal(info.template_count, 5);
    assert.ok(info.public_key_bytes > 0 && info.relin_key_bytes > 0, JSON.stringify(info));
    // The secret key is in IndexedDB, wrapped, under a non-extractable AES-GCM key.
    const stored = await page.evaluate(async (name) => {
      const db = await new Promise((res, rej) => {
        const o = indexedDB.open('blindmatch-demo');
        o.onsuccess = () => res(o.result);
        o.onerror = () => rej(o.error);
      });
      const get = (s, k) => new Promise((res, rej) => {
        const q = db.transaction(s).objectStore(s).get(k);
        q.onsuccess = () => res(q.result);
        q.onerror = () => rej(q.error);
      });
      const rec = await get('users', name);
      const meta = await get('meta', 'wrapping-key');
      db.close();
      return {
        wrappedBytes: rec?.wrapped?.byteLength, ivBytes: rec?.iv?.byteLength,
        isCryptoKey: meta?.key instanceof CryptoKey, extractable: meta?.key?.extractable,
        algorithm: meta?.key?.algorithm?.name, usages: meta?.key?.usages,
      };
    }, user);
    assert.ok(stored.wrappedBytes > 16 && stored.ivBytes === 12, JSON.stringify(stored));
    assert.deepEqual([stored.isCryptoKey, stored.extractable, stored.algorithm], [true, false, 'AES-GCM']);

    // Genuine login: a fresh capture of Ada.
    r = await act(page, '#login');
    assert.equal(r.error, null, `login failed: ${r.error}`);
    t.diagnostic(`genuine: ${r.text} (${r.ms.toFixed(0)} ms)`);
    assert.equal(r.kind, 'accepted', r.text);
    assert.match(r.text, /^Accepted/);
    const genuine = Number(r.cosine);
    assert.ok(genuine >= THRESHOLD && genuine < 1, `genuine cosine ${genuine}`);
    assert.equal(await page.textContent('#similarity'), genuine.toFixed(3));
    assert.equal(await page.$$eval('#cosines li', (l) => l.length), 5);
    const loginSteps = await page.$$eval('#timings-login tbody th', (l) => l.map((e) => e.textContent));
    for (const s of ['Unwrap', 'Encrypt probe', 'Verify round trip', 'Decrypt']) {
      assert.ok(loginSteps.some((x) => x.startsWith(s)), `timing row ${s} missing: ${loginSteps}`);
    }
    const registerSteps = await page.$$eval('#timings-register tbody th', (l) => l.map((e) => e.textContent));
    for (const s of ['Key generation', 'Encrypt 5', 'Upload']) {
      assert.ok(registerSteps.some((x) => x.startsWith(s)), `timing row ${s} missing: ${registerSteps}`);
    }

    // Impostor: Grace's sample against Ada's account.
    await page.selectOption('#identity', 'Grace');
    r = await act(page, '#login');
    assert.equal(r.error, null, `login failed: ${r.error}`);
    t.diagnostic(`impostor: ${r.text}`);
    assert.equal(r.kind, 'rejected', r.text);
    assert.match(r.text, /^Rejected/);
    const impostor = Number(r.cosine);
    assert.ok(impostor < THRESHOLD && impostor > -1, `impostor cosine ${impostor}`);

    // A pasted embedding of the wrong length: the page says what is wrong.
    await page.fill('#embedding', '[0.1, 0.2, 0.3]');
    r = await act(page, '#login');
    assert.match(r.error ?? '', /3 numbers; the server expects 128/);

    // A registration under a taken name: the server's 409 is shown.
    await page.selectOption('#identity', 'Ada');
    r = await act(page, '#register');
    assert.match(r.error ?? '', /409 \(user_exists\)/);
    assert.equal((await (await fetch(`${base}/v1/users/${user}`)).json()).template_count, 5, 'a refused registration must not remove the user');

    // Back to the genuine result for the picture.
    r = await act(page, '#login');
    assert.equal(r.kind, 'accepted', r.text);
    await page.screenshot({ path: screenshot, fullPage: true });
    t.diagnostic(`screenshot: ${screenshot}`);

    // Delete: gone from the server and from this browser.
    await page.click(`#users button[aria-label="Delete ${user}"]`);
    await page.waitForFunction(() => document.getElementById('users').textContent.trim() === 'none', null, { timeout: 30_000 });
    assert.equal((await fetch(`${base}/v1/users/${user}`)).status, 404);

    assert.deepEqual(offsite, [], 'requests left 127.0.0.1');
    assert.deepEqual(pageErrors, [], 'uncaught page errors');
    assert.deepEqual(cspViolations(), [], 'CSP violations');
  } finally {
    await context?.close().catch(() => {});
    if (server) await stopServer(server.proc);
    rmSync(work, { recursive: true, force: true });
  }
});
