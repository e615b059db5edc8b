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

/** `GET /v1/params`, with the server's snake_case names in camelCase (as every object `ServerClient` returns). */
export interface ServerParams {
  /** The parameter id every object must carry (hex). */
  id: string;
  /** Preset name, e.g. `auth4096`. */
  name: string;
  /** Embedding dimension the server matches. */
  dimension: number;
  templatesPerCiphertext: number;
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

/** `POST /v1/galleries/{gallery}/templates` */
export interface GalleryAdded {
  gallery: string;
  /** Index of this ciphertext's first template in the gallery. */
  firstIndex: number;
  count: number;
  /** Templates in the gallery now (erased ones not counted). */
  templates: number;
}

export interface IdentifyMatch {
  /** The template's index in its gallery. */
  index: number;
  /** Exact integer inner product of the quantized embeddings. */
  score: number;
  cosine: number;
}

/** `POST /v1/galleries/{gallery}/identify` */
export interface IdentifyResult {
  gallery: string;
  /** Best first. */
  matches: IdentifyMatch[];
}

/** One entry of `GET /v1/galleries` */
export interface GalleryInfo {
  gallery: string;
  templates: number;
  erased: number;
  ciphertexts: number;
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
  /** A relying party's API key, sent as `Authorization: Bearer` (a backend only: never ship it to a page). */
  apiKey?: string;
  /** Longest wait for each request, headers and body, in ms (default 30 000; 0: no limit). A request that runs out rejects with an Error named `TimeoutError`. */
  timeoutMs?: number;
}

/** Per call: `signal` cancels the request (the promise rejects with the signal's reason, an `AbortError` by default). */
export interface RequestOptions {
  signal?: AbortSignal;
  /** Login mode: an enrollment ticket as this call's credential (`enroll`). */
  ticket?: string;
  /** Login mode: the user's fresh accept verdict as this call's credential (`enroll`, `deleteUser`). */
  verdict?: string;
}

/** `POST /v1/users/{user}/tickets` */
export interface Ticket {
  user: string;
  ticket: string;
  /** Seconds since the Unix epoch. */
  expiresAt: number;
  /** Login mode: the key epoch to encrypt under. */
  epoch?: number;
}

/** `POST /v1/users/{user}/challenges` */
export interface Challenge {
  user: string;
  challenge: string;
  /** The relying party the verdict will name. */
  aud: string;
  expiresAt: number;
}

/** `GET /v1/users/{user}/public-key` */
export interface UserPublicKey {
  publicKey: Uint8Array;
  /** The key epoch in login mode, else null. */
  epoch: number | null;
  /** Login mode: the decider's signed statement of this key (for `checkKeyStatement`), else null. */
  statement: string | null;
}

/** `PUT /v1/galleries/{gallery}` (login mode) */
export interface GalleryCreated {
  gallery: string;
  /** The gallery's key epoch at the decider. */
  epoch: number;
}

/** `POST /v1/galleries/{gallery}/identify` in login mode. */
export interface Identification {
  gallery: string;
  /**
   * A JWS (EdDSA, `typ` blindmatch-identify+jwt) with iss, sub (the
   * gallery), aud, nonce, iat, exp, amr and `matches`: the indices of the
   * templates at or above the decider's threshold, best first. No score.
   */
  identification: string;
}

/** `POST /v1/users/{user}/login`: the decider's signed verdict, for the relying party to verify. */
export interface LoginResult {
  /** A JWS (EdDSA) with iss, sub, aud, nonce, iat, exp, amr and outcome. */
  verdict: string;
  outcome: 'accept' | 'reject';
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
  /** Login mode, with the API key: a one-time enrollment ticket (the first registers the user). */
  issueTicket(user: string, options?: { rotate?: boolean }, request?: RequestOptions): Promise<Ticket>;
  /** Login mode, with the API key: a one-time login challenge for `audience`. */
  challenge(user: string, audience: string, options?: RequestOptions): Promise<Challenge>;
  /** The public key the page encrypts the user's template and probes under. */
  userPublicKey(user: string, options?: RequestOptions): Promise<UserPublicKey>;
  /** Login mode: an encrypted probe with its challenge; the decider's signed verdict back. */
  login(user: string, challenge: string, probe: Uint8Array, options?: RequestOptions): Promise<LoginResult>;
  /** 1:N (a server started with `--service-key`): the service public key, for `PublicKeyEncryptor.fromPublicKey`. */
  servicePublicKey(options?: RequestOptions): Promise<Uint8Array>;
  /**
   * Appends one ciphertext of `count` templates (from `PublicKeyEncryptor.encryptTemplates`; in login
   * mode a bundle from `encryptTemplateBundle`, refused with `malformed_template` unless every template
   * is a well-formed embedding).
   */
  addGalleryTemplates(gallery: string, ciphertext: Uint8Array, count: number, options?: RequestOptions): Promise<GalleryAdded>;
  /** The best `topK` (default 5, at most 100) matches of an embedding; the embedding is sent in the clear. */
  identify(gallery: string, embedding: Float32Array | number[], topK?: number, options?: RequestOptions): Promise<IdentifyResult>;
  /** Login mode: creates a gallery under a key of its own (API key). */
  createGallery(gallery: string, options?: RequestOptions): Promise<GalleryCreated>;
  /** The gallery's public key, its epoch and the decider's statement (login mode). */
  galleryPublicKey(gallery: string, options?: RequestOptions): Promise<UserPublicKey>;
  /**
   * Login mode: a probe bundle (`PublicKeyEncryptor.encryptProbeBundle` under the gallery's key) in, the
   * decider's signed identification out (API key); `malformed_probe` when it is not a well-formed embedding.
   */
  identifyEncrypted(
    gallery: string,
    probe: Uint8Array,
    query: { audience: string; nonce: string; topK?: number },
    options?: RequestOptions,
  ): Promise<Identification>;
  galleries(options?: RequestOptions): Promise<GalleryInfo[]>;
  /** Erases one template; the others keep their indices. */
  eraseGalleryTemplate(gallery: string, index: number, options?: RequestOptions): Promise<void>;
  /** Resolves to false when there was no such gallery. */
  deleteGallery(gallery: string, options?: RequestOptions): Promise<boolean>;
}
