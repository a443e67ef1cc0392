import t from 'tap';
import { parseThresholdConfig, Quantity } from '@kubelet-ts/core';
import {
  allocatableFrom,
  hardEvictionReservation,
  isExtendedResourceName,
  nodeAllocatableReservation,
  parseLangleSeparatedMapStringString,
  parseResourceList,
  type ResourceList,
} from '../src/index.js';

/** --eviction-hard as the node status manager parses it: the flag form through core's parseThresholdConfig. */
const parseEvictionHard = (flag?: string) => parseThresholdConfig([], flag === undefined ? undefined : parseLangleSeparatedMapStringString(flag));

const text = (rl: ResourceList): Record<string, string> => Object.fromEntries([...rl].map(([k, v]) => [k, v.toString()]));

t.test('parseResourceList: flag and map forms', async (t) => {
  t.same(text(parseResourceList('cpu=100m,memory=100Mi,ephemeral-storage=1Gi,pid=100')), {
    cpu: '100m',
    memory: '100Mi',
    'ephemeral-storage': '1Gi',
    pid: '100',
  });
  t.same(text(parseResourceList(' cpu = 1 , ,memory=1G')), { cpu: '1', memory: '1G' }, 'spaces trimmed, empty items skipped');
  t.same(text(parseResourceList({ cpu: '200m' })), { cpu: '200m' });
  t.same(text(parseResourceList(undefined)), {});
  t.same(text(parseResourceList('')), {});
});

t.test('parseResourceList: errors name the bad token', async (t) => {
  t.throws(() => parseResourceList('cpu=100m,gpu=1'), { message: 'cannot reserve "gpu" resource' });
  t.throws(() => parseResourceList('memory=lots'), {
    message: `failed to parse quantity "lots" for "memory" resource: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
  });
  t.throws(() => parseResourceList('memory=100K'), { message: `failed to parse quantity "100K" for "memory" resource: unable to parse quantity's suffix` });
  t.throws(() => parseResourceList('cpu=-1'), { message: 'resource quantity for "cpu" cannot be negative: -1' });
  t.throws(() => parseResourceList('cpu'), { message: 'malformed pair, expect string=string: "cpu"' });
});

t.test('--eviction-hard flag form: Go defaults when unset, none when empty, 0% and 100% ignored, malformed pairs', async (t) => {
  t.same(
    parseEvictionHard().map((d) => [d.signal, d.quantity?.toString() ?? `${d.percentage}`]),
    [
      ['memory.available', '100Mi'],
      ['nodefs.available', String(Math.fround(0.1))],
      ['nodefs.inodesFree', String(Math.fround(0.05))],
      ['imagefs.available', String(Math.fround(0.15))],
    ],
  );
  t.same(parseEvictionHard(''), []);
  const custom = parseEvictionHard('memory.available<1Gi,nodefs.available<0%,imagefs.available<100%,pid.available<5%');
  t.same(
    custom.map((c) => c.signal),
    ['memory.available', 'pid.available'],
    '0% and 100% are ignored',
  );
  t.equal(custom[0].operator, 'LessThan');
  t.throws(() => parseEvictionHard('memory.available=1Gi'), { message: 'malformed pair, expect string<string: "memory.available=1Gi"' });
  t.throws(() => parseEvictionHard('memory.free<1Gi'), { message: 'unsupported eviction signal memory.free' });
});

t.test('allocatable = capacity - system reserved - kube reserved - hard eviction, never negative', async (t) => {
  const capacity: ResourceList = new Map([
    ['cpu', Quantity.fromMilli(4000)],
    ['memory', Quantity.fromValue(16364424 * 1024, 'BinarySI')],
    ['ephemeral-storage', Quantity.fromValue(101203873792, 'BinarySI')],
  ]);
  const reservation = nodeAllocatableReservation(capacity, {
    kubeReserved: parseResourceList('cpu=100m,memory=256Mi'),
    systemReserved: parseResourceList('cpu=150m,memory=100Mi,ephemeral-storage=1Gi,pid=1000'),
    evictionHard: parseEvictionHard(),
  });
  t.same(text(reservation), { cpu: '250m', memory: '456Mi', 'ephemeral-storage': '11194129354' }, 'pid is not in the capacity: not reserved');
  const alloc = allocatableFrom(new Map([...capacity, ['pods', Quantity.fromValue(110)]]), reservation);
  t.same(text(alloc), { cpu: '3750m', memory: '15897480Ki', 'ephemeral-storage': '90009744438', pods: '110' });

  // Go: int64(float64(capacity) * float64(float32(10)/100)).
  const ev = hardEvictionReservation(parseEvictionHard('nodefs.available<10%'), capacity);
  t.equal(ev.get('ephemeral-storage')!.value(), Math.trunc(101203873792 * Math.fround(0.1)));
  t.equal(hardEvictionReservation([], capacity).size, 0);

  const tiny = allocatableFrom(new Map([['memory', Quantity.parse('50Mi')]]), new Map([['memory', Quantity.parse('100Mi')]]));
  t.equal(tiny.get('memory')!.toString(), '0', 'clamped at zero');
  t.same(text(nodeAllocatableReservation(capacity, {})), {}, 'nothing reserved: empty');
});

t.test('extended resource names', async (t) => {
  t.ok(isExtendedResourceName('example.com/dongle'));
  t.ok(isExtendedResourceName('nvidia.com/gpu'));
  t.notOk(isExtendedResourceName('cpu'));
  t.notOk(isExtendedResourceName('hugepages-2Mi'));
  t.notOk(isExtendedResourceName('kubernetes.io/foo'));
  t.notOk(isExtendedResourceName('requests.example.com/x'));
});
