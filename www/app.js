// The blindmatch demo login page. Keys, encryption and decryption run in a
// Web Worker (BlindmatchWorker from the package served at /pkg/); the server
// only ever receives public keys and ciphertexts. See www/README.md.
//
// Two modes. Served by the demo's relying party (examples/relying-party/
// server.mjs answers /rp/config): login mode, where the page encrypts under
// the user's public key from the matcher, the decider signs a verdict and the
// relying party sets a session only on a valid accept. Served by the matcher
// alone: the private mode, where this browser holds the secret key and
// decides by itself (which authenticates nobody to anyone else).
import { BlindmatchWorker, ServerClient, checkKeyStatement } from '/pkg/index.js';
import * as keystore from './keystore.js';
import { DEMO_IDENTITIES, capture, parseEmbeddings } from './embeddings.js';
import { Camera, FACE_THRESHOLD, FaceReader, faceProblem, takeFaces } from './camera.js';

const $ = (id) => document.getElementById(id);
const el = {
  form: $('form'), user: $('user'), identity: $('identity'), embedding: $('embedding'),
  captures: $('captures'), threshold: $('threshold'), register: $('register'), login: $('login'),
  progress: $('progress'), progressText: $('progress-text'), error: $('error'), engine: $('engine'),
  outcome: $('outcome'), summary: $('summary'), similarity: $('similarity'),
  shownThreshold: $('shown-threshold'), cosines: $('cosines'), users: $('users'),
  cameraBox: $('camera-box'), cameraStatus: $('camera-status'),
};

let worker; // BlindmatchWorker
let server; // GET /v1/params
const api = new ServerClient(); // this page's origin: the server that serves it
let busy = false;
let rp = null; // the relying party's /rp/config in login mode, else null
let camera = null; // Camera, once the preview runs
let faces = null; // FaceReader, once the model is loaded
let faceLoad = null; // how long loading the face model took
let faceServed = false; // the server serves the face model (`serve --face`)

/** A call to the relying party's own routes; its JSON, or an Error with its code. */
async function rpCall(path, body) {
  const res = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const v = await res.json().catch(() => ({}));
  if (!res.ok) throw Object.assign(new Error(v.error ?? `${path}: ${res.status}`), { code: v.code ?? '', status: res.status });
  return v;
}

// ---------- small helpers ----------

const NAME_RE = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

function userName() {
  const name = el.user.value.trim();
  if (!NAME_RE.test(name)) {
    el.user.setAttribute('aria-invalid', 'true');
    el.user.focus();
    throw new Error('the user name must be 1–64 characters of A–Z a–z 0–9 . _ - and must not start with a dot');
  }
  el.user.removeAttribute('aria-invalid');
  return name;
}

function source() {
  return el.form.elements.source.value; // 'camera' | 'demo' | 'json'
}

/**
 * `count` samples from the chosen source: camera frames (their model time
 * added to `rows`), simulated captures, or the pasted ones.
 */
async function samples(count, rows) {
  const dim = server.dimension;
  if (source() === 'camera') {
    if (faces.dimension !== dim) throw new Error(`the face model gives ${faces.dimension} numbers; the server expects ${dim}`);
    setBusy(count > 1 ? `Reading ${count} frames with a face…` : 'Reading a frame with a face…');
    const t0 = performance.now();
    const got = await takeFaces(camera, faces, count, {
      onFrame: (have) => { if (count > 1) setBusy(`Reading frames with a face: ${have} of ${count}…`); },
    });
    const model = got.ms.reduce((a, b) => a + b, 0);
    rows.push({ step: `Camera: ${got.frames} frame${got.frames > 1 ? 's' : ''} for ${count} face${count > 1 ? 's' : ''}`, ms: performance.now() - t0 });
    rows.push({ step: `… of which face model (${faceLoad.where}, ${fmtMs(model / got.frames)} ms a frame)`, ms: model, sub: true });
    rows.push({ step: `Face model load, once (code ${fmtMs(faceLoad.codeMs)} ms, weights)`, ms: faceLoad.codeMs + faceLoad.weightsMs, sub: true });
    // For a page that wants the descriptors too (and for the tests): they
    // never leave this page unencrypted.
    document.dispatchEvent(new CustomEvent('blindmatch:faces', { detail: { descriptors: got.list.map((d) => Array.from(d)) } }));
    const note = got.notes.length ? ` (${got.notes.join('; ')})` : '';
    el.cameraStatus.textContent = `Took ${count} face${count > 1 ? 's' : ''} from ${got.frames} frame${got.frames > 1 ? 's' : ''}${note}.`;
    return { list: got.list, label: `the camera${note}` };
  }
  if (source() === 'json') {
    const list = parseEmbeddings(el.embedding.value, dim);
    return { list: list.slice(0, count), label: `pasted embedding${list.length > 1 ? 's' : ''}` };
  }
  const who = el.identity.value;
  return { list: Array.from({ length: count }, () => capture(who, dim, faceServed ? 'face-api' : 'unit')), label: `demo identity ${who}` };
}

