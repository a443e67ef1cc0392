import t from 'tap';
import { LineSplitter, MAX_LOG_LINE_BYTES } from '../src/log-writer.js';

const split = (chunks: (string | Buffer)[]) => {
  const records: [string, string][] = [];
  const splitter = new LineSplitter((tag, text) => records.push([tag, text]));
  for (const chunk of chunks) splitter.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  splitter.end();
  return records;
};

t.test('lines across chunks, empty lines, trailing partial line', async (t) => {
  t.same(split(['he', 'llo\nwor', 'ld\n\nlast']), [
    ['F', 'hello'],
    ['F', 'world'],
    ['F', ''],
    ['F', 'last'],
  ]);
  t.same(split([]), []);
});

t.test('long lines become P records of at most 16 KiB', async (t) => {
  const long = 'a'.repeat(MAX_LOG_LINE_BYTES * 2 + 10);
  t.same(
    split([long.slice(0, 5000), long.slice(5000), '\n']).map(([tag, text]) => [tag, text.length]),
    [
      ['P', MAX_LOG_LINE_BYTES],
      ['P', MAX_LOG_LINE_BYTES],
      ['F', 10],
    ],
  );
});

t.test('a split never cuts a UTF-8 character', async (t) => {
  const text = 'é'.repeat(MAX_LOG_LINE_BYTES); // 2 bytes each
  const records = split([`x${text}\n`]);
  t.ok(records.every(([, s]) => !s.includes('\ufffd')), 'no replacement characters');
  t.equal(records.map(([, s]) => s).join(''), `x${text}`);
  t.equal(records.at(-1)?.[0], 'F');
});
