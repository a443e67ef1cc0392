import t from 'tap';
import type { V1Container } from '@kubernetes/client-node';
import {
  buildContainerLogsPath,
  containerOomScoreAdjust,
  formatPod,
  getContainerInfoFromAnnotations,
  getContainerInfoFromLabels,
  getContainerSpec,
  hashContainer,
  newContainerAnnotations,
  sysctlToDotsSeparator,
} from '../src/index.js';
import { buildContainerLogsDirectory, buildPodLogsDirectory, expand, getPodQOS, milliCpuToQuota, milliCpuToShares } from '@kubelet-ts/core';
import { makePod } from './helpers.js';

t.test('log paths', async (t) => {
  t.equal(buildPodLogsDirectory('/var/log/pods', 'ns', 'web', 'u1'), '/var/log/pods/ns_web_u1');
  t.equal(buildPodLogsDirectory('/var/log/pods/', 'ns', 'web', 'u1'), '/var/log/pods/ns_web_u1');
  t.equal(buildContainerLogsDirectory('/var/log/pods', 'ns', 'web', 'u1', 'app'), '/var/log/pods/ns_web_u1/app');
  t.equal(buildContainerLogsPath('app', 3), 'app/3.log');
});

t.test('hashContainer: deterministic, changes with image or command, not with resources or probes', async (t) => {
  const base: V1Container = { name: 'app', image: 'busybox:1.36', command: ['sleep', '1'], env: [{ name: 'A', value: '1' }] };
  const hash = hashContainer(base);
  t.match(hash, /^[0-9a-f]{1,8}$/);
  t.equal(hashContainer(structuredClone(base)), hash, 'same spec, same hash');
  t.equal(hashContainer({ env: [{ value: '1', name: 'A' }], command: ['sleep', '1'], image: 'busybox:1.36', name: 'app' }), hash, 'key order does not matter');
  t.not(hashContainer({ ...base, image: 'busybox:1.37' }), hash, 'image');
  t.not(hashContainer({ ...base, command: ['sleep', '2'] }), hash, 'command');
  t.not(hashContainer({ ...base, args: ['x'] }), hash, 'args');
  t.not(hashContainer({ ...base, env: [{ name: 'A', value: '2' }] }), hash, 'env');
  t.equal(hashContainer({ ...base, resources: { limits: { cpu: '1' } } }), hash, 'resources are not hashed');
  t.equal(hashContainer({ ...base, livenessProbe: { exec: { command: ['true'] } } }), hash, 'probes are not hashed');
  t.equal(hashContainer({ ...base, imagePullPolicy: 'Always', terminationMessagePath: '/dev/termination-log' }), hash, 'defaulted fields are not hashed');
  t.equal(hashContainer({ ...base, ports: [] }), hash, 'an empty list equals an absent one');
});

t.test('container annotations round-trip through getContainerInfoFromAnnotations', async (t) => {
  const pod = makePod({ terminationGracePeriodSeconds: 40 });
  pod.metadata!.deletionGracePeriodSeconds = 10;
  const container: V1Container = {
    name: 'app',
    image: 'busybox:1.36',
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'FallbackToLogsOnError',
    lifecycle: { preStop: { exec: { command: ['drain'] } } },
    ports: [{ containerPort: 80, name: 'http' }],
  };
  const annotations = newContainerAnnotations(container, pod, 4);
  const info = getContainerInfoFromAnnotations(annotations);
  t.same(info, {
    hash: hashContainer(container),
    restartCount: 4,
    podDeletionGracePeriod: 10,
    podTerminationGracePeriod: 40,
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'FallbackToLogsOnError',
    preStopHandler: { exec: { command: ['drain'] } },
    containerPorts: [{ containerPort: 80, name: 'http' }],
  });
  t.same(getContainerInfoFromAnnotations({ 'io.kubernetes.container.restartCount': 'x', 'io.kubernetes.container.ports': '{' }), {
    hash: '',
    restartCount: 0,
    podDeletionGracePeriod: undefined,
    podTerminationGracePeriod: undefined,
    terminationMessagePath: '',
    terminationMessagePolicy: '',
    preStopHandler: undefined,
    containerPorts: undefined,
  }, 'malformed values read as absent');
  t.same(getContainerInfoFromLabels({ 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.uid': 'u' }), { containerName: '', podName: 'web', podNamespace: '', podUid: 'u' });
});

t.test('formatPod and getContainerSpec', async (t) => {
  const pod = makePod({ initContainers: [{ name: 'init' }] });
  pod.spec!.ephemeralContainers = [{ name: 'debug' }];
  t.equal(formatPod(pod), 'web_default(uid-1)');
  t.equal(getContainerSpec(pod, 'app')?.name, 'app');
  t.equal(getContainerSpec(pod, 'init')?.name, 'init');
  t.equal(getContainerSpec(pod, 'debug')?.name, 'debug');
  t.equal(getContainerSpec(pod, 'nope'), undefined);
});

t.test('$(VAR) expansion', async (t) => {
  const env = new Map([['A', 'x'], ['B', 'y']]);
  const m = (n: string) => env.get(n);
  t.equal(expand('$(A)-$(B)', m), 'x-y');
  t.equal(expand('$$(A)', m), '$(A)', 'escaped');
  t.equal(expand('$(C)', m), '$(C)', 'unknown stays');
  t.equal(expand('$(A', m), '$(A', 'unterminated stays');
  t.equal(expand('cost: $5 and $', m), 'cost: $5 and $');
});

t.test('shares, quota, QoS and OOM score', async (t) => {
  t.equal(milliCpuToShares(0), 2);
  t.equal(milliCpuToShares(1), 2);
  t.equal(milliCpuToShares(1000), 1024);
  t.equal(milliCpuToShares(10_000_000), 262144);
  t.equal(milliCpuToQuota(0, 100_000), 0);
  t.equal(milliCpuToQuota(500, 100_000), 50_000);
  t.equal(milliCpuToQuota(1, 100_000), 1000);

  const bestEffort = makePod();
  t.equal(getPodQOS(bestEffort), 'BestEffort');
  t.equal(containerOomScoreAdjust(bestEffort, bestEffort.spec!.containers[0], 8e9), 1000);
  const guaranteed = makePod({ containers: [{ name: 'app', resources: { limits: { cpu: '1', memory: '1Gi' } } }] });
  t.equal(getPodQOS(guaranteed), 'Guaranteed');
  t.equal(containerOomScoreAdjust(guaranteed, guaranteed.spec!.containers[0], 8e9), -997);
  const burstable = makePod({ containers: [{ name: 'app', resources: { requests: { memory: '2G' } } }] });
  t.equal(getPodQOS(burstable), 'Burstable');
  t.equal(containerOomScoreAdjust(burstable, burstable.spec!.containers[0], 8e9), 750);
});

t.test('sysctl names use dots', async (t) => {
  t.equal(sysctlToDotsSeparator('kernel/shm_rmid_forced'), 'kernel.shm_rmid_forced');
  t.equal(sysctlToDotsSeparator('net.ipv4.conf.eno2/100.rp_filter'), 'net.ipv4.conf.eno2/100.rp_filter');
  t.equal(sysctlToDotsSeparator('net/ipv4/conf/eno2.100/rp_filter'), 'net.ipv4.conf.eno2/100.rp_filter');
});
