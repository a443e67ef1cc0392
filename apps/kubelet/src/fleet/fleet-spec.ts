// `kubelet fleet`'s own flags and the fleet file: which nodes to run, with what capacity, where. Every other flag is
// a kubelet flag, parsed by parseFlags and applied to every node.
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseDuration, quantityMilliValue, quantityValue } from '@kubelet-ts/core';
import { FlagError } from '../flags.js';

/** A group of identical nodes (the fleet file's `groups[]`, or the one group the --node-* flags describe). */
export interface FleetNodeGroup {
  /** The group's name (label kubelet-ts.io/fleet-group). */
  name: string;
  /** Its nodes are named <nodePrefix>-<i>. */
  nodePrefix: string;
  count: number;
  milliCpu: number;
  memoryBytes: number;
  pods: number;
  labels: Record<string, string>;
  /** key=value:Effect, as --register-with-taints takes them. */
  taints: string[];
}

export interface FleetNodeSpec {
  name: string;
  /** Position in the fleet: the node's kubelet server listens on basePort + index. */
  index: number;
  group: FleetNodeGroup;
}

export interface FleetSpec {
  nodes: FleetNodeSpec[];
  rootDir: string;
  /** Node i's server port is basePort + i; 0: each node's server takes any free port. */
  basePort: number;
  /** The control API's port on 127.0.0.1; 0: none. */
  controlPort: number;
  simulatedStartDelayMs: number;
  simulatedPullBytesPerSecond: number;
}

export const FLEET_DEFAULTS = {
  nodes: 10,
  namePrefix: 'fleet',
  cpu: '4',
  memory: '8Gi',
  pods: 110,
  rootDir: '/var/lib/kubelet-fleet',
  basePort: 20250,
  controlPort: 10260,
} as const;

export const FLEET_HELP = `Usage: kubelet fleet --kubeconfig FILE [fleet flags] [kubelet flags]

Runs many kubelets in one process, each a real kubelet (pod workers, PLEG, probes, status, lease, admission,
eviction, its own server) for a node of its own, on a simulated container runtime reached in-process. Every kubelet
flag given applies to every node. The kubeconfig's identity must be allowed to act for every node (the Node
authorizer confines system:node:<name> to its own node): an admin, or a user bound to the system:node ClusterRole.

Fleet flags:
      --nodes int                          nodes to run, named <prefix>-0 ... (default ${FLEET_DEFAULTS.nodes})
      --node-name-prefix string            (default "${FLEET_DEFAULTS.namePrefix}")
      --node-cpu quantity                  CPU capacity of each node (default "${FLEET_DEFAULTS.cpu}")
      --node-memory quantity               memory capacity of each node (default "${FLEET_DEFAULTS.memory}")
      --node-pods int                      pod capacity of each node (default ${FLEET_DEFAULTS.pods})
      --fleet-config string                YAML or JSON node groups, instead of --nodes and --node-*:
                                           {"groups": [{"name": "big", "count": 5, "cpu": "8", "memory": "32Gi",
                                           "pods": 110, "labels": {"k": "v"}, "taints": ["k=v:NoSchedule"]}]}
      --fleet-root-dir string              node X's root dir is <dir>/X (default "${FLEET_DEFAULTS.rootDir}")
      --fleet-base-port int                node i's kubelet server listens on 127.0.0.1:<port+i>; 0: any free
                                           port for each (default ${FLEET_DEFAULTS.basePort})
      --fleet-control-port int             the control API on 127.0.0.1; 0 disables it (default ${FLEET_DEFAULTS.controlPort})
                                           GET /nodes, POST /nodes/<name>/kill, POST /nodes/<name>/revive
      --simulated-start-delay duration     start latency of every container (default 0s)
      --simulated-pull-bandwidth quantity  bytes per second of image pulls; 0 pulls at once (default 0)
`;

const FLEET_FLAGS = new Set([
  'nodes',
  'node-name-prefix',
  'node-cpu',
  'node-memory',
  'node-pods',
  'fleet-config',
  'fleet-root-dir',
  'fleet-base-port',
  'fleet-control-port',
  'simulated-start-delay',
  'simulated-pull-bandwidth',
]);

