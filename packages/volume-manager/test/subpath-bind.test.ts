// Safe subPath (CVE-2017-1002101) with real bind mounts in a temp dir (root only): the subPath is opened one
// component at a time without following symlinks and the opened file, not its path, is bind-mounted under
// <podDir>/volume-subpaths/<volume>/<container>/<index>; symlinks swapped in at any moment never make the bind
// mount show anything outside the volume; CleanSubPaths and the volume manager's teardown leave no mount behind.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, readdir, realpath, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { makeMounts } from '../src/container-mounts.js';
import { SystemMounter } from '../src/mounter.js';
import { defaultVolumePlugins } from '../src/plugins/index.js';
import { bindSubPath, cleanSubPaths, prepareSubPath, subPathBindTarget, type SubPath } from '../src/subpath.js';
import type { Mounter } from '../src/types.js';
import { KubeletVolumeManager } from '../src/volume-manager.js';

const system = new SystemMounter();

/** Counts the bind mounts it does (and can be told to mount another source instead). */
class CountingMounter implements Mounter {
  binds = 0;
  /** When set, bindMount mounts this instead of the source it is given. */
  substitute: string | undefined;
  mountTmpfs(target: string, options?: { sizeBytes?: number }): Promise<void> {
    return system.mountTmpfs(target, options);
  }
  async bindMount(source: string, target: string): Promise<void> {
    this.binds++;
    await system.bindMount(this.substitute ?? source, target);
  }
  unmount(target: string): Promise<void> {
    return system.unmount(target);
  }
  isMountPoint(target: string): Promise<boolean> {
    return system.isMountPoint(target);
  }
  mountPointsUnder(prefix: string): Promise<string[]> {
    return system.mountPointsUnder(prefix);
  }
}

/** A temp dir with a pod dir, a volume (`vol`, marker files saying "inside") and a directory outside it ("outside"). */
async function layout(t: Test): Promise<{ root: string; podDir: string; vol: string; outside: string }> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'vm-subpath-bind-')));
  t.teardown(async () => {
    for (const m of await system.mountPointsUnder(root)) await system.unmount(m).catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  });
  const podDir = join(root, 'pods', 'uid-1');
  const vol = join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'data');
  const outside = join(root, 'outside');
  await mkdir(join(vol, 'a'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(vol, 'a', 'f'), 'inside');
  await writeFile(join(vol, 'file'), 'inside');
  await writeFile(join(outside, 'f'), 'outside');
  return { root, podDir, vol, outside };
}

function subPathOf(l: { podDir: string; vol: string }, rel: string, mounter: Mounter, index = 0): SubPath {
  return { podDir: l.podDir, volumeName: 'data', containerName: 'app', volumeMountIndex: index, mounter, volumePath: l.vol, path: join(l.vol, rel) };
}

/** How many times target is a mount point in this process's mount table. */
async function mountCount(target: string): Promise<number> {
  return (await system.entries()).filter((e) => e.mountPoint === target).length;
}

const names = { volumeMountName: 'data', containerName: 'app' };

t.test('a file subPath and a dir subPath become bind mounts under volume-subpaths; a restart reuses them; cleanup unmounts them', async (t) => {
  const l = await layout(t);
  const mounter = new CountingMounter();
  const logger = new RecordingLogger();
  const bind = (volumeMountIndex: number) => ({ podDir: l.podDir, volumeName: 'data', volumeMountIndex, mounter });

  const fileTarget = await prepareSubPath({ volumePath: l.vol, subPath: 'file', ...names, bind: bind(0), logger });
  t.equal(fileTarget, join(l.podDir, 'volume-subpaths', 'data', 'app', '0'), 'the runtime gets <podDir>/volume-subpaths/<volume>/<container>/<index>');
  t.ok((await lstat(fileTarget)).isFile(), 'a file subPath is mounted on an empty file');
  t.equal(await readFile(fileTarget, 'utf8'), 'inside');
  t.equal(await mountCount(fileTarget), 1, 'a bind mount');

  const dirTarget = await prepareSubPath({ volumePath: l.vol, subPath: 'a', ...names, bind: bind(1), logger });
  t.equal(dirTarget, join(l.podDir, 'volume-subpaths', 'data', 'app', '1'));
  t.ok((await lstat(dirTarget)).isDirectory(), 'a directory subPath is mounted on a directory');
  t.same(await readdir(dirTarget), ['f']);
  t.equal(await mountCount(dirTarget), 1);

  // The container writes through the bind mount into the volume.
  await writeFile(join(dirTarget, 'new'), 'from container');
  t.equal(await readFile(join(l.vol, 'a', 'new'), 'utf8'), 'from container', 'the bind mount is the volume\'s directory');

  // A missing subPath directory is created in the volume and bind-mounted.
  const created = await prepareSubPath({ volumePath: l.vol, subPath: 'x/y', ...names, bind: bind(2), logger });
  t.ok((await stat(join(l.vol, 'x', 'y'))).isDirectory());
  t.equal(await mountCount(created), 1);
  t.equal(mounter.binds, 3);

  // A container restart: the same mounts are found and reused.
  t.equal(await prepareSubPath({ volumePath: l.vol, subPath: 'file', ...names, bind: bind(0), logger }), fileTarget);
  t.equal(await prepareSubPath({ volumePath: l.vol, subPath: 'a', ...names, bind: bind(1), logger }), dirTarget);
  t.equal(mounter.binds, 3, 'no new bind mount');
  t.equal(await mountCount(fileTarget), 1, 'nothing stacked');
  t.equal(await mountCount(dirTarget), 1);

  await cleanSubPaths(mounter, l.podDir, 'data');
  t.same(await system.mountPointsUnder(l.podDir), [], 'every subPath mount is gone');
  await t.rejects(stat(join(l.podDir, 'volume-subpaths')), { code: 'ENOENT' }, 'volume-subpaths is removed');
  t.equal(await readFile(join(l.vol, 'a', 'new'), 'utf8'), 'from container', 'the volume keeps its files');
  t.equal(await readFile(join(l.vol, 'file'), 'utf8'), 'inside');
  await t.resolves(cleanSubPaths(mounter, l.podDir, 'data'), 'cleaning again (nothing there) is fine');
});

