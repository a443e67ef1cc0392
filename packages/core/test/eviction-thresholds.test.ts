import t from 'tap';
import {
  DEFAULT_EVICTION_HARD,
  formatEvictionThreshold,
  getThresholdQuantity,
  isHardEvictionThreshold,
  parseThresholdConfig,
  parseThresholdStatement,
  Quantity,
  type EvictionThreshold,
} from '../src/index.js';

/** Thresholds as plain data (quantities as strings) for t.same. */
const plain = (ts: EvictionThreshold[]) =>
  ts.map((th) => ({
    ...th,
    ...(th.quantity ? { quantity: th.quantity.toString() } : {}),
    ...(th.minReclaim ? { minReclaim: th.minReclaim.quantity ? { quantity: th.minReclaim.quantity.toString() } : th.minReclaim } : {}),
  }));

t.test('hard thresholds: Go defaults when undefined, none when empty', async (t) => {
  t.same(plain(parseThresholdConfig([])), [
    { signal: 'memory.available', operator: 'LessThan', quantity: '100Mi' },
    { signal: 'nodefs.available', operator: 'LessThan', percentage: Math.fround(0.1) },
    { signal: 'nodefs.inodesFree', operator: 'LessThan', percentage: Math.fround(0.05) },
    { signal: 'imagefs.available', operator: 'LessThan', percentage: Math.fround(0.15) },
  ]);
  t.same(Object.keys(DEFAULT_EVICTION_HARD), ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available']);
  t.same(parseThresholdConfig(undefined, {}), []);
  t.same(parseThresholdConfig([], new Map()), []);
  t.ok(parseThresholdConfig([]).every(isHardEvictionThreshold));
});

t.test('soft thresholds take their grace period; min reclaims attach by signal to hard and soft', async (t) => {
  const ts = parseThresholdConfig(
    [],
    { 'memory.available': '150Mi', 'nodefs.available': '0%', 'imagefs.available': '100%' },
    { 'memory.available': '300Mi', 'pid.available': '10%' },
    { 'memory.available': '1m30s', 'pid.available': '30s' },
    { 'memory.available': '0', 'pid.available': '5%' },
  );
  t.same(plain(ts), [
    { signal: 'memory.available', operator: 'LessThan', quantity: '150Mi', minReclaim: { quantity: '0' } },
    { signal: 'memory.available', operator: 'LessThan', quantity: '300Mi', gracePeriodMs: 90_000, minReclaim: { quantity: '0' } },
    { signal: 'pid.available', operator: 'LessThan', percentage: Math.fround(0.1), gracePeriodMs: 30_000, minReclaim: { percentage: Math.fround(0.05) } },
  ]);
  t.equal(isHardEvictionThreshold(ts[0]), true);
  t.equal(isHardEvictionThreshold(ts[1]), false);
  t.equal(formatEvictionThreshold(ts[1]), 'threshold(signal=memory.available, operator=LessThan, value=300Mi, gracePeriod=1m30s)');
  t.equal(formatEvictionThreshold(ts[2]), 'threshold(signal=pid.available, operator=LessThan, value=10%, gracePeriod=30s)');
});

t.test("allocatableConfig with 'pods' copies each hard memory.available threshold to allocatableMemory.available", async (t) => {
  const hard = { 'memory.available': '1Gi', 'nodefs.available': '10%' };
  const soft = { 'memory.available': '2Gi' };
  const ts = parseThresholdConfig(['pods', 'system-reserved'], hard, soft, { 'memory.available': '1m' }, { 'memory.available': '500Mi' });
  t.same(
    plain(ts).map((th) => [th.signal, th.quantity ?? th.percentage, th.gracePeriodMs ?? 0, th.minReclaim?.quantity]),
    [
      ['memory.available', '1Gi', 0, '500Mi'],
      ['nodefs.available', Math.fround(0.1), 0, undefined],
      ['memory.available', '2Gi', 60_000, '500Mi'],
      ['allocatableMemory.available', '1Gi', 0, '500Mi'],
    ],
  );
  t.equal(parseThresholdConfig(['system-reserved'], hard).length, 2, 'no copy without pods');
  t.equal(parseThresholdConfig(undefined, hard).length, 2);
});

t.test("Go's errors", async (t) => {
  t.throws(() => parseThresholdConfig([], { 'memory.free': '1Gi' }), { message: 'unsupported eviction signal memory.free' });
  t.throws(() => parseThresholdConfig([], {}, { 'memory.available': '1Gi' }), { message: 'grace period must be specified for the soft eviction threshold memory.available' });
  t.throws(() => parseThresholdConfig([], {}, { 'memory.available': '1Gi' }, { 'nodefs.available': '1m' }), {
    message: 'grace period must be specified for the soft eviction threshold memory.available',
  });
  t.throws(() => parseThresholdConfig([], {}, {}, { 'memory.bogus': '1m' }), { message: 'unsupported eviction signal memory.bogus' });
  t.throws(() => parseThresholdConfig([], {}, {}, { 'memory.available': '-1m' }), { message: 'invalid eviction grace period specified: -1m, must be a positive value' });
  t.throws(() => parseThresholdConfig([], {}, {}, { 'memory.available': 'soon' }), { message: 'time: invalid duration "soon"' });
  t.throws(() => parseThresholdConfig([], {}, {}, {}, { 'memory.bogus': '1Gi' }), { message: 'unsupported eviction signal memory.bogus' });
  t.throws(() => parseThresholdConfig([], {}, {}, {}, { 'memory.available': '-1Gi' }), { message: 'negative eviction minimum reclaim specified for memory.available' });
  t.throws(() => parseThresholdConfig([], {}, {}, {}, { 'nodefs.available': '0%' }), { message: 'eviction percentage minimum reclaim nodefs.available must be positive: 0%' });
  t.throws(() => parseThresholdConfig([], {}, {}, {}, { 'nodefs.available': '-5%' }), { message: 'eviction percentage minimum reclaim nodefs.available must be positive: -5%' });
  t.throws(() => parseThresholdConfig([], { 'nodefs.available': '150%' }), { message: 'eviction percentage threshold nodefs.available must be <= 100%: 150%' });
  t.throws(() => parseThresholdConfig([], { 'nodefs.available': '-5%' }), { message: 'eviction percentage threshold nodefs.available must be >= 0%: -5%' });
  t.throws(() => parseThresholdConfig([], { 'nodefs.available': 'x%' }), { message: 'strconv.ParseFloat: parsing "x": invalid syntax' });
  t.throws(() => parseThresholdConfig([], { 'memory.available': '0' }), { message: 'eviction threshold memory.available must be positive: 0' });
  t.throws(() => parseThresholdConfig([], { 'memory.available': '-1Mi' }), { message: 'eviction threshold memory.available must be positive: -1Mi' });
  t.throws(() => parseThresholdConfig([], { 'memory.available': '1Q' }), { message: /quantities must match|unable to parse/ });
  t.throws(() => parseThresholdConfig([], {}, { 'pid.available': '-1' }, { 'pid.available': '1m' }), { message: 'eviction threshold pid.available must be positive: -1' });
});

t.test('parseThresholdStatement and getThresholdQuantity', async (t) => {
  t.equal(parseThresholdStatement('nodefs.available', '0%'), undefined);
  t.equal(parseThresholdStatement('containerfs.available', '5%')?.signal, 'containerfs.available', 'newer signals parse');
  const pct = parseThresholdStatement('nodefs.available', '10%')!;
  t.equal(getThresholdQuantity(pct, Quantity.parse('1000')).toString(), '100');
  t.equal(getThresholdQuantity(pct, Quantity.parse('100Gi')).value(), Math.trunc(100 * 2 ** 30 * Math.fround(0.1)));
  t.equal(getThresholdQuantity(pct, undefined).isZero(), true);
  const qty = parseThresholdStatement('memory.available', '100Mi')!;
  t.equal(getThresholdQuantity(qty, Quantity.parse('1Gi')).toString(), '100Mi');
});
