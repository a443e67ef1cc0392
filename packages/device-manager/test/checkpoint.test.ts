import t from 'tap';
import { CorruptCheckpointError, PodDevices, isExtendedResourceName, marshalCheckpoint, unmarshalCheckpoint } from '../src/index.js';

t.test('checkpoint JSON round trip, Go v1.20 and v1.21+ DeviceIDs', async (t) => {
  const devs = new PodDevices();
  devs.insert('uid', 'app', 'example.com/foo', ['b', 'a'], { envs: { A: '1' }, mounts: [{ containerPath: '/c', hostPath: '/h', readOnly: false }], devices: [], annotations: {}, cdiDevices: [] });
  const data = { PodDeviceEntries: devs.toCheckpointData(), RegisteredDevices: { 'example.com/foo': ['a', 'b', 'c'] } };
  const text = marshalCheckpoint(data);
  t.same(unmarshalCheckpoint(text), data);
  const back = new PodDevices();
  back.fromCheckpointData(unmarshalCheckpoint(text).PodDeviceEntries);
  t.same(back.deviceRunContainerOptions('uid', 'app'), { envs: [{ name: 'A', value: '1' }], mounts: [{ containerPath: '/c', hostPath: '/h', readOnly: false }], devices: [], annotations: [] });
  t.same([...back.containerDevices('uid', 'app', 'example.com/foo')!], ['a', 'b']);

  // v1.21+ keeps DeviceIDs per NUMA node.
  const parsed = JSON.parse(text);
  parsed.Data.PodDeviceEntries[0].DeviceIDs = { '-1': ['a', 'b'] };
  t.same(unmarshalCheckpoint(JSON.stringify(parsed)).PodDeviceEntries[0].DeviceIDs, ['a', 'b']);
  t.throws(() => unmarshalCheckpoint('{'), CorruptCheckpointError);
  t.throws(() => unmarshalCheckpoint(text.replace('"Checksum":', '"Checksum":1')), { message: 'checkpoint is corrupted: checksum mismatch' });
});

t.test('deviceRunContainerOptions: the first setting of a key wins across resources', async (t) => {
  const devs = new PodDevices();
  const empty = { mounts: [], devices: [], annotations: {}, cdiDevices: [] };
  devs.insert('u', 'c', 'a.com/x', ['1'], { ...empty, envs: { SHARED: 'x', X: '1' } });
  devs.insert('u', 'c', 'b.com/y', ['2'], { ...empty, envs: { SHARED: 'y', Y: '2' } });
  const conflicts: string[] = [];
  const opts = devs.deviceRunContainerOptions('u', 'c', (what, key) => conflicts.push(`${what} ${key}`));
  t.same(opts?.envs, [
    { name: 'SHARED', value: 'x' },
    { name: 'X', value: '1' },
    { name: 'Y', value: '2' },
  ]);
  t.same(conflicts, ['Environment variable SHARED']);
});

t.test('isExtendedResourceName as v1helper', async (t) => {
  for (const name of ['example.com/foo', 'nvidia.com/gpu', 'a.b/c-d.e']) t.ok(isExtendedResourceName(name), name);
  for (const name of ['cpu', 'foo', 'kubernetes.io/foo', 'requests.example.com/foo', 'example.com/', 'Example.com/foo', 'example.com/-foo']) t.notOk(isExtendedResourceName(name), name);
});
