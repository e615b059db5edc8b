// The demo's camera: a preview (getUserMedia), the face model reading
// frames off the page's thread (www/face-worker.js), boxes drawn over the
// preview, and the checks that turn a frame into a face sample or into a
// message that says what to do. Every failure is an Error with a `code`:
// camera_refused, no_camera, camera_failed, model_failed, no_face,
// face_too_small, face_unclear.

/** The largest face must be at least this share of the frame's height. */
export const MIN_FACE_SHARE = 0.15;
/** The detector's score below which a face is too dark or blurred to use. */
export const MIN_FACE_SCORE = 0.6;
/**
 * The decider's threshold for face-api's descriptors, measured on real faces
 * (docs/ACCURACY.md, "A real face model"; scripts/demo.sh passes the same).
 */
export const FACE_THRESHOLD = 0.96;

const fail = (code, message) => Object.assign(new Error(message), { code });

/** The face model, in a Worker when the browser has OffscreenCanvas. */
export class FaceReader {
  /** Numbers per descriptor (face-api's recognition net). */
  dimension = 128;
  #worker = null;
  #local = null;
  #next = 1;
  #pending = new Map();

  /** Loads the model; `{ reader, load }` with load's timings, or throws model_failed. */
  static async create() {
    const reader = new FaceReader();
    try {
      if (typeof Worker === 'function' && typeof OffscreenCanvas === 'function') {
        reader.#worker = new Worker(new URL('./face-worker.js', import.meta.url), { type: 'module' });
        reader.#worker.onmessage = ({ data }) => reader.#answer(data);
        reader.#worker.onerror = (e) => reader.#failAll(e.message || 'the face worker failed to start');
        const load = await reader.#call('load');
        return { reader, load: { ...load, where: 'Worker' } };
      }
      reader.#local = await import('./face-model.js');
      const load = await reader.#local.loadFaceModel();
      return { reader, load: { ...load, where: 'page thread' } };
    } catch (e) {
      reader.close();
      throw fail('model_failed', e.message);
    }
  }

  /** The faces in the video's current frame (www/face-model.js, describeFrame). */
  async describe(video) {
    if (this.#local) return this.#local.describeFrame(this.#local.pixels(video));
    const frame = await createImageBitmap(video);
    return this.#call('describe', { frame }, [frame]);
  }

  close() {
    this.#worker?.terminate();
    this.#worker = null;
    this.#failAll('the face reader was closed');
  }

  #call(op, args = {}, transfer = []) {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, op, ...args }, transfer);
    });
  }

  #answer({ id, result, error }) {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    if (error) p.reject(new Error(error));
    else p.resolve(result);
  }

  #failAll(message) {
    for (const p of this.#pending.values()) p.reject(new Error(message));
    this.#pending.clear();
  }
}

/** The camera preview in `video`, with face boxes drawn on `overlay`. */
export class Camera {
  constructor(video, overlay) {
    this.video = video;
    this.overlay = overlay;
    this.stream = null;
  }

  /** Starts the preview; throws camera_refused, no_camera or camera_failed. */
  async start() {
    if (!navigator.mediaDevices?.getUserMedia) throw fail('no_camera', 'this browser offers no camera to this page (it needs https or localhost)');
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480, facingMode: 'user' }, audio: false });
    } catch (e) {
      if (e.name === 'NotAllowedError' || e.name === 'SecurityError') throw fail('camera_refused', 'camera permission was refused');
      if (e.name === 'NotFoundError' || e.name === 'OverconstrainedError') throw fail('no_camera', 'no camera was found');
      throw fail('camera_failed', `the camera did not start (${e.name}: ${e.message})`);
    }
    this.video.srcObject = this.stream;
    await this.video.play();
    if (!this.video.videoWidth) await new Promise((r) => this.video.addEventListener('loadedmetadata', r, { once: true }));
    this.overlay.width = this.video.videoWidth;
    this.overlay.height = this.video.videoHeight;
  }

  stop() {
    for (const t of this.stream?.getTracks() ?? []) t.stop();
    this.stream = null;
    this.video.srcObject = null;
  }

  /**
   * Boxes over the preview: the chosen face solid, the others dashed. The
   * preview is mirrored (as people expect of a camera facing them), so the
   * boxes are too; their labels are not.
   */
  draw(faces) {
    const g = this.overlay.getContext('2d');
    const w = this.overlay.width;
    g.clearRect(0, 0, w, this.overlay.height);
    g.lineWidth = 3;
    faces.forEach(({ box, score }, i) => {
      const x = w - box.x - box.width;
      g.strokeStyle = i === 0 ? '#2e9e5b' : '#d08a1c';
      g.setLineDash(i === 0 ? [] : [8, 6]);
      g.strokeRect(x, box.y, box.width, box.height);
      g.fillStyle = g.strokeStyle;
      g.font = '16px system-ui, sans-serif';
      g.fillText(score.toFixed(2), x + 4, Math.max(16, box.y - 6));
    });
  }
}

/**
 * Why the largest face of a frame cannot be used, as an Error, or null.
 * `height` is the frame's height in pixels.
 */
export function faceProblem(faces, height) {
  if (faces.length === 0) return fail('no_face', 'no face in the frame: look into the camera');
  const { box, score } = faces[0];
  if (box.height < MIN_FACE_SHARE * height) return fail('face_too_small', `the face is too small (${Math.round(box.height)} px high): come closer`);
  if (score < MIN_FACE_SCORE) return fail('face_unclear', `the face is not clear enough (detector score ${score.toFixed(2)}): more light, face the camera`);
  return null;
}

/**
 * `count` face samples from the camera, each from a new frame, trying up to
 * `attempts` frames per sample. Resolves `{ list, notes, frames, ms }`
 * (model milliseconds per frame read); throws the last frame's problem.
 */
export async function takeFaces(camera, reader, count, { attempts = 8, gapMs = 150, onFrame } = {}) {
  const list = [];
  const notes = new Set();
  const ms = [];
  let frames = 0;
  while (list.length < count) {
    let problem = null;
    for (let a = 0; a < attempts; a++) {
      if (frames > 0) await new Promise((r) => setTimeout(r, gapMs));
      const { faces, descriptor, ms: inferMs } = await reader.describe(camera.video);
      frames++;
      ms.push(inferMs);
      camera.draw(faces);
      onFrame?.(list.length, faces);
      problem = faceProblem(faces, camera.video.videoHeight);
      if (!problem) {
        if (faces.length > 1) notes.add(`${faces.length} faces in the frame: took the largest`);
        list.push(descriptor);
        break;
      }
    }
    if (problem) throw problem;
  }
  return { list, notes: [...notes], frames, ms };
}
