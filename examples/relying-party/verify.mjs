// A relying party's check of a blindmatch verdict, with the `jose` library:
// the signature against the decider's JWK set, the issuer, the audience (this
// relying party), the expiry, the login challenge it answers, and finally the
// outcome. Only a verdict that passes every check and says "accept" logs the
// user in.
//
//   node verify.mjs --jwks jwks.json --iss ISSUER --aud AUDIENCE --nonce CHALLENGE TOKEN
//
// Prints {"ok":true,"sub":...,"outcome":...} for a valid verdict (exit 0 for
// accept, 2 for a signed reject) or {"ok":false,"code":...} (exit 1).
//
// With `--kind identification` it checks a 1:N identification instead (its
// header `typ` must be blindmatch-identify+jwt, so neither kind passes for
// the other) and prints {"ok":true,"sub":GALLERY,"matches":[...]} (exit 0).
import { readFileSync } from "node:fs";
import { createLocalJWKSet, jwtVerify } from "jose";

/** Verifies `token`; resolves to the claims of a valid verdict, or throws. */
export async function checkVerdict(token, { jwks, issuer, audience, nonce }) {
  const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), {
    issuer,
    audience,
    algorithms: ["EdDSA"],
    requiredClaims: ["sub", "iat", "exp", "nonce", "outcome"],
  });
  if (payload.nonce !== nonce) {
    const e = new Error("the verdict answers another challenge");
    e.code = "ERR_NONCE_MISMATCH";
    throw e;
  }
  return payload;
}

/** Verifies an identification; resolves to its claims (`matches`: the
 * template indices at or above the decider's threshold, best first). */
export async function checkIdentification(token, { jwks, issuer, audience, nonce }) {
  const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), {
    issuer,
    audience,
    algorithms: ["EdDSA"],
    typ: "blindmatch-identify+jwt",
    requiredClaims: ["sub", "iat", "exp", "nonce", "matches"],
  });
  if (payload.nonce !== nonce) {
    const e = new Error("the identification answers another nonce");
    e.code = "ERR_NONCE_MISMATCH";
    throw e;
  }
  return payload;
}

function args(argv) {
  const out = { token: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) out[a.slice(2)] = argv[++i];
    else out.token = a;
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const a = args(process.argv.slice(2));
  const opts = {
    jwks: JSON.parse(readFileSync(a.jwks, "utf8")),
    issuer: a.iss,
    audience: a.aud,
    nonce: a.nonce,
  };
  if (a.kind === "identification") {
    try {
      const claims = await checkIdentification(a.token, opts);
      console.log(JSON.stringify({ ok: true, sub: claims.sub, matches: claims.matches }));
      process.exit(0);
    } catch (e) {
      console.log(JSON.stringify({ ok: false, code: e.code ?? "ERR_UNKNOWN", error: e.message }));
      process.exit(1);
    }
  }
  try {
    const claims = await checkVerdict(a.token, opts);
    console.log(JSON.stringify({ ok: true, sub: claims.sub, outcome: claims.outcome }));
    process.exit(claims.outcome === "accept" ? 0 : 2);
  } catch (e) {
    console.log(JSON.stringify({ ok: false, code: e.code ?? "ERR_UNKNOWN", error: e.message }));
    process.exit(1);
  }
}
