import t from 'tap';
import { chmod, lstat, mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { setVolumeOwnership, type OwnershipFs, type OwnershipStat } from '../src/ownership.js';

const DIR = 0o040000;
const FILE = 0o100000;
const LINK = 0o120000;

/** An in-memory tree: path -> stat; children are the paths one level below. */
class FakeFs implements OwnershipFs {
  readonly ops: string[] = [];
  readonly files = new Map<string, OwnershipStat>();
  failChown = new Set<string>();
  onChown?: (p: string) => void;

  add(p: string, mode: number, gid = 0, uid = 1000): this {
    this.files.set(p, { mode, uid, gid });
    return this;
  }

  private get(p: string): OwnershipStat {
    const f = this.files.get(p);
    if (!f) throw Object.assign(new Error(`lstat ${p}: no such file`), { code: 'ENOENT' });
    return { ...f };
  }

  async lstat(p: string): Promise<OwnershipStat> {
    return this.get(p);
  }

  async stat(p: string): Promise<OwnershipStat> {
    return this.get(p);
  }

  async readdir(p: string): Promise<string[]> {
    return [...this.files.keys()].filter((k) => k.startsWith(`${p}/`) && !k.slice(p.length + 1).includes('/')).map((k) => k.slice(p.length + 1));
  }

  async chown(p: string, uid: number, gid: number): Promise<void> {
    this.ops.push(`chown ${p} ${uid}:${gid}`);
    this.onChown?.(p);
    if (this.failChown.has(p)) throw Object.assign(new Error(`chown ${p}: operation not permitted`), { code: 'EPERM' });
    this.files.get(p)!.gid = gid;
  }

  async chmod(p: string, mode: number): Promise<void> {
    this.ops.push(`chmod ${p} ${mode.toString(8)}`);
    const f = this.files.get(p)!;
    f.mode = (f.mode & ~0o7777) | mode;
  }
}

function tree(): FakeFs {
  return new FakeFs()
    .add('/v', DIR | 0o755)
    .add('/v/a', FILE | 0o600)
    .add('/v/d', DIR | 0o700)
    .add('/v/d/b', FILE | 0o4755)
    .add('/v/link', LINK | 0o777);
}

t.test('without an fsGroup nothing changes', async (t) => {
  const fs = tree();
  await setVolumeOwnership('/v', { fs });
  t.same(fs.ops, []);
});

t.test('a recursive change: group owner, g+rw on files, g+rwx and setgid on directories, symlinks skipped, root last', async (t) => {
  const fs = tree();
  await setVolumeOwnership('/v', { fsGroup: 2000, fs });
  t.same(fs.ops, [
    'chown /v/a 1000:2000',
    'chmod /v/a 660',
    'chown /v/d/b 1000:2000',
    'chmod /v/d/b 4775',
    'chown /v/d 1000:2000',
    'chmod /v/d 2770',
    'chown /v 1000:2000',
    'chmod /v 2775',
  ]);
});

t.test('a read-only volume gets group read only', async (t) => {
  const fs = tree();
  await setVolumeOwnership('/v', { fsGroup: 2000, readOnly: true, fs });
  t.ok(fs.ops.includes('chmod /v/a 640'));
  t.ok(fs.ops.includes('chmod /v/d 2750'));
});

t.test('OnRootMismatch skips a root that already matches and changes one that does not', async (t) => {
  const matching = new FakeFs().add('/v', DIR | 0o2770, 2000).add('/v/a', FILE | 0o600, 0);
  await setVolumeOwnership('/v', { fsGroup: 2000, fsGroupChangePolicy: 'OnRootMismatch', fs: matching });
  t.same(matching.ops, [], 'root has the group, the bits and setgid: nothing walks');

  const wrongGroup = new FakeFs().add('/v', DIR | 0o2770, 1).add('/v/a', FILE | 0o600);
  await setVolumeOwnership('/v', { fsGroup: 2000, fsGroupChangePolicy: 'OnRootMismatch', fs: wrongGroup });
  t.ok(wrongGroup.ops.includes('chmod /v/a 660'), 'another group: a full walk');

  const noSetgid = new FakeFs().add('/v', DIR | 0o770, 2000).add('/v/a', FILE | 0o600);
  await setVolumeOwnership('/v', { fsGroup: 2000, fsGroupChangePolicy: 'OnRootMismatch', fs: noSetgid });
  t.ok(noSetgid.ops.includes('chmod /v 2770'), 'no setgid: a full walk');

  const narrow = new FakeFs().add('/v', DIR | 0o2750, 2000);
  await setVolumeOwnership('/v', { fsGroup: 2000, fsGroupChangePolicy: 'OnRootMismatch', fs: narrow });
  t.ok(narrow.ops.includes('chmod /v 2770'), 'missing group write: a full walk');

  const always = new FakeFs().add('/v', DIR | 0o2770, 2000);
  await setVolumeOwnership('/v', { fsGroup: 2000, fsGroupChangePolicy: 'Always', fs: always });
  t.ok(always.ops.length > 0, 'Always walks whatever the root looks like');
});

t.test('a failed chown is logged and the walk goes on', async (t) => {
  const fs = tree();
  fs.failChown.add('/v/a');
  const logger = new RecordingLogger();
  await setVolumeOwnership('/v', { fsGroup: 2000, fs, logger });
  t.ok(fs.ops.includes('chmod /v/a 660'), 'chmod still runs');
  t.ok(fs.ops.includes('chown /v 1000:2000'));
  t.match(logger.entries, [{ level: 'error', msg: 'Chown failed on /v/a' }]);
});

t.test('a change that takes more than 30 s warns', async (t) => {
  const clock = new FakeClock();
  const fs = tree();
  fs.onChown = () => clock.step(31_000);
  const logger = new RecordingLogger();
  await setVolumeOwnership('/v', { fsGroup: 2000, fs, logger, clock });
  t.match(logger.entries.filter((e) => e.level === 'warn'), [{ msg: /^Setting volume ownership for \/v and fsGroup set/ }]);
  t.equal(clock.pendingTimers(), 0, 'no timer left behind');
});

t.test('real files: group and modes change, a symlinked file outside keeps its mode', { skip: process.getuid?.() !== 0 ? 'chown to another group needs root' : false }, async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'vm-owner-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const vol = join(root, 'vol');
  await mkdir(join(vol, 'sub'), { recursive: true });
  await writeFile(join(vol, 'sub', 'f'), 'x');
  await chmod(join(vol, 'sub', 'f'), 0o600);
  await writeFile(join(root, 'outside'), 'secret');
  await chmod(join(root, 'outside'), 0o600);
  await symlink(join(root, 'outside'), join(vol, 'link'));

  await setVolumeOwnership(vol, { fsGroup: 4321 });
  const f = await stat(join(vol, 'sub', 'f'));
  t.equal(f.gid, 4321);
  t.equal(f.mode & 0o7777, 0o660);
  const sub = await stat(join(vol, 'sub'));
  t.equal(sub.mode & 0o2070, 0o2070, 'directories: setgid and group rwx');
  const outside = await stat(join(root, 'outside'));
  t.equal(outside.mode & 0o7777, 0o600, 'the symlink target is untouched');
  t.equal(outside.gid, 0);
  t.equal((await lstat(join(vol, 'link'))).gid, 0, 'the symlink itself is skipped');
});