/** The number of captures to enroll, checked against one template's room. */
function captureCount() {
  const count = Number(el.captures.value);
  const max = server.templatesPerCiphertext;
  if (!Number.isInteger(count) || count < 1 || count > max) throw new Error(`captures to enroll: 1 to ${max}`);
  return count;
}

function threshold() {
  const t = Number(el.threshold.value);
  if (!Number.isFinite(t) || t < -1 || t > 1) throw new Error('the threshold must be a number between -1 and 1');
  return t;
}

async function timed(rows, step, fn, bytes) {
  const t0 = performance.now();
  const out = await fn();
  rows.push({ step, ms: performance.now() - t0, bytes: typeof bytes === 'function' ? bytes(out) : bytes });
  return out;
}

const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));
const fmtBytes = (n) => (n == null ? '' : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);

function showTimings(tableId, rows) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren();
  const add = (cells, cls) => {
    const tr = body.insertRow();
    if (cls) tr.className = cls;
    cells.forEach((c, i) => {
      const cell = i === 0 ? document.createElement('th') : document.createElement('td');
      if (i === 0) cell.scope = 'row';
      cell.textContent = c;
      tr.append(cell);
    });
  };
  for (const r of rows) add([r.step, fmtMs(r.ms), fmtBytes(r.bytes)], r.sub ? 'sub' : '');
  add(['Total', fmtMs(rows.filter((r) => !r.sub).reduce((s, r) => s + r.ms, 0)), ''], 'total');
}

function setBusy(text) {
  busy = !!text;
  el.register.disabled = el.login.disabled = busy || !worker;
  el.form.setAttribute('aria-busy', String(busy));
  el.progress.hidden = !busy;
  el.progressText.textContent = text || '';
}

function showError(e) {
  console.error(e);
  el.error.textContent = e?.message ?? String(e);
  el.error.hidden = false;
}

function clearError() {
  el.error.hidden = true;
  el.error.textContent = '';
}

/** Runs one user action with progress and error display. */
async function run(action) {
  if (busy) return;
  clearError();
  try {
    await action();
  } catch (e) {
    showError(e);
  } finally {
    setBusy(null);
  }
}

// ---------- register ----------

async function register() {
  if (rp) return registerWithTicket();
  const name = userName();
  const rows = [];
  const { list, label } = await samples(captureCount(), rows);
  let handle;
  let uploaded = false;
  try {
    setBusy('Generating keys in the Web Worker…');
    const keys = await timed(rows, 'Key generation (secret, public, relin)', async () => {
      handle = await worker.generate();
      return { pk: await worker.publicKey(handle), rk: await worker.relinKey(handle) };
    }, (k) => k.pk.length + k.rk.length);

    setBusy(`Encrypting ${list.length} capture${list.length > 1 ? 's' : ''} as one template…`);
    const template = await timed(rows, `Encrypt ${list.length} sample${list.length > 1 ? 's' : ''}`,
      () => worker.encryptTemplates(handle, list, server.dimension), (t) => t.length);

    setBusy('Uploading the public keys and the encrypted template…');
    await timed(rows, 'Upload keys + template', async () => {
      await api.register(name, keys.pk, keys.rk);
      uploaded = true;
      await api.enroll(name, template, list.length);
    }, keys.pk.length + keys.rk.length + 16 + template.length);

    setBusy('Storing the wrapped secret key in IndexedDB…');
    await timed(rows, 'Wrap + store secret key', async () => {
      const secret = await worker.exportSecretKey(handle);
      try {
        await keystore.saveSecretKey(name, server.id, secret, { enrolled: `${label}, ${list.length} sample${list.length > 1 ? 's' : ''}` });
      } finally {
        // Transferred to the worker (detached, length 0) unless the call threw first.
        if (secret.buffer.byteLength > 0) secret.fill(0);
      }
    });
    uploaded = false; // complete: nothing to roll back
  } finally {
    if (handle !== undefined) await worker.free(handle).catch(() => {});
    // A half-done registration (keys on the server, no template or no local
    // key) would block the name: remove it again.
    if (uploaded) await api.deleteUser(name).catch(() => {});
  }
  showTimings('timings-register', rows);
  setOutcome('registered', `Registered “${name}” (${label}, ${list.length} sample${list.length > 1 ? 's' : ''}). Now log in.`);
  await refreshUsers();
}

