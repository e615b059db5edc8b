// Accuracy on real descriptors (docs/ACCURACY.md, "A real face model"): the
// 22 faces of face-api's sample photos, each read from its photo and from
// camera frames at several scales, shifts and brightnesses (tests/js/
// faces.mjs), by the demo's face model in headless Chromium. Genuine pairs:
// a face's frame against its photo; impostor pairs: against every other
// face's photo. The quantized cosine is what blindmatch really computes: the
// 22 photo descriptors are enrolled as one encrypted template on a real
// server (private mode) and every frame's descriptor is a probe, so each
// reply carries its cosine against all 22 faces. Prints the figures
// ACCURACY.md quotes, and checks that the threshold the demo uses separates
// genuine from impostor pairs on these faces with a margin, and that
// quantizing moves no cosine by more than QUANT_TOLERANCE.
//
//   node --test tests/js/face-accuracy.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { browserSkip, openPage } from './chromium.mjs';
import { serverBinary, startServer, stopServer } from './server.mjs';
import { FACE_THRESHOLD, faceProblem } from '../../www/camera.js';
import { FACE_DIR, VARIANTS, cameraFrame, cosine, distance, faceSkip, openFaceTools, photoFaces } from './faces.mjs';

/**
 * The largest |quantized − float| cosine allowed: measured 0.030 on these
 * faces (face-api's descriptors sit in a narrow cone, every cosine above
 * 0.79, and rounding at scale 47 moves a cosine by up to 3 hundredths; no
 * component is clipped; docs/ACCURACY.md).
 */
const QUANT_TOLERANCE = 0.035;


