// A worker for worker.test.mjs: runs blindmatch/worker (workerData.worker)
// and keeps a reference to every secret key array that worker receives, so
// the test can see what became of the worker's copy. On `{ spy: true }` it
// reports, for each: whether it held non-zero bytes when it arrived, and
// now.
import { parentPort, workerData } from 'node:worker_threads';

await import(workerData.worker);
// blindmatch/worker registers its listener once node:worker_threads is
// imported; ours comes after it, so it sees each message before that
// worker's handler resumes from its first `await`.
while (parentPort.listenerCount('message') === 0) await new Promise((r) => setImmediate(r));
const seen = [];
parentPort.on('message', (data) => {
  if (data?.op === 'fromSecretKey') {
    const a = data.args[1];
    seen.push({ array: a, atReceipt: a.some((x) => x !== 0) });
  }
  if (data?.spy) {
    const report = seen.map((s) => ({ atReceipt: s.atReceipt, length: s.array.length, now: s.array.some((x) => x !== 0) }));
    parentPort.postMessage({ spy: report });
  }
});
