// The node-seal comparison, shared by the Node bench (bench.mjs) and the page
// bench (page.html): no Node or DOM APIs here, only WebAssembly, performance
// and crypto, so the same code times both engines.
//
// Contestants, all at n = 4096, t = 65537 (batching), 109-bit Q·P:
//   simd  blindmatch simd128 build (pkg/blindmatch_bg.wasm), general BFV API
//   base  blindmatch baseline build (pkg/blindmatch_baseline_bg.wasm), a
//         second instance of the same glue module
//   seal  node-seal 7 (Microsoft SEAL 4.1.2 in wasm), BFV,
//         CoeffModulus.BFVDefault(4096) = 36+36+37 bits, plain modulus 65537
//
// Every op is checked for correctness on all three before anything is timed
// (decrypted slots equal the expected values mod t). Timing: per op, each
// contestant is warmed up (the engine compiles wasm with its baseline
// compiler first and tiers hot functions up to the optimizing one in the
// background), then rounds of back-to-back batches (batch >= batchMs, so the
// timer's resolution does not matter) interleave the three contestants in
// rotating order, so that machine load hits all of them alike; the figure is
// the median per-call time over the rounds. Outputs are freed (ours) or
// reused / deleted (SEAL) inside the timed calls, as an application would.

const N = 4096;
const T = 65537;

export const OPS = [
  'keygen',
  'keygen_secret',
  'keygen_public',
  'keygen_relin',
  'encode',
  'encrypt_secret',
  'encrypt_public',
  'decrypt',
  'decode',
  'add',
  'multiply',
  'relinearize',
  'multiply_relin',
  'multiply_plain',
];

export const CONFIG = {
  quick: { warmMs: 120, batchMs: 4, budgetMs: 600, minRounds: 5, maxRounds: 60, globalWarmMs: 300 },
  full: { warmMs: 500, batchMs: 8, budgetMs: 4000, minRounds: 15, maxRounds: 400, globalWarmMs: 1500 },
};

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

// Slot values in (-t/2, t/2], deterministic.
function slotValues(mult, add) {
  const v = new Int32Array(N);
  for (let i = 0; i < N; i++) v[i] = ((i * mult + add) % T) - 32768;
  return v;
}

const mod = (x) => ((x % T) + T) % T;

