// The built package in headless Chromium, loaded as plain ES modules from a
// static server (no bundler): init() picks simd128, the 1:1 flow runs on the
// page, the same flow runs in a module Web Worker through BlindmatchWorker,
// and a bad input is an Error. The page posts its result back to this server.
// Skipped when there is no Chromium (set CHROMIUM=/path/to/chrome to choose).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PKG_DIR } from './pkg.mjs';

function findChromium() {
  for (const c of [process.env.CHROMIUM, 'chromium', 'chromium-browser', 'google-chrome']) {
    if (c && spawnSync(c, ['--version']).status === 0) return c;
  }
  return null;
}

const PAGE = `<!doctype html><meta charset="utf-8"><title>blindmatch</title>
<script type="module">
const report = (r) => fetch('/result', { method: 'POST', body: JSON.stringify(r) });
try {
  const bm = await import('/pkg/index.js');
  const info = await bm.init();
  const p = bm.Params.auth4096();
  const keys = bm.Keys.generate(p);
  const e = [1, 2].map((s) => new Float32Array(128).map((_, i) => Math.sin(s * (i + 1))));
  const v = new bm.Verifier(p, 128);
  const page = keys.decryptScores(v.verify(keys.encryptTemplates(e, 128), keys.encryptProbe(e[0], 128), keys.publicKey()), 2);
  const w = await bm.BlindmatchWorker.create();
  const h = await w.generate();
  const reply = v.verify(await w.encryptTemplates(h, e, 128), await w.encryptProbe(h, e[0], 128), await w.publicKey(h));
  const worker = await w.decryptScores(h, reply, 2);
  const workerBuild = w.info.build;
  w.terminate();
  let error = null;
  try { keys.encryptProbe(new Float32Array(3), 128); } catch (x) { error = { isError: x instanceof Error, message: x.message }; }
  keys.decryptScores(v.verify(keys.encryptTemplates(e, 128), keys.encryptProbe(e[1], 128), keys.publicKey()), 2);
  await report({ ok: true, info, page, worker, workerBuild, error });
} catch (x) {
  await report({ ok: false, message: String(x), stack: x.stack });
}
</script>`;

const TYPES = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };
const chromium = findChromium();

test('the package in headless Chromium: page and Web Worker', { skip: chromium ? false : 'no Chromium (set CHROMIUM)', timeout: 120_000 }, async () => {
  const pkgDir = fileURLToPath(PKG_DIR);
  let resolveResult;
  const result = new Promise((r) => (resolveResult = r));
  const server = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/result') {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        res.end('ok');
        resolveResult(JSON.parse(body));
      });
      return;
    }
    if (req.url === '/' || req.url === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      return;
    }
    const rel = normalize(decodeURIComponent(req.url.split('?')[0])).replace(/^\/pkg\//, '');
    const file = join(pkgDir, rel);
    if (!req.url.startsWith('/pkg/') || !file.startsWith(pkgDir) || !statSync(file, { throwIfNoEntry: false })?.isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const profile = mkdtempSync(join(tmpdir(), 'blindmatch-chromium-'));
  const browser = spawn(chromium, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', `--user-data-dir=${profile}`,
    `http://127.0.0.1:${server.address().port}/`,
  ], { stdio: 'ignore', detached: true }); // its own process group, so all of it can be stopped
  const exited = new Promise((r) => browser.once('exit', r));
  let timer;
  try {
    const r = await Promise.race([
      result,
      new Promise((_, rej) => {
        timer = setTimeout(() => rej(new Error('no result from the page within 90 s')), 90_000);
      }),
    ]);
    assert.ok(r.ok, `page failed: ${r.message}\n${r.stack}`);
    assert.deepEqual(r.info, { simd: true, build: 'simd128' });
    assert.equal(r.workerBuild, 'simd128');
    assert.equal(r.page.scores.length, 2);
    assert.ok(Math.abs(r.page.cosines[0] - 1) < 0.02, `self-similarity ${r.page.cosines[0]}`);
    assert.deepEqual(r.worker.scores, r.page.scores, 'the same embeddings give the same integer scores');
    assert.ok(r.error?.isError && /Keys\.encryptProbe/.test(r.error.message), JSON.stringify(r.error));
  } finally {
    clearTimeout(timer);
    try {
      process.kill(-browser.pid, 'SIGKILL'); // Chromium and its helper processes
    } catch {
      browser.kill('SIGKILL');
    }
    await exited;
    server.closeAllConnections();
    server.close();
    rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});
