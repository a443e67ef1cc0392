// The soak's arithmetic (scenario 7): metric values read from Prometheus text and growth rates by least squares.
import t from 'tap';
import { metricValue, slope } from '../src/soak.js';

const text = [
  '# HELP nodejs_heap_size_used_bytes Process heap size used from Node.js in bytes.',
  '# TYPE nodejs_heap_size_used_bytes gauge',
  'nodejs_heap_size_used_bytes 52428800',
  'nodejs_active_resources{type="Timeout"} 12',
  'nodejs_active_resources{type="TCPWRAP"} 3',
  'nodejs_active_resources_total 15',
].join('\n');

t.test('metricValue reads a plain metric, a labelled one, and NaN for a missing one', async (t) => {
  t.equal(metricValue(text, 'nodejs_heap_size_used_bytes'), 52428800);
  t.equal(metricValue(text, 'nodejs_active_resources', 'type="Timeout"'), 12);
  t.equal(metricValue(text, 'nodejs_active_resources_total'), 15, 'a longer name with the same prefix is its own metric');
  t.ok(Number.isNaN(metricValue(text, 'nodejs_eventloop_lag_p99_seconds')));
});

t.test('slope: the least-squares growth per unit of x', async (t) => {
  t.equal(slope([[0, 10], [1, 12], [2, 14]]), 2);
  t.equal(slope([[0, 5], [1, 5], [2, 5]]), 0, 'flat');
  t.ok(Number.isNaN(slope([[0, 1]])), 'one point has no slope');
});
