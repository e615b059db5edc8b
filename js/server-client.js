// A client for blindmatch-server's HTTP API (the repository's docs/API.md):
// register a user's keys, enroll templates, verify a probe, delete a user;
// in login mode, tickets, challenges and signed verdicts; and, against a
// server with a service key, 1:N galleries.
// It moves bytes only: keys, templates and probes come from `Keys` (or the
// worker), and the reply goes back to `Keys.decryptScores`. Uses the global
// `fetch` (browsers, Node 18+) unless one is given.

/** An error answer of the server: its `{ error, code }` and the HTTP status. */
export class ServerError extends Error {
  constructor(what, status, code, message) {
    super(`${what}: the server answered ${status}${code ? ` (${code})` : ''}: ${message}`);
    this.name = 'ServerError';
    this.status = status;
    this.code = code;
  }
}

/**
 * The body of `PUT /v1/users/{user}/keys`: u32 LE length, public key, u32 LE
 * length, relinearization key (length 0 when there is none).
 */
export function frameKeys(publicKey, relinKey) {
  if (!(publicKey instanceof Uint8Array)) throw new TypeError('frameKeys: the public key must be a Uint8Array');
  if (relinKey != null && !(relinKey instanceof Uint8Array)) {
    throw new TypeError('frameKeys: the relinearization key must be a Uint8Array (or omitted)');
  }
  const rkLen = relinKey ? relinKey.length : 0;
  const out = new Uint8Array(8 + publicKey.length + rkLen);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, publicKey.length, true);
  out.set(publicKey, 4);
  dv.setUint32(4 + publicKey.length, rkLen, true);
  if (relinKey) out.set(relinKey, 8 + publicKey.length);
  return out;
}

const OCTETS = { 'content-type': 'application/octet-stream' };

// The server's JSON names are snake_case (docs/API.md); JavaScript callers get
// camelCase (`first_index` -> `firstIndex`), nested objects and arrays too.
function camelKeys(v) {
  if (Array.isArray(v)) return v.map(camelKeys);
  if (v === null || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) out[k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())] = camelKeys(x);
  return out;
}

const json = async (res) => camelKeys(await res.json());

function credential(what, v) {
  if (typeof v !== 'string' || v === '' || /[\s]/.test(v)) throw new TypeError(`the ${what} must be a non-empty string without spaces`);
  return v;
}

