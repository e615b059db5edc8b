// Login mode end to end in headless Chromium: the REAL decider and matcher
// (two processes, temp dirs, 127.0.0.1) behind the demo's relying party
// (examples/relying-party/server.mjs, the page's origin, holding the API
// key). The page registers a demo identity with an enrollment ticket (no key
// stays in the browser), checking the decider's statement of the public key
// it encrypts under (and refusing a key the matcher substitutes), logs in,
// and the relying party verifies the signed
// verdict with jose and sets a session; an impostor's login is a signed
// reject and gets no session. The figures printed are the login's latency on
// loopback, step by step, as the page measured them.
//
// Needs what tests/js/e2e.test.mjs needs, plus jose in
// examples/relying-party (scripts/setup.sh installs it).
//
//   node --test tests/js/login.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { act, browserSkip, engineReady, openPage } from './chromium.mjs';
import { serverBinary, startLoginStack } from './server.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ISSUER = 'https://login.example';
const KEY = 'rp-e2e-key-0123456789abcdefghijkl';

const joseInstalled = existsSync(join(ROOT, 'examples/relying-party/node_modules/jose'));
const skip = browserSkip || (!joseInstalled && 'jose is not installed in examples/relying-party (scripts/setup.sh)');

test('login mode in Chromium: ticket, signed verdict, the relying party sets a session', { skip, timeout: 600_000 }, async (t) => {
  assert.ok(existsSync(join(ROOT, 'pkg/index.js')), 'pkg/ is not built: run bash scripts/build-wasm.sh');
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-login-'));
  let stack;
  let context;
  try {
    // The policy scripts/demo.sh gives the demo's simulated identities (no face model served).
    stack = await startLoginStack(serverBinary(), work, { key: KEY, issuer: ISSUER, decider: ['--rule', 'mean', '--threshold', '0.18'] });
    const { matcher, base } = stack;

    const opened = await openPage(join(work, 'profile'), base);
    context = opened.context;
    const { page, offsite, pageErrors } = opened;

    await page.goto(`${base}/`);
    await engineReady(opened);
    assert.equal(await page.getAttribute('body', 'data-mode'), 'login');
    assert.ok(await page.isHidden('#threshold-field'), 'the page has no threshold to edit in login mode');

    const me = () => page.evaluate(async () => {
      const r = await fetch('/rp/me');
      return { status: r.status, body: await r.json() };
    });
    const rows = () => page.$$eval('#timings-login tbody tr', (l) => l.map((tr) => [...tr.cells].map((c) => c.textContent)));

    const user = 'ada-login';
    await page.fill('#user', user);
    await page.selectOption('#identity', 'Ada');
    await page.fill('#captures', '5');
    let r = await act(page, '#register');
    assert.equal(r.error, null, `register failed: ${r.error}`);
    assert.equal(r.kind, 'registered', r.text);
    // The matcher holds the decider's public key for Ada (a random epoch) and her
    // template; nothing is stored in the browser.
    const info = await (await fetch(`${matcher.url}/v1/users/${user}`, { headers: { authorization: `Bearer ${KEY}` } })).json();
    assert.equal(info.template_count, 5);
    assert.ok(Number.isInteger(info.key_epoch), JSON.stringify(info));
    assert.equal(await page.evaluate(async () => (await indexedDB.databases()).length), 0, 'no key in IndexedDB');
    // A second registration of an enrolled name gets no ticket.
    r = await act(page, '#register');
    assert.match(r.error ?? '', /is enrolled/);

    // Not logged in yet.
    assert.equal((await me()).status, 401);

    // Genuine: an accept verdict, and the relying party's session.
    r = await act(page, '#login');
    assert.equal(r.error, null, `login failed: ${r.error}`);
    assert.equal(r.kind, 'accepted', r.text);
    assert.equal(r.verdict, 'accept');
    assert.deepEqual(await me(), { status: 200, body: { user } });
    for (const [step, ms] of await rows()) t.diagnostic(`genuine login: ${step} ${ms} ms`);

    // Impostor: Grace against Ada's account. A signed reject, no session.
    await page.evaluate(() => fetch('/rp/logout', { method: 'POST' }));
    assert.equal((await me()).status, 401);
    await page.selectOption('#identity', 'Grace');
    r = await act(page, '#login');
    assert.equal(r.error, null, `login failed: ${r.error}`);
    assert.equal(r.kind, 'rejected', r.text);
    assert.equal(r.verdict, 'reject');
    assert.match(r.text, /rejected/);
    assert.equal((await me()).status, 401, 'a reject sets no session');

    // A matcher that serves a key of its own for Ada (here: Eve's, with
    // Ada's statement): the page checks the decider's statement, refuses,
    // and sends no probe.
    const api = (path) => fetch(`${matcher.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } });
    assert.equal((await api('/v1/users/eve-login/tickets')).status, 201);
    const eveKey = Buffer.from(await (await fetch(`${matcher.url}/v1/users/eve-login/public-key`)).arrayBuffer());
    const logins = [];
    page.on('request', (q) => { if (q.url().includes('/login?')) logins.push(q.url()); });
    await page.route(`${base}/v1/users/${user}/public-key`, async (route) => {
      const real = await route.fetch();
      await route.fulfill({ response: real, body: eveKey });
    });
    await page.selectOption('#identity', 'Ada');
    r = await act(page, '#login');
    assert.match(r.error ?? '', /statement does not check: it names another public key/);
    assert.deepEqual(logins, [], 'no probe under a key the decider did not vouch for');
    await page.unroute(`${base}/v1/users/${user}/public-key`);
    r = await act(page, '#login');
    assert.equal(r.kind, 'accepted', r.text);
    await page.evaluate(() => fetch('/rp/logout', { method: 'POST' }));

    // A verdict replayed to the relying party: its challenge is spent.
    const replay = await page.evaluate(async (name) => {
      const c = await (await fetch('/rp/challenge', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: name }) })).json();
      const forged = `e30.${btoa(JSON.stringify({ nonce: c.challenge })).replace(/=+$/, '')}.AAAA`;
      const r = await fetch('/rp/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: name, verdict: forged }) });
      return { status: r.status, body: await r.json() };
    }, user);
    assert.equal(replay.status, 401, JSON.stringify(replay));
    assert.equal((await me()).status, 401, 'a forged verdict sets no session');

    // The page cannot reach the management API through the relying party.
    const mgmt = await page.evaluate(async (name) => (await fetch(`/v1/users/${name}`, { method: 'DELETE' })).status, user);
    assert.equal(mgmt, 401);

    assert.deepEqual(offsite, [], 'requests left 127.0.0.1');
    assert.deepEqual(pageErrors, [], 'uncaught page errors');
  } finally {
    await context?.close().catch(() => {});
    await stack?.stop();
    rmSync(work, { recursive: true, force: true });
  }
});
