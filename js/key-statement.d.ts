/** The claims of a key statement: the decider's word that a public key is a user's. */
export interface KeyStatementClaims {
  iss: string;
  sub: string;
  epoch: number;
  /** SHA-256 of the public key's bytes, base64url. */
  pk_sha256: string;
  iat: number;
}

/** A JWK set (as served at /.well-known/jwks.json). */
export interface JwkSet {
  keys: Array<{ kty: string; crv?: string; x?: string; kid?: string; [k: string]: unknown }>;
}

/**
 * Checks the decider's signed statement of a user's (or, with `gallery`, a
 * gallery's) public key before anything is encrypted under it; rejects with
 * an Error named `KeyStatementError` when it does not check.
 */
export function checkKeyStatement(
  options: {
    statement: string | null;
    jwks: JwkSet;
    issuer: string;
    epoch?: number | null;
    publicKey: Uint8Array;
  } & ({ user: string; gallery?: undefined } | { gallery: string; user?: undefined }),
): Promise<KeyStatementClaims>;
