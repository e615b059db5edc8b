// blindmatch/worker: a worker entry that runs key generation, encryption and
// decryption off the main thread. Start it with `BlindmatchWorker.create()`
// (which wraps this protocol in promises), or yourself:
//
//   browser: new Worker(new URL('blindmatch/worker', import.meta.url), { type: 'module' })
//   Node:    new (await import('node:worker_threads')).Worker(url-of-this-file)
//
// Protocol: the page posts { id, op, args }; the worker answers
// { id, ok: true, result } or { id, ok: false, error: { name, message } }.
// Byte arrays in results are transferred, not copied. Keys live in the
// worker's wasm memory under numeric handles; the secret key leaves the
// worker only through the `exportSecretKey` op (transferred, so the worker
// keeps no copy of those bytes). A secret key sent in (`fromSecretKey`)
// should arrive by transfer; the worker zeroes the array it received once
// the keys are loaded (or have failed to load).
import { init, Params, Keys, PublicKeyEncryptor } from './index.js';

const keysets = new Map();
let nextHandle = 1;

function keysFor(handle) {
  const k = keysets.get(handle);
  if (!k) throw new Error(`no keys with handle ${handle} (freed, or never created)`);
  return k;
}

/** The secret-key holder behind `handle` (not a public-key-only handle). */
function secretFor(handle, op) {
  const k = keysFor(handle);
  if (!(k instanceof Keys)) throw new Error(`${op}: handle ${handle} holds a public key only (fromPublicKey)`);
  return k;
}

/** The public-key encryptor behind `handle` (from fromPublicKey). */
function encryptorFor(handle, op) {
  const k = keysFor(handle);
  if (!(k instanceof PublicKeyEncryptor)) throw new Error(`${op}: handle ${handle} is not a public key (fromPublicKey)`);
  return k;
}

function params(name) {
  if (name === undefined || name === 'auth4096') return Params.auth4096();
  throw new Error(`unknown parameter preset ${String(name)} (only 'auth4096')`);
}

function register(keys) {
  const handle = nextHandle++;
  keysets.set(handle, keys);
  return handle;
}

const ops = {
  async init(options) {
    return init(options ?? {});
  },
  generate(preset) {
    return { handle: register(Keys.generate(params(preset))) };
  },
  fromSecretKey(preset, secretKey) {
    try {
      return { handle: register(Keys.fromSecretKey(params(preset), secretKey)) };
    } finally {
      // The only copy of the key's bytes here (received by transfer); the
      // keys are in wasm memory now, zeroized when freed.
      if (secretKey instanceof Uint8Array) secretKey.fill(0);
    }
  },
  // Login mode: encryption only, under a public key from the server (the
  // handle has no secret key; exportSecretKey, relinKey and decryptScores
  // throw for it).
  fromPublicKey(preset, publicKey) {
    return { handle: register(PublicKeyEncryptor.fromPublicKey(params(preset), publicKey)) };
  },
  exportSecretKey(handle) {
    return secretFor(handle, 'exportSecretKey').exportSecretKey();
  },
  publicKey(handle) {
    return secretFor(handle, 'publicKey').publicKey();
  },
  relinKey(handle) {
    return secretFor(handle, 'relinKey').relinKey();
  },
  encryptTemplates(handle, embeddings, dim) {
    return keysFor(handle).encryptTemplates(embeddings, dim);
  },
  encryptProbe(handle, embedding, dim) {
    return keysFor(handle).encryptProbe(embedding, dim);
  },
  // Login mode: the bundles the matcher takes (a template or probe with its
  // one-hot ciphertexts, which the decider checks).
  encryptTemplateBundle(handle, embeddings, dim) {
    return encryptorFor(handle, 'encryptTemplateBundle').encryptTemplateBundle(embeddings, dim);
  },
  encryptProbeBundle(handle, embedding, dim) {
    return encryptorFor(handle, 'encryptProbeBundle').encryptProbeBundle(embedding, dim);
  },
  decryptScores(handle, reply, count, dim) {
    return secretFor(handle, 'decryptScores').decryptScores(reply, count, dim);
  },
  free(handle) {
    const k = keysets.get(handle);
    if (k) {
      keysets.delete(handle);
      k.free(); // zeroizes the secret key
    }
    return null;
  },
};

async function handle(data, post) {
  const { id, op, args } = data ?? {};
  try {
    if (!Object.prototype.hasOwnProperty.call(ops, op)) {
      throw new Error(`unknown operation ${String(op)}`);
    }
    if (op !== 'init') await init();
    const result = await ops[op](...(Array.isArray(args) ? args : []));
    const transfer = result instanceof Uint8Array ? [result.buffer] : [];
    post({ id, ok: true, result }, transfer);
  } catch (e) {
    const error = e instanceof Error ? { name: e.name, message: e.message } : { name: 'Error', message: String(e) };
    post({ id, ok: false, error }, []);
  }
}

const isBrowserWorker =
  typeof self === 'object' && self !== null && typeof self.postMessage === 'function' &&
  typeof globalThis.WorkerGlobalScope === 'function';

if (isBrowserWorker) {
  self.onmessage = (e) => handle(e.data, (msg, transfer) => self.postMessage(msg, transfer));
} else {
  // No top-level await: bundlers build workers as classic scripts by
  // default (Vite: `worker.format` 'iife'), which cannot have one.
  const wtName = 'node:worker_threads';
  import(/* @vite-ignore */ /* webpackIgnore: true */ wtName).then(({ parentPort }) => {
    if (!parentPort) throw new Error('blindmatch/worker must run in a Worker');
    parentPort.on('message', (data) => handle(data, (msg, transfer) => parentPort.postMessage(msg, transfer)));
  });
}
