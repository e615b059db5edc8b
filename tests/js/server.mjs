// The real blindmatch-server for the package's tests: the newest built
// binary (building one if there is none, or BLINDMATCH_SERVER=...), started
// on a free loopback port with a temporary database.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { once } from 'node:events';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The newest built server binary, building one if there is none. */
export function serverBinary() {
  if (process.env.BLINDMATCH_SERVER) return process.env.BLINDMATCH_SERVER;
  const found = () =>
    ['release', 'debug']
      .map((p) => join(ROOT, 'target', p, 'blindmatch-server'))
      .filter((p) => existsSync(p))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  let bin = found();
  if (!bin) {
    const r = spawnSync('cargo', ['build', '--features', 'server', '--bin', 'blindmatch-server'], { cwd: ROOT, stdio: 'inherit' });
    assert.equal(r.status, 0, 'cargo build --features server failed');
    bin = found();
  }
  assert.ok(bin, 'no blindmatch-server binary');
  return bin;
}

/** Starts `serve` on a free loopback port; resolves to { proc, url, logs }. */
export async function startServer(bin, dbDir, extra = []) {
  return listening(bin, dbDir, ['serve', '--bind', '127.0.0.1:0', '--db', join(dbDir, 'blindmatch.db'),
    '--www', join(ROOT, 'www'), '--pkg', join(ROOT, 'pkg'), '--log', 'warn', ...extra]);
}

/**
 * Starts the decider (`decide --init`, secrets in `dir/decider`, issuer
 * `issuer`, then `extra`) on a free loopback port; resolves to { proc, url, logs,
 * tokenFile }.
 */
export async function startDecider(bin, dir, issuer, extra = []) {
  const secrets = join(dir, 'decider');
  const d = await listening(bin, dir, ['decide', '--init', '--bind', '127.0.0.1:0', '--dir', secrets, '--issuer', issuer, ...extra]);
  return { ...d, tokenFile: join(secrets, 'matcher.token') };
}

async function listening(bin, dbDir, args) {
  const proc = spawn(bin, args, {
    cwd: dbDir, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs = [];
  proc.stderr.on('data', (d) => logs.push(String(d)));
  let out = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 30 s:\n${out}${logs.join('')}`)), 30_000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${out}${logs.join('')}`));
    });
  });
  return { proc, url, logs };
}

export async function stopServer(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, 'exit');
  proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(t);
}

/**
 * Login mode on loopback, as scripts/demo.sh runs it: the decider (then
 * `decider` flags), the matcher (API key `key`, then `matcher` flags) and
 * the demo's relying party (examples/relying-party/server.mjs), the page's
 * origin at `base`. Resolves to { decider, matcher, rp, base, stop }.
 */
export async function startLoginStack(bin, work, { key, issuer, decider: deciderArgs = [], matcher: matcherArgs = [] }) {
  const { relyingParty } = await import(pathToFileURL(join(ROOT, 'examples/relying-party/server.mjs')).href);
  const keys = join(work, 'api.keys');
  writeFileSync(keys, `${key}\n`);
  const stack = {};
  stack.stop = async () => {
    if (stack.rp) {
      stack.rp.closeAllConnections();
      await new Promise((res) => stack.rp.close(res));
    }
    if (stack.matcher) await stopServer(stack.matcher.proc);
    if (stack.decider) await stopServer(stack.decider.proc);
  };
  try {
    stack.decider = await startDecider(bin, work, issuer, deciderArgs);
    stack.matcher = await startServer(bin, work, ['--api-key-file', keys, '--decider', stack.decider.url,
      '--decider-token-file', stack.decider.tokenFile, '--trusted-proxy', '127.0.0.1', ...matcherArgs]);
    stack.rp = relyingParty({ matcher: stack.matcher.url, apiKeyFile: keys, issuer, jwks: `${stack.decider.url}/.well-known/jwks.json` });
    stack.rp.listen(0, '127.0.0.1');
    await once(stack.rp, 'listening');
    stack.base = `http://127.0.0.1:${stack.rp.address().port}`;
    return stack;
  } catch (e) {
    await stack.stop();
    throw e;
  }
}
