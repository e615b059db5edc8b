// A tiny relying party for the demo: the web application whose users log in
// with their face. It serves the demo page's origin and holds the API key;
// the page never does. It
//
//   * issues enrollment tickets (for names not enrolled yet; re-enrolling
//     needs the user's own fresh accept verdict, which the page presents to
//     the matcher itself),
//   * asks the matcher for login challenges naming this origin as audience,
//     and remembers which it asked for,
//   * verifies the verdict the page brings back with `jose` (checkVerdict in
//     verify.mjs: signature against the decider's JWK set, iss, aud, exp,
//     nonce = a challenge it issued for that user, once) and sets a session
//     cookie only on `accept`,
//   * serves the decider's JWK set at /.well-known/jwks.json, taken from
//     --jwks, so that the page can check the decider's statements of the
//     public keys the matcher serves,
//   * passes every other request through to the matcher (the page, the
//     package, the public API), adding X-Forwarded-For so that the matcher's
//     per-address throttle counts the browser, not this proxy.
//
//   node server.mjs --bind 127.0.0.1:8080 --matcher http://127.0.0.1:8082 \
//     --api-key-file ../../data/api.keys --issuer http://127.0.0.1:8081 \
//     --jwks http://127.0.0.1:8081/.well-known/jwks.json
//
// (--jwks defaults to the matcher's copy of the decider's JWK set; naming
// the decider's own keeps the matcher out of what this party trusts.)
//
// Routes of its own: GET /rp/config, POST /rp/register {user},
// POST /rp/challenge {user}, POST /rp/session {user, verdict}, GET /rp/me,
// POST /rp/logout. Errors are JSON {error, code}.
import { createServer, request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { checkVerdict } from './verify.mjs';

const MAX_BODY = 64 * 1024;
const SESSION_SECONDS = 3600;

function options(argv) {
  const env = process.env;
  const o = {
    bind: env.RP_BIND ?? '127.0.0.1:8080',
    matcher: env.RP_MATCHER ?? 'http://127.0.0.1:8082',
    apiKeyFile: env.RP_API_KEY_FILE,
    issuer: env.RP_ISSUER,
    audience: env.RP_AUDIENCE,
    jwks: env.RP_JWKS,
  };
  const names = {
    '--bind': 'bind', '--matcher': 'matcher', '--api-key-file': 'apiKeyFile', '--issuer': 'issuer',
    '--audience': 'audience', '--jwks': 'jwks',
  };
  for (let i = 0; i < argv.length; i++) {
    const k = names[argv[i]];
    if (!k) throw new Error(`unknown argument ${argv[i]} (${Object.keys(names).join(', ')})`);
    o[k] = argv[++i];
  }
  if (!o.apiKeyFile) throw new Error('--api-key-file (or RP_API_KEY_FILE) is required');
  if (!o.issuer) throw new Error("--issuer (or RP_ISSUER): the decider's issuer, as its verdicts name it");
  return o;
}

/** The relying party as an http.Server (not yet listening). */
export function relyingParty(o) {
  const apiKey = readFileSync(o.apiKeyFile, 'utf8').split('\n').map((l) => l.trim()).find((l) => l && !l.startsWith('#'));
  if (!apiKey) throw new Error(`${o.apiKeyFile} holds no API key`);
  const matcher = new URL(o.matcher);
  // The decider's keys: from the decider itself when --jwks names it (the
  // matcher's copy would make the matcher trusted for them).
  const jwksUrl = new URL(o.jwks ?? '/.well-known/jwks.json', matcher);
  // user -> Map(challenge -> expiry ms): the challenges this party asked for.
  const challenges = new Map();
  // session id -> { user, expires }
  const sessions = new Map();
  let jwks = { keys: null, fetched: 0 };
  let audience = o.audience ?? null;

  async function matcherCall(method, path) {
    const r = await fetch(new URL(path, matcher), { method, headers: { authorization: `Bearer ${apiKey}` } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw Object.assign(new Error(body.error ?? `matcher answered ${r.status}`), { status: r.status, code: body.code ?? 'matcher' });
    return body;
  }

  async function keySet(refresh) {
    if (refresh || !jwks.keys || Date.now() - jwks.fetched > 300_000) {
      const r = await fetch(jwksUrl);
      if (!r.ok) throw Object.assign(new Error('the JWK set is unavailable'), { status: 502, code: 'jwks' });
      jwks = { keys: await r.json(), fetched: Date.now() };
    }
    return jwks.keys;
  }

  function takeChallenge(user, nonce) {
    const mine = challenges.get(user);
    const exp = mine?.get(nonce);
    mine?.delete(nonce);
    return exp !== undefined && exp > Date.now();
  }

  function sessionOf(req) {
    const m = /(?:^|;\s*)rp_session=([A-Za-z0-9_-]+)/.exec(req.headers.cookie ?? '');
    const s = m && sessions.get(m[1]);
    return s && s.expires > Date.now() ? s : null;
  }

  const routes = {
    'GET /rp/config': async () => ({ mode: 'login', audience, issuer: o.issuer }),
    'POST /rp/register': async ({ user }) => {
      // A real application registers the user it already knows (an account
      // signup, a second factor); this demo lets anyone claim a name that is
      // not enrolled yet, and never re-issues one for an enrolled name.
      const info = await matcherCall('GET', `/v1/users/${encodeURIComponent(user)}`).catch((e) => {
        if (e.status === 404) return null;
        throw e;
      });
      if (info && info.template_count) {
        throw Object.assign(new Error(`“${user}” is enrolled: log in, then re-enroll with your verdict`), { status: 409, code: 'user_exists' });
      }
      const t = await matcherCall('POST', `/v1/users/${encodeURIComponent(user)}/tickets`);
      return { user: t.user, ticket: t.ticket, expiresAt: t.expires_at, epoch: t.epoch };
    },
    'POST /rp/challenge': async ({ user }) => {
      const c = await matcherCall('POST', `/v1/users/${encodeURIComponent(user)}/challenges?aud=${encodeURIComponent(audience)}`);
      if (!challenges.has(user)) challenges.set(user, new Map());
      const mine = challenges.get(user);
      for (const [k, exp] of mine) if (exp <= Date.now()) mine.delete(k);
      mine.set(c.challenge, c.expires_at * 1000);
      return { user: c.user, challenge: c.challenge, aud: c.aud };
    },
    'POST /rp/session': async ({ user, verdict }, _req, res) => {
      if (typeof verdict !== 'string') throw Object.assign(new Error('verdict: a string'), { status: 400, code: 'bad_json' });
      // The verdict's nonce must be a challenge this party issued for this
      // user: read it, then check everything with jose.
      let nonce;
      try {
        nonce = JSON.parse(Buffer.from(verdict.split('.')[1] ?? '', 'base64url').toString()).nonce;
      } catch {
        nonce = undefined;
      }
      if (typeof nonce !== 'string' || !takeChallenge(user, nonce)) {
        throw Object.assign(new Error('the verdict answers no challenge of ours for this user'), { status: 401, code: 'unknown_challenge' });
      }
      let claims;
      try {
        claims = await checkVerdict(verdict, { jwks: await keySet(false), issuer: o.issuer, audience, nonce });
      } catch (e) {
        if (e.code === 'ERR_JWKS_NO_MATCHING_KEY') {
          claims = await checkVerdict(verdict, { jwks: await keySet(true), issuer: o.issuer, audience, nonce });
        } else {
          throw Object.assign(new Error(`the verdict does not verify: ${e.message}`), { status: 401, code: e.code ?? 'bad_verdict' });
        }
      }
      if (claims.sub !== user) throw Object.assign(new Error('the verdict is about another user'), { status: 401, code: 'wrong_user' });
      if (claims.outcome !== 'accept') {
        throw Object.assign(new Error('the face did not match'), { status: 401, code: 'rejected' });
      }
      const id = randomBytes(24).toString('base64url');
      sessions.set(id, { user, expires: Date.now() + SESSION_SECONDS * 1000 });
      res.setHeader('set-cookie', `rp_session=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_SECONDS}`);
      return { user, outcome: 'accept' };
    },
    'GET /rp/me': async (_b, req) => {
      const s = sessionOf(req);
      if (!s) throw Object.assign(new Error('not logged in'), { status: 401, code: 'no_session' });
      return { user: s.user };
    },
    'POST /rp/logout': async (_b, req, res) => {
      const m = /(?:^|;\s*)rp_session=([A-Za-z0-9_-]+)/.exec(req.headers.cookie ?? '');
      if (m) sessions.delete(m[1]);
      res.setHeader('set-cookie', 'rp_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0');
      return { ok: true };
    },
  };

  const USER_RE = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

  async function readJson(req) {
    let size = 0;
    const chunks = [];
    for await (const c of req) {
      size += c.length;
      if (size > MAX_BODY) throw Object.assign(new Error('body too large'), { status: 413, code: 'body_too_large' });
      chunks.push(c);
    }
    if (size === 0) return {};
    try {
      return JSON.parse(Buffer.concat(chunks).toString());
    } catch {
      throw Object.assign(new Error('the body is not JSON'), { status: 400, code: 'bad_json' });
    }
  }

  function proxy(req, res) {
    const client = req.socket.remoteAddress ?? '';
    const headers = { ...req.headers, host: matcher.host, 'x-forwarded-for': client.replace(/^::ffff:/, '') };
    // The API key is this party's alone; a page's own Authorization (a
    // ticket, a verdict) passes, a cookie does not.
    delete headers.cookie;
    const up = httpRequest({ host: matcher.hostname, port: matcher.port, method: req.method, path: req.url, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) send(res, 502, { error: 'the matcher cannot be reached', code: 'matcher_unavailable' });
      else res.destroy();
    });
    req.pipe(up);
  }

  const server = createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    // The decider's JWK set, from where this party takes it: the page checks
    // the matcher's public keys against it, so it must not come from the
    // matcher.
    if (path === '/.well-known/jwks.json' && req.method === 'GET') {
      try {
        res.writeHead(200, { 'content-type': 'application/jwk-set+json', 'cache-control': 'no-cache' });
        return res.end(JSON.stringify(await keySet(false)));
      } catch (e) {
        return send(res, e.status ?? 502, { error: e.message, code: e.code ?? 'jwks' });
      }
    }
    if (!path.startsWith('/rp/')) return proxy(req, res);
    const handler = routes[`${req.method} ${path}`];
    try {
      if (!handler) throw Object.assign(new Error('no such route'), { status: 404, code: 'not_found' });
      const body = req.method === 'POST' ? await readJson(req) : {};
      if ('user' in body || path === '/rp/register' || path === '/rp/challenge' || path === '/rp/session') {
        if (typeof body.user !== 'string' || !USER_RE.test(body.user)) {
          throw Object.assign(new Error('user: 1–64 of A–Z a–z 0–9 . _ -'), { status: 400, code: 'bad_name' });
        }
      }
      send(res, 200, await handler(body, req, res));
    } catch (e) {
      send(res, e.status ?? 500, { error: e.message, code: e.code ?? 'internal' });
    }
  });
  // Without --audience: this party's own address, once it is known.
  server.on('listening', () => {
    if (!audience) audience = `http://127.0.0.1:${server.address().port}`;
  });
  return server;
}

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let o;
  try {
    o = options(process.argv.slice(2));
  } catch (e) {
    console.error(`relying party: ${e.message}`);
    process.exit(2);
  }
  const [host, port] = o.bind.split(/:(?=\d+$)/);
  const server = relyingParty(o);
  server.listen(Number(port), host, () => {
    const a = server.address();
    console.log(`relying party listening on http://${a.address}:${a.port}/`);
  });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
}
