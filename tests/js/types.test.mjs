// Type-checks tests/js/types/usage.ts against the built package's .d.ts files
// with `tsc --noEmit --strict`. Needs TypeScript: set TSC to a tsc binary (or
// have `tsc` on PATH); skipped, with a note, when there is none.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PKG_DIR } from './pkg.mjs';

function findTsc() {
  if (process.env.TSC) return process.env.TSC;
  const r = spawnSync('tsc', ['--version']);
  return r.status === 0 ? 'tsc' : null;
}

const tsc = findTsc();

test('the shipped TypeScript declarations type-check a user program', { skip: tsc ? false : 'no TypeScript (set TSC=/path/to/tsc)' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'blindmatch-types-'));
  try {
    // A project with node_modules/blindmatch -> the built package.
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(fileURLToPath(PKG_DIR), join(dir, 'node_modules', 'blindmatch'), 'dir');
    const here = new URL('./types/', import.meta.url);
    for (const f of ['usage.ts', 'tsconfig.json']) cpSync(new URL(f, here), join(dir, f));
    execFileSync(tsc, ['-p', join(dir, 'tsconfig.json')], { stdio: 'pipe' });
  } catch (e) {
    assert.fail(`tsc failed:\n${e.stdout ?? ''}${e.stderr ?? ''}${e.message}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