/** Splits the fleet's own flags from the kubelet flags (which go to parseFlags unchanged). */
export function splitFleetArgs(argv: string[]): { fleet: Map<string, string>; kubelet: string[]; help: boolean } {
  const fleet = new Map<string, string>();
  const kubelet: string[] = [];
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-h' || arg === '--help') {
      help = true;
      continue;
    }
    const match = /^--([a-z-]+)(?:=(.*))?$/s.exec(arg);
    if (!match || !FLEET_FLAGS.has(match[1]!)) {
      kubelet.push(arg);
      continue;
    }
    let value = match[2];
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: --${match[1]}`);
      value = argv[++i]!;
    }
    fleet.set(match[1]!, value);
  }
  return { fleet, kubelet, help };
}

function integer(flag: string, text: string, min: number, max: number): number {
  if (!/^\d+$/.test(text.trim())) throw new FlagError(`invalid argument ${JSON.stringify(text)} for "--${flag}" flag: want an integer`);
  const value = Number.parseInt(text, 10);
  if (value < min || value > max) throw new FlagError(`invalid argument ${JSON.stringify(text)} for "--${flag}" flag: want ${min} to ${max}`);
  return value;
}

function quantity(where: string, text: unknown, milli: boolean): number {
  try {
    const value = milli ? quantityMilliValue(text as string) : quantityValue(text as string);
    if (!(value > 0)) throw new Error('must be positive');
    return value;
  } catch (error) {
    throw new FlagError(`invalid quantity ${JSON.stringify(text)} for ${where}: ${(error as Error).message}`);
  }
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The fleet file's groups, each checked with errors naming the file and the group's field. */
export function parseFleetFile(path: string, text: string): FleetNodeGroup[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    throw new FlagError(`fleet config ${path}: ${(error as Error).message}`);
  }
  const groups = (doc as { groups?: unknown } | null)?.groups;
  if (!Array.isArray(groups) || groups.length === 0) throw new FlagError(`fleet config ${path}: want a non-empty "groups" list`);
  const seen = new Set<string>();
  return groups.map((raw: Record<string, unknown>, i) => {
    const where = (field: string) => `${path} groups[${i}].${field}`;
    if (typeof raw !== 'object' || raw === null) throw new FlagError(`fleet config ${path} groups[${i}]: want an object`);
    const known = new Set(['name', 'count', 'cpu', 'memory', 'pods', 'labels', 'taints']);
    for (const key of Object.keys(raw)) if (!known.has(key)) throw new FlagError(`fleet config ${where(key)}: unknown field`);
    const name = raw.name;
    if (typeof name !== 'string' || !NODE_NAME.test(name) || name.length > 40) throw new FlagError(`fleet config ${where('name')}: want a lower-case DNS label (it prefixes the node names), got ${JSON.stringify(name)}`);
    if (seen.has(name)) throw new FlagError(`fleet config ${where('name')}: group ${JSON.stringify(name)} given twice`);
    seen.add(name);
    const count = raw.count;
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > 100_000) throw new FlagError(`fleet config ${where('count')}: want an integer 0 to 100000, got ${JSON.stringify(count)}`);
    const pods = raw.pods ?? FLEET_DEFAULTS.pods;
    if (typeof pods !== 'number' || !Number.isInteger(pods) || pods < 1) throw new FlagError(`fleet config ${where('pods')}: want a positive integer, got ${JSON.stringify(pods)}`);
    const labels = raw.labels ?? {};
    if (typeof labels !== 'object' || labels === null || Array.isArray(labels) || Object.values(labels).some((v) => typeof v !== 'string')) {
      throw new FlagError(`fleet config ${where('labels')}: want a map of strings`);
    }
    const taints = raw.taints ?? [];
    if (!Array.isArray(taints) || taints.some((t) => typeof t !== 'string' || !/^[^=:\s]+(=[^:\s]*)?:(NoSchedule|PreferNoSchedule|NoExecute)$/.test(t))) {
      throw new FlagError(`fleet config ${where('taints')}: want a list of key=value:Effect (Effect NoSchedule, PreferNoSchedule or NoExecute)`);
    }
    return {
      name,
      nodePrefix: name,
      count,
      milliCpu: quantity(where('cpu'), raw.cpu ?? FLEET_DEFAULTS.cpu, true),
      memoryBytes: quantity(where('memory'), raw.memory ?? FLEET_DEFAULTS.memory, false),
      pods,
      labels: labels as Record<string, string>,
      taints: taints as string[],
    };
  });
}

/** The fleet's nodes and settings from its flags (cwd resolves relative paths). */
export function resolveFleetSpec(flags: Map<string, string>, cwd = process.cwd(), readFile = (path: string) => readFileSync(path, 'utf8')): FleetSpec {
  const abs = (path: string) => (isAbsolute(path) ? path : resolve(cwd, path));
  const prefix = flags.get('node-name-prefix') ?? FLEET_DEFAULTS.namePrefix;
  if (!NODE_NAME.test(prefix) || prefix.length > 40) throw new FlagError(`invalid argument ${JSON.stringify(prefix)} for "--node-name-prefix" flag: want a lower-case DNS label`);
  let groups: FleetNodeGroup[];
  const file = flags.get('fleet-config');
  if (file !== undefined) {
    for (const flag of ['nodes', 'node-cpu', 'node-memory', 'node-pods']) {
      if (flags.has(flag)) throw new FlagError(`--${flag} and --fleet-config cannot be given together: the fleet file says each group's nodes`);
    }
    let text: string;
    try {
      text = readFile(abs(file));
    } catch (error) {
      throw new FlagError(`failed to read fleet config ${abs(file)}: ${(error as Error).message}`);
    }
    // A group's nodes are named <prefix>-<group>-<i>.
    groups = parseFleetFile(abs(file), text).map((group) => ({ ...group, nodePrefix: `${prefix}-${group.name}` }));
  } else {
    groups = [
      {
        name: 'default',
        nodePrefix: prefix,
        count: integer('nodes', flags.get('nodes') ?? `${FLEET_DEFAULTS.nodes}`, 0, 100_000),
        milliCpu: quantity('"--node-cpu" flag', flags.get('node-cpu') ?? FLEET_DEFAULTS.cpu, true),
        memoryBytes: quantity('"--node-memory" flag', flags.get('node-memory') ?? FLEET_DEFAULTS.memory, false),
        pods: integer('node-pods', flags.get('node-pods') ?? `${FLEET_DEFAULTS.pods}`, 1, 100_000),
        labels: {},
        taints: [],
      },
    ];
  }
  const nodes: FleetNodeSpec[] = [];
  for (const group of groups) {
    for (let i = 0; i < group.count; i++) nodes.push({ name: `${group.nodePrefix}-${i}`, index: nodes.length, group });
  }
  const basePort = integer('fleet-base-port', flags.get('fleet-base-port') ?? `${FLEET_DEFAULTS.basePort}`, 0, 65535);
  if (basePort > 0 && basePort + nodes.length - 1 > 65535) throw new FlagError(`--fleet-base-port=${basePort} leaves no port for ${nodes.length} nodes (the last would be ${basePort + nodes.length - 1})`);
  let startDelay = 0;
  const delayText = flags.get('simulated-start-delay');
  if (delayText !== undefined) {
    try {
      startDelay = parseDuration(delayText);
    } catch (error) {
      throw new FlagError(`invalid argument ${JSON.stringify(delayText)} for "--simulated-start-delay" flag: ${(error as Error).message}`);
    }
  }
  const bandwidth = flags.get('simulated-pull-bandwidth');
  return {
    nodes,
    rootDir: abs(flags.get('fleet-root-dir') ?? FLEET_DEFAULTS.rootDir),
    basePort,
    controlPort: integer('fleet-control-port', flags.get('fleet-control-port') ?? `${FLEET_DEFAULTS.controlPort}`, 0, 65535),
    simulatedStartDelayMs: startDelay,
    simulatedPullBytesPerSecond: bandwidth === undefined || bandwidth === '0' ? 0 : quantity('"--simulated-pull-bandwidth" flag', bandwidth, false),
  };
}
