// makeDevices: a container's volumeDevices as CRI devices (Go: makeBlockVolumes).
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { makeDevices } from '../src/container-devices.js';
import { FakeVolumeManager } from '../src/testing.js';
import type { MountedVolume } from '../src/types.js';

const pod: V1Pod = { metadata: { name: 'web', namespace: 'default', uid: 'uid-1' }, spec: { containers: [] } };

const volumes = new Map<string, MountedVolume>([
  ['disk', { path: '/pods/uid-1/volumeDevices/kubernetes.io~csi/pv1', readOnly: false, selinuxRelabel: false, devicePath: '/pods/uid-1/volumeDevices/kubernetes.io~csi/pv1/dev' }],
  ['ro-disk', { path: '/pods/uid-1/volumeDevices/kubernetes.io~csi/pv2', readOnly: true, selinuxRelabel: false, devicePath: '/dev/loop7' }],
  ['files', { path: '/pods/uid-1/volumes/kubernetes.io~csi/pv3/mount', readOnly: false, selinuxRelabel: true }],
]);

t.test("each volumeDevices entry becomes a device of the volume's mapped block device", async (t) => {
  const container = { name: 'app', volumeDevices: [{ name: 'disk', devicePath: '/dev/xvda' }, { name: 'ro-disk', devicePath: '/dev/xvdb' }] };
  t.same(makeDevices(pod, container, volumes, new RecordingLogger()), [
    { containerPath: '/dev/xvda', hostPath: '/pods/uid-1/volumeDevices/kubernetes.io~csi/pv1/dev', permissions: 'mrw' },
    { containerPath: '/dev/xvdb', hostPath: '/dev/loop7', permissions: 'r' },
  ]);
  t.same(makeDevices(pod, { name: 'app' }, volumes), [], 'a container without volumeDevices has none');
  t.same(makeDevices(pod, { name: 'app', volumeDevices: [] }, volumes), []);
});

t.test("Go's errors: a relative path, a volume not set up or without a device", async (t) => {
  const logger = new RecordingLogger();
  t.throws(() => makeDevices(pod, { name: 'app', volumeDevices: [{ name: 'disk', devicePath: 'dev/xvda' }] }, volumes, logger), {
    message: 'error DevicePath `dev/xvda` must be an absolute path',
  });
  t.throws(() => makeDevices(pod, { name: 'app', volumeDevices: [{ name: 'missing', devicePath: '/dev/xvda' }] }, volumes, logger), {
    message: 'cannot find volume "missing" to pass into container "app"',
  });
  t.throws(() => makeDevices(pod, { name: 'app', volumeDevices: [{ name: 'files', devicePath: '/dev/xvda' }] }, volumes, logger), {
    message: 'cannot find volume "files" to pass into container "app"',
  });
  t.ok(logger.messages('error').includes('Block volume cannot be satisfied for container, because the volume is missing or the volume mapper is nil'));
});

t.test('FakeVolumeManager answers getVolumeStats from volumeStats', async (t) => {
  const fake = new FakeVolumeManager();
  t.same(await fake.getVolumeStats('uid-1'), []);
  fake.volumeStats.set('uid-1', [{ volumeName: 'data', pvcRef: { name: 'c', namespace: 'default' }, stats: { usedBytes: 5 } }]);
  const stats = await fake.getVolumeStats('uid-1');
  t.same(stats, [{ volumeName: 'data', pvcRef: { name: 'c', namespace: 'default' }, stats: { usedBytes: 5 } }]);
  stats[0].stats.usedBytes = 9;
  t.equal(fake.volumeStats.get('uid-1')![0].stats.usedBytes, 5, 'a copy');
});

t.test('FakeVolumeManager maps the volumes in volumeDevices to a device path', async (t) => {
  const fake = new FakeVolumeManager('/fake');
  const blockPod: V1Pod = {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
    spec: {
      containers: [{ name: 'app', volumeDevices: [{ name: 'disk', devicePath: '/dev/xvda' }], volumeMounts: [{ name: 'files', mountPath: '/f' }] }],
      volumes: [{ name: 'disk', persistentVolumeClaim: { claimName: 'd' } }, { name: 'files', emptyDir: {} }],
    },
  };
  await fake.waitForAttachAndMount(blockPod);
  const mounted = fake.getMountedVolumesForPod('uid-1');
  t.equal(mounted.get('files')?.devicePath, undefined);
  t.same(makeDevices(blockPod, blockPod.spec!.containers[0], mounted), [{ containerPath: '/dev/xvda', hostPath: '/fake/uid-1/disk/dev', permissions: 'mrw' }]);
});