// ---------- log in ----------

async function login() {
  if (rp) return loginWithVerdict();
  const name = userName();
  const t = threshold();
  const rows = [];
  const { list, label } = await samples(1, rows);
  let handle;
  let result;
  try {
    setBusy('Unlocking your secret key…');
    handle = await timed(rows, 'Unwrap secret key (IndexedDB)', async () => {
      const secret = await keystore.loadSecretKey(name, server.id);
      try {
        return await worker.fromSecretKey(secret);
      } finally {
        // Transferred to the worker (detached, length 0) unless the call threw first.
        if (secret.buffer.byteLength > 0) secret.fill(0);
      }
    });

    setBusy('Encrypting a fresh capture…');
    const probe = await timed(rows, 'Encrypt probe', () => worker.encryptProbe(handle, list[0], server.dimension), (p) => p.length);

    setBusy('Waiting for the server to match under encryption…');
    const { reply, count, serverMs } = await timed(rows, 'Verify round trip', () => api.verify(name, probe), (r) => r.reply.length);
    if (serverMs.match !== undefined) {
      rows.push({ step: '… of which server matching', ms: (serverMs.parse ?? 0) + serverMs.match, sub: true });
    }

    setBusy('Decrypting the reply…');
    result = await timed(rows, 'Decrypt scores', () => worker.decryptScores(handle, reply, count, server.dimension));
  } finally {
    if (handle !== undefined) await worker.free(handle).catch(() => {});
  }
  const cos = Array.from(result.cosines);
  const mean = cos.reduce((s, c) => s + c, 0) / cos.length;
  const accepted = mean >= t;
  showTimings('timings-login', rows);
  setOutcome(accepted ? 'accepted' : 'rejected',
    `${accepted ? 'Accepted' : 'Rejected'}: “${name}” with ${label} — similarity ${mean.toFixed(3)} ${accepted ? '≥' : '<'} threshold ${t}`);
  el.outcome.dataset.cosine = String(mean);
  el.similarity.textContent = mean.toFixed(3);
  el.shownThreshold.textContent = String(t);
  el.cosines.replaceChildren(...cos.map((c) => {
    const li = document.createElement('li');
    const m = document.createElement('meter');
    Object.assign(m, { min: -1, max: 1, low: t, optimum: 1, value: c });
    m.setAttribute('aria-label', `capture cosine ${c.toFixed(3)}`);
    const span = document.createElement('span');
    span.textContent = c.toFixed(3);
    li.append(m, span);
    return li;
  }));
  el.summary.hidden = false;
}

// ---------- login mode: the relying party, the matcher and the decider ----------

/**
 * A worker handle that encrypts under `user`'s public key from the matcher,
 * once the decider's signed statement of that key checks against the JWK
 * set this page's origin serves (a matcher serving a key of its own would
 * read what the page encrypts).
 */
async function encryptorFor(rows, name) {
  return timed(rows, 'Fetch and check public key', async () => {
    const [{ publicKey, epoch, statement }, jwks] = await Promise.all([
      api.userPublicKey(name),
      fetch('/.well-known/jwks.json', { cache: 'no-store' }).then((r) => r.json()),
    ]);
    await checkKeyStatement({ statement, jwks, issuer: rp.issuer, user: name, epoch, publicKey });
    return worker.fromPublicKey(publicKey);
  });
}

