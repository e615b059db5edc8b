// The package inside a bundled app, as a web developer ships it: a project
// with blindmatch installed in node_modules, built by Vite (production build
// and dev server) and by webpack 5, each result opened in headless Chromium.
// The app runs the 1:1 flow on the page and in the Web Worker
// (BlindmatchWorker.create() with no options: the bundler must find and
// bundle the worker and the .wasm files by itself). Needs Chromium
// (CHROMIUM=...), and vite, webpack and playwright-core under target/tools
// (scripts/setup.sh installs them).
import test from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PKG_DIR } from './pkg.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const toolsRequire = createRequire(join(ROOT, 'target/tools/noop.js'));

async function tool(name) {
  try {
    const mod = await import(pathToFileURL(toolsRequire.resolve(name)).href);
    return mod.default && !mod.build && !mod.chromium ? mod.default : mod;
  } catch {
    return null;
  }
}

const [vite, webpack, playwright] = await Promise.all([tool('vite'), tool('webpack'), tool('playwright-core')]);
const missing = [
  !existsSync(CHROMIUM) && `Chromium at ${CHROMIUM} (set CHROMIUM)`,
  !vite && 'vite', !webpack && 'webpack', !playwright && 'playwright-core',
].filter(Boolean);
const skip = missing.length ? `missing: ${missing.join(', ')} (bash scripts/setup.sh installs them)` : false;

const APP = `import { init, Params, Keys, Verifier, BlindmatchWorker } from 'blindmatch';
try {
  const info = await init();
  const p = Params.auth4096();
  const e = [1, 2].map((s) => new Float32Array(128).map((_, i) => Math.sin(s * (i + 1))));
  const keys = Keys.generate(p);
  const v = new Verifier(p, 128);
  const page = keys.decryptScores(v.verify(keys.encryptTemplates(e, 128), keys.encryptProbe(e[0], 128), keys.publicKey()), 2);
  const w = await BlindmatchWorker.create();
  const h = await w.generate();
  const reply = v.verify(await w.encryptTemplates(h, e, 128), await w.encryptProbe(h, e[0], 128), await w.publicKey(h));
  const worker = await w.decryptScores(h, reply, 2);
  const workerBuild = w.info.build;
  w.terminate();
  document.title = JSON.stringify({ ok: true, build: info.build, workerBuild, page: page.scores, worker: worker.scores });
} catch (x) {
  document.title = JSON.stringify({ ok: false, message: String(x && x.message || x) });
}
`;
const HTML = (script) => `<!doctype html><html><head><meta charset="utf-8"><title>loading</title></head>
<body><script ${script}></script></body></html>
`;

/** A project with the built package copied into node_modules (as npm does). */
function project() {
  const dir = mkdtempSync(join(tmpdir(), 'blindmatch-bundled-'));
  mkdirSync(join(dir, 'node_modules'));
  cpSync(fileURLToPath(PKG_DIR), join(dir, 'node_modules', 'blindmatch'), { recursive: true, dereference: true });
  writeFileSync(join(dir, 'package.json'), '{ "name": "app", "type": "module", "private": true }');
  writeFileSync(join(dir, 'main.js'), APP);
  writeFileSync(join(dir, 'index.html'), HTML('type="module" src="./main.js"'));
  return dir;
}

const TYPES = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };

/** A static server for a build's output directory. */
async function serve(root) {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/\/$/, '/index.html');
    const file = join(root, path);
    if (!file.startsWith(root) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

/** Opens `url` and returns the app's result (the page title it sets). */
async function run(browser, url) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(url);
    await page.waitForFunction(() => document.title !== 'loading', null, { timeout: 60_000 });
    return JSON.parse(await page.title());
  } catch (e) {
    throw new Error(`${url}: ${e.message}; page errors: ${errors.join(' | ')}`);
  } finally {
    await page.close();
  }
}

function check(r) {
  assert.equal(r.ok, true, r.message);
  assert.equal(r.build, 'simd128');
  assert.equal(r.workerBuild, 'simd128');
  assert.equal(r.page.length, 2);
  // The same quantized vectors on both sides: the same exact scores; the
  // probe's own template scores highest.
  assert.deepEqual(r.worker, r.page);
  assert.ok(r.page[0] > r.page[1], JSON.stringify(r.page));
}

test('bundled apps: Vite build, Vite dev server, webpack 5', { skip, timeout: 300_000 }, async (t) => {
  const browser = await playwright.chromium.launch({ executablePath: CHROMIUM });
  const dirs = [];
  try {
    await t.test('vite build', async () => {
      const dir = project();
      dirs.push(dir);
      await vite.build({ root: dir, logLevel: 'error', build: { outDir: join(dir, 'dist') } });
      const assets = readFileSync(join(dir, 'dist/index.html'), 'utf8');
      assert.match(assets, /assets\/index-/);
      const s = await serve(join(dir, 'dist'));
      try {
        check(await run(browser, s.url));
      } finally {
        s.close();
      }
    });

    await t.test('vite dev server', async () => {
      const dir = project();
      dirs.push(dir);
      const server = await vite.createServer({
        root: dir,
        logLevel: 'error',
        server: { host: '127.0.0.1', port: 0, strictPort: false },
      });
      await server.listen();
      try {
        check(await run(browser, server.resolvedUrls.local[0]));
      } finally {
        await server.close();
      }
    });

    await t.test('webpack 5', async () => {
      const dir = project();
      dirs.push(dir);
      const out = join(dir, 'wdist');
      const stats = await new Promise((resolve, reject) => {
        const compiler = webpack({
          mode: 'production',
          context: dir,
          entry: './main.js',
          output: { path: out, filename: 'main.js' },
          performance: { hints: false },
        });
        compiler.run((err, s) => compiler.close(() => (err ? reject(err) : resolve(s))));
      });
      const info = stats.toJson({ all: false, errors: true, warnings: true });
      assert.deepEqual(info.errors, [], JSON.stringify(info.errors));
      assert.deepEqual(info.warnings, [], JSON.stringify(info.warnings));
      writeFileSync(join(out, 'index.html'), HTML('src="./main.js"'));
      const s = await serve(out);
      try {
        check(await run(browser, s.url));
      } finally {
        s.close();
      }
    });
  } finally {
    await browser.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});
