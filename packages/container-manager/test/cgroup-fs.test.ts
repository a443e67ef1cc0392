import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeCgroupFs } from '../src/index.js';

const inFlightFsRequests = (): number => process.getActiveResourcesInfo().filter((r) => r.startsWith('FSReq')).length;

t.test('nodeCgroupFs reads a cgroup tree synchronously: no thread-pool request per file, listing or existence check', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kts-cgroup-fs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'pod1'));
  writeFileSync(join(dir, 'pod1', 'cgroup.procs'), '1\n2\n');
  writeFileSync(join(dir, 'memory.events'), 'oom_kill 3\n');
  const before = inFlightFsRequests();
  const reads = [nodeCgroupFs.readFile(join(dir, 'memory.events')), nodeCgroupFs.readdir(dir), nodeCgroupFs.exists(join(dir, 'pod1', 'cgroup.procs')), nodeCgroupFs.exists(join(dir, 'nope'))];
  t.equal(inFlightFsRequests(), before, 'nothing in flight: each read was answered on the spot');
  const [text, entries, exists, missing] = await Promise.all(reads);
  t.equal(text, 'oom_kill 3\n');
  t.same((entries as string[]).sort(), ['memory.events', 'pod1']);
  t.equal(exists, true);
  t.equal(missing, false);
  // A missing file still rejects with Node's code, as the callers expect.
  await t.rejects(nodeCgroupFs.readFile(join(dir, 'gone')), { code: 'ENOENT' });
  await t.rejects(nodeCgroupFs.readdir(join(dir, 'gone')), { code: 'ENOENT' });
});
