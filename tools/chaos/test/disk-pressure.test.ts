// Scenario 4 (issue 33): the disk filling up on the kubelet's root (a loop-mounted ext4). The scenario's helpers; the
// scenario itself takes ~6 min and is not in the CI variant: run it with `npm run chaos -- --scenarios=disk-pressure`.
import t from 'tap';
import { configPayload, expectedEvictions, fillFile, FILLERS, goDiskRank, inspectAtomicDir } from '../src/scenarios/disk-pressure.js';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

t.test("Go's nodefs ranking of the fillers and the evictions the reclaim needs", async (t) => {
  t.same(goDiskRank(FILLERS), ['fill-over-low', 'fill-over-small', 'fill-over-high', 'fill-within']);
  // 24 MiB under the threshold + 52 MiB to reclaim: 40 + 16 are not enough, 40 + 16 + 40 are.
  t.same(expectedEvictions(FILLERS, 24, 52), ['fill-over-low', 'fill-over-small', 'fill-over-high']);
  t.same(expectedEvictions(FILLERS, 24, 16), ['fill-over-low']);
  t.same(expectedEvictions(FILLERS, 24, 32), ['fill-over-low', 'fill-over-small']);
});

t.test('inspectAtomicDir tells a whole projection from a dangling or half-written one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'disk-pressure-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const payload = configPayload(1);
  mkdirSync(join(dir, '..2026_01_01_00_00_00.abc'));
  for (const [key, content] of Object.entries(payload)) {
    writeFileSync(join(dir, '..2026_01_01_00_00_00.abc', key), content);
    symlinkSync(join('..data', key), join(dir, key));
  }
  symlinkSync('..2026_01_01_00_00_00.abc', join(dir, '..data'));
  t.ok(inspectAtomicDir(dir, payload).ok, 'whole');
  t.notOk(inspectAtomicDir(dir, configPayload(2)).ok, 'another version');
  writeFileSync(join(dir, '..2026_01_01_00_00_00.abc', 'large.txt'), payload['large.txt'].slice(0, 4096));
  t.match(inspectAtomicDir(dir, payload).detail, /large\.txt: 4096 bytes/, 'half written');
  rmSync(join(dir, '..data'));
  symlinkSync('..2026_01_01_00_00_01.gone', join(dir, '..data'));
  t.match(inspectAtomicDir(dir, payload).detail, /dangles/, 'dangling ..data');
});

t.test('fillFile stops at its limit', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'disk-pressure-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(fillFile(join(dir, 'f'), 3 * 1048576 + 5000), 3 * 1048576 + 5000);
  t.equal(statSync(join(dir, 'f')).size, 3 * 1048576 + 5000);
});
