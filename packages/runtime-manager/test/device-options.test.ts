// The device plugins' allocations in the CRI ContainerConfig (Go: GenerateRunContainerOptions with the container
// manager's GetResources, makeMounts, newContainerAnnotations).
import t from 'tap';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import type { DeviceRunContainerOptions } from '../src/index.js';
import { makePod, setup } from './helpers.js';

t.test('device envs, mounts, device nodes and annotations reach the container config', async (t) => {
  const opts: DeviceRunContainerOptions = {
    envs: [{ name: 'FOO_DEVICES', value: 'foo-0' }],
    mounts: [{ containerPath: '/var/foo', hostPath: '/opt/foo', readOnly: true }],
    devices: [{ pathOnHost: '/dev/zero', pathInContainer: '/dev/foo0', permissions: 'rw' }],
    annotations: [{ name: 'example.com/foo', value: 'foo-0' }, { name: 'io.kubernetes.container.restartCount', value: 'not the kubelet' }],
  };
  const asked: string[] = [];
  const { manager, runtime, backoff } = setup({
    deviceRunContainerOptionsFor: async (pod, container) => {
      asked.push(`${pod.metadata?.name}/${container.name}`);
      return opts;
    },
  });
  const pod = makePod({ containers: [{ name: 'app', env: [{ name: 'X', value: 'x' }] }] });
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const config = runtime.calls.find((c) => c.method === 'createContainer')!.args[1] as runtimeapi.ContainerConfigInit;
  t.same(asked, ['web/app']);
  t.same(config.envs?.slice(0, 2), [
    { key: 'FOO_DEVICES', value: 'foo-0' },
    { key: 'X', value: 'x' },
  ], "the device env first, then the container's");
  t.same(config.mounts?.[0], { containerPath: '/var/foo', hostPath: '/opt/foo', readonly: true, selinuxRelabel: false }, 'the device mount before the volumes');
  t.same(config.devices, [{ containerPath: '/dev/foo0', hostPath: '/dev/zero', permissions: 'rw' }]);
  t.equal(config.annotations?.['example.com/foo'], 'foo-0');
  t.equal(config.annotations?.['io.kubernetes.container.restartCount'], '0', "the kubelet's annotation wins a conflict");
});

t.test('a device manager error is CreateContainerConfigError; no devices means no devices field', async (t) => {
  {
    const { manager, runtime, backoff } = setup({
      deviceRunContainerOptionsFor: async () => {
        throw new Error('device plugin PreStartContainer rpc failed with err: boom');
      },
    });
    const result = await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
    const start = result.syncResults.find((r) => r.action === 'StartContainer')!;
    t.equal(start.error, 'CreateContainerConfigError');
    t.equal(start.message, 'device plugin PreStartContainer rpc failed with err: boom');
    t.equal(runtime.calls.filter((c) => c.method === 'createContainer').length, 0);
  }
  {
    const { manager, runtime, backoff } = setup({ deviceRunContainerOptionsFor: async () => undefined });
    await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
    const config = runtime.calls.find((c) => c.method === 'createContainer')!.args[1] as runtimeapi.ContainerConfigInit;
    t.equal(config.devices, undefined);
  }
});
