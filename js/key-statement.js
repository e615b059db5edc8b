// The decider's key statements: its signature (Ed25519, a compact JWS of
// type `blindmatch-key+jwt`) over a user, a key epoch and the SHA-256 of the
// public key the matcher serves for them. A page checks one before it
// encrypts anything under a key it got from the matcher, against the
// decider's JWK set from a source it trusts (its own origin, not the
// matcher), so that a matcher serving a key of its own learns no face.
// Uses WebCrypto (browsers with Ed25519, Node 18.4+).

const TYP = 'blindmatch-key+jwt';
const GALLERY_TYP = 'blindmatch-gallery-key+jwt';

function fail(why) {
  const e = new Error(`the public key's statement does not check: ${why}`);
  e.name = 'KeyStatementError';
  return e;
}

function fromB64url(s) {
  if (typeof s !== 'string' || !/^[A-Za-z0-9_-]*$/.test(s)) throw fail('not base64url');
  const b64 = s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4);
  const bin = atob(b64);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

const toB64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

const json = (bytes) => {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw fail('a part is not JSON');
  }
};

/**
 * Checks `statement` (the `statement` of `ServerClient.userPublicKey`):
 * signed by a key of `jwks` (a JWK set: `{ keys: [...] }`), issued by
 * `issuer`, about `user` at `epoch`, naming the digest of `publicKey`.
 * With `gallery` instead of `user` it checks a gallery's statement (of
 * `ServerClient.galleryPublicKey`), whose type is its own, so that neither
 * passes for the other. Resolves to the statement's claims; rejects with an
 * Error named `KeyStatementError` saying what does not match.
 */
export async function checkKeyStatement({ statement, jwks, issuer, user, gallery, epoch, publicKey }) {
  if (typeof statement !== 'string' || statement === '') throw fail('the matcher sent none');
  if (!(publicKey instanceof Uint8Array)) throw new TypeError('checkKeyStatement: publicKey must be a Uint8Array');
  const parts = statement.split('.');
  if (parts.length !== 3) throw fail('not a compact JWS');
  const header = json(fromB64url(parts[0]));
  const claims = json(fromB64url(parts[1]));
  if ((user === undefined) === (gallery === undefined)) throw new TypeError('checkKeyStatement: give either user or gallery');
  const typ = gallery === undefined ? TYP : GALLERY_TYP;
  if (header.alg !== 'EdDSA' || header.typ !== typ) throw fail(`not a ${gallery === undefined ? 'user' : 'gallery'}'s key statement (alg ${header.alg}, typ ${header.typ})`);
  const jwk = (jwks?.keys ?? []).find((k) => k.kid === header.kid && k.kty === 'OKP' && k.crv === 'Ed25519');
  if (!jwk) throw fail(`no key ${header.kid} in the JWK set`);
  const key = await crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, { name: 'Ed25519' }, false, ['verify']);
  const signed = new TextEncoder().encode(`${parts[0]}.${parts[1]}`);
  if (!(await crypto.subtle.verify({ name: 'Ed25519' }, key, fromB64url(parts[2]), signed))) throw fail('bad signature');
  if (claims.iss !== issuer) throw fail(`issued by ${claims.iss}, not ${issuer}`);
  const subject = gallery === undefined ? user : gallery;
  if (claims.sub !== subject) throw fail(`about ${claims.sub}, not ${subject}`);
  if (epoch !== null && epoch !== undefined && claims.epoch !== epoch) throw fail(`of epoch ${claims.epoch}, not ${epoch}`);
  const digest = toB64url(new Uint8Array(await crypto.subtle.digest('SHA-256', publicKey)));
  if (claims.pk_sha256 !== digest) throw fail('it names another public key');
  return claims;
}
