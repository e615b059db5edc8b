// Keep-alive connections to the REAL blindmatch-server from Node's HTTP
// agent (as a relying party's proxy uses it): a request sent just as the
// server's idle timeout runs out must not meet a connection the server is
// closing. The server announces its idle timeout (`Keep-Alive: timeout=5`),
// and the agent closes idle connections a second before it; without the
// announcement about one request in twenty sent 4.98-5.02 s after the
// previous reply was reset (ECONNRESET, which Node does not retry).
import test from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serverBinary, startServer, stopServer } from './server.mjs';

/** GET `path` through `agent`: the status, or the error's code. */
function get(url, path, agent) {
  return new Promise((resolve) => {
    const q = request({ host: url.hostname, port: url.port, path, agent }, (r) => {
      r.resume();
      r.on('end', () => resolve(r.statusCode));
    });
    q.on('error', (e) => resolve(e.code));
    q.end();
  });
}

test('a request sent as the idle timeout runs out gets a reply, not a reset', { timeout: 60_000 }, async () => {
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-keepalive-'));
  let server;
  try {
    server = await startServer(serverBinary(), work);
    const url = new URL(server.url);
    const CLIENTS = 200;
    const failed = {};
    await Promise.all(Array.from({ length: CLIENTS }, async (_, i) => {
      // Node's global agent's settings (Node 19 and later).
      const agent = new Agent({ keepAlive: true, timeout: 5_000 });
      assert.equal(await get(url, '/healthz', agent), 200);
      // The server's idle timeout is 5 s: the second request leaves
      // 4.98-5.02 s after the first reply.
      await new Promise((r) => setTimeout(r, 4_980 + (i % 40)));
      const second = await get(url, '/healthz', agent);
      if (second !== 200) failed[second] = (failed[second] ?? 0) + 1;
      agent.destroy();
    }));
    assert.deepEqual(failed, {}, `second requests that failed, of ${CLIENTS}`);
  } finally {
    if (server) await stopServer(server.proc);
    rmSync(work, { recursive: true, force: true });
  }
});
