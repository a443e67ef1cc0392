import t from 'tap';
import { createLogger, noopLogger } from '@kubelet-ts/core';
import { adjustableLogger, verbositySetter } from '../src/log-verbosity.js';

t.test('adjustableLogger: v(n) follows the verbosity set at run time, in derived loggers too', async (t) => {
  const lines: string[] = [];
  const logger = adjustableLogger((verbosity) => createLogger({ verbosity, sink: (line) => lines.push(line) }), 1);
  const derived = logger.with({ component: 'server' });
  t.equal(logger.v(1).enabled, true);
  t.equal(derived.v(2).enabled, false);
  derived.v(2).info('hidden');
  verbositySetter(logger)!(4);
  t.equal(derived.v(4).enabled, true, 'a logger derived before the change follows it');
  derived.v(4).info('shown');
  t.equal(logger.v(5).enabled, false);
  logger.info('always');
  t.equal(lines.length, 2);
  t.match(lines[0], /"shown" component="server"/);
  t.match(lines[1], /always/);
  t.equal(verbositySetter(noopLogger), undefined, 'another logger has no setter');
});