async function registerWithTicket() {
  const name = userName();
  const rows = [];
  const { list, label } = await samples(captureCount(), rows);
  let handle;
  try {
    setBusy('Asking the relying party for an enrollment ticket…');
    const { ticket } = await timed(rows, 'Enrollment ticket (relying party)', () => rpCall('/rp/register', { user: name }));
    handle = await encryptorFor(rows, name);
    setBusy(`Encrypting ${list.length} capture${list.length > 1 ? 's' : ''} under your public key…`);
    const template = await timed(rows, `Encrypt ${list.length} sample${list.length > 1 ? 's' : ''}`,
      () => worker.encryptTemplateBundle(handle, list, server.dimension), (t) => t.length);
    setBusy('Enrolling the encrypted template with the ticket (the decider checks it is a valid embedding)…');
    await timed(rows, 'Upload template', () => api.enroll(name, template, list.length, { ticket }), template.length);
  } finally {
    if (handle !== undefined) await worker.free(handle).catch(() => {});
  }
  showTimings('timings-register', rows);
  setOutcome('registered', `Registered “${name}” (${label}, ${list.length} sample${list.length > 1 ? 's' : ''}). Now log in.`);
}

async function loginWithVerdict() {
  const name = userName();
  const rows = [];
  const { list, label } = await samples(1, rows);
  let handle;
  let verdict;
  try {
    setBusy('Asking the relying party for a challenge…');
    const { challenge } = await timed(rows, 'Challenge (relying party)', () => rpCall('/rp/challenge', { user: name }));
    handle = await encryptorFor(rows, name);
    setBusy('Encrypting a fresh capture…');
    const probe = await timed(rows, 'Encrypt probe and its one-hot encoding', () => worker.encryptProbeBundle(handle, list[0], server.dimension), (p) => p.length);
    setBusy('Matching and checking under encryption; the decider signs the verdict…');
    verdict = await timed(rows, 'Login (matcher + decider)', () => api.login(name, challenge, probe));
  } finally {
    if (handle !== undefined) await worker.free(handle).catch(() => {});
  }
  setBusy('The relying party verifies the verdict…');
  let session = null;
  let refusal = null;
  await timed(rows, 'Verify verdict (relying party)', async () => {
    try {
      session = await rpCall('/rp/session', { user: name, verdict: verdict.verdict });
    } catch (e) {
      if (e.status !== 401) throw e;
      refusal = e;
    }
  });
  showTimings('timings-login', rows);
  el.outcome.dataset.verdict = verdict.outcome;
  if (session) {
    setOutcome('accepted', `Accepted: logged in as “${session.user}” with ${label}. The relying party verified the decider's signed verdict and set a session.`);
  } else {
    setOutcome('rejected', `Rejected: “${name}” with ${label}. ${refusal.message} (${refusal.code}); the verdict was a signed ${verdict.outcome}.`);
  }
}

function setOutcome(kind, text) {
  el.outcome.dataset.outcome = kind;
  delete el.outcome.dataset.cosine;
  el.outcome.textContent = text;
  if (kind !== 'accepted' && kind !== 'rejected') el.summary.hidden = true;
}

// ---------- keys in this browser ----------

async function refreshUsers() {
  const users = await keystore.listUsers();
  if (users.length === 0) {
    const li = document.createElement('li');
    li.className = 'muted';
    li.textContent = 'none';
    el.users.replaceChildren(li);
    return;
  }
  el.users.replaceChildren(...users.map((u) => {
    const li = document.createElement('li');
    const name = document.createElement('button');
    name.type = 'button';
    name.className = 'link';
    name.textContent = u.user;
    name.title = 'Use this name';
    name.addEventListener('click', () => { el.user.value = u.user; el.user.focus(); });
    const info = document.createElement('span');
    info.className = 'muted';
    info.textContent = ` ${u.enrolled ?? ''} · ${new Date(u.created).toLocaleString()} `;
    const del = document.createElement('button');
    del.type = 'button';
    del.className = 'small';
    del.textContent = 'Delete';
    del.setAttribute('aria-label', `Delete ${u.user}`);
    del.addEventListener('click', () => run(async () => {
      setBusy(`Deleting “${u.user}”…`);
      await api.deleteUser(u.user);
      await keystore.deleteSecretKey(u.user);
      await refreshUsers();
    }));
    li.append(name, info, del);
    return li;
  }));
}

