import t from 'tap';
import { SimulatedCgroupReader, SimulatedMounter, simulatedMachineInfo, simulatedNodeCapacity, simulatedProbe } from '../src/fleet/simulated-node.js';
import { resolveFleetSpec } from '../src/fleet/fleet-spec.js';
import { fleetPodCIDR } from '../src/fleet/fleet.js';

const spec = resolveFleetSpec(new Map([['nodes', '2'], ['node-cpu', '1500m'], ['node-memory', '2Gi']]));
const host = { numCores: 64, memoryCapacity: 256 * 1024 ** 3, machineID: 'host', systemUUID: 'host-uuid', bootID: 'boot', kernelVersion: '6.1.0', osImage: 'Debian GNU/Linux 12 (bookworm)', rootfsCapacity: 1e12, rootfsInodes: 1e6 };

t.test('a node\'s machine: its own CPUs, memory and ids, the host\'s kernel, OS and filesystem', async (t) => {
  const first = await simulatedMachineInfo(spec.nodes[0]!, async () => host)();
  const second = await simulatedMachineInfo(spec.nodes[1]!, async () => host)();
  t.same([first.numCores, first.memoryCapacity], [1.5, 2 * 1024 ** 3]);
  t.same([first.kernelVersion, first.osImage, first.bootID, first.rootfsCapacity], [host.kernelVersion, host.osImage, host.bootID, host.rootfsCapacity]);
  t.not(first.machineID, second.machineID, 'each node its own machine id');
  t.match(first.systemUUID, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  t.equal((await simulatedMachineInfo(spec.nodes[0]!, async () => host)()).machineID, first.machineID, 'stable across the node\'s lives');
  t.same(simulatedNodeCapacity(spec.nodes[0]!, { milliCpu: 64000, memoryBytes: 1, pids: 4194304 }), { milliCpu: 1500, memoryBytes: 2 * 1024 ** 3, pids: 4194304 });
});

t.test('the node\'s root cgroup is its simulated containers\' use; there is no other cgroup', async (t) => {
  let usage = { cpuUsageCoreNanoSeconds: 5e9, cpuNanoCores: 2.5e8, memoryWorkingSetBytes: 900 * 1024 ** 2 };
  const reader = new SimulatedCgroupReader({ simulatedUsage: () => usage }, 1234);
  t.equal(await reader.readCpuUsageNanos('/'), 5e9);
  t.same(await reader.readMemory('/'), { usageBytes: 900 * 1024 ** 2, workingSetBytes: 900 * 1024 ** 2, rssBytes: 900 * 1024 ** 2, pageFaults: 0, majorPageFaults: 0 });
  usage = { cpuUsageCoreNanoSeconds: 6e9, cpuNanoCores: 0, memoryWorkingSetBytes: 0 };
  t.equal((await reader.readMemory('/')).workingSetBytes, 0, 'read each time, never cached');
  t.equal(await reader.creationTimeMs('/'), 1234);
  await t.rejects(reader.readMemory('/kubepods'), { message: 'a simulated node has no cgroup "/kubepods", only its root "/"' });
});

t.test('mounts are recorded, never made', async (t) => {
  const mounter = new SimulatedMounter();
  await mounter.mountTmpfs('/r/pods/u/volumes/kubernetes.io~secret/s');
  await mounter.bindMount('/src', '/r/pods/u/volumes/x/y');
  await mounter.bindMount('/src', '/r/pods/other');
  t.equal(await mounter.isMountPoint('/r/pods/u/volumes/kubernetes.io~secret/s'), true);
  t.equal(await mounter.isMountPoint('/r/pods/u'), false);
  t.same(await mounter.mountPointsUnder('/r/pods/u'), ['/r/pods/u/volumes/kubernetes.io~secret/s', '/r/pods/u/volumes/x/y']);
  await mounter.unmount('/r/pods/u/volumes/x/y');
  await mounter.unmount('/not/mounted');
  t.same(await mounter.mountPointsUnder('/r/pods/u/'), ['/r/pods/u/volumes/kubernetes.io~secret/s']);
});

t.test('probes are answered by the runtime, by container id and probe type', async (t) => {
  const asked: string[] = [];
  const probe = simulatedProbe({
    simulatedProbeResult: (id, type) => {
      asked.push(`${id}/${type}`);
      return type === 'liveness' ? 'failure' : 'success';
    },
  });
  t.same(probe('readiness', {}, {}, 'containerd://abc'), { result: 'success', output: '' });
  t.same(probe('liveness', {}, {}, 'containerd://abc'), { result: 'failure', output: 'simulated liveness probe failure' });
  t.same(asked, ['abc/readiness', 'abc/liveness'], 'the runtime\'s id, without the runtime type');
});

t.test('each node\'s pods get IPs of their own range, distinct across the fleet', async (t) => {
  t.same([fleetPodCIDR(0), fleetPodCIDR(1), fleetPodCIDR(255), fleetPodCIDR(256), fleetPodCIDR(32767)], ['10.128.0.0/24', '10.128.1.0/24', '10.128.255.0/24', '10.129.0.0/24', '10.255.255.0/24']);
  t.equal(fleetPodCIDR(32768), undefined, 'beyond 10.128.0.0/9: the node\'s pod CIDR or loopback');
});
