import t from 'tap';
import { FLEET_DEFAULTS, parseFleetFile, resolveFleetSpec, splitFleetArgs } from '../src/fleet/fleet-spec.js';
import { FLEET_TAINT, fleetNodeConfig } from '../src/fleet/fleet.js';
import { parseFlags, resolveConfig } from '../src/index.js';

const GiB = 1024 ** 3;

t.test('the fleet flags are split from the kubelet flags, in both spellings', async (t) => {
  const args = splitFleetArgs(['--nodes', '3', '--kubeconfig=/k', '--node-memory=2Gi', '-v', '2', '--fleet-base-port=30000']);
  t.same([...args.fleet], [['nodes', '3'], ['node-memory', '2Gi'], ['fleet-base-port', '30000']]);
  t.same(args.kubelet, ['--kubeconfig=/k', '-v', '2']);
  t.equal(args.help, false);
  t.equal(splitFleetArgs(['--help']).help, true);
  t.throws(() => splitFleetArgs(['--nodes']), { message: 'flag needs an argument: --nodes' });
});

t.test('--nodes and --node-*: one group of identical nodes, named <prefix>-<i>, ports from the base port', async (t) => {
  const spec = resolveFleetSpec(new Map([['nodes', '3'], ['node-cpu', '500m'], ['node-memory', '2Gi'], ['node-pods', '20'], ['node-name-prefix', 'sim']]));
  t.same(spec.nodes.map((n) => [n.name, n.index]), [['sim-0', 0], ['sim-1', 1], ['sim-2', 2]]);
  t.same(spec.nodes[0]!.group, { name: 'default', nodePrefix: 'sim', count: 3, milliCpu: 500, memoryBytes: 2 * GiB, pods: 20, labels: {}, taints: [] });
  t.equal(spec.basePort, FLEET_DEFAULTS.basePort);
  t.equal(spec.controlPort, FLEET_DEFAULTS.controlPort);
  t.equal(spec.rootDir, FLEET_DEFAULTS.rootDir);
  const defaults = resolveFleetSpec(new Map());
  t.equal(defaults.nodes.length, FLEET_DEFAULTS.nodes);
  t.same([defaults.nodes[0]!.group.milliCpu, defaults.nodes[0]!.group.memoryBytes, defaults.nodes[0]!.group.pods], [4000, 8 * GiB, 110]);
});

t.test('bad fleet flags fail with the flag named', async (t) => {
  t.throws(() => resolveFleetSpec(new Map([['nodes', 'many']])), { message: 'invalid argument "many" for "--nodes" flag: want an integer' });
  t.throws(() => resolveFleetSpec(new Map([['node-memory', 'lots']])), { message: /invalid quantity "lots" for "--node-memory" flag/ });
  t.throws(() => resolveFleetSpec(new Map([['node-cpu', '0']])), { message: /invalid quantity "0" for "--node-cpu" flag: must be positive/ });
  t.throws(() => resolveFleetSpec(new Map([['node-name-prefix', 'Bad_Name']])), { message: /"--node-name-prefix" flag: want a lower-case DNS label/ });
  t.throws(() => resolveFleetSpec(new Map([['nodes', '10'], ['fleet-base-port', '65530']])), { message: '--fleet-base-port=65530 leaves no port for 10 nodes (the last would be 65539)' });
  t.throws(() => resolveFleetSpec(new Map([['simulated-start-delay', 'soon']])), { message: /"--simulated-start-delay" flag/ });
  t.throws(() => resolveFleetSpec(new Map([['fleet-config', '/f'], ['nodes', '3']]), '/', () => ''), { message: /--nodes and --fleet-config cannot be given together/ });
  t.throws(() => resolveFleetSpec(new Map([['fleet-config', '/nope.yaml']]), '/', () => { throw new Error('ENOENT: no such file'); }), { message: 'failed to read fleet config /nope.yaml: ENOENT: no such file' });
  const spec = resolveFleetSpec(new Map([['simulated-start-delay', '250ms'], ['simulated-pull-bandwidth', '100Mi']]));
  t.same([spec.simulatedStartDelayMs, spec.simulatedPullBytesPerSecond], [250, 100 * 1024 * 1024]);
});

