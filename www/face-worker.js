// The demo's face model in a Worker (www/face-model.js): the page posts
// `{ id, op: 'load' }` once, then `{ id, op: 'describe', frame }` with an
// ImageBitmap (transferred); each answer is `{ id, result }` or
// `{ id, error }`. The page's thread never runs the model, so the preview
// and the page stay responsive while a frame is read.
import { describeFrame, loadFaceModel, pixels } from './face-model.js';

/** A transferred frame's pixels; the bitmap is released at once. */
function framePixels(bitmap) {
  const image = pixels(bitmap);
  bitmap.close();
  return image;
}

self.onmessage = async ({ data: { id, op, frame } }) => {
  try {
    let result;
    if (op === 'load') result = await loadFaceModel();
    else if (op === 'describe') result = await describeFrame(framePixels(frame));
    else throw new Error(`unknown face worker call ${op}`);
    self.postMessage({ id, result });
  } catch (e) {
    self.postMessage({ id, error: e?.message ?? String(e) });
  }
};
