// The demo's face model: face-api (SSD MobileNet v1 detector, 68-point
// landmarks, the recognition net's 128-number descriptor) on the tfjs wasm
// backend, served by `blindmatch-server --face` at /face/. Runs in a Worker
// (www/face-worker.js, with OffscreenCanvas) or, where a Worker cannot, on
// the page's thread; the same code either way. blindmatch itself is
// model-agnostic: anything that yields 64-512 finite numbers per face works
// (www/README.md, "Another face model").

/** Where the model's files are served. */
export const FACE_BASE = '/face';

/** Detections under this score are not faces. */
const MIN_DETECTION = 0.3;

let faceapi = null;

/**
 * The pixels (ImageData) of an image, ImageBitmap or video frame, drawn on
 * an OffscreenCanvas where there is one (a Worker), else on a canvas element.
 */
export function pixels(image) {
  const width = image.videoWidth || image.width;
  const height = image.videoHeight || image.height;
  const canvas = typeof OffscreenCanvas === 'function'
    ? new OffscreenCanvas(width, height)
    : Object.assign(document.createElement('canvas'), { width, height });
  const g = canvas.getContext('2d', { willReadFrequently: true });
  g.drawImage(image, 0, 0);
  return g.getImageData(0, 0, width, height);
}

/**
 * face-api looks for `window` and `document`; in a Worker it is told to draw
 * on OffscreenCanvas instead (frames arrive as ImageData, so no image
 * element is ever needed).
 */
function workerEnvironment() {
  const none = () => { throw new Error('the face model takes ImageData frames in a Worker'); };
  return {
    Canvas: OffscreenCanvas,
    CanvasRenderingContext2D: OffscreenCanvasRenderingContext2D,
    Image: class {},
    ImageData,
    Video: class {},
    createCanvasElement: () => new OffscreenCanvas(1, 1),
    createImageElement: none,
    fetch: (...args) => fetch(...args),
    readFile: none,
  };
}

/**
 * Loads face-api, the wasm backend and the three nets; the milliseconds
 * each part took. Throws an Error naming the file that failed.
 */
export async function loadFaceModel(base = FACE_BASE) {
  const t0 = performance.now();
  try {
    faceapi = await import(`${base}/face-api.esm.js`);
  } catch (e) {
    throw new Error(`the face model's code (${base}/face-api.esm.js) did not load: ${e.message}`);
  }
  if (typeof document === 'undefined') faceapi.env.setEnv(workerEnvironment());
  faceapi.tf.setWasmPaths(`${base}/wasm/`);
  if (!(await faceapi.tf.setBackend('wasm'))) throw new Error(`the tfjs wasm backend (${base}/wasm/) did not start`);
  await faceapi.tf.ready();
  const t1 = performance.now();
  const nets = [
    ['ssdMobilenetv1', 'ssd_mobilenetv1_model'],
    ['faceLandmark68Net', 'face_landmark_68_model'],
    ['faceRecognitionNet', 'face_recognition_model'],
  ];
  for (const [net, file] of nets) {
    try {
      await faceapi.nets[net].loadFromUri(`${base}/model`);
    } catch (e) {
      throw new Error(`the face model's weights (${base}/model/${file}) did not load: ${e.message}`);
    }
  }
  return {
    codeMs: t1 - t0,
    weightsMs: performance.now() - t1,
    backend: faceapi.tf.getBackend(),
    version: faceapi.version,
  };
}

/**
 * The faces in one frame (`ImageData`), largest first, each with its box,
 * detector score and descriptor (a Float32Array of 128), and the largest
 * face's descriptor again (null when there is no face).
 */
export async function describeFrame(frame) {
  if (!faceapi) throw new Error('the face model is not loaded');
  const t0 = performance.now();
  const input = faceapi.tf.browser.fromPixels(frame);
  try {
    const found = await faceapi
      .detectAllFaces(input, new faceapi.SsdMobilenetv1Options({ minConfidence: MIN_DETECTION }))
      .withFaceLandmarks()
      .withFaceDescriptors();
    const faces = found
      .map((f) => {
        const { x, y, width, height } = f.detection.box;
        return { box: { x, y, width, height }, score: f.detection.score, descriptor: f.descriptor };
      })
      .sort((a, b) => b.box.width * b.box.height - a.box.width * a.box.height);
    return {
      faces: faces.map(({ box, score, descriptor }) => ({ box, score, descriptor: Float32Array.from(descriptor) })),
      descriptor: faces.length ? Float32Array.from(faces[0].descriptor) : null,
      ms: performance.now() - t0,
    };
  } finally {
    input.dispose();
  }
}
