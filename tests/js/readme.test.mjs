// The package README's JavaScript examples, run as written: each ```js block
// of the README shipped in the package, in a project that imports
// 'blindmatch' by name, against the REAL blindmatch-server (temporary
// database, free loopback port). A block that only continues the one before
// it gets the names it uses from a prelude; each block's results are printed
// by an epilogue and checked here. A block added to or removed from the
// README fails the count below until it is covered.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PKG_DIR, embedding, quantize, dot } from './pkg.mjs';
import { serverBinary, startDecider, startServer, stopServer } from './server.mjs';

const blocks = [...readFileSync(new URL('README.md', PKG_DIR), 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
// The repository README's relying-party check ("Face login").
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const rootBlocks = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
const rootBlock = rootBlocks.find((b) => b.includes('jwtVerify'));

/** Samples of one face: a fixed direction plus 20% noise. */
function samples(seed, k) {
  const centre = embedding(seed);
  return Array.from({ length: k }, (_, i) => {
    const noise = embedding(1000 * seed + i + 1);
    return Array.from(centre, (c, j) => c + 0.2 * noise[j]);
  });
}

/** `const name = new Float32Array([...])` for each sample. */
const declare = (names, values) =>
  names.map((n, i) => `const ${n} = new Float32Array(${JSON.stringify(values[i])});`).join('\n');

/**
 * In a browser, `new ServerClient()` calls the page's own origin: here every
 * relative URL goes to the server under test.
 */
const sameOrigin = (url) => `const __fetch = globalThis.fetch;
globalThis.fetch = (u, init) => __fetch(new URL(u, ${JSON.stringify(url)}), init);`;

const print = (expr) => `\nconsole.log(JSON.stringify(${expr}));\n`;

test('the README examples run as written against the real server', { timeout: 300_000 }, async () => {
  assert.equal(blocks.length, 5, 'the README has a JavaScript block this test does not cover');
  assert.ok(rootBlock, "the repository README's relying-party check is missing");
  const bin = serverBinary();
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-readme-'));
  let server;
  let decider;
  let matcher;
  try {
    mkdirSync(join(work, 'node_modules'));
    symlinkSync(fileURLToPath(PKG_DIR), join(work, 'node_modules', 'blindmatch'), 'dir');
    writeFileSync(join(work, 'package.json'), '{ "name": "app", "type": "module", "private": true }');
    server = await startServer(bin, work);
    const execRun = (name, code, env = {}) => {
      writeFileSync(join(work, name), code);
      const out = execFileSync(process.execPath, [name], { cwd: work, encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env } });
      return JSON.parse(out.trim().split('\n').at(-1));
    };
    const run = (name, code) => execRun(name, code);

    // Quick start: register alice, enroll three samples, log in with a fourth.
    const alice = samples(1, 4);
    const quick = run(
      'quick-start.mjs',
      `${sameOrigin(server.url)}\n${declare(['emb1', 'emb2', 'emb3', 'emb'], alice)}\n${blocks[0]}` +
        print('{ count, scores, cosines, accepted, again: restored.decryptScores(reply, count).scores }'),
    );
    const probe = quantize(Float32Array.from(alice[3]));
    const want = alice.slice(0, 3).map((e) => dot(quantize(Float32Array.from(e)), probe));
    assert.equal(quick.count, 3);
    assert.deepEqual(quick.scores, want, 'scores are the exact inner products of the quantized samples');
    assert.deepEqual(quick.again, want, 'the restored secret key reads the same reply');
    assert.equal(quick.accepted, true, `a genuine login is accepted (cosines ${quick.cosines})`);

    // Login mode: a decider and a matcher with an API key; the block's
    // backend URL is the test matcher's.
    const apiKey = 'readme-api-key-0123456789abcdef';
    writeFileSync(join(work, 'api.keys'), `${apiKey}\n`);
    decider = await startDecider(bin, work, 'http://127.0.0.1:8081');
    mkdirSync(join(work, 'matcher'));
    matcher = await startServer(bin, join(work, 'matcher'), ['--api-key-file', join(work, 'api.keys'),
      '--decider', decider.url, '--decider-token-file', decider.tokenFile]);
    const carol = samples(4, 3);
    const loginMode = execRun('login.mjs',
      `${sameOrigin(matcher.url)}
const __relative = globalThis.fetch;
globalThis.fetch = (u, init) => __relative(String(u).replace('http://127.0.0.1:8082', ${JSON.stringify(matcher.url)}), init);
${declare(['emb1', 'emb2', 'emb'], carol)}\n${blocks[1]}` +
        print('{ outcome, challenge, verdict }'), { BLINDMATCH_API_KEY: apiKey });
    assert.equal(loginMode.outcome, 'accept');

    // The repository README's relying-party check ("Face login"), with jose,
    // on that verdict: true for its own challenge only.
    symlinkSync(join(ROOT, 'examples/relying-party/node_modules/jose'), join(work, 'node_modules', 'jose'), 'dir');
    const check = (challenge) => run(`rp-${challenge.length}.mjs`, `${sameOrigin(matcher.url)}
const __relative = globalThis.fetch;
globalThis.fetch = (u, init) => __relative(String(u).replace('http://127.0.0.1:8081', ${JSON.stringify(decider.url)}), init);
${rootBlock}` + print(`await faceLogin('carol', ${JSON.stringify(challenge)}, ${JSON.stringify(loginMode.verdict)})`));
    assert.equal(check(loginMode.challenge), true, 'the README check accepts the verdict');
    assert.equal(check('another-challenge'), false, 'the README check refuses it for another challenge');

    // Service key: a gallery ciphertext from the public key only.
    const service = run(
      'service.mjs',
      `import { init, Params, Keys, PublicKeyEncryptor } from 'blindmatch';
await init();
const params = Params.auth4096();
const servicePublicKeyBytes = Keys.generate(params).publicKey();
const embeddings = ${JSON.stringify(samples(2, 3))}.map((e) => new Float32Array(e));
${blocks[2]}` + print('{ bytes: galleryCiphertext.length }'),
    );
    assert.ok(service.bytes > 80_000, `a public-key ciphertext (${service.bytes} bytes)`);

    // The worker: register bob, enroll two samples, log in with a third.
    const bob = samples(3, 3);
    const worker = run(
      'worker.mjs',
      `${sameOrigin(server.url)}\n${declare(['emb1', 'emb2', 'emb'], bob)}\n${blocks[3]}` + print('{ count, cosines }'),
    );
    assert.equal(worker.count, 2);
    assert.ok(worker.cosines.every((c) => c > 0.5), `genuine cosines ${worker.cosines}`);

    // General BFV: the slot products the comment promises.
    const bfv = run('bfv.mjs', `${blocks[4]}` + print('{ slots: Array.from(encoder.decode(sk.decrypt(c)).slice(0, 4)), wire: wire.length }'));
    assert.deepEqual(bfv.slots, [4, 10, 18, 0]);
    assert.ok(bfv.wire > 0);
  } finally {
    if (server) await stopServer(server.proc);
    if (matcher) await stopServer(matcher.proc);
    if (decider) await stopServer(decider.proc);
    rmSync(work, { recursive: true, force: true });
  }
});