export class ServerClient {
  /**
   * `base`: the server's URL (`''`, the default, means this page's origin;
   * Node needs an absolute URL). Options: `fetch` replaces the global fetch;
   * `headers` are added to every request (an object, or a function, possibly
   * async, returning one: e.g. a fresh `Authorization` for the authenticating
   * front end the server sits behind); `apiKey` (a relying party's backend
   * only, never a page) is sent as `Authorization: Bearer`; `timeoutMs`
   * bounds each request (default 30 000; 0: no limit).
   */
  constructor(base = '', options = {}) {
    this.base = String(base).replace(/\/+$/, '');
    this.fetch = options.fetch ?? ((...args) => globalThis.fetch(...args));
    const headers = options.headers ?? {};
    if (typeof headers !== 'function' && (typeof headers !== 'object' || headers === null)) {
      throw new TypeError('ServerClient: options.headers must be an object or a function returning one');
    }
    this.headers = headers;
    if (options.apiKey !== undefined && (typeof options.apiKey !== 'string' || options.apiKey === '')) {
      throw new TypeError('ServerClient: options.apiKey must be a non-empty string');
    }
    this.apiKey = options.apiKey ?? null;
    const timeoutMs = options.timeoutMs ?? 30_000;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
      throw new TypeError('ServerClient: options.timeoutMs must be a non-negative number of milliseconds');
    }
    this.timeoutMs = timeoutMs;
  }

  // `read` takes the body too, so the timeout and the caller's signal cover
  // the whole exchange, not just the headers.
  async #call(what, path, init = {}, opts = {}, read = (res) => res) {
    const extra = typeof this.headers === 'function' ? await this.headers(path) : this.headers;
    const headers = { ...(extra ?? {}), ...(init.headers ?? {}) };
    // The credential: a ticket or a verdict for this call, else the API key.
    if (opts.ticket !== undefined) headers.authorization = `Ticket ${credential('ticket', opts.ticket)}`;
    else if (opts.verdict !== undefined) headers.authorization = `Verdict ${credential('verdict', opts.verdict)}`;
    else if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    // The caller's signal and the timeout, whichever fires first.
    const timer = new AbortController();
    const timeout = this.timeoutMs > 0 ? setTimeout(() => timer.abort(), this.timeoutMs) : null;
    const onAbort = () => timer.abort();
    if (opts.signal) {
      if (opts.signal.aborted) timer.abort();
      else opts.signal.addEventListener('abort', onAbort, { once: true });
    }
    let res;
    try {
      res = await this.fetch(`${this.base}${path}`, { cache: 'no-store', ...init, headers, signal: timer.signal });
      return await read(await this.#check(what, res));
    } catch (e) {
      if (e instanceof ServerError) throw e;
      if (opts.signal?.aborted) throw opts.signal.reason ?? e;
      if (timer.signal.aborted) {
        const err = new Error(`${what}: no answer from the server within ${this.timeoutMs} ms`);
        err.name = 'TimeoutError';
        throw err;
      }
      throw new Error(`${what}: the server cannot be reached (${e.message})`);
    } finally {
      if (timeout !== null) clearTimeout(timeout);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** The response if it is a success; otherwise its `{ error, code }` as a ServerError. */
  async #check(what, res) {
    if (!res.ok) {
      let code = '';
      let message = res.statusText || 'request failed';
      try {
        const body = await res.json();
        code = body.code ?? '';
        message = body.error ?? message;
      } catch {
        // not JSON: keep the status text
      }
      throw new ServerError(what, res.status, code, message);
    }
    return res;
  }

  #user(user, rest = '') {
    if (typeof user !== 'string' || user === '') throw new TypeError('the user name must be a non-empty string');
    return `/v1/users/${encodeURIComponent(user)}${rest}`;
  }

  #gallery(gallery, rest = '') {
    if (typeof gallery !== 'string' || gallery === '') throw new TypeError('the gallery name must be a non-empty string');
    return `/v1/galleries/${encodeURIComponent(gallery)}${rest}`;
  }

  /** `GET /v1/params`: the parameter id, the dimension, the limits. */
  async params(opts) {
    return this.#call('reading the server parameters', '/v1/params', {}, opts, json);
  }

  /** `PUT /v1/users/{user}/keys`: registers the public key and, optionally, the relinearization key. */
  async register(user, publicKey, relinKey, opts) {
    const body = frameKeys(publicKey, relinKey);
    await this.#call('registering the keys', this.#user(user, '/keys'), { method: 'PUT', headers: OCTETS, body }, opts);
  }

  /**
   * `PUT /v1/users/{user}/template`: stores the template ciphertext holding
   * `count` samples. With `{ ticket }` (an enrollment ticket) or `{ verdict }`
   * (the user's fresh accept verdict) in the options, that is the credential.
   */
  async enroll(user, template, count, opts) {
    if (!Number.isInteger(count) || count < 1) throw new TypeError('enroll: count must be a positive integer');
    const path = this.#user(user, `/template?count=${count}`);
    await this.#call('enrolling the template', path, { method: 'PUT', headers: OCTETS, body: template }, opts);
  }

  /**
   * `POST /v1/users/{user}/verify`: the encrypted probe in; the masked reply
   * (for `Keys.decryptScores`), the number of scores in it and the server's
   * own timings (Server-Timing, in ms) out.
   */
  async verify(user, probe, opts) {
    const init = { method: 'POST', headers: OCTETS, body: probe };
    const res = await this.#call('verifying', this.#user(user, '/verify'), init, opts, async (r) => ({
      headers: r.headers,
      reply: new Uint8Array(await r.arrayBuffer()),
    }));
    const reply = res.reply;
    const count = Number(res.headers.get('x-template-count'));
    if (!Number.isInteger(count) || count < 1) throw new Error('verifying: the reply has no valid x-template-count header');
    const serverMs = {};
    for (const part of (res.headers.get('server-timing') ?? '').split(',')) {
      const m = /^\s*([\w-]+)\s*;\s*dur=([\d.]+)/.exec(part);
      if (m) serverMs[m[1]] = Number(m[2]);
    }
    return { reply, count, serverMs };
  }

  // --- login mode (a matcher started with `--decider`) ----------------------

  /**
   * `POST /v1/users/{user}/tickets` (the API key: a relying party's backend):
   * a one-time enrollment ticket; in login mode the first one registers the
   * user under the decider's keys. `rotate: true` moves the user to a new
   * key epoch (enroll again). Resolves to `{ user, ticket, expiresAt, epoch }`.
   */
  async issueTicket(user, { rotate = false } = {}, opts) {
    const path = this.#user(user, rotate ? '/tickets?rotate=true' : '/tickets');
    return this.#call('issuing a ticket', path, { method: 'POST' }, opts, json);
  }

  /**
   * `POST /v1/users/{user}/challenges?aud=...` (the API key): a one-time
   * login challenge whose verdict will name `audience`. Resolves to
   * `{ user, challenge, aud, expiresAt }`.
   */
  async challenge(user, audience, opts) {
    if (typeof audience !== 'string' || audience === '') throw new TypeError('challenge: the audience must be a non-empty string');
    const path = this.#user(user, `/challenges?aud=${encodeURIComponent(audience)}`);
    return this.#call('asking for a challenge', path, { method: 'POST' }, opts, json);
  }

  /**
   * `GET /v1/users/{user}/public-key`: what the page encrypts the user's
   * template and probes under (`PublicKeyEncryptor.fromPublicKey`, or
   * `BlindmatchWorker.fromPublicKey`). Resolves to `{ publicKey, epoch,
   * statement }`: in login mode the key epoch and the decider's signed
   * statement of the key (check it with `checkKeyStatement` before
   * encrypting); else null and null.
   */
  async userPublicKey(user, opts) {
    return this.#publicKey('reading the public key', this.#user(user, '/public-key'), opts);
  }

  /** A public key with its epoch and the decider's statement (x-key-epoch, x-key-statement). */
  async #publicKey(what, path, opts) {
    return this.#call(what, path, {}, opts, async (r) => {
      const e = r.headers.get('x-key-epoch');
      return {
        publicKey: new Uint8Array(await r.arrayBuffer()),
        epoch: e === null ? null : Number(e),
        statement: r.headers.get('x-key-statement'),
      };
    });
  }

  /**
   * `POST /v1/users/{user}/login?challenge=...`: the encrypted probe with the
   * challenge the relying party issued; resolves to `{ verdict, outcome }`,
   * the decider's signed verdict (a JWS) for the relying party to verify.
   */
  async login(user, challenge, probe, opts) {
    const path = this.#user(user, `/login?challenge=${encodeURIComponent(credential('challenge', challenge))}`);
    return this.#call('logging in', path, { method: 'POST', headers: OCTETS, body: probe }, opts, json);
  }

  // --- 1:N in login mode (galleries under keys of the decider's) -----------

  /**
   * `PUT /v1/galleries/{gallery}` (the API key): creates the gallery under a
   * key of its own from the decider. Resolves to `{ gallery, epoch }`
   * (the same when it exists already).
   */
  async createGallery(gallery, opts) {
    return this.#call('creating the gallery', this.#gallery(gallery), { method: 'PUT' }, opts, json);
  }

  /**
   * `GET /v1/galleries/{gallery}/public-key`: what templates and probes of
   * the gallery are encrypted under (`PublicKeyEncryptor.fromPublicKey`).
   * Resolves to `{ publicKey, epoch, statement }`; check the statement with
   * `checkKeyStatement({ gallery, ... })` before encrypting.
   */
  async galleryPublicKey(gallery, opts) {
    return this.#publicKey('reading the gallery\'s public key', this.#gallery(gallery, '/public-key'), opts);
  }

  /**
   * `POST /v1/galleries/{gallery}/identify?aud=&nonce=&top_k=` (the API
   * key), login mode: a probe bundle encrypted under the gallery's public
   * key in (`PublicKeyEncryptor.encryptProbeBundle`); resolves to
   * `{ gallery, identification }`, the decider's signed list of the
   * templates at or above its threshold (a JWS of type
   * `blindmatch-identify+jwt` whose `matches` are indices, best first). A
   * probe that is not a well-formed embedding rejects with a `ServerError`
   * of code `malformed_probe`.
   */
  async identifyEncrypted(gallery, probe, { audience, nonce, topK = 5 } = {}, opts) {
    if (typeof audience !== 'string' || audience === '') throw new TypeError('identifyEncrypted: the audience must be a non-empty string');
    if (typeof nonce !== 'string' || nonce === '') throw new TypeError('identifyEncrypted: the nonce must be a non-empty string');
    if (!Number.isInteger(topK) || topK < 1) throw new TypeError('identifyEncrypted: topK must be a positive integer');
    const query = `?aud=${encodeURIComponent(audience)}&nonce=${encodeURIComponent(nonce)}&top_k=${topK}`;
    const init = { method: 'POST', headers: OCTETS, body: probe };
    return this.#call('identifying', this.#gallery(gallery, `/identify${query}`), init, opts, json);
  }

  // --- 1:N identification (a server started with `--service-key`) ---------

  /** `GET /v1/service/public-key`: for `PublicKeyEncryptor.fromPublicKey`. */
  async servicePublicKey(opts) {
    return this.#call('reading the service public key', '/v1/service/public-key', {}, opts, async (r) =>
      new Uint8Array(await r.arrayBuffer()));
  }

  /**
   * `POST /v1/galleries/{gallery}/templates`: appends one ciphertext of
   * `count` templates (from `PublicKeyEncryptor.encryptTemplates`; in login
   * mode a bundle from `encryptTemplateBundle` under the gallery's key,
   * stored only once the decider finds every template well-formed, else a
   * `ServerError` of code `malformed_template`); resolves to
   * `{ gallery, firstIndex, count, templates }`.
   */
  async addGalleryTemplates(gallery, ciphertext, count, opts) {
    if (!Number.isInteger(count) || count < 1) throw new TypeError('addGalleryTemplates: count must be a positive integer');
    const path = this.#gallery(gallery, `/templates?count=${count}`);
    return this.#call('adding gallery templates', path, { method: 'POST', headers: OCTETS, body: ciphertext }, opts, json);
  }

  /**
   * `POST /v1/galleries/{gallery}/identify`: the best `topK` matches of an
   * embedding, best first: `{ gallery, matches: [{ index, score, cosine }] }`.
   * In this mode the embedding travels in the clear (to a server that holds
   * the service key); see the repository's docs/PROTOCOL.md.
   */
  async identify(gallery, embedding, topK = 5, opts) {
    if (!(embedding instanceof Float32Array) && !Array.isArray(embedding)) {
      throw new TypeError('identify: the embedding must be a Float32Array or an array of numbers');
    }
    const body = JSON.stringify({ embedding: Array.from(embedding), top_k: topK });
    const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body };
    return this.#call('identifying', this.#gallery(gallery, '/identify'), init, opts, json);
  }

  /** `GET /v1/galleries`: every gallery with its counts. */
  async galleries(opts) {
    const v = await this.#call('listing the galleries', '/v1/galleries', {}, opts, json);
    return v.galleries;
  }

  /** `DELETE /v1/galleries/{gallery}/templates/{index}`: erases one template; the others keep their indices. */
  async eraseGalleryTemplate(gallery, index, opts) {
    if (!Number.isInteger(index) || index < 0) throw new TypeError('eraseGalleryTemplate: index must be a non-negative integer');
    await this.#call('erasing a gallery template', this.#gallery(gallery, `/templates/${index}`), { method: 'DELETE' }, opts);
  }

  /** `DELETE /v1/galleries/{gallery}`: true if it was removed, false if there was none. */
  async deleteGallery(gallery, opts) {
    return this.#delete('deleting the gallery', this.#gallery(gallery), 'unknown_gallery', opts);
  }

  /** `DELETE /v1/users/{user}`: true if the user was removed, false if there was none; `{ verdict }` in the options deletes oneself. */
  async deleteUser(user, opts) {
    return this.#delete('deleting the user', this.#user(user), null, opts);
  }

  /**
   * DELETE `path`: true if done, false if the server answers 404 with the
   * code `missing` (any 404 when `missing` is null).
   */
  async #delete(what, path, missing, opts) {
    try {
      await this.#call(what, path, { method: 'DELETE' }, opts);
      return true;
    } catch (e) {
      if (e instanceof ServerError && e.status === 404 && (missing === null || e.code === missing)) return false;
      throw e;
    }
  }
}
