// blindmatch: the package entry. Re-exports the wasm-bindgen API and adds
// `init()`, which loads the simd128 build when the engine supports it and the
// baseline build otherwise. Works in browsers (plain ESM or a bundler) and in
// Node 18+ (the .wasm is read with fs when it is a file: URL).
import wbgInit, * as wbg from './blindmatch.js';

export * from './blindmatch.js';
export { BlindmatchWorker } from './worker-client.js';
export { ServerClient, ServerError, frameKeys } from './server-client.js';
export { checkKeyStatement } from './key-statement.js';

// (module (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt)):
// valid only where the engine has 128-bit SIMD.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15,
  253, 98, 11,
]);

/** Whether this engine supports WebAssembly 128-bit SIMD. */
export function simdSupported() {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}

let started = null;
let loaded = false;

/**
 * Before `init()` has finished, the generated glue has no module to call
 * and fails with "Cannot read properties of undefined". The calls that
 * start everything else (every other object needs a `Params`) say what is
 * wrong instead.
 */
function ensureLoaded(what) {
  if (!loaded) throw new Error(`${what}: the WebAssembly module is not loaded yet; call (and await) init() first`);
}
for (const name of ['auth4096', 'custom']) {
  const make = wbg.Params[name];
  wbg.Params[name] = function (...args) {
    ensureLoaded(`Params.${name}`);
    return make.apply(this, args);
  };
}

/** The library's NTT-friendly primes (see the generated declaration). */
export function nttPrimes(bits, n, count) {
  ensureLoaded('nttPrimes');
  return wbg.nttPrimes(bits, n, count);
}

/** An NTT plan for one prime (see the generated declaration). */
export class NttPlan extends wbg.NttPlan {
  constructor(n, q) {
    ensureLoaded('new NttPlan');
    super(n, q);
  }

  static scalar(n, q) {
    ensureLoaded('NttPlan.scalar');
    return Object.setPrototypeOf(wbg.NttPlan.scalar(n, q), NttPlan.prototype);
  }
}

const isNode = typeof process === 'object' && process !== null && !!process.versions?.node;

// Randomness comes from globalThis.crypto.getRandomValues. Node 18 has Web
// Crypto only as require('node:crypto').webcrypto, not as a global: install
// that same object (a CSPRNG) when the global is missing. Elsewhere a missing
// Web Crypto stays missing, and key generation and encryption fail with an
// error (never a weaker fallback).
async function ensureWebCrypto() {
  if (typeof globalThis.crypto?.getRandomValues === 'function' || !isNode) return;
  const cryptoName = 'node:crypto';
  const { webcrypto } = await import(/* @vite-ignore */ /* webpackIgnore: true */ cryptoName);
  if (typeof webcrypto?.getRandomValues === 'function') {
    Object.defineProperty(globalThis, 'crypto', { value: webcrypto, configurable: true, writable: true });
  }
}

async function readIfFile(source) {
  const url =
    source instanceof URL ? source : typeof source === 'string' && source.startsWith('file:') ? new URL(source) : null;
  if (url && url.protocol === 'file:' && isNode) {
    // Node (fetch has no file: URLs). The specifier is a variable so that
    // bundlers leave it alone in browser builds.
    const fsName = 'node:fs/promises';
    const fs = await import(/* @vite-ignore */ /* webpackIgnore: true */ fsName);
    return fs.readFile(url);
  }
  return source;
}

/**
 * Loads and instantiates the wasm module; call once before anything else
 * (later calls return the first call's result).
 *
 * @param {object} [options]
 * @param {boolean} [options.simd] force the simd128 (true) or baseline (false) build
 * @param {URL|string|Response|BufferSource|WebAssembly.Module} [options.wasm]
 *   where to load the .wasm from instead of the package's own files
 * @returns {Promise<{simd: boolean, build: 'simd128'|'baseline'}>}
 */
export function init(options = {}) {
  if (!started) {
    started = (async () => {
      await ensureWebCrypto();
      const simd = options.simd ?? simdSupported();
      let source = options.wasm;
      if (source === undefined) {
        source = simd
          ? new URL('./blindmatch_bg.wasm', import.meta.url)
          : new URL('./blindmatch_baseline_bg.wasm', import.meta.url);
      }
      await wbgInit({ module_or_path: await readIfFile(source) });
      loaded = true;
      return { simd, build: simd ? 'simd128' : 'baseline' };
    })();
    started.catch(() => {
      started = null; // a failed load may be retried
    });
  }
  return started;
}
