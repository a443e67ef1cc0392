import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeImageService } from '@kubelet-ts/cri-client/testing';
import { CriImageFsStatsProvider, type StatfsResult } from '../src/index.js';

const fakeStatfs = (table: Record<string, StatfsResult>) => {
  const calls: string[] = [];
  const fn = async (path: string): Promise<StatfsResult> => {
    calls.push(path);
    const st = table[path];
    if (!st) throw Object.assign(new Error(`ENOENT: no such file or directory, statfs '${path}'`), { code: 'ENOENT' });
    return st;
  };
  return { fn, calls };
};

t.test('capacity and available from statfs of the mountpoint CRI ImageFsInfo reports', async (t) => {
  const images = new FakeImageService();
  images.setImages({ id: 'sha256:a', size: 300 });
  const statfs = fakeStatfs({ '/var/lib/fake-runtime': { bsize: 4096, blocks: 1000, bavail: 250 } });
  const provider = new CriImageFsStatsProvider({ imageService: images, statfs: statfs.fn });
  t.same(await provider.imageFsStats(), { capacityBytes: 4096 * 1000, availableBytes: 4096 * 250, usedBytes: 300, mountpoint: '/var/lib/fake-runtime' });
  t.same(statfs.calls, ['/var/lib/fake-runtime']);
});

t.test('imageFsPath overrides the mountpoint, and is the fallback when ImageFsInfo fails', async (t) => {
  const images = new FakeImageService();
  const statfs = fakeStatfs({ '/images': { bsize: 1024, blocks: 100, bavail: 10 } });
  const provider = new CriImageFsStatsProvider({ imageService: images, imageFsPath: '/images', statfs: statfs.fn });
  t.same(await provider.imageFsStats(), { capacityBytes: 102400, availableBytes: 10240, usedBytes: 0, mountpoint: '/images' });
  images.injectError('imageFsInfo', 'Unimplemented');
  t.same(await provider.imageFsStats(), { capacityBytes: 102400, availableBytes: 10240, usedBytes: undefined, mountpoint: '/images' });
});

t.test('no ImageFsInfo and no path: a clear error', async (t) => {
  const images = new FakeImageService();
  images.injectError('imageFsInfo', new Error('unable to find data in memory cache'));
  const provider = new CriImageFsStatsProvider({ imageService: images, statfs: fakeStatfs({}).fn });
  await t.rejects(provider.imageFsStats(), { message: 'failed to get imageFs info: unable to find data in memory cache' });
});

t.test('statfs failures name the path', async (t) => {
  const provider = new CriImageFsStatsProvider({ imageService: new FakeImageService(), statfs: fakeStatfs({}).fn });
  await t.rejects(provider.imageFsStats(), {
    message: `failed to get imageFs info: statfs "/var/lib/fake-runtime": ENOENT: no such file or directory, statfs '/var/lib/fake-runtime'`,
  });
});

t.test('a fixed capacity uses the runtime\'s used bytes', async (t) => {
  const images = new FakeImageService();
  images.setImages({ id: 'sha256:a', size: 700 }, { id: 'sha256:b', size: 200 });
  const provider = new CriImageFsStatsProvider({ imageService: images, capacityBytes: 1000 });
  t.same(await provider.imageFsStats(), { capacityBytes: 1000, availableBytes: 100, usedBytes: 900, mountpoint: '/var/lib/fake-runtime' });
  images.imageFsUsage.usedBytes = 5000;
  t.equal((await provider.imageFsStats()).availableBytes, 0);
  images.injectError('imageFsInfo', new Error('down'));
  await t.rejects(provider.imageFsStats(), { message: 'failed to get imageFs info: down' });
});

t.test('the real statfs of a directory', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'image-gc-statfs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const images = new FakeImageService();
  images.injectError('imageFsInfo', 'Unavailable');
  const stats = await new CriImageFsStatsProvider({ imageService: images, imageFsPath: dir }).imageFsStats();
  t.ok(stats.capacityBytes > 0);
  t.ok(stats.availableBytes >= 0 && stats.availableBytes <= stats.capacityBytes);
  t.equal(stats.mountpoint, dir);
});