test('real face descriptors: genuine and impostor cosines, float and quantized', { skip: browserSkip || faceSkip, timeout: 900_000 }, async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'blindmatch-faces-'));
  let server;
  let context;
  try {
    server = await startServer(serverBinary(), work, ['--face', FACE_DIR]);
    const opened = await openPage(join(work, 'profile'), server.url);
    context = opened.context;
    const { page, offsite } = opened;
    const load = await openFaceTools(page, server.url);
    t.diagnostic(`face model: ${JSON.stringify(load)}`);

    const faces = await photoFaces(page);
    assert.equal(faces.length, 22, `faces found in the six photos: ${faces.map((f) => f.id).join(' ')}`);

    // Every face's camera frames, read back through a JPEG as a camera gives them.
    // The page takes a frame's face only past its checks (www/camera.js:
    // faceProblem); frames it would refuse are counted, not matched.
    const frames = [];
    const refused = [];
    const several = []; // a neighbour's edge in the frame: the page takes the largest face
    for (const [i, face] of faces.entries()) {
      for (const [v, variant] of VARIANTS.entries()) {
        const { faces: read } = await cameraFrame(page, face, variant);
        if (read.length > 1) several.push(`${face.id} v${v}`);
        const problem = faceProblem(read, 480);
        if (problem) {
          refused.push(`${face.id} v${v} (${problem.code}${read.length ? `, score ${read[0].score.toFixed(2)}` : ''})`);
          continue;
        }
        frames.push({ face: i, variant: v, descriptor: read[0].descriptor, score: read[0].score, height: read[0].box.height });
      }
    }
    t.diagnostic(`photo detector scores: ${faces.map((f) => `${f.id} ${f.score.toFixed(2)}`).join(', ')}`);
    t.diagnostic(`frames with more than one face (the largest taken): ${several.length}: ${several.join(', ')}`);
    t.diagnostic(`frames refused by the page's checks: ${refused.length} of ${faces.length * VARIANTS.length}: ${refused.join('; ')}`);
    // Most frames are usable, and every face has some; a face the detector
    // barely sees (a profile) may lose a few. (Measured: 13 of 132 refused,
    // one of them at a score of 0.5996, so the count may move by one where
    // Chromium draws the frames a hair differently.)
    assert.ok(refused.length <= faces.length * VARIANTS.length * 0.2, `too many frames refused: ${refused.length}`);
    const without = faces.filter((_, i) => !frames.some((f) => f.face === i)).map((f) => f.id);
    assert.deepEqual(without, [], 'faces with no usable frame');

    // The quantized cosines: one template of the 22 photo descriptors, each frame a probe.
    const quantized = await page.evaluate(async ({ photos, probes }) => {
      const { init, Keys, Params, ServerClient } = await import('/pkg/index.js');
      await init();
      const keys = Keys.generate(Params.auth4096());
      const api = new ServerClient();
      await api.register('faces', keys.publicKey(), keys.relinKey());
      await api.enroll('faces', keys.encryptTemplates(photos.map((d) => Float32Array.from(d)), 128), photos.length);
      const out = [];
      for (const p of probes) {
        const { reply, count } = await api.verify('faces', keys.encryptProbe(Float32Array.from(p), 128));
        out.push(Array.from(keys.decryptScores(reply, count, 128).cosines));
      }
      return out;
    }, { photos: faces.map((f) => f.descriptor), probes: frames.map((f) => f.descriptor) });

    const genuine = { float: [], quant: [], dist: [] };
    const impostor = { float: [], quant: [], dist: [] };
    let quantErr = 0;
    frames.forEach((fr, k) => {
      faces.forEach((face, j) => {
        const set = j === fr.face ? genuine : impostor;
        const f = cosine(fr.descriptor, face.descriptor);
        const q = quantized[k][j];
        set.float.push(f);
        set.quant.push(q);
        set.dist.push(distance(fr.descriptor, face.descriptor));
        quantErr = Math.max(quantErr, Math.abs(q - f));
      });
    });
    // Photo against photo: the nearest other face of each face.
    const nearest = faces.map((a, i) => Math.min(...faces.filter((_, j) => j !== i).map((b) => distance(a.descriptor, b.descriptor))));
    const under = (xs, x) => xs.filter((v) => v < x).length;
    const over = (xs, x) => xs.filter((v) => v >= x).length;
    const min = (xs) => Math.min(...xs);
    const max = (xs) => Math.max(...xs);
    const f3 = (x) => x.toFixed(4);
    t.diagnostic(`faces ${faces.length}, frames ${frames.length}; pairs: genuine ${genuine.float.length}, impostor ${impostor.float.length}`);
    t.diagnostic(`frame face heights ${min(frames.map((f) => f.height)).toFixed(0)}-${max(frames.map((f) => f.height)).toFixed(0)} px, detector scores ${f3(min(frames.map((f) => f.score)))}-${f3(max(frames.map((f) => f.score)))}`);
    t.diagnostic(`euclidean: genuine ${f3(min(genuine.dist))}-${f3(max(genuine.dist))}; impostor from ${f3(min(impostor.dist))}; photos whose nearest other face is under 0.6: ${under(nearest, 0.6)} of ${faces.length}, under 0.4: ${under(nearest, 0.4)}`);
    t.diagnostic(`float cosine: genuine ${f3(min(genuine.float))}-${f3(max(genuine.float))}, impostor ${f3(min(impostor.float))}-${f3(max(impostor.float))}`);
    t.diagnostic(`quantized cosine: genuine ${f3(min(genuine.quant))}-${f3(max(genuine.quant))}, impostor ${f3(min(impostor.quant))}-${f3(max(impostor.quant))}`);
    t.diagnostic(`largest |quantized - float| cosine: ${quantErr.toFixed(5)}`);
    t.diagnostic(`at threshold ${FACE_THRESHOLD} (quantized): genuine rejected ${under(genuine.quant, FACE_THRESHOLD)} of ${genuine.quant.length}, impostors accepted ${over(impostor.quant, FACE_THRESHOLD)} of ${impostor.quant.length}; margins ${f3(min(genuine.quant) - FACE_THRESHOLD)} / ${f3(FACE_THRESHOLD - max(impostor.quant))}`);
    for (const [v, variant] of VARIANTS.entries()) {
      const g = frames.map((f, k) => (f.variant === v ? quantized[k][f.face] : null)).filter((x) => x !== null);
      t.diagnostic(`variant ${JSON.stringify(variant)}: genuine quantized cosine ${f3(min(g))}-${f3(max(g))}`);
    }

    assert.ok(quantErr <= QUANT_TOLERANCE, `quantizing moved a cosine by ${quantErr}`);
    // Measured: no error either way (margins 0.0038 and 0.0075). One of each
    // is allowed for a frame at the detector's score boundary that another
    // CPU's drawing takes or refuses; more means the threshold is wrong.
    assert.ok(under(genuine.quant, FACE_THRESHOLD) <= 1, 'genuine pairs under the threshold');
    assert.ok(over(impostor.quant, FACE_THRESHOLD) <= 1, 'impostor pairs at or over the threshold');
    assert.deepEqual(offsite, [], 'requests left 127.0.0.1');
  } finally {
    await context?.close().catch(() => {});
    if (server) await stopServer(server.proc);
    rmSync(work, { recursive: true, force: true });
  }
});
