import t from 'tap';
import { parseMeminfo } from '../src/index.js';

t.test('parseMeminfo gives bytes for kB fields and counts as they stand', async (t) => {
  const values = parseMeminfo('MemTotal:       16364424 kB\nMemFree:    4 kB\nHugePages_Total:       3\nnot a field\n');
  t.equal(values.get('MemTotal'), 16364424 * 1024);
  t.equal(values.get('MemFree'), 4 * 1024);
  t.equal(values.get('HugePages_Total'), 3);
  t.equal(parseMeminfo('nothing').get('MemTotal'), undefined);
});
