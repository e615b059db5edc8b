// The demo's face model in a Worker (www/face-model.js): the page posts
// `{ id, op: 'load' }` once, then `{ id, op: 'describe', frame }` with an
// ImageBitmap (transferred); each answer is `{ id, result }` or
// `{ id, error }`. The page's thread never runs the model, so the preview
// and the page stay responsive while a frame is read.
import { describeFrame, loadFaceModel } from './face-model.js';

/** An ImageBitmap's pixels, drawn on an OffscreenCanvas. */
function pixels(bitmap) {
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const g = canvas.getContext('2d', { willReadFrequently: true });
  g.drawImage(bitmap, 0, 0);
  bitmap.close();
  return g.getImageData(0, 0, canvas.width, canvas.height);
}

self.onmessage = async ({ data: { id, op, frame } }) => {
  try {
    let result;
    if (op === 'load') result = await loadFaceModel();
    else if (op === 'describe') result = await describeFrame(pixels(frame));
    else throw new Error(`unknown face worker call ${op}`);
    self.postMessage({ id, result });
  } catch (e) {
    self.postMessage({ id, error: e?.message ?? String(e) });
  }
};
