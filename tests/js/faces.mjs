// Real faces for the browser tests: face-api's sample photos (22 faces in
// six group photos, installed by scripts/setup.sh under target/face-npm),
// the demo's own face model (www/face-model.js, served by `serve --face`)
// run in headless Chromium, and camera frames made from the photos: one
// face cropped at a scale, shift and brightness into a 640x480 JPEG, as a
// camera would give it. Frames concatenate into an MJPEG file that
// Chromium's fake camera plays (--use-file-for-fake-video-capture).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const FACE_DIR = join(ROOT, 'target/face');
const PHOTOS = join(ROOT, 'target/face-npm/node_modules/@vladmandic/face-api/demo');
export const PHOTO_NAMES = [1, 2, 3, 4, 5, 6].map((k) => `sample${k}.jpg`);

/** Why the face tests cannot run here, or false. */
export const faceSkip = !existsSync(join(FACE_DIR, 'VERSION')) || !existsSync(join(PHOTOS, PHOTO_NAMES[0]))
  ? 'the face model is not installed in target/face (scripts/setup.sh)'
  : false;

/**
 * Camera variants of one face: the face's height as a share of the frame,
 * its centre's shift (in face widths and heights) and the brightness. The
 * e2e test registers from the first five and logs in with the sixth.
 */
export const VARIANTS = [
  { scale: 0.5, dx: 0, dy: 0, brightness: 1 },
  { scale: 0.35, dx: 0.1, dy: -0.05, brightness: 1 },
  { scale: 0.6, dx: -0.1, dy: 0.05, brightness: 1 },
  { scale: 0.45, dx: 0, dy: 0, brightness: 0.75 },
  { scale: 0.45, dx: 0.05, dy: 0, brightness: 1.4 },
  { scale: 0.3, dx: 0.2, dy: 0.1, brightness: 0.85 },
];

/**
 * Gives `page` the tools below on `base` (the server under test, or the
 * relying party in front of it): a blank page at `${base}/__faces.html`
 * under the CSP the server sends, the photos at `${base}/__photos/`, and
 * `window.faceTools` with the loaded model.
 */
export async function openFaceTools(page, base) {
  const csp = (await fetch(`${base}/face/VERSION`)).headers.get('content-security-policy');
  if (!csp) throw new Error(`${base}/face/VERSION came without a Content-Security-Policy`);
  await page.route(`${base}/__faces.html`, (route) => route.fulfill({
    status: 200, contentType: 'text/html', headers: { 'content-security-policy': csp },
    body: '<!doctype html><meta charset="utf-8"><title>faces</title>',
  }));
  await page.route(`${base}/__photos/*`, (route) => {
    const name = new URL(route.request().url()).pathname.split('/').pop();
    if (!PHOTO_NAMES.includes(name)) return route.fulfill({ status: 404, body: '' });
    return route.fulfill({ status: 200, contentType: 'image/jpeg', body: readFileSync(join(PHOTOS, name)) });
  });
  await page.goto(`${base}/__faces.html`);
  return page.evaluate(async () => {
    const model = await import('/face-model.js');
    const load = await model.loadFaceModel();
    const { pixels } = model;
    const plain = (r) => ({
      faces: r.faces.map((f) => ({ box: f.box, score: f.score, descriptor: Array.from(f.descriptor) })),
      ms: r.ms,
    });
    const bitmapOf = async (url) => createImageBitmap(await (await fetch(url)).blob());
    window.faceTools = {
      /** An image's pixels (ImageData), as the page's fallback reads a frame. */
      pixels,
      /** The model's reading of one ImageData (www/face-model.js). */
      describe: (imageData) => model.describeFrame(imageData),
      /** Every face in a photo. */
      async photo(name) {
        const bmp = await bitmapOf(`/__photos/${name}`);
        return { width: bmp.width, height: bmp.height, ...plain(await model.describeFrame(pixels(bmp))) };
      },
      /**
       * One face of a photo as a 640x480 camera frame (JPEG, base64), the
       * rest of the photo greyed out, and what the model reads in it.
       */
      async frame(name, box, { scale, dx, dy, brightness }) {
        const bmp = await bitmapOf(`/__photos/${name}`);
        const W = 640;
        const H = 480;
        const k = (scale * H) / box.height;
        const cx = box.x + box.width * (0.5 + dx);
        const cy = box.y + box.height * (0.5 + dy);
        const c = document.createElement('canvas');
        c.width = W;
        c.height = H;
        const g = c.getContext('2d', { willReadFrequently: true });
        g.fillStyle = '#808080';
        g.fillRect(0, 0, W, H);
        // Only the face and a margin: no neighbour of the group photo.
        const mx = box.width * 0.7;
        const my = box.height * 0.5;
        const toX = (x) => W / 2 + (x - cx) * k;
        const toY = (y) => H / 2 + (y - cy) * k;
        g.save();
        g.beginPath();
        g.rect(toX(box.x - mx), toY(box.y - my), (box.width + 2 * mx) * k, (box.height + 2 * my) * k);
        g.clip();
        g.filter = `brightness(${brightness})`;
        g.drawImage(bmp, toX(0), toY(0), bmp.width * k, bmp.height * k);
        g.restore();
        const blob = await new Promise((res) => c.toBlob(res, 'image/jpeg', 0.92));
        const jpeg = new Uint8Array(await blob.arrayBuffer());
        const read = plain(await model.describeFrame(pixels(await createImageBitmap(blob))));
        let bin = '';
        for (let i = 0; i < jpeg.length; i += 0x8000) bin += String.fromCharCode(...jpeg.subarray(i, i + 0x8000));
        return { jpeg: btoa(bin), ...read };
      },
    };
    return load;
  });
}

/**
 * The 22 faces of the photos: `{ id, photo, box, score, descriptor }`,
 * named `sampleK#i` (K the photo, i left to right).
 */
export async function photoFaces(page) {
  const out = [];
  for (const photo of PHOTO_NAMES) {
    const r = await page.evaluate((n) => window.faceTools.photo(n), photo);
    r.faces.sort((a, b) => a.box.x - b.box.x).forEach((f, i) => {
      out.push({ id: `${photo.replace('.jpg', '')}#${i + 1}`, photo, box: f.box, score: f.score, descriptor: f.descriptor });
    });
  }
  return out;
}

/** A camera frame of `face` (photoFaces) at `variant`: `{ jpeg: Buffer, faces }`. */
export async function cameraFrame(page, face, variant) {
  const r = await page.evaluate(([n, b, v]) => window.faceTools.frame(n, b, v), [face.photo, face.box, variant]);
  return { jpeg: Buffer.from(r.jpeg, 'base64'), faces: r.faces };
}

/** Cosine of two vectors. */
export function cosine(a, b) {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

/** Euclidean distance of two vectors (face-api's usual comparison). */
export function distance(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] - b[i]) ** 2;
  return Math.sqrt(s);
}
