import t from 'tap';
import { SignalShutdownTrigger } from '../src/index.js';

// SIGPWR and SIGWINCH: nobody else in the test process listens to them (SIGWINCH is ignored by default).
t.test('a real SIGPWR to this process starts the shutdown; the cancel signal cancels it; stop() removes the listeners', async (t) => {
  const before = process.listenerCount('SIGPWR');
  const trigger = new SignalShutdownTrigger({ cancelSignal: 'SIGWINCH' });
  t.equal(trigger.name, 'signal SIGPWR');
  const events: boolean[] = [];
  let wake: () => void = () => undefined;
  await trigger.start((shuttingDown) => {
    events.push(shuttingDown);
    wake();
  });
  t.equal(process.listenerCount('SIGPWR'), before + 1);
  // Signal watchers do not keep the event loop alive: a ref'd handle does until the signals arrived.
  const keepAlive = setInterval(() => undefined, 60_000);
  await new Promise<void>((resolve) => {
    wake = resolve;
    process.kill(process.pid, 'SIGPWR');
  });
  await new Promise<void>((resolve) => {
    wake = resolve;
    process.kill(process.pid, 'SIGWINCH');
  });
  clearInterval(keepAlive);
  t.same(events, [true, false]);
  await trigger.acquireInhibitLock();
  await trigger.releaseInhibitLock();
  await trigger.stop();
  t.equal(process.listenerCount('SIGPWR'), before);
  t.equal(process.listenerCount('SIGWINCH'), 0);
});

t.test('signals the kubelet or Node use are refused', async (t) => {
  t.throws(() => new SignalShutdownTrigger({ signal: 'SIGTERM' }), /SIGTERM cannot signal a node shutdown/);
  t.throws(() => new SignalShutdownTrigger({ signal: 'SIGUSR1' }), /SIGUSR1/);
  t.throws(() => new SignalShutdownTrigger({ signal: 'SIGUSR2', cancelSignal: 'SIGUSR2' }), /must differ/);
});
