// The demo's face model in headless Chromium (www/face-model.js: face-api
// 1.7.15 on the tfjs wasm backend): load time, and the time to read one
// 640x480 camera frame (detect, landmarks, descriptor) on the page's thread
// and in the page's Worker (www/face-worker.js), on frames made from
// face-api's sample photos (tests/js/faces.mjs). Served by the release
// server (`serve --face target/face`) on loopback.
//
//   bash scripts/setup.sh                          # target/face, playwright-core
//   cargo build --release --features server --bin blindmatch-server
//   node bench/face_model.mjs [--quick]
//
// stdout, TSV, nothing else: face-model<TAB>op<TAB>median_ms<TAB>min_ms
// stderr: `# ...` notes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openPage } from '../tests/js/chromium.mjs';
import { FACE_DIR, VARIANTS, cameraFrame, faceSkip, openFaceTools, photoFaces } from '../tests/js/faces.mjs';
import { startServer, stopServer } from '../tests/js/server.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 2 : 5;

if (faceSkip) {
  console.error(`# ${faceSkip}`);
  process.exit(1);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const row = (op, xs) => console.log(`face-model\t${op}\t${median(xs).toFixed(1)}\t${Math.min(...xs).toFixed(1)}`);

const work = mkdtempSync(join(tmpdir(), 'blindmatch-face-bench-'));
const server = await startServer(join(ROOT, 'target/release/blindmatch-server'), work, ['--face', FACE_DIR]);
let context;
try {
  const opened = await openPage(join(work, 'profile'), server.url);
  context = opened.context;
  const { page } = opened;
  const load = await openFaceTools(page, server.url);
  row('load_code_page_thread', [load.codeMs]);
  row('load_weights_page_thread', [load.weightsMs]);
  const faces = (await photoFaces(page)).slice(0, 6);
  const frames = [];
  for (const f of faces) frames.push((await cameraFrame(page, f, VARIANTS[0])).jpeg.toString('base64'));
  console.error(`# ${frames.length} frames of 640x480, ${ROUNDS} rounds`);

  const timings = await page.evaluate(async ({ frames, rounds }) => {
    const { describe, pixels } = window.faceTools;
    const bitmaps = async () => Promise.all(frames.map(async (b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      return createImageBitmap(new Blob([bytes], { type: 'image/jpeg' }));
    }));
    const page = [];
    const images = (await bitmaps()).map(pixels);
    await describe(images[0]); // warm-up
    for (let r = 0; r < rounds; r++) for (const im of images) page.push((await describe(im)).ms);

    const worker = new Worker('/face-worker.js', { type: 'module' });
    let next = 1;
    const call = (op, args = {}, transfer = []) => new Promise((resolve, reject) => {
      const id = next++;
      const on = ({ data }) => {
        if (data.id !== id) return;
        worker.removeEventListener('message', on);
        if (data.error) reject(new Error(data.error));
        else resolve(data.result);
      };
      worker.addEventListener('message', on);
      worker.postMessage({ id, op, ...args }, transfer);
    });
    const t0 = performance.now();
    const load = await call('load');
    const loadMs = performance.now() - t0;
    const inWorker = [];
    const roundTrip = [];
    const warm = (await bitmaps())[0];
    await call('describe', { frame: warm }, [warm]);
    for (let r = 0; r < rounds; r++) {
      for (const bmp of await bitmaps()) {
        const t = performance.now();
        const res = await call('describe', { frame: bmp }, [bmp]);
        roundTrip.push(performance.now() - t);
        inWorker.push(res.ms);
      }
    }
    worker.terminate();
    return { page, inWorker, roundTrip, load, loadMs };
  }, { frames, rounds: ROUNDS });

  row('load_worker_total', [timings.loadMs]);
  row('frame_page_thread', timings.page);
  row('frame_worker', timings.inWorker);
  row('frame_worker_round_trip', timings.roundTrip);
  console.error(`# worker load: code ${timings.load.codeMs.toFixed(0)} ms, weights ${timings.load.weightsMs.toFixed(0)} ms, backend ${timings.load.backend}`);
} finally {
  await context?.close().catch(() => {});
  await stopServer(server.proc);
  rmSync(work, { recursive: true, force: true });
}
