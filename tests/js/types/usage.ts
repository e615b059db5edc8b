// Compiled with `tsc --noEmit` by tests/js/types.test.mjs against the built
// package (resolved through its package.json "exports" and "types"), so the
// declarations shipped with the package are checked as a user's code sees them.
import {
  init,
  simdSupported,
  Params,
  Keys,
  PublicKeyEncryptor,
  Verifier,
  SecretKey,
  BatchEncoder,
  Evaluator,
  Ciphertext,
  BlindmatchWorker,
  ServerClient,
  type ServerClientOptions,
  type RequestOptions,
  type GalleryAdded,
  type GalleryInfo,
  type IdentifyMatch,
  type IdentifyResult,
  ServerError,
  frameKeys,
  type ServerParams,
  type VerifyResult,
  type Ticket,
  type Challenge,
  type UserPublicKey,
  type LoginResult,
  type GalleryCreated,
  type Identification,
  type KeyStatementClaims,
  checkKeyStatement,
  type Scores,
  type InitResult,
} from 'blindmatch';

async function main(): Promise<void> {
  const r: InitResult = await init({ simd: simdSupported() });
  const build: 'simd128' | 'baseline' = r.build;
  const params = Params.auth4096();
  const n: number = params.degree + params.plaintextModulus;
  const id: string = params.id;
  const keys = Keys.generate(params);
  const secret: Uint8Array = keys.exportSecretKey();
  const again: Keys = Keys.fromSecretKey(params, secret);
  const pk: Uint8Array = keys.publicKey();
  const rk: Uint8Array = keys.relinKey();
  const emb = new Float32Array(128);
  const tmpl: Uint8Array = keys.encryptTemplates([emb, emb], 128);
  const probe: Uint8Array = keys.encryptProbe(emb, 128);
  const reply: Uint8Array = new Verifier(params, 128).verify(tmpl, probe, pk, rk);
  const s: Scores = keys.decryptScores(reply);
  const s2: Scores = again.decryptScores(reply, 2, 128);
  const first: number = s.scores[0] + s.cosines[0] + s2.scores.length;
  const svc: Uint8Array = PublicKeyEncryptor.fromPublicKey(params, pk).encryptTemplates([emb], 128);
  const hiddenProbe: Uint8Array = PublicKeyEncryptor.fromPublicKey(params, pk).encryptProbe(emb, 128);
  const probeBundle: Uint8Array = PublicKeyEncryptor.fromPublicKey(params, pk).encryptProbeBundle(emb, 128);
  const templateBundle: Uint8Array = PublicKeyEncryptor.fromPublicKey(params, pk).encryptTemplateBundle([emb], 128);

  const sk = SecretKey.generate(params);
  const enc = new BatchEncoder(params);
  const ev = new Evaluator(params);
  const fused: Ciphertext = ev.multiplyRelin(sk.encrypt(enc.encode([1])), sk.encrypt(enc.encode([2])), sk.relinKey());
  fused.free();
  const ct: Ciphertext = ev.relinearize(ev.multiply(sk.encrypt(enc.encode([1, 2])), sk.publicKey().encrypt(enc.encode(new Int32Array([3])))), sk.relinKey());
  const slots: Int32Array = enc.decode(sk.decrypt(ct));
  const wide: BigInt64Array = enc.decodeBigInt64(sk.decrypt(ev.multiplyPlain(ct, enc.encode(new BigInt64Array([2n])))));
  const bytes: Uint8Array = Ciphertext.fromBytes(params, ct.toBytes()).toBytes();
  sk.free();
  keys.free();

  const w = await BlindmatchWorker.create();
  const h = await w.generate();
  const ws: Scores = await w.decryptScores(h, await w.encryptProbe(h, emb, 128));
  w.terminate();

  const server = new ServerClient('http://127.0.0.1:8080', { fetch });
  const sp: ServerParams = await server.params();
  await server.register('alice', pk, rk);
  await server.enroll('alice', tmpl, 2);
  const v: VerifyResult = await server.verify('alice', probe);
  const vs: Scores = again.decryptScores(v.reply, v.count);
  const removed: boolean = await server.deleteUser('alice');
  const framed: Uint8Array = frameKeys(pk, null);
  try {
    await server.verify('nobody', probe);
  } catch (e) {
    if (e instanceof ServerError) console.log(e.status + 1, e.code.length, v.serverMs['match']);
  }
  const opts: ServerClientOptions = {
    headers: async (path: string) => ({ authorization: `Bearer ${path.length}` }),
    timeoutMs: 5000,
  };
  const authed = new ServerClient('http://127.0.0.1:8080', opts);
  const ro: RequestOptions = { signal: AbortSignal.timeout(1000) };
  await authed.verify('alice', probe, ro);
  await authed.deleteUser('alice', { signal: new AbortController().signal });
  console.log(authed.timeoutMs);
  const spk: Uint8Array = await server.servicePublicKey();
  const added: GalleryAdded = await server.addGalleryTemplates(
    'staff',
    PublicKeyEncryptor.fromPublicKey(params, spk).encryptTemplates([emb], 128),
    1,
  );
  const found: IdentifyResult = await server.identify('staff', emb, 3);
  const best: IdentifyMatch | undefined = found.matches[0];
  const all: GalleryInfo[] = await server.galleries();
  await server.eraseGalleryTemplate('staff', added.firstIndex);
  const gone: boolean = await server.deleteGallery('staff');
  console.log(best?.cosine, all.length, gone);

  // Login mode: the backend with its API key, the page with a ticket, a
  // challenge and the decider's key statement.
  const backend = new ServerClient('http://127.0.0.1:8082', { apiKey: 'k' });
  const t: Ticket = await backend.issueTicket('carol', { rotate: false });
  const upk: UserPublicKey = await server.userPublicKey('carol');
  const claims: KeyStatementClaims = await checkKeyStatement({
    statement: upk.statement,
    jwks: { keys: [] },
    issuer: 'https://login.example',
    user: 'carol',
    epoch: upk.epoch,
    publicKey: upk.publicKey,
  });
  const wh = await w.fromPublicKey(upk.publicKey);
  await server.enroll('carol', await w.encryptTemplateBundle(wh, [emb], 128), 1, { ticket: t.ticket });
  const c: Challenge = await backend.challenge('carol', 'https://app.example');
  const lr: LoginResult = await server.login('carol', c.challenge, probe);
  const accepted: boolean = lr.outcome === 'accept';
  await server.deleteUser('carol', { verdict: lr.verdict });
  console.log(claims.epoch, accepted, c.expiresAt, t.epoch);

  // 1:N in login mode: a gallery under a key of its own, template and probe
  // bundles, the decider's signed identification.
  const gc: GalleryCreated = await backend.createGallery('staff');
  const gpk: UserPublicKey = await backend.galleryPublicKey('staff');
  await checkKeyStatement({
    statement: gpk.statement,
    jwks: { keys: [] },
    issuer: 'https://login.example',
    gallery: 'staff',
    epoch: gc.epoch,
    publicKey: gpk.publicKey,
  });
  const genc = PublicKeyEncryptor.fromPublicKey(params, gpk.publicKey);
  await backend.addGalleryTemplates('staff', genc.encryptTemplateBundle([emb], 128), 1);
  const idn: Identification = await backend.identifyEncrypted('staff', genc.encryptProbeBundle(emb, 128), {
    audience: 'https://app.example',
    nonce: 'n-1',
    topK: 3,
  });
  console.log(idn.identification.length);
  console.log(build, n, id, first, svc.length, hiddenProbe.length, probeBundle.length + templateBundle.length, slots[0], wide[0], bytes.length, ws.scores, sp.dimension, vs, removed, framed);
}

void main;
