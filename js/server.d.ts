/** An error answer of blindmatch-server: its `{ error, code }` and the HTTP status. */
export class ServerError extends Error {
  readonly name: 'ServerError';
  /** HTTP status, e.g. 404. */
  readonly status: number;
  /** The server's error code, e.g. `unknown_user` (empty if the body was not JSON). */
  readonly code: string;
}

/** The body of `PUT /v1/users/{user}/keys`: u32 LE length, public key, u32 LE length, relinearization key. */
export function frameKeys(publicKey: Uint8Array, relinKey?: Uint8Array | null): Uint8Array;

/** `GET /v1/params` */
export interface ServerParams {
  /** The parameter id every object must carry (hex). */
  id: string;
  /** Preset name, e.g. `auth4096`. */
  name: string;
  /** Embedding dimension the server matches. */
  dimension: number;
  templates_per_ciphertext: number;
  /** Largest accepted bodies, in bytes. */
  limits: Record<string, number>;
  [field: string]: unknown;
}

export interface VerifyResult {
  /** The masked reply, for `Keys.decryptScores(reply, count)`. */
  reply: Uint8Array;
  /** Scores in the reply (samples in the user's template). */
  count: number;
  /** The server's Server-Timing fields, in milliseconds. */
  serverMs: Record<string, number>;
}

/** Headers added to every request: e.g. the `Authorization` an authenticating front end wants. */
export type ServerHeaders =
  | Record<string, string>
  | ((path: string) => Record<string, string> | Promise<Record<string, string>>);

export interface ServerClientOptions {
  /** Replaces the global fetch. */
  fetch?: typeof fetch;
  /** Added to every request; a function is called (and awaited) per request. */
  headers?: ServerHeaders;
  /** Longest wait for each request, headers and body, in ms (default 30 000; 0: no limit). A request that runs out rejects with an Error named `TimeoutError`. */
  timeoutMs?: number;
}

/** Per call: `signal` cancels the request (the promise rejects with the signal's reason, an `AbortError` by default). */
export interface RequestOptions {
  signal?: AbortSignal;
}

/** A client for blindmatch-server's HTTP API; it moves bytes, the keys stay with `Keys`. */
export class ServerClient {
  /** `base`: the server's URL (`''` = this page's origin). */
  constructor(base?: string, options?: ServerClientOptions);
  readonly base: string;
  readonly timeoutMs: number;
  params(options?: RequestOptions): Promise<ServerParams>;
  register(user: string, publicKey: Uint8Array, relinKey?: Uint8Array | null, options?: RequestOptions): Promise<void>;
  enroll(user: string, template: Uint8Array, count: number, options?: RequestOptions): Promise<void>;
  verify(user: string, probe: Uint8Array, options?: RequestOptions): Promise<VerifyResult>;
  /** Resolves to false when there was no such user. */
  deleteUser(user: string, options?: RequestOptions): Promise<boolean>;
}
