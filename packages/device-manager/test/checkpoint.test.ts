import t from 'tap';
import { CorruptCheckpointError, PodDevices, isExtendedResourceName, marshalCheckpoint, unmarshalCheckpoint } from '../src/index.js';

t.test('checkpoint JSON round trip', async (t) => {
  const devs = new PodDevices();
  devs.insert('uid', 'app', 'example.com/foo', ['b', 'a'], { envs: { A: '1' }, mounts: [{ containerPath: '/c', hostPath: '/h', readOnly: false }], devices: [], annotations: {}, cdiDevices: [] });
  const data = { PodDeviceEntries: devs.toCheckpointData(), RegisteredDevices: { 'example.com/foo': ['a', 'b', 'c'] } };
  const text = marshalCheckpoint(data);
  t.same(unmarshalCheckpoint(text), data);
  const back = new PodDevices();
  back.fromCheckpointData(unmarshalCheckpoint(text).PodDeviceEntries);
  t.same(back.deviceRunContainerOptions('uid', 'app'), { envs: [{ name: 'A', value: '1' }], mounts: [{ containerPath: '/c', hostPath: '/h', readOnly: false }], devices: [], annotations: [] });
  t.same([...back.containerDevices('uid', 'app', 'example.com/foo')!], ['a', 'b']);

  // The checksum covers the Go types: the same ids as v1.21+'s per-NUMA map are other data.
  const parsed = JSON.parse(text);
  parsed.Data.PodDeviceEntries[0].DeviceIDs = { '-1': ['a', 'b'] };
  t.throws(() => unmarshalCheckpoint(JSON.stringify(parsed)), CorruptCheckpointError);
  t.throws(() => unmarshalCheckpoint('{'), CorruptCheckpointError);
  t.throws(() => unmarshalCheckpoint(text.replace('"Checksum":', '"Checksum":1')), { message: 'checkpoint is corrupted: checksum mismatch' });
});

// Checksums computed by Go 1.19 with go-spew 1.1.1 (hashutil.DeepHashObject + fnv32a) over the same JSON decoded into
// Go v1.20's checkpoint types (DeviceIDs []string) and v1.21+'s (DeviceIDs checkpoint.DevicesPerNUMA).
t.test("the checksum is Go's: checkpoints of Go's kubelet read here, and ours read there", async (t) => {
  const goV120 =
    '{"Data":{"PodDeviceEntries":[{"PodUID":"u1","ContainerName":"app","ResourceName":"example.com/foo","DeviceIDs":["a","b"],"AllocResp":"CgYKAUESATE="},' +
    '{"PodUID":"u2","ContainerName":"c","ResourceName":"r.io/x","DeviceIDs":null,"AllocResp":""}],"RegisteredDevices":{"z.com/foo":["a","b","c"],"x.io/y":[],"y.io/n":null}},"Checksum":1028985578}';
  t.same(unmarshalCheckpoint(goV120).PodDeviceEntries.map((e) => e.DeviceIDs), [['a', 'b'], []]);
  t.same(unmarshalCheckpoint('{"Data":{"PodDeviceEntries":null,"RegisteredDevices":null},"Checksum":1944006890}'), { PodDeviceEntries: [], RegisteredDevices: {} });
  t.same(unmarshalCheckpoint('{"Data":{"PodDeviceEntries":[],"RegisteredDevices":{}},"Checksum":2932075448}'), { PodDeviceEntries: [], RegisteredDevices: {} });
  const goV121 =
    '{"Data":{"PodDeviceEntries":[{"PodUID":"u1","ContainerName":"app","ResourceName":"example.com/foo","DeviceIDs":{"10":["c"],"-1":["a","b"],"2":["d"]},"AllocResp":"CgYKAUESATE="}],' +
    '"RegisteredDevices":{"z.com/foo":["a","b","c"]}},"Checksum":4278005157}';
  t.same([...unmarshalCheckpoint(goV121).PodDeviceEntries[0].DeviceIDs].sort(), ['a', 'b', 'c', 'd']);
  const ours = JSON.parse(
    marshalCheckpoint({ PodDeviceEntries: [{ PodUID: 'u', ContainerName: 'c', ResourceName: 'example.com/foo', DeviceIDs: ['d1'], AllocResp: 'CgYKAUESATE=' }], RegisteredDevices: { 'example.com/foo': ['d1', 'd2'] } }),
  );
  t.equal(ours.Checksum, 824820765, "Go's checksum of what we write");
  const empty = JSON.parse(marshalCheckpoint({ PodDeviceEntries: [], RegisteredDevices: {} }));
  t.same(empty, { Data: { PodDeviceEntries: null, RegisteredDevices: {} }, Checksum: 3467439661 }, 'no entries: null, as Go writes its nil slice');
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