t.test('a bind mount that shows another file is replaced; a mount that does not show the opened file is refused and undone', async (t) => {
  const l = await layout(t);
  const mounter = new CountingMounter();
  const sp = subPathOf(l, 'a', mounter);
  const target = subPathBindTarget(sp);
  await mkdir(target, { recursive: true });
  await system.bindMount(l.outside, target);
  t.equal(await bindSubPath(sp), target);
  t.equal(await mountCount(target), 1, 'the old mount was unmounted first');
  t.same(await readdir(target), ['f']);
  t.equal(await readFile(join(target, 'f'), 'utf8'), 'inside');
  await cleanSubPaths(mounter, l.podDir, 'data');

  // A mounter that mounts something else than the opened file: the device/inode check catches it.
  mounter.substitute = l.outside;
  const err = (await bindSubPath(subPathOf(l, 'a', mounter, 3)).catch((e: unknown) => e)) as Error;
  t.equal(err.message, `the bind mount at ${join(l.podDir, 'volume-subpaths', 'data', 'app', '3')} does not show the opened subpath ${join(l.vol, 'a')}`);
  t.same(await system.mountPointsUnder(l.podDir), [], 'the wrong mount is undone');
  await t.rejects(stat(join(l.podDir, 'volume-subpaths')), { code: 'ENOENT' }, 'and its empty directories removed');
});

t.test('.. and symlink escapes are refused with Go messages and mount nothing', async (t) => {
  const l = await layout(t);
  const mounter = new CountingMounter();
  const bind = { podDir: l.podDir, volumeName: 'data', volumeMountIndex: 0, mounter };
  await t.rejects(prepareSubPath({ volumePath: l.vol, subPath: 'a/../../..', ...names, bind }), { message: "unable to provision SubPath `a/../../..`: must not contain '..'" });
  await symlink(l.outside, join(l.vol, 'escape'));
  await symlink(join(l.outside, 'f'), join(l.vol, 'escape-file'));
  for (const subPath of ['escape', 'escape/f', 'escape-file']) {
    const logger = new RecordingLogger();
    const err = (await prepareSubPath({ volumePath: l.vol, subPath, ...names, bind, logger }).catch((e: unknown) => e)) as Error;
    t.equal(err.message, 'failed to prepare subPath for volumeMount "data" of container "app"', `${subPath}: Go's vague message`);
    t.match((err.cause as Error).message, /^subpath ".*" not within volume path ".*"$/, `${subPath}: the detail is the cause`);
    t.match(logger.entries.filter((e) => e.level === 'error'), [{ msg: 'Failed to prepare subPath for volumeMount', err: { message: /not within volume path/ } }], `${subPath}: the detail is logged`);
  }
  t.equal(mounter.binds, 0, 'nothing was mounted');
  await t.rejects(stat(join(l.podDir, 'volume-subpaths')), { code: 'ENOENT' });
});

