import t from 'tap';
import { FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { ContainerGC, ContainerGCPolicyError, DEFAULT_CONTAINER_GC_POLICY, containerGCPolicyWithDefaults, validateContainerGCPolicy } from '../src/index.js';
import { FakePodStateProvider } from '../src/testing.js';

const killContainer = async (): Promise<void> => {};

t.test('defaults are Go\'s', async (t) => {
  t.same(DEFAULT_CONTAINER_GC_POLICY, { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 });
  t.same(containerGCPolicyWithDefaults({ maxContainers: 100 }), { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: 100 });
  const gc = new ContainerGC({ runtimeService: new FakeRuntimeService(), podStateProvider: new FakePodStateProvider(), killContainer });
  t.same(gc.policy, DEFAULT_CONTAINER_GC_POLICY);
  t.equal(gc.podLogsRootDirectory, '/var/log/pods');
});

t.test('validation', async (t) => {
  t.throws(() => validateContainerGCPolicy(containerGCPolicyWithDefaults({ minAgeMs: -60_000 })), {
    name: 'ContainerGCPolicyError',
    message: 'invalid minimum garbage collection age: -1m0s',
  });
  t.throws(() => validateContainerGCPolicy(containerGCPolicyWithDefaults({ maxPerPodContainer: 1.5 })), ContainerGCPolicyError);
  t.throws(() => validateContainerGCPolicy(containerGCPolicyWithDefaults({ maxContainers: Number.NaN })), ContainerGCPolicyError);
  t.throws(
    () => new ContainerGC({ runtimeService: new FakeRuntimeService(), podStateProvider: new FakePodStateProvider(), killContainer, policy: { minAgeMs: -1 } }),
    { message: 'invalid minimum garbage collection age: -1ms' },
  );
  t.doesNotThrow(() => validateContainerGCPolicy({ minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 0 }));
});
