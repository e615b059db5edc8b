// The demo page's checks on a camera frame's faces (www/camera.js), on the
// boxes and scores the face model reports: which frames are taken, which are
// refused and with what message. tests/js/face-login.test.mjs runs the same
// code against Chromium's fake camera and the real model.
//
//   node --test tests/js/camera.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { MIN_FACE_SCORE, MIN_FACE_SHARE, faceProblem, takeFaces } from '../../www/camera.js';

const face = (height, score = 0.99, x = 100) => ({ box: { x, y: 50, width: height * 0.8, height }, score });

test('a frame is refused for no face, a small face or a low score', () => {
  assert.equal(faceProblem([], 480).code, 'no_face');
  assert.equal(faceProblem([face(MIN_FACE_SHARE * 480 - 1)], 480).code, 'face_too_small');
  assert.match(faceProblem([face(60)], 480).message, /too small \(60 px high\): come closer/);
  assert.equal(faceProblem([face(200, MIN_FACE_SCORE - 0.01)], 480).code, 'face_unclear');
  assert.match(faceProblem([face(200, 0.41)], 480).message, /score 0\.41\): more light/);
  assert.equal(faceProblem([face(MIN_FACE_SHARE * 480)], 480), null);
  assert.equal(faceProblem([face(200, MIN_FACE_SCORE)], 480), null);
  // Only the largest face (first) counts.
  assert.equal(faceProblem([face(200), face(40, 0.3)], 480), null);
});

/** A camera and a reader that play back `frames` (lists of faces). */
function playback(frames) {
  let k = 0;
  const drawn = [];
  const camera = { video: { videoHeight: 480 }, draw: (f) => drawn.push(f.length) };
  const reader = {
    async describe() {
      const faces = frames[Math.min(k++, frames.length - 1)];
      return { faces, descriptor: faces.length ? Float32Array.of(k) : null, ms: 1 };
    },
  };
  return { camera, reader, drawn, read: () => k };
}

test('samples are taken from usable frames only, the largest face of several with a note', async () => {
  const p = playback([[], [face(50)], [face(200), face(100)], [face(180)]]);
  const got = await takeFaces(p.camera, p.reader, 2, { gapMs: 0 });
  assert.equal(got.list.length, 2);
  assert.deepEqual(got.list.map((d) => d[0]), [3, 4], 'the third and fourth frames');
  assert.equal(got.frames, 4);
  assert.deepEqual(got.notes, ['2 faces in the frame: took the largest']);
  assert.deepEqual(p.drawn, [0, 1, 2, 1], 'every frame read is drawn');
});

test('no usable frame in the attempts: the last frame\'s problem, nothing taken', async () => {
  const p = playback([[face(200, 0.2)], [face(40)]]);
  await assert.rejects(takeFaces(p.camera, p.reader, 1, { attempts: 3, gapMs: 0 }), (e) => e.code === 'face_too_small');
  assert.equal(p.read(), 3);
});
