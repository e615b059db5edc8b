// Face embeddings for the demo: no face model ships with blindmatch, so the
// page simulates one. Each demo identity is a fixed pseudo-random unit vector
// (seeded from its name); each "capture" is that centre plus noise of norm
// 1.45 in a random direction, normalized again, the synthetic population of
// docs/ACCURACY.md. Two captures of one identity then have a cosine of about
// 0.32, captures of different identities about 0 (spread ~0.09 at d = 128).
// Against a template of 5 captures the mean cosine is 0.32 ± 0.04 (genuine)
// and 0.00 ± 0.05 (impostor), so the page accepts at 0.18, the equal-error
// point (about 3 in 10,000 errors each way).
//
// To use a real model, replace `capture()` (see www/README.md): anything that
// returns a Float32Array of `dim` finite numbers works; blindmatch normalizes.

export const DEMO_IDENTITIES = ['Ada', 'Alan', 'Grace', 'Katherine', 'Edsger', 'Barbara'];

/** Relative noise norm of one capture (docs/ACCURACY.md, d = 128). */
export const NOISE = 1.45;

/** 32-bit FNV-1a hash of a string. */
function fnv1a(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random seed for a fresh capture (not reproducible on purpose). */
function freshSeed() {
  return crypto.getRandomValues(new Uint32Array(1))[0];
}

/** A vector of standard normal values (Box-Muller). */
function gaussian(rand, dim) {
  const v = new Float32Array(dim);
  for (let i = 0; i < dim; i += 2) {
    const u = 1 - rand(); // (0, 1]
    const r = Math.sqrt(-2 * Math.log(u));
    const th = 2 * Math.PI * rand();
    v[i] = r * Math.cos(th);
    if (i + 1 < dim) v[i + 1] = r * Math.sin(th);
  }
  return v;
}

function scaleTo(v, norm) {
  let s = 0;
  for (const x of v) s += x * x;
  const k = norm / Math.sqrt(s);
  for (let i = 0; i < v.length; i++) v[i] *= k;
  return v;
}

const seeded = (identity, dim) => gaussian(mulberry32(fnv1a(`blindmatch-demo/${identity}/${dim}`)), dim);

const centres = new Map();

/**
 * The fixed unit centre of a demo identity. The demo identities are made
 * exactly orthogonal (Gram-Schmidt in list order), so that impostor
 * similarities centre on 0 for every pair, as for unrelated faces.
 */
export function centre(identity, dim) {
  const key = `${identity}/${dim}`;
  if (!centres.has(key)) {
    const v = seeded(identity, dim);
    const before = DEMO_IDENTITIES.indexOf(identity);
    for (const other of DEMO_IDENTITIES.slice(0, before < 0 ? DEMO_IDENTITIES.length : before)) {
      const u = centre(other, dim);
      let d = 0;
      for (let i = 0; i < dim; i++) d += v[i] * u[i];
      for (let i = 0; i < dim; i++) v[i] -= d * u[i];
    }
    centres.set(key, scaleTo(v, 1));
  }
  return Float32Array.from(centres.get(key));
}

/**
 * Captures shaped like face-api's descriptors (docs/ACCURACY.md, "A real
 * face model"): every face near one common direction, so that even two
 * people's cosine is about 0.88 and one person's captures about 0.985; the
 * demo's threshold for that model (0.96) then sorts them as it sorts faces.
 */
const FACE_API_LIKE = { common: 1, centre: 0.345, noise: 0.13 };

/**
 * One simulated camera capture of a demo identity: a unit Float32Array.
 * `like` is 'unit' (the synthetic population: identities orthogonal,
 * impostors about 0) or 'face-api' (the geometry of the demo's face model).
 */
export function capture(identity, dim, like = 'unit') {
  const c = centre(identity, dim);
  if (like === 'face-api') {
    const common = seeded('common face', dim);
    const s = scaleTo(common, 1);
    const n = scaleTo(gaussian(mulberry32(freshSeed()), dim), FACE_API_LIKE.noise);
    for (let i = 0; i < dim; i++) c[i] = FACE_API_LIKE.common * s[i] + FACE_API_LIKE.centre * c[i] + n[i];
    return scaleTo(c, 1);
  }
  const n = scaleTo(gaussian(mulberry32(freshSeed()), dim), NOISE);
  for (let i = 0; i < dim; i++) c[i] += n[i];
  return scaleTo(c, 1);
}

/**
 * Parses a pasted embedding: a JSON array of `dim` numbers, an array of such
 * arrays (several samples), or `{"embedding": [...]}` / `{"embeddings": [[...], ...]}`.
 * Returns an array of Float32Array; throws an Error that says what is wrong.
 */
export function parseEmbeddings(text, dim) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`the pasted embedding is not valid JSON (${e.message})`);
  }
  if (v && !Array.isArray(v) && typeof v === 'object') v = v.embeddings ?? v.embedding;
  if (!Array.isArray(v) || v.length === 0) {
    throw new Error('paste a JSON array of numbers, or an array of such arrays');
  }
  const samples = Array.isArray(v[0]) ? v : [v];
  return samples.map((s, k) => {
    const which = samples.length > 1 ? `sample ${k + 1}` : 'the embedding';
    if (!Array.isArray(s)) throw new Error(`${which} is not an array`);
    if (s.length !== dim) throw new Error(`${which} has ${s.length} numbers; the server expects ${dim}`);
    const bad = s.findIndex((x) => typeof x !== 'number' || !Number.isFinite(x));
    if (bad >= 0) throw new Error(`${which}: component ${bad} is not a finite number`);
    if (s.every((x) => x === 0)) throw new Error(`${which} is all zeros`);
    return Float32Array.from(s);
  });
}