t.test('a fleet file: groups with their own capacity, labels and taints; node names <prefix>-<group>-<i>', async (t) => {
  const yaml = `groups:
- name: big
  count: 2
  cpu: "8"
  memory: 32Gi
  labels: {size: big}
  taints: ["dedicated=big:NoSchedule"]
- name: small
  count: 1
  memory: 1Gi
  pods: 10
`;
  const spec = resolveFleetSpec(new Map([['fleet-config', 'fleet.yaml']]), '/etc', (path) => (path === '/etc/fleet.yaml' ? yaml : ''));
  t.same(spec.nodes.map((n) => n.name), ['fleet-big-0', 'fleet-big-1', 'fleet-small-0']);
  t.same(spec.nodes[0]!.group, { name: 'big', nodePrefix: 'fleet-big', count: 2, milliCpu: 8000, memoryBytes: 32 * GiB, pods: 110, labels: { size: 'big' }, taints: ['dedicated=big:NoSchedule'] });
  t.same([spec.nodes[2]!.group.milliCpu, spec.nodes[2]!.group.memoryBytes, spec.nodes[2]!.group.pods], [4000, GiB, 10]);
});

t.test('bad fleet files fail with the file and the field named', async (t) => {
  const bad = (text: string) => () => parseFleetFile('/f.yaml', text);
  t.throws(bad('groups: ['), { message: /^fleet config \/f.yaml: / });
  t.throws(bad('nodes: 3'), { message: 'fleet config /f.yaml: want a non-empty "groups" list' });
  t.throws(bad('groups: [{name: a, count: 1, colour: red}]'), { message: 'fleet config /f.yaml groups[0].colour: unknown field' });
  t.throws(bad('groups: [{name: A, count: 1}]'), { message: /groups\[0\].name: want a lower-case DNS label/ });
  t.throws(bad('groups: [{name: a, count: 1}, {name: a, count: 2}]'), { message: 'fleet config /f.yaml groups[1].name: group "a" given twice' });
  t.throws(bad('groups: [{name: a, count: -1}]'), { message: /groups\[0\].count: want an integer 0 to 100000, got -1/ });
  t.throws(bad('groups: [{name: a, count: 1, memory: much}]'), { message: /invalid quantity "much" for \/f.yaml groups\[0\].memory/ });
  t.throws(bad('groups: [{name: a, count: 1, taints: ["k=v"]}]'), { message: /groups\[0\].taints: want a list of key=value:Effect/ });
  t.throws(bad('groups: [{name: a, count: 1, labels: {k: 1}}]'), { message: /groups\[0\].labels: want a map of strings/ });
});

t.test('a node\'s configuration: the template with its identity, loopback server, labels, taints and no machine parts', async (t) => {
  const template = resolveConfig(parseFlags(['--kubeconfig=/k', '--node-labels=team=a', '--register-with-taints=x=y:PreferNoSchedule', '--eviction-hard=memory.available<300Mi'], () => undefined));
  const spec = resolveFleetSpec(new Map([['nodes', '2'], ['fleet-root-dir', '/fleet'], ['fleet-base-port', '30000']]));
  const config = fleetNodeConfig(template, spec, spec.nodes[1]!, { certFile: '/fleet/pki/kubelet.crt', keyFile: '/fleet/pki/kubelet.key' });
  t.equal(config.nodeName, 'fleet-1');
  t.same([config.rootDir, config.podLogsDir, config.certDir], ['/fleet/fleet-1', '/fleet/fleet-1/logs', '/fleet/fleet-1/pki']);
  t.same([config.address, config.nodeIP, config.port, config.healthzPort, config.readOnlyPort], ['127.0.0.1', undefined, 30001, 0, 0]);
  t.same(config.nodeLabels, { team: 'a', 'kubelet-ts.io/fleet': 'true', 'kubelet-ts.io/fleet-group': 'default' });
  t.equal(config.registerWithTaints, `x=y:PreferNoSchedule,${FLEET_TAINT}`);
  t.same([config.cgroupsPerQOS, config.enforceNodeAllocatable, config.shutdownGracePeriodMs, config.rotateCertificates], [false, [], 0, false]);
  t.same([config.tlsCertFile, config.tlsPrivateKeyFile], ['/fleet/pki/kubelet.crt', '/fleet/pki/kubelet.key'], 'one serving pair for the fleet');
  t.equal(config.evictionHard, template.evictionHard, 'the kubelet flags apply to every node');
  const ownTaint = fleetNodeConfig(resolveConfig(parseFlags(['--kubeconfig=/k', '--register-with-taints=kubelet-ts.io/fleet=mine:NoExecute'])), spec, spec.nodes[0]!, undefined);
  t.equal(ownTaint.registerWithTaints, 'kubelet-ts.io/fleet=mine:NoExecute', 'the operator\'s own fleet taint replaces the default');
});