t.test('a component swapped for a symlink out of the volume while the subPath is opened is refused', async (t) => {
  const l = await layout(t);
  const mounter = new CountingMounter();
  // Just before `a` is opened (after every check of the path), `a` becomes a symlink to outside.
  const err = (await bindSubPath(subPathOf(l, 'a/f', mounter), {
    beforeOpen: async (current) => {
      if (current !== join(l.vol, 'a')) return;
      await rename(join(l.vol, 'a'), join(l.vol, 'a.real'));
      await symlink(l.outside, join(l.vol, 'a'));
    },
  }).catch((e: unknown) => e)) as Error;
  t.equal(err.message, `error opening subpath ${join(l.vol, 'a', 'f')}: unexpected symlink found ${join(l.vol, 'a')}`);
  t.equal(mounter.binds, 0, 'nothing mounted');

  // The last component swapped: the same.
  await rm(join(l.vol, 'a'));
  await rename(join(l.vol, 'a.real'), join(l.vol, 'a'));
  const last = (await bindSubPath(subPathOf(l, 'a', mounter), {
    beforeOpen: async (current) => {
      if (current !== join(l.vol, 'a')) return;
      await rename(join(l.vol, 'a'), join(l.vol, 'a.real'));
      await symlink(l.outside, join(l.vol, 'a'));
    },
  }).catch((e: unknown) => e)) as Error;
  t.equal(last.message, `error opening subpath ${join(l.vol, 'a')}: unexpected symlink found ${join(l.vol, 'a')}`);
  t.same(await system.mountPointsUnder(l.podDir), []);
});

t.test('a symlink swapped in after the subPath is open changes nothing: the opened directory is what gets mounted', async (t) => {
  const l = await layout(t);
  const mounter = new CountingMounter();
  const target = await bindSubPath(subPathOf(l, 'a', mounter), {
    beforeMount: async () => {
      await rename(join(l.vol, 'a'), join(l.vol, 'a.real'));
      await symlink(l.outside, join(l.vol, 'a'));
    },
  });
  t.equal(mounter.binds, 1);
  t.equal(await readFile(join(target, 'f'), 'utf8'), 'inside', 'the mount shows the directory that was opened, not the symlink\'s target');
  t.equal(await readFile(join(l.vol, 'a', 'f'), 'utf8'), 'outside', 'while the path itself now leads outside');
});

