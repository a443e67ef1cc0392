// Simulated pods' IPs: one each from a range, freed with the sandbox; the node's pod CIDR wins once set.
import t from 'tap';
import { join } from 'node:path';
import { LocalRuntime } from '../src/index.js';
import { PodIPAllocator } from '../src/pod-ips.js';
import { tempDir } from './helpers.js';

t.test('the allocator hands out host addresses after the gateway, reuses released ones, and says when full', async (t) => {
  const ips = new PodIPAllocator('10.1.2.77/30');
  t.equal(ips.cidr, '10.1.2.76/30', 'the network of the range');
  t.equal(ips.allocate(), '10.1.2.78');
  t.equal(ips.allocate(), undefined, 'a /30 has one address after the gateway');
  ips.release('10.1.2.78');
  t.equal(ips.allocate(), '10.1.2.78');
  const wide = new PodIPAllocator('10.128.0.0/24');
  const taken = Array.from({ length: 253 }, () => wide.allocate());
  t.same([taken[0], taken[252]], ['10.128.0.2', '10.128.0.254']);
  t.equal(new Set(taken).size, 253, 'all distinct');
  t.equal(wide.allocate(), undefined);
  for (const bad of ['10.0.0.0', '10.0.0.0/31', '300.0.0.0/24', 'fd00::/64']) {
    t.throws(() => new PodIPAllocator(bad), { message: new RegExp(`invalid pod CIDR "${bad.replace(/[./]/g, '\\$&')}"`) }, bad);
  }
});

t.test('simulated sandboxes get distinct IPs from podCIDR, freed on removal; the node\'s pod CIDR is used once set', async (t) => {
  const dir = tempDir(t);
  const runtime = new LocalRuntime({ mode: 'simulated', rootDir: join(dir, 'root'), simulated: { podCIDR: '10.200.3.0/24' } });
  const { runtimeService: rs } = await runtime.startInProcess();
  t.teardown(() => runtime.stop());
  const run = (name: string, hostNetwork = false) =>
    rs.runPodSandbox({ metadata: { name, namespace: 'default', uid: `uid-${name}`, attempt: 0 }, linux: hostNetwork ? { securityContext: { namespaceOptions: { network: 'NODE' } } } : undefined });
  const ip = async (id: string) => (await rs.podSandboxStatus(id)).status?.network?.ip;
  const a = await run('a');
  const b = await run('b');
  t.same([await ip(a), await ip(b)], ['10.200.3.2', '10.200.3.3']);
  t.equal(await ip(await run('host', true)), '', 'host network: no pod IP of its own');
  await rs.stopPodSandbox(a);
  await rs.removePodSandbox(a);
  await rs.updateRuntimeConfig({ networkConfig: { podCidr: '10.244.7.0/24' } });
  t.equal(await ip(await run('c')), '10.244.7.2', 'the node\'s pod CIDR');
  t.equal(await ip(b), '10.200.3.3', 'a running sandbox keeps its IP');
});

t.test('without a range (and in process mode) pods share the host\'s loopback, as before', async (t) => {
  const dir = tempDir(t);
  const runtime = new LocalRuntime({ mode: 'simulated', rootDir: join(dir, 'root') });
  const { runtimeService: rs } = await runtime.startInProcess();
  t.teardown(() => runtime.stop());
  const id = await rs.runPodSandbox({ metadata: { name: 'a', namespace: 'default', uid: 'uid-a', attempt: 0 } });
  t.equal((await rs.podSandboxStatus(id)).status?.network?.ip, '127.0.0.1');
  t.throws(() => new LocalRuntime({ mode: 'simulated', rootDir: join(dir, 'r2'), simulated: { podCIDR: 'nope' } }), { message: /invalid pod CIDR "nope"/ });
});