function expectSlots(what, got, want) {
  if (got.length !== want.length) throw new Error(`${what}: ${got.length} slots, expected ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    if (mod(Number(got[i])) !== mod(want[i])) {
      throw new Error(`${what}: slot ${i} is ${got[i]}, expected ${want[i]} (mod ${T})`);
    }
  }
}

function products(a, b) {
  const out = new Array(N);
  for (let i = 0; i < N; i++) out[i] = mod(mod(a[i]) * mod(b[i])); // < 2^33: exact in a double
  return out;
}

// ---------------------------------------------------------------- blindmatch

function oursContestant(bm, label) {
  const params = bm.Params.auth4096();
  if (params.degree !== N || params.plaintextModulus !== T || !params.batching) {
    throw new Error(`${label}: Params.auth4096 is not n=${N}, t=${T} with batching`);
  }
  const backend = new bm.NttPlan(N, params.ciphertextPrimes[0]);
  const info = {
    label,
    backend: backend.backend,
    params: `n=${params.degree} t=${params.plaintextModulus} q=[${Array.from(params.ciphertextPrimes)
      .map((q) => Math.log2(q).toFixed(1))
      .join(', ')}] bits + special ${Math.log2(params.specialPrime).toFixed(1)} bits, log2(QP)=${params.modulusBits}`,
  };
  backend.free();

  const encoder = new bm.BatchEncoder(params);
  const ev = new bm.Evaluator(params);
  const sk = bm.SecretKey.generate(params);
  const pk = sk.publicKey();
  const rk = sk.relinKey();
  const va = slotValues(7919, 13);
  const vb = slotValues(104729, 7);
  const pa = encoder.encode(va);
  const pb = encoder.encode(vb);
  const ca = sk.encrypt(pa); // seeded secret-key ciphertext
  const cb = pk.encrypt(pb); // public-key ciphertext
  const c3 = ev.multiply(ca, cb);

  const dec = (ct) => {
    const p = sk.decrypt(ct);
    const v = encoder.decode(p);
    p.free();
    return v;
  };
  const check = () => {
    expectSlots(`${label} encode/decode`, encoder.decode(pa), va);
    expectSlots(`${label} encrypt_secret/decrypt`, dec(ca), va);
    expectSlots(`${label} encrypt_public/decrypt`, dec(cb), vb);
    const ab = products(va, vb);
    expectSlots(`${label} multiply (size 3)/decrypt`, dec(c3), ab);
    const r = ev.relinearize(c3, rk);
    expectSlots(`${label} multiply+relinearize/decrypt`, dec(r), ab);
    const f = ev.multiplyRelin(ca, cb, rk);
    expectSlots(`${label} multiplyRelin/decrypt`, dec(f), ab);
    const [fb, rb] = [f.toBytes(), r.toBytes()];
    const same = fb.length === rb.length && fb.every((x, i) => x === rb[i]);
    if (!same) throw new Error(`${label}: multiplyRelin differs from multiply + relinearize`);
    f.free();
    r.free();
    const m = ev.multiplyPlain(ca, pb);
    expectSlots(`${label} multiply_plain/decrypt`, dec(m), ab);
    m.free();
    const s = ev.add(ca, cb);
    expectSlots(`${label} add/decrypt`, dec(s), Array.from(va, (x, i) => x + vb[i]));
    s.free();
    // Keys made in the timed loops must work too.
    const sk2 = bm.SecretKey.generate(params);
    const pk2 = sk2.publicKey();
    const rk2 = sk2.relinKey();
    const x = pk2.encrypt(pa);
    const y = sk2.encrypt(pb);
    const xy = ev.multiply(x, y);
    const xyr = ev.relinearize(xy, rk2);
    const p = sk2.decrypt(xyr);
    expectSlots(`${label} fresh keys: multiply+relinearize/decrypt`, encoder.decode(p), ab);
    for (const o of [p, xyr, xy, y, x, rk2, pk2, sk2]) o.free();
  };

  const ops = {
    keygen: () => {
      const s = bm.SecretKey.generate(params);
      s.publicKey().free();
      s.free();
    },
    keygen_secret: () => bm.SecretKey.generate(params).free(),
    keygen_public: () => sk.publicKey().free(),
    keygen_relin: () => sk.relinKey().free(),
    encode: () => encoder.encode(va).free(),
    encrypt_secret: () => sk.encrypt(pa).free(),
    encrypt_public: () => pk.encrypt(pa).free(),
    decrypt: () => sk.decrypt(ca).free(),
    decode: () => encoder.decode(pa),
    add: () => ev.add(ca, cb).free(),
    multiply: () => ev.multiply(ca, cb).free(),
    relinearize: () => ev.relinearize(c3, rk).free(),
    // The package's one call for the job (the same ciphertext as multiply,
    // then relinearize: checked above); SEAL's API has the two steps only.
    multiply_relin: () => ev.multiplyRelin(ca, cb, rk).free(),
    multiply_plain: () => ev.multiplyPlain(ca, pb).free(),
  };
  const free = () => {
    for (const o of [c3, cb, ca, pb, pa, rk, pk, sk, ev, encoder, params]) o.free();
  };
  return { label, info, check, ops, free };
}

// ------------------------------------------------------------------ node-seal

function sealContestant(seal) {
  const label = 'node-seal';
  const parms = new seal.EncryptionParameters(seal.SchemeType.bfv);
  parms.setPolyModulusDegree(N);
  const coeff = seal.CoeffModulus.BFVDefault(N, seal.SecLevelType.tc128);
  parms.setCoeffModulus(coeff);
  const plain = new seal.Modulus(BigInt(T));
  parms.setPlainModulus(plain);
  const ctx = new seal.SEALContext(parms, true, seal.SecLevelType.tc128);
  if (!ctx.parametersSet()) throw new Error('node-seal rejected the parameters');
  const q = ctx.firstContextData().qualifiers();
  if (!q.usingBatching || !q.usingNTT) throw new Error('node-seal: no batching/NTT for these parameters');
  const bits = ctx.keyContextData().totalCoeffModulusBitCount();
  const info = {
    label,
    params: `n=${N} t=${T} BFVDefault(${N}) ${ctx.keyContextData().parms().coeffModulus().size()} primes, log2(QP)=${bits}`,
  };

  const encoder = new seal.BatchEncoder(ctx);
  const kg = new seal.KeyGenerator(ctx);
  const sk = kg.secretKey();
  const pk = kg.createPublicKey();
  const rk = kg.createRelinKeys();
  const encryptor = new seal.Encryptor(ctx, pk, sk);
  const decryptor = new seal.Decryptor(ctx, sk);
  const ev = new seal.Evaluator(ctx);
  const va = slotValues(7919, 13);
  const vb = slotValues(104729, 7);
  const va64 = BigInt64Array.from(va, (x) => BigInt(x));
  const vb64 = BigInt64Array.from(vb, (x) => BigInt(x));
  const pa = new seal.Plaintext();
  const pb = new seal.Plaintext();
  encoder.encode(va64, pa);
  encoder.encode(vb64, pb);
  const ca = new seal.Ciphertext();
  const cb = new seal.Ciphertext();
  encryptor.encryptSymmetric(pa, ca);
  encryptor.encrypt(pb, cb);
  const c3 = new seal.Ciphertext();
  ev.multiply(ca, cb, c3);
  // Reused outputs.
  const ptOut = new seal.Plaintext();
  const ctOut = new seal.Ciphertext();

  const dec = (ct) => {
    const p = new seal.Plaintext();
    decryptor.decrypt(ct, p);
    const v = encoder.decodeBigInt64(p);
    p.delete();
    return v;
  };
  const check = () => {
    expectSlots(`${label} encode/decode`, encoder.decodeBigInt64(pa), va);
    expectSlots(`${label} encrypt_secret/decrypt`, dec(ca), va);
    expectSlots(`${label} encrypt_public/decrypt`, dec(cb), vb);
    const ab = products(va, vb);
    if (c3.size() !== 3) throw new Error(`${label}: multiply gave size ${c3.size()}`);
    expectSlots(`${label} multiply (size 3)/decrypt`, dec(c3), ab);
    const r = new seal.Ciphertext();
    ev.relinearize(c3, rk, r);
    if (r.size() !== 2) throw new Error(`${label}: relinearize gave size ${r.size()}`);
    expectSlots(`${label} multiply+relinearize/decrypt`, dec(r), ab);
    ev.multiplyPlain(ca, pb, r);
    expectSlots(`${label} multiply_plain/decrypt`, dec(r), ab);
    ev.add(ca, cb, r);
    expectSlots(`${label} add/decrypt`, dec(r), Array.from(va, (x, i) => x + vb[i]));
    r.delete();
    // Keys made in the timed loops must work too.
    const kg2 = new seal.KeyGenerator(ctx);
    const sk2 = kg2.secretKey();
    const pk2 = kg2.createPublicKey();
    const rk2 = kg2.createRelinKeys();
    const enc2 = new seal.Encryptor(ctx, pk2, sk2);
    const dec2 = new seal.Decryptor(ctx, sk2);
    const x = new seal.Ciphertext();
    const y = new seal.Ciphertext();
    enc2.encrypt(pa, x);
    enc2.encryptSymmetric(pb, y);
    ev.multiplyInplace(x, y);
    ev.relinearizeInplace(x, rk2);
    const p = new seal.Plaintext();
    dec2.decrypt(x, p);
    expectSlots(`${label} fresh keys: multiply+relinearize/decrypt`, encoder.decodeBigInt64(p), ab);
    for (const o of [p, y, x, dec2, enc2, rk2, pk2, sk2, kg2]) o.delete();
  };

  const ops = {
    keygen: () => {
      const k = new seal.KeyGenerator(ctx); // generates the secret key
      k.createPublicKey().delete();
      k.delete();
    },
    keygen_secret: () => new seal.KeyGenerator(ctx).delete(),
    keygen_public: () => kg.createPublicKey().delete(),
    keygen_relin: () => kg.createRelinKeys().delete(),
    encode: () => encoder.encode(va64, ptOut),
    encrypt_secret: () => encryptor.encryptSymmetric(pa, ctOut),
    encrypt_public: () => encryptor.encrypt(pa, ctOut),
    decrypt: () => decryptor.decrypt(ca, ptOut),
    decode: () => encoder.decodeBigInt64(pa),
    add: () => ev.add(ca, cb, ctOut),
    multiply: () => ev.multiply(ca, cb, ctOut),
    relinearize: () => ev.relinearize(c3, rk, ctOut),
    multiply_relin: () => {
      ev.multiply(ca, cb, ctOut);
      ev.relinearizeInplace(ctOut, rk);
    },
    multiply_plain: () => ev.multiplyPlain(ca, pb, ctOut),
  };
  const free = () => {
    for (const o of [ctOut, ptOut, c3, cb, ca, pb, pa, ev, decryptor, encryptor, rk, pk, sk, kg, encoder, ctx, plain, coeff, parms]) {
      o.delete();
    }
  };
  return { label, info, check, ops, free };
}

// -------------------------------------------------------------------- timing

function calls(fn, k) {
  for (let i = 0; i < k; i++) fn();
}

// Runs fn for about `ms`, at least `minCalls` times; returns the per-call
// estimate from the second half of the calls (after the first tier-up).
function warm(fn, ms, minCalls = 3) {
  const t0 = performance.now();
  let n = 0;
  let tHalf = t0;
  let nHalf = 0;
  while (n < minCalls || performance.now() - t0 < ms) {
    fn();
    n++;
    const now = performance.now();
    if (nHalf === 0 && now - t0 >= ms / 2 && n >= 2) {
      tHalf = now;
      nHalf = n;
    }
  }
  const t1 = performance.now();
  return nHalf && n > nHalf ? (t1 - tHalf) / (n - nHalf) : (t1 - t0) / n;
}

function measureOp(op, contestants, cfg, log) {
  const est = contestants.map((c) => warm(c.ops[op], cfg.warmMs));
  const inner = est.map((e) => Math.max(1, Math.round(cfg.batchMs / Math.max(e, 1e-4))));
  const samples = contestants.map(() => []);
  const t0 = performance.now();
  let round = 0;
  while (round < cfg.minRounds || (round < cfg.maxRounds && performance.now() - t0 < cfg.budgetMs)) {
    for (let j = 0; j < contestants.length; j++) {
      const k = (j + round) % contestants.length; // rotate the order
      const fn = contestants[k].ops[op];
      const s = performance.now();
      calls(fn, inner[k]);
      samples[k].push(((performance.now() - s) * 1000) / inner[k]);
    }
    round++;
  }
  const med = samples.map(median);
  log(
    `${op}: ` +
      contestants
        .map(
          (c, k) =>
            `${c.label} ${med[k].toFixed(2)} us (p10 ${quantile(samples[k], 0.1).toFixed(2)}, p90 ${quantile(samples[k], 0.9).toFixed(2)}, ${samples[k].length}x${inner[k]}, warm-up est ${(est[k] * 1000).toFixed(2)})`,
        )
        .join('; '),
  );
  return med;
}

/**
 * @param {object} libs  { simd: blindmatch module (simd128 instance),
 *                         base: blindmatch module (baseline instance),
 *                         seal: node-seal runtime }
 * @param {object} opts  { quick: boolean, log: (line) => void, ops?: string[] }
 * @returns {Promise<Array<{op, simd, base, seal}>>} microseconds per call
 */
export async function runComparison(libs, { quick = false, log = () => {}, ops = OPS } = {}) {
  const cfg = quick ? CONFIG.quick : CONFIG.full;
  const simd = oursContestant(libs.simd, 'ours-simd128');
  const base = oursContestant(libs.base, 'ours-baseline');
  const seal = sealContestant(libs.seal);
  if (simd.info.backend !== 'simd128') throw new Error(`the simd128 instance runs the ${simd.info.backend} NTT`);
  if (base.info.backend !== 'scalar') throw new Error(`the baseline instance runs the ${base.info.backend} NTT`);
  for (const c of [simd, base, seal]) log(`${c.label}: ${c.info.params}${c.info.backend ? `, NTT backend ${c.info.backend}` : ''}`);
  const all = [simd, base, seal];
  for (const c of all) {
    c.check();
    log(`${c.label}: correctness checks passed (encode/decode, encrypt sk/pk + decrypt, add, multiply, relinearize, multiply_plain, fresh keys)`);
  }
  // First calls (cold: baseline-compiled code) of a few ops, for the record.
  for (const op of ['keygen', 'encrypt_public', 'multiply_relin']) {
    log(
      `first-call (cold) ${op}: ` +
        all
          .map((c) => {
            const s = performance.now();
            c.ops[op]();
            return `${c.label} ${((performance.now() - s) * 1000).toFixed(0)} us`;
          })
          .join('; '),
    );
  }
  // Global warm-up: every op of every contestant, so that shared kernels
  // (NTT, sampling, key switching) tier up before any op is timed.
  for (const c of all) {
    const t0 = performance.now();
    while (performance.now() - t0 < cfg.globalWarmMs) for (const op of ops) c.ops[op]();
  }
  const rows = [];
  for (const op of ops) {
    const [s, b, p] = measureOp(op, all, cfg, log);
    rows.push({ op, simd: s, base: b, seal: p });
    await new Promise((r) => setTimeout(r, 0)); // let the event loop breathe (page bench)
  }
  for (const c of all) {
    c.check(); // still correct after thousands of calls
    c.free();
  }
  log('correctness re-checked after timing');
  return rows;
}

/**
 * The transform's time on this engine, for the report's table of floors: one
 * forward and one inverse NTT at n = 4096 over auth4096's first prime, on the
 * simd128 instance, each the median of rounds of back-to-back calls made
 * inside wasm (the JS <-> wasm copy of the buffer is paid once per round).
 * @returns {Array<{op, us}>} microseconds per transform
 */
export function measureTransforms(bm, { quick = false, log = () => {} } = {}) {
  const cfg = quick ? CONFIG.quick : CONFIG.full;
  const params = bm.Params.auth4096();
  const q = params.ciphertextPrimes[0];
  params.free();
  const plan = new bm.NttPlan(N, q);
  if (plan.backend !== 'simd128') throw new Error(`the transform runs the ${plan.backend} kernels`);
  const data = new Uint32Array(N);
  for (let i = 0; i < N; i++) data[i] = (i * 2654435761) % q;
  const rows = [];
  for (const op of ['forward', 'inverse']) {
    const one = () => plan[op](data, 1);
    const est = warm(one, cfg.warmMs);
    const batch = Math.max(1, Math.round(cfg.batchMs / Math.max(est, 1e-4)));
    const samples = [];
    const t0 = performance.now();
    while (samples.length < cfg.minRounds || (samples.length < cfg.maxRounds && performance.now() - t0 < cfg.budgetMs / 4)) {
      const s = performance.now();
      plan[op](data, batch);
      samples.push(((performance.now() - s) * 1000) / batch);
    }
    const us = median(samples);
    log(`transform ${op} (n=${N}, simd128): ${us.toFixed(2)} us (p10 ${quantile(samples, 0.1).toFixed(2)}, p90 ${quantile(samples, 0.9).toFixed(2)}, ${samples.length}x${batch})`);
    rows.push({ op: `ntt_${op}`, us });
  }
  plan.free();
  return rows;
}

/** TSV lines `<prefix>\top\tus\t-` for measureTransforms' rows. */
export function formatTransformRows(rows, prefix) {
  return rows.map((r) => [prefix, r.op, r.us.toFixed(3), '-'].join('\t'));
}

/** TSV lines: `<prefix>\top\tours_simd_us\tseal_us` and `<buildsPrefix>\top\tsimd_us\tbaseline_us`. */
export function formatRows(rows, prefix, buildsPrefix) {
  const f = (x) => x.toFixed(3);
  return [
    ...rows.map((r) => [prefix, r.op, f(r.simd), f(r.seal)].join('\t')),
    ...rows.map((r) => [buildsPrefix, r.op, f(r.simd), f(r.base)].join('\t')),
  ];
}

/** Human-readable ratio summary lines (for stderr). */
export function ratioNotes(rows, what) {
  return rows.map(
    (r) =>
      `${what} ${r.op}: node-seal/ours-simd128 = ${(r.seal / r.simd).toFixed(2)}x, baseline/simd128 = ${(r.base / r.simd).toFixed(2)}x`,
  );
}
