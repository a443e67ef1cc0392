import t from 'tap';
import {
  escapeSystemdCgroupName,
  expandSlice,
  isSystemdStyleName,
  parseSystemdToCgroupName,
  systemdCgroupPath,
  systemdUnitInfo,
  toSystemdName,
  unescapeSystemdCgroupName,
} from '../src/index.js';

t.test('toSystemdName: Go TestCgroupNameToSystemd', async (t) => {
  const cases: Array<[string[], string]> = [
    [[], '/'],
    [[''], '/'],
    [['Burstable'], '/Burstable.slice'],
    [['Burstable', 'pod-123'], '/Burstable.slice/Burstable-pod_123.slice'],
    [['BestEffort', 'pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d'], '/BestEffort.slice/BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice'],
    [['kubepods'], '/kubepods.slice'],
    [['kubepods', 'burstable', 'pod1234-abcd-5678-efgh'], '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd_5678_efgh.slice'],
  ];
  for (const [input, expected] of cases) t.equal(toSystemdName(input), expected, JSON.stringify(input));
});

t.test('toSystemdName basenames: Go TestCgroupNameToSystemdBasename', async (t) => {
  const base = (name: string[]) => {
    const full = toSystemdName(name);
    return full === '/' ? '/' : full.slice(full.lastIndexOf('/') + 1);
  };
  const cases: Array<[string[], string]> = [
    [[], '/'],
    [['system'], 'system.slice'],
    [['system', 'Burstable'], 'system-Burstable.slice'],
    [['Burstable', 'pod-123'], 'Burstable-pod_123.slice'],
    [['test', 'a', 'b'], 'test-a-b.slice'],
    [['test', 'a', 'b', 'Burstable'], 'test-a-b-Burstable.slice'],
    [['Burstable'], 'Burstable.slice'],
    [['BestEffort', 'pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d'], 'BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice'],
  ];
  for (const [input, expected] of cases) t.equal(base(input), expected, JSON.stringify(input));
});

t.test('toSystemdName throws where Go panics (an empty component)', async (t) => {
  t.throws(() => toSystemdName(['kubepods', '']), { message: 'error converting cgroup name [kubepods ] to systemd format: invalid slice name: kubepods-.slice' });
  t.throws(() => toSystemdName(['', 'a']), { message: 'error converting cgroup name [ a] to systemd format: invalid slice name: -a.slice' });
});

t.test('expandSlice: libcontainer ExpandSlice', async (t) => {
  t.equal(expandSlice('-.slice'), '/');
  t.equal(expandSlice('foo.slice'), '/foo.slice');
  t.equal(expandSlice('test-a-b.slice'), '/test.slice/test-a.slice/test-a-b.slice');
  t.equal(expandSlice('kubepods-besteffort-pod1_2.slice'), '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice');
  for (const bad of ['', '.slice', 'foo', '.slic', 'foo.scope', 'a/b.slice', '/foo.slice', 'test--a.slice', '-test.slice', 'test-.slice']) {
    t.throws(() => expandSlice(bad), { message: `invalid slice name: ${bad}` }, JSON.stringify(bad));
  }
});

t.test('parseSystemdToCgroupName: the last element, unescaped', async (t) => {
  t.same(parseSystemdToCgroupName('/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice'), ['kubepods', 'burstable', 'pod1234-abcd']);
  t.same(parseSystemdToCgroupName('kubepods-besteffort.slice'), ['kubepods', 'besteffort']);
  t.same(parseSystemdToCgroupName('/system.slice'), ['system']);
  t.same(parseSystemdToCgroupName('/kubepods.slice/'), ['kubepods'], 'a trailing slash is ignored (path.Base)');
  t.same(parseSystemdToCgroupName('/kubepods.slice/cri-containerd-abc.scope'), ['cri', 'containerd', 'abc.scope'], 'a non-slice is split all the same');
  t.same(parseSystemdToCgroupName('/'), ['/'], 'Go: path.Base("/") is "/"');
  t.same(parseSystemdToCgroupName(''), ['.'], 'Go: path.Base("") is "."');
  for (const name of [['kubepods'], ['kubepods', 'burstable'], ['kubepods', 'besteffort', 'pod6c1a4e95-6bb6-11e6-bc26-28d2444e470d']]) {
    t.same(parseSystemdToCgroupName(toSystemdName(name)), name, `round trip ${name.join('/')}`);
  }
});

t.test('escaping, style check, path components and unit info', async (t) => {
  t.equal(escapeSystemdCgroupName('pod-1-2'), 'pod_1_2');
  t.equal(unescapeSystemdCgroupName('pod_1_2'), 'pod-1-2');
  t.ok(isSystemdStyleName('kubepods.slice'));
  t.notOk(isSystemdStyleName('/kubepods'));
  t.same(systemdCgroupPath([]), []);
  t.same(systemdCgroupPath(['kubepods', 'burstable', 'pod1-2']), ['kubepods.slice', 'kubepods-burstable.slice', 'kubepods-burstable-pod1_2.slice']);
  // Go: updateSystemdCgroupInfo.
  t.same(systemdUnitInfo(['kubepods']), { parent: '-.slice', name: 'kubepods.slice' });
  t.same(systemdUnitInfo(['kubepods', 'burstable']), { parent: 'kubepods.slice', name: 'kubepods-burstable.slice' });
  t.same(systemdUnitInfo(['kubepods', 'burstable', 'pod1-2']), { parent: 'kubepods-burstable.slice', name: 'kubepods-burstable-pod1_2.slice' });
  t.same(systemdUnitInfo([]), { parent: '-.slice', name: '' });
});
