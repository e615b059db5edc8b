// BlindmatchWorker: a promise-based wrapper around blindmatch/worker, so a
// page runs key generation, encryption and decryption off the main thread.
//
//   const w = await BlindmatchWorker.create();
//   const keys = await w.generate();             // a handle; the secret stays in the worker
//   const pk = await w.publicKey(keys);
//   const probe = await w.encryptProbe(keys, embedding, 128);
//   const { scores, cosines } = await w.decryptScores(keys, reply, 1);
//   w.terminate();

function toError(e) {
  const err = new Error(e?.message ?? 'blindmatch worker error');
  if (e?.name) err.name = e.name;
  return err;
}

/** Whether typed array `a` spans its whole (transferable) ArrayBuffer. */
function whole(a) {
  return (
    a.buffer instanceof ArrayBuffer && a.byteOffset === 0 && a.byteLength === a.buffer.byteLength && a.byteLength > 0
  );
}

export class BlindmatchWorker {
  #worker;
  #pending = new Map();
  #next = 1;
  #off;

  constructor(worker, kind) {
    this.#worker = worker;
    const onMessage = (data) => {
      const p = this.#pending.get(data?.id);
      if (!p) return;
      this.#pending.delete(data.id);
      if (data.ok) p.resolve(data.result);
      else p.reject(toError(data.error));
    };
    const onError = (e) => {
      const err = e instanceof Error ? e : new Error(e?.message ?? 'blindmatch worker failed');
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    };
    if (kind === 'node') {
      worker.on('message', onMessage);
      worker.on('error', onError);
      this.#off = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
      };
    } else {
      worker.addEventListener('message', (e) => onMessage(e.data));
      worker.addEventListener('error', onError);
      this.#off = () => {};
    }
  }

  /**
   * Starts the worker and loads the wasm module in it.
   * @param {object} [options] `{ url, init }`: the worker script's URL
   *   (default: this package's worker.js) and options for `init()`.
   */
  static async create(options = {}) {
    let w;
    const isNode = typeof process === 'object' && process !== null && !!process.versions?.node;
    if (!isNode && typeof globalThis.Worker === 'function') {
      // Written out literally, `new Worker(new URL('./worker.js',
      // import.meta.url), ...)` is what bundlers (Vite, webpack 5) recognize
      // as a worker entry: they bundle worker.js with its imports and the
      // .wasm files it loads.
      const worker = options.url
        ? new Worker(options.url, { type: 'module' })
        : new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
      w = new BlindmatchWorker(worker, 'web');
    } else {
      // Node: the file next to this one. (Named through a variable, so that
      // bundlers do not copy it as an asset for the browser.)
      const file = './worker.js';
      const url = options.url ?? new URL(/* webpackIgnore: true */ file, import.meta.url);
      const wtName = 'node:worker_threads';
      const { Worker } = await import(/* @vite-ignore */ /* webpackIgnore: true */ wtName);
      w = new BlindmatchWorker(new Worker(url), 'node');
    }
    try {
      w.info = await w.#call('init', [options.init ?? {}]);
    } catch (e) {
      w.terminate();
      throw e;
    }
    return w;
  }

  #call(op, args, transfer = []) {
    return new Promise((resolve, reject) => {
      const id = this.#next++;
      this.#pending.set(id, { resolve, reject });
      try {
        this.#worker.postMessage({ id, op, args }, transfer);
      } catch (e) {
        this.#pending.delete(id);
        reject(e);
      }
    });
  }

  /** Fresh keys in the worker; resolves to a handle. */
  async generate(preset = 'auth4096') {
    return (await this.#call('generate', [preset])).handle;
  }
  /**
   * Keys from an exported secret key; resolves to a handle. The key's bytes
   * are transferred to the worker, not copied: afterwards `secretKey` is
   * detached (length 0) when it spans its whole buffer; otherwise (a view of
   * part of a larger buffer) they are copied into a buffer that is
   * transferred, and `secretKey` is overwritten with zeros. The worker zeroes
   * its copy once the keys are loaded.
   */
  async fromSecretKey(secretKey, preset = 'auth4096') {
    let sent = secretKey;
    if (secretKey instanceof Uint8Array && !whole(secretKey)) {
      sent = secretKey.slice();
      secretKey.fill(0);
    }
    const transfer = sent instanceof Uint8Array && whole(sent) ? [sent.buffer] : [];
    return (await this.#call('fromSecretKey', [preset, sent], transfer)).handle;
  }
  /**
   * Login mode: a handle that encrypts templates and probes under a public
   * key from the server (`ServerClient.userPublicKey`); it holds no secret
   * key, so it decrypts nothing.
   */
  async fromPublicKey(publicKey, preset = 'auth4096') {
    return (await this.#call('fromPublicKey', [preset, publicKey])).handle;
  }
  /** The secret key's bytes (for the owner's own storage only). */
  exportSecretKey(handle) {
    return this.#call('exportSecretKey', [handle]);
  }
  publicKey(handle) {
    return this.#call('publicKey', [handle]);
  }
  relinKey(handle) {
    return this.#call('relinKey', [handle]);
  }
  encryptTemplates(handle, embeddings, dim = 128) {
    return this.#call('encryptTemplates', [handle, embeddings, dim]);
  }
  encryptProbe(handle, embedding, dim = 128) {
    return this.#call('encryptProbe', [handle, embedding, dim]);
  }
  encryptTemplateBundle(handle, embeddings, dim = 128) {
    return this.#call('encryptTemplateBundle', [handle, embeddings, dim]);
  }
  encryptProbeBundle(handle, embedding, dim = 128) {
    return this.#call('encryptProbeBundle', [handle, embedding, dim]);
  }
  decryptScores(handle, reply, count, dim) {
    return this.#call('decryptScores', [handle, reply, count, dim]);
  }
  /** Frees (and zeroizes) the keys behind a handle. */
  free(handle) {
    return this.#call('free', [handle]);
  }
  /** Stops the worker; pending calls are rejected. */
  terminate() {
    for (const p of this.#pending.values()) p.reject(new Error('blindmatch worker terminated'));
    this.#pending.clear();
    this.#off();
    this.#worker.terminate();
  }
}
