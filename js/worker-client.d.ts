import type { Scores } from './blindmatch.js';
import type { InitOptions, InitResult } from './index.js';

/** A handle to keys that live in the worker's wasm memory. */
export type KeysHandle = number;

/** Promise-based access to blindmatch/worker (keygen, encryption, decryption off the main thread). */
export class BlindmatchWorker {
  private constructor();
  /** Starts the worker (browser Worker or Node worker_threads) and loads the wasm module in it. */
  static create(options?: { url?: URL | string; init?: Omit<InitOptions, 'wasm'> & { wasm?: URL | string } }): Promise<BlindmatchWorker>;
  /** Which build the worker loaded. */
  info: InitResult;
  generate(preset?: 'auth4096'): Promise<KeysHandle>;
  /** Transfers `secretKey` to the worker: afterwards it is detached (or zeroed, if a view of part of a larger buffer). */
  fromSecretKey(secretKey: Uint8Array, preset?: 'auth4096'): Promise<KeysHandle>;
  /** Login mode: encryption under a public key from the server; the handle decrypts nothing. */
  fromPublicKey(publicKey: Uint8Array, preset?: 'auth4096'): Promise<KeysHandle>;
  exportSecretKey(handle: KeysHandle): Promise<Uint8Array>;
  publicKey(handle: KeysHandle): Promise<Uint8Array>;
  relinKey(handle: KeysHandle): Promise<Uint8Array>;
  encryptTemplates(handle: KeysHandle, embeddings: Float32Array[], dim?: number): Promise<Uint8Array>;
  encryptProbe(handle: KeysHandle, embedding: Float32Array, dim?: number): Promise<Uint8Array>;
  /** Login mode (a `fromPublicKey` handle): a template with each sample's one-hot ciphertexts, for `ServerClient.enroll`. */
  encryptTemplateBundle(handle: KeysHandle, embeddings: Float32Array[], dim?: number): Promise<Uint8Array>;
  /** Login mode (a `fromPublicKey` handle): a probe with its one-hot ciphertexts, for `ServerClient.login`. */
  encryptProbeBundle(handle: KeysHandle, embedding: Float32Array, dim?: number): Promise<Uint8Array>;
  decryptScores(handle: KeysHandle, reply: Uint8Array, count?: number, dim?: number): Promise<Scores>;
  free(handle: KeysHandle): Promise<null>;
  terminate(): void;
}
