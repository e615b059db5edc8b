// The blindmatch-server HTTP API (docs/API.md), same origin as this page.

/** An error reply of the server: `{ error, code }` plus the HTTP status. */
export class ServerError extends Error {
  constructor(what, status, code, message) {
    super(`${what}: the server answered ${status}${code ? ` (${code})` : ''}: ${message}`);
    this.name = 'ServerError';
    this.status = status;
    this.code = code;
  }
}

async function call(what, url, init) {
  let res;
  try {
    res = await fetch(url, { cache: 'no-store', ...init });
  } catch (e) {
    throw new Error(`${what}: the server cannot be reached (${e.message})`);
  }
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

const user = (name) => `/v1/users/${encodeURIComponent(name)}`;
const octets = { 'content-type': 'application/octet-stream' };

/** `GET /v1/params`: parameter id, dimension, limits. */
export async function params() {
  return (await call('reading the server parameters', '/v1/params')).json();
}

/** Frames the keys body: u32 LE pk_len | pk | u32 LE rk_len | rk. */
export function frameKeys(pk, rk) {
  const rkLen = rk ? rk.length : 0;
  const out = new Uint8Array(8 + pk.length + rkLen);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, pk.length, true);
  out.set(pk, 4);
  dv.setUint32(4 + pk.length, rkLen, true);
  if (rk) out.set(rk, 8 + pk.length);
  return out;
}

export async function putKeys(name, pk, rk) {
  await call('uploading the keys', `${user(name)}/keys`, { method: 'PUT', headers: octets, body: frameKeys(pk, rk) });
}

export async function putTemplate(name, template, count) {
  await call('uploading the template', `${user(name)}/template?count=${count}`, { method: 'PUT', headers: octets, body: template });
}

/**
 * `POST .../verify`: the encrypted probe in; the masked reply, the number of
 * scores in it and the server's own timing (Server-Timing, ms) out.
 */
export async function verify(name, probe) {
  const res = await call('verifying', `${user(name)}/verify`, { method: 'POST', headers: octets, body: probe });
  const reply = new Uint8Array(await res.arrayBuffer());
  const count = Number(res.headers.get('x-template-count'));
  if (!Number.isInteger(count) || count < 1) throw new Error('verifying: the reply has no valid x-template-count header');
  const serverMs = {};
  for (const part of (res.headers.get('server-timing') ?? '').split(',')) {
    const m = /^\s*([\w-]+)\s*;\s*dur=([\d.]+)/.exec(part);
    if (m) serverMs[m[1]] = Number(m[2]);
  }
  return { reply, count, serverMs };
}

export async function deleteUser(name) {
  try {
    await call('deleting the user', user(name), { method: 'DELETE' });
  } catch (e) {
    if (e.status !== 404) throw e; // already gone is fine
  }
}
