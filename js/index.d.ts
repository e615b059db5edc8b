// The wasm-bindgen classes declare `[Symbol.dispose]()` (`using` support),
// which needs TypeScript 5.2+ and this lib, whatever the user's `lib` is.
/// <reference lib="esnext.disposable" />
// Types of the package entry: the wasm-bindgen API (generated) plus init().
export * from './blindmatch.js';
export { BlindmatchWorker } from './worker-client.js';
export {
  ServerClient,
  ServerError,
  frameKeys,
  type ServerParams,
  type VerifyResult,
  type ServerClientOptions,
  type ServerHeaders,
  type RequestOptions,
  type Ticket,
  type Challenge,
  type UserPublicKey,
  type LoginResult,
  type GalleryAdded,
  type GalleryInfo,
  type IdentifyMatch,
  type IdentifyResult,
  type GalleryCreated,
  type Identification,
} from './server-client.js';
export { checkKeyStatement, type KeyStatementClaims, type JwkSet } from './key-statement.js';

/** Whether this engine supports WebAssembly 128-bit SIMD. */
export function simdSupported(): boolean;

export interface InitOptions {
  /** Force the simd128 (true) or baseline (false) build; default: detect. */
  simd?: boolean;
  /** Load the .wasm from here instead of the package's own file. */
  wasm?: URL | string | Response | BufferSource | WebAssembly.Module;
}

export interface InitResult {
  simd: boolean;
  build: 'simd128' | 'baseline';
}

/**
 * Loads the wasm module (simd128 when supported); call once before anything
 * else. Later calls return the first call's result.
 */
export function init(options?: InitOptions): Promise<InitResult>;