t.test('a tight loop swapping a component for a symlink out of the volume never gets anything outside mounted', async (t) => {
  const l = await layout(t);
  await symlink(l.outside, join(l.vol, 'evil'));
  const mounter = new CountingMounter();
  // A separate process swaps `a` (a directory) and `evil` (a symlink to outside) as fast as it can.
  const swapper = spawn(
    process.execPath,
    [
      '-e',
      `const fs = require('node:fs'); const d = process.argv[1]; let n = 0; let stop = false;
       process.on('SIGTERM', () => { stop = true; });
       const step = () => { for (let i = 0; i < 200 && !stop; i++) {
         fs.renameSync(d + '/a', d + '/a.real'); fs.renameSync(d + '/evil', d + '/a');
         fs.renameSync(d + '/a', d + '/evil'); fs.renameSync(d + '/a.real', d + '/a'); n++; }
         if (stop) { process.stdout.write(String(n)); process.exit(0); } setImmediate(step); };
       step();`,
      l.vol,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let swaps = '';
  swapper.stdout.on('data', (chunk: Buffer) => (swaps += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => swapper.on('exit', (code) => resolve(code)));
  t.teardown(() => void swapper.kill('SIGKILL'));

  const seen = new Map<string, number>();
  let mounted = 0;
  let refused = 0;
  for (let i = 0; i < 300; i++) {
    for (const sub of ['a', 'a/f']) {
      try {
        const target = await bindSubPath(subPathOf(l, sub, mounter, i % 4));
        mounted++;
        const content = await readFile(sub === 'a' ? join(target, 'f') : target, 'utf8');
        seen.set(content, (seen.get(content) ?? 0) + 1);
        await cleanSubPaths(mounter, l.podDir, 'data');
      } catch {
        refused++;
      }
    }
  }
  swapper.kill('SIGTERM');
  t.equal(await exited, 0, 'the swapper ran until stopped');
  t.ok(Number(swaps) > 0, `the swapper swapped (${swaps} times)`);
  t.equal(mounted + refused, 600, `every attempt either mounted (${mounted}) or was refused (${refused})`);
  t.notOk(seen.has('outside'), 'no bind mount ever showed the file outside the volume');
  t.same([...seen.keys()].filter((k) => k !== 'inside'), [], 'every bind mount showed the volume\'s file');
  await cleanSubPaths(mounter, l.podDir, 'data');
  t.same(await system.mountPointsUnder(l.podDir), [], 'nothing left mounted');
});

t.test('makeMounts refuses a subPath it cannot bind-mount rather than hand over its path', async (t) => {
  const l = await layout(t);
  const pod: V1Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'uid-1' }, spec: { containers: [{ name: 'app', volumeMounts: [{ name: 'data', mountPath: '/d', subPath: 'a' }] }] } };
  const volumes = new Map([['data', { path: l.vol, readOnly: false, selinuxRelabel: false }]]);
  await t.rejects(makeMounts(pod, pod.spec!.containers[0], volumes), {
    message: 'cannot mount subPath of volumeMount "data" of container "app": makeMounts needs the pod directory and a mounter to bind-mount it safely',
  });
  const mounts = await makeMounts(pod, pod.spec!.containers[0], volumes, { podDir: l.podDir, mounter: system });
  t.equal(mounts[0].hostPath, join(l.podDir, 'volume-subpaths', 'data', 'app', '0'));
  await cleanSubPaths(system, l.podDir, 'data');
});

t.test('the volume manager: container mounts bind subPaths; the pod\'s teardown unmounts them and the pod dir goes', async (t) => {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'vm-subpath-manager-')));
  t.teardown(async () => {
    for (const m of await system.mountPointsUnder(root)) await system.unmount(m).catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  });
  const podsDir = join(root, 'pods');
  const pod: V1Pod = {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
    spec: {
      volumes: [{ name: 'scratch', emptyDir: {} }],
      containers: [
        {
          name: 'app',
          volumeMounts: [
            { name: 'scratch', mountPath: '/all' },
            { name: 'scratch', mountPath: '/logs', subPath: 'logs' },
            { name: 'scratch', mountPath: '/etc/app.conf', subPath: 'conf/app.conf' },
          ],
        },
        { name: 'sidecar', volumeMounts: [{ name: 'scratch', mountPath: '/logs', subPath: 'logs' }] },
      ],
    },
  };
  const pods = [pod];
  let stopped = false;
  const manager = new KubeletVolumeManager({
    podsDir,
    nodeName: 'node-1',
    plugins: defaultVolumePlugins(),
    mounter: system,
    pods: { getPods: () => pods },
    podState: { shouldPodContainersBeTerminating: () => stopped, shouldPodRuntimeBeRemoved: () => stopped },
    clock: new FakeClock(),
    logger: new RecordingLogger(),
  });
  t.teardown(() => manager.stop());
  await manager.start();
  await manager.waitForAttachAndMount(pod);
  const scratch = manager.getMountedVolumesForPod('uid-web').get('scratch')!.path;
  await mkdir(join(scratch, 'conf'));
  await writeFile(join(scratch, 'conf', 'app.conf'), 'k=v\n');

  const app = await manager.getContainerMounts(pod, pod.spec!.containers[0]);
  const subpaths = join(podsDir, 'uid-web', 'volume-subpaths', 'scratch');
  t.same(
    app.map((m) => [m.containerPath, m.hostPath]),
    [
      ['/all', scratch],
      ['/logs', join(subpaths, 'app', '1')],
      ['/etc/app.conf', join(subpaths, 'app', '2')],
    ],
  );
  const sidecar = await manager.getContainerMounts(pod, pod.spec!.containers[1]);
  t.same(sidecar.map((m) => m.hostPath), [join(subpaths, 'sidecar', '0')]);
  t.equal(await readFile(join(subpaths, 'app', '2'), 'utf8'), 'k=v\n');
  t.same((await system.mountPointsUnder(join(podsDir, 'uid-web', 'volume-subpaths'))).sort(), [join(subpaths, 'app', '1'), join(subpaths, 'app', '2'), join(subpaths, 'sidecar', '0')]);

  stopped = true;
  await manager.waitForUnmount(pod);
  t.same(await system.mountPointsUnder(join(podsDir, 'uid-web')), [], 'the volume\'s teardown unmounted every subPath');
  await t.rejects(stat(join(podsDir, 'uid-web', 'volume-subpaths')), { code: 'ENOENT' });
  pods.length = 0;
  await manager.cleanupOrphanedPodDirs(new Set());
  t.same(await readdir(podsDir), [], 'the pod directory is removed');
});

t.test('orphaned pod dir cleanup unmounts subPath bind mounts left behind before it removes the directory', async (t) => {
  const l = await layout(t);
  const podsDir = join(l.root, 'pods');
  const target = await bindSubPath(subPathOf(l, 'a', system));
  // A bind mount left behind (e.g. a kubelet that stopped between a volume's teardown steps); the manager
  // tracks no volume of the pod.
  const manager = new KubeletVolumeManager({
    podsDir,
    nodeName: 'node-1',
    plugins: [],
    mounter: system,
    pods: { getPods: () => [] },
    podState: { shouldPodContainersBeTerminating: () => true, shouldPodRuntimeBeRemoved: () => true },
    clock: new FakeClock(),
    logger: new RecordingLogger(),
  });
  t.equal(await mountCount(target), 1);
  await manager.cleanupOrphanedPodDirs(new Set());
  t.same(await system.mountPointsUnder(l.podDir), []);
  t.same(await readdir(podsDir), [], 'the orphaned pod directory is gone');
  t.equal(await readFile(join(l.outside, 'f'), 'utf8'), 'outside', 'nothing outside touched');
});
