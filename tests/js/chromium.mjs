// Headless Chromium for the package's browser tests, driven by
// playwright-core (target/tools, or a global install): why a test must skip,
// and a page whose every request must stay on the server under test.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

async function loadPlaywright() {
  for (const base of [join(ROOT, 'target/tools/'), ROOT]) {
    try {
      const path = createRequire(join(base, 'noop.js')).resolve('playwright-core');
      const mod = await import(pathToFileURL(path).href);
      return mod.chromium ? mod : mod.default;
    } catch {
      // try the next place
    }
  }
  return null;
}

export const playwright = await loadPlaywright();

/** Why a browser test cannot run here, or false. */
export const browserSkip = !existsSync(CHROMIUM)
  ? `no Chromium at ${CHROMIUM} (set CHROMIUM)`
  : !playwright
    ? 'playwright-core is not installed (npm install --prefix target/tools playwright-core)'
    : false;

/**
 * A persistent Chromium profile in `profileDir` (with `extraArgs` on
 * Chromium's command line) with one page; requests to
 * anything but `base` are aborted and listed in `offsite`, uncaught page
 * errors in `pageErrors`, console lines in `consoleLines`.
 */
export async function openPage(profileDir, base, extraArgs = []) {
  const context = await playwright.chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    chromiumSandbox: false,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', ...extraArgs],
    viewport: { width: 1000, height: 900 },
  });
  const offsite = [];
  await context.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith(`${base}/`)) return route.continue();
    offsite.push(u);
    return route.abort();
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors = [];
  const consoleLines = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => consoleLines.push(m.text()));
  return { context, page, offsite, pageErrors, consoleLines };
}

/**
 * Waits until the demo page's engine is ready (the WebAssembly module in its
 * Worker, the server's parameters); if it is not within `timeout` ms, fails
 * with what the page shows and logged, so that a slow or failed start can be
 * told apart.
 */
export async function engineReady({ page, pageErrors, consoleLines }, timeout = 60_000) {
  try {
    await page.waitForSelector('#engine[data-ready="true"]', { timeout });
  } catch (e) {
    const shown = await page.evaluate(() => ['engine', 'progress-text', 'error']
      .map((id) => `#${id}: ${document.getElementById(id)?.textContent?.trim() ?? '(none)'}`).join('\n')).catch((x) => String(x));
    throw new Error(`the engine was not ready in ${timeout} ms (${e.message.split('\n')[0]})\n${shown}\n` +
      `page errors: ${JSON.stringify(pageErrors)}\nconsole: ${JSON.stringify(consoleLines.slice(-20))}`);
  }
}

/**
 * Clicks one of the demo page's buttons and waits until the page is no
 * longer busy; what it then shows.
 */
export async function act(page, button) {
  const t0 = performance.now();
  await page.click(button);
  await page.waitForFunction(() => document.getElementById('form').getAttribute('aria-busy') !== 'true', null, { timeout: 120_000 });
  const error = await page.$eval('#error', (e) => (e.hidden ? null : e.textContent));
  const outcome = await page.$eval('#outcome', (e) => ({
    kind: e.dataset.outcome, text: e.textContent, cosine: e.dataset.cosine, verdict: e.dataset.verdict,
  }));
  return { error, ...outcome, ms: performance.now() - t0 };
}
