// checkKeyStatement against the REAL decider and matcher (temp dirs,
// 127.0.0.1): the statement the matcher serves with a user's public key
// checks against the decider's JWK set, and every substitution a malicious
// matcher could make (another key, another user's or epoch's statement, a
// statement of another issuer, none, a forged signature) is refused with a
// KeyStatementError.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PKG_DIR } from './pkg.mjs';
import { serverBinary, startDecider, startServer, stopServer } from './server.mjs';

const { checkKeyStatement, ServerClient } = await import(new URL('index.js', PKG_DIR).href);
const ISSUER = 'https://login.example';
const KEY = 'ks-test-key-0123456789abcdefghij';

test('checkKeyStatement: the decider vouches for the key the matcher serves, and for no other', { timeout: 120_000 }, async () => {
  const bin = serverBinary();
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-ks-'));
  writeFileSync(join(work, 'api.keys'), `${KEY}\n`);
  let decider;
  let matcher;
  try {
    decider = await startDecider(bin, work, ISSUER);
    matcher = await startServer(bin, work, ['--api-key-file', join(work, 'api.keys'), '--decider', decider.url,
      '--decider-token-file', decider.tokenFile]);
    const backend = new ServerClient(matcher.url, { apiKey: KEY });
    const page = new ServerClient(matcher.url);
    await backend.issueTicket('alice');
    await backend.issueTicket('bob');
    const alice = await page.userPublicKey('alice');
    const bob = await page.userPublicKey('bob');
    const jwks = await (await fetch(`${decider.url}/.well-known/jwks.json`)).json();
    const good = { statement: alice.statement, jwks, issuer: ISSUER, user: 'alice', epoch: alice.epoch, publicKey: alice.publicKey };

    const claims = await checkKeyStatement(good);
    assert.equal(claims.sub, 'alice');
    assert.equal(claims.epoch, alice.epoch);

    const refused = async (change, why) => {
      await assert.rejects(checkKeyStatement({ ...good, ...change }), (e) => {
        assert.equal(e.name, 'KeyStatementError', e.message);
        assert.match(e.message, why);
        return true;
      });
    };
    await refused({ publicKey: bob.publicKey }, /names another public key/);
    await refused({ statement: bob.statement }, /about bob, not alice/);
    await refused({ epoch: alice.epoch + 1 }, /of epoch/);
    await refused({ issuer: 'https://other.example' }, /issued by/);
    await refused({ statement: null }, /sent none/);
    await refused({ jwks: { keys: [] } }, /no key .* in the JWK set/);
    const [h, p, sig] = alice.statement.split('.');
    const flipped = sig.slice(0, 10) + (sig[10] === 'A' ? 'B' : 'A') + sig.slice(11);
    await refused({ statement: `${h}.${p}.${flipped}` }, /bad signature/);
    // A payload changed under the same signature.
    const forged = Buffer.from(JSON.stringify({ ...claims, pk_sha256: 'x' })).toString('base64url');
    await refused({ statement: `${h}.${forged}.${sig}` }, /bad signature/);
  } finally {
    if (matcher) await stopServer(matcher.proc);
    if (decider) await stopServer(decider.proc);
    rmSync(work, { recursive: true, force: true });
  }
});