// ---------- start ----------

function start() {
  el.identity.replaceChildren(...DEMO_IDENTITIES.map((n) => new Option(n, n)));
  // Choosing in a sub-field selects its source.
  el.identity.addEventListener('change', () => { $('source-demo').checked = true; });
  el.embedding.addEventListener('input', () => { $('source-json').checked = true; });
  el.form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const action = ev.submitter?.value === 'login' ? login : register;
    run(action);
  });

  run(async () => {
    setBusy('Loading the WebAssembly module in a Web Worker…');
    const [p, w, config] = await Promise.all([api.params(), BlindmatchWorker.create(),
      rpCall('/rp/config').catch(() => null)]);
    server = p;
    worker = w;
    rp = config;
    document.body.dataset.mode = rp ? 'login' : 'private';
    $('threshold-field').hidden = !!rp;
    $('keys-card').hidden = !!rp;
    el.engine.textContent = `Ready: parameters ${server.name} (n = ${server.degree}, ${server.dimension}-dimensional ` +
      `embeddings, ${server.security.split(' (')[0]} security); WebAssembly ${worker.info.build} in a Web Worker. ` +
      (rp ? `Login mode: the decider decides, ${rp.audience} verifies its signed verdict.`
        : 'Private mode: this browser holds the key and decides.');
    el.engine.dataset.ready = 'true';
    if (!rp) await refreshUsers();
  }).then(() => {
    if (!worker) el.engine.textContent = 'Not ready: see the error below.';
    else startCamera();
  });
}

/**
 * While the page is idle, reads a frame every two seconds and shows what the
 * camera sees (boxes, and what to change), so that a person knows before
 * pressing a button whether their face will be taken.
 */
async function watchCamera() {
  for (;;) {
    await new Promise((r) => setTimeout(r, 2000));
    if (busy || document.hidden || source() !== 'camera') continue;
    let found;
    try {
      ({ faces: found } = await faces.describe(camera.video));
    } catch (e) {
      el.cameraStatus.textContent = `The face model stopped: ${e.message}`;
      return;
    }
    if (busy) continue; // a registration or login has the preview now
    camera.draw(found);
    const problem = faceProblem(found, camera.video.videoHeight);
    const others = found.length > 1 ? `; ${found.length} faces in view, the largest counts` : '';
    el.cameraStatus.textContent = problem ? `${problem.message}.` : `Face found (detector score ${found[0].score.toFixed(2)})${others}.`;
  }
}

/**
 * The camera and the face model, when the server serves the model (`serve
 * --face`) and the browser has a camera; otherwise the demo identities and
 * the pasted embeddings stay, with a word on why. Runs beside the form.
 */
async function startCamera() {
  const status = (text) => { el.cameraStatus.textContent = text; };
  el.cameraBox.hidden = false;
  if (!(await fetch('/face/VERSION', { method: 'HEAD' }).then((r) => r.ok, () => false))) {
    el.cameraBox.hidden = true;
    return; // no face model served: the simulated identities only
  }
  // The face model's threshold (docs/ACCURACY.md); the demo identities are
  // then simulated in its geometry, so one policy serves both.
  faceServed = true;
  el.threshold.value = String(FACE_THRESHOLD);
  el.form.dataset.faces = 'served';
  const cam = new Camera($('camera'), $('camera-overlay'));
  try {
    status('Starting the camera…');
    await cam.start();
    status('Loading the face model (about 13 MB, once)…');
    const { reader, load } = await FaceReader.create();
    camera = cam;
    faces = reader;
    faceLoad = load;
    $('source-camera').disabled = false;
    $('source-camera').checked = true;
    status(`Face model ready in ${fmtMs(load.codeMs + load.weightsMs)} ms (face-api ${load.version}, tfjs ${load.backend} in the ${load.where}). Look into the camera.`);
    el.cameraBox.dataset.ready = 'true';
    watchCamera();
  } catch (e) {
    cam.stop();
    el.cameraBox.dataset.ready = 'false';
    el.cameraBox.dataset.code = e.code ?? '';
    status(`No camera login: ${e.message}. The demo identities and pasted embeddings still work.`);
  }
}

start();
