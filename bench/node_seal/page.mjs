// The page bench: blindmatch (simd128 and baseline builds) and node-seal 7 on
// ONE page in headless Chromium, timed by the same code as the Node bench
// (core.mjs). Serves the files from a tiny static server on 127.0.0.1 (a
// random port, loopback only) with COOP/COEP headers, so the page is
// cross-origin isolated and performance.now() has fine resolution.
//
//   bash bench/node_seal/setup.sh >/dev/null    # node-seal into target/tools/
//   node bench/node_seal/page.mjs [--quick] [--pkg DIR] [--seal DIR] [--chromium PATH]
//
// Runs under Node 20 or 22 (playwright-core from target/tools/node_modules).
// stdout, TSV, nothing else:
//   chromium-node-seal<TAB>op<TAB>ours_simd_us<TAB>seal_us
//   chromium-wasm-builds<TAB>op<TAB>simd_us<TAB>baseline_us
//   chromium-transform-time<TAB>ntt_forward|ntt_inverse<TAB>simd_us<TAB>-
// stderr: `# ...` notes from the page and the driver.
import { createServer } from 'node:http';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ratioNotes } from './core.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? path.resolve(args[i + 1]) : dflt;
};
const pkgDir = opt('--pkg', path.join(ROOT, 'pkg'));
const sealDir = opt('--seal', path.join(ROOT, 'target/tools/node-seal-bench/node_modules/node-seal'));
const chromiumPath = opt('--chromium', '/usr/bin/chromium');
const log = (msg) => process.stderr.write(`# ${msg}\n`);

for (const [what, file] of [
  ['the npm package (bash scripts/build-wasm.sh)', path.join(pkgDir, 'index.js')],
  ['node-seal (bash bench/node_seal/setup.sh)', path.join(sealDir, 'dist/index_throws.js')],
  ['Chromium', chromiumPath],
]) {
  try {
    await stat(file);
  } catch {
    log(`missing ${what}: ${file}`);
    process.exit(2);
  }
}

const require = createRequire(path.join(ROOT, 'target/tools/'));
const { chromium } = require('playwright-core');

const started = performance.now();

// URL prefix -> directory. Nothing else is served.
const MOUNTS = [
  ['/bench/', HERE],
  ['/pkg/', pkgDir],
  ['/node-seal/', sealDir],
];
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

async function resolveFile(urlPath) {
  if (urlPath === '/' || urlPath === '/index.html') urlPath = '/bench/page.html';
  for (const [prefix, dir] of MOUNTS) {
    if (!urlPath.startsWith(prefix)) continue;
    const rel = decodeURIComponent(urlPath.slice(prefix.length));
    const file = path.resolve(dir, rel);
    if (file !== dir && !file.startsWith(dir + path.sep)) return null; // no escaping the mount
    try {
      if ((await stat(file)).isFile()) return file;
    } catch {
      return null;
    }
  }
  return null;
}

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://127.0.0.1');
    const file = req.method === 'GET' ? await resolveFile(url.pathname) : null;
    if (!file) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const body = await readFile(file);
    res.writeHead(200, {
      'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      'content-length': body.length,
      'cache-control': 'no-store',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-embedder-policy': 'require-corp',
      'cross-origin-resource-policy': 'same-origin',
    });
    res.end(body);
  } catch (e) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(String(e));
  }
});
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(0, '127.0.0.1', resolve);
});
const origin = `http://127.0.0.1:${server.address().port}`;
log(`serving ${HERE}, ${pkgDir}, ${sealDir} on ${origin} (loopback only)`);

const userDataDir = await mkdtemp(path.join(os.tmpdir(), 'blindmatch-page-bench-'));
let context;
let exitCode = 0;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  log(`Chromium ${context.browser()?.version() ?? '(version n/a)'} from ${chromiumPath}, profile ${userDataDir}`);
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (m.type() === 'log' || m.type() === 'error' || m.type() === 'warning') process.stderr.write(`${m.text()}\n`);
  });
  page.on('pageerror', (e) => log(`page error: ${e.message}`));
  page.on('requestfailed', (r) => log(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  await page.goto(`${origin}/bench/page.html`);
  await page.waitForFunction(() => window.pageReady === true, null, { timeout: 30_000 });
  page.setDefaultTimeout(0);
  const { rows, lines } = await page.evaluate((q) => window.runPageBench(q), quick);
  for (const line of lines) console.log(line);
  for (const line of ratioNotes(rows, 'chromium')) log(line);
} catch (e) {
  log(`page bench failed: ${e.stack ?? e}`);
  exitCode = 1;
} finally {
  await context?.close().catch(() => {});
  server.close();
  await rm(userDataDir, { recursive: true, force: true });
}
log(`total ${((performance.now() - started) / 1000).toFixed(1)} s`);
process.exit(exitCode);
