// `import 'blindmatch'` by its bare name, from a project whose
// node_modules/blindmatch is the built package: Node resolves it through the
// package.json "exports", as it does after `npm install blindmatch`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PKG_DIR } from './pkg.mjs';

test('a project imports blindmatch and blindmatch/worker by name', () => {
  const dir = mkdtempSync(join(tmpdir(), 'blindmatch-user-'));
  try {
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(fileURLToPath(PKG_DIR), join(dir, 'node_modules', 'blindmatch'), 'dir');
    writeFileSync(join(dir, 'package.json'), '{ "name": "app", "type": "module", "private": true }');
    writeFileSync(
      join(dir, 'app.js'),
      `import { init, Params, Keys } from 'blindmatch';
       const info = await init();
       const keys = Keys.generate(Params.auth4096());
       const probe = keys.encryptProbe(new Float32Array(128).fill(0.5), 128);
       console.log(JSON.stringify({ build: info.build, probe: probe.length,
         worker: import.meta.resolve('blindmatch/worker').endsWith('/worker.js') }));`,
    );
    const out = execFileSync(process.execPath, ['app.js'], { cwd: dir, encoding: 'utf8' });
    assert.deepEqual(JSON.parse(out), { build: 'simd128', probe: 44594, worker: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
