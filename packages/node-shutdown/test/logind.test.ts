// The logind trigger against a private dbus-daemon (Debian's dbus package) with a fake org.freedesktop.login1 and
// org.freedesktop.systemd1 served by our own D-Bus client. What cannot run here: the real logind, and an Inhibit reply
// carrying a file descriptor (neither our client nor Node can pass one), so the lock holder is faked in the trigger
// tests and systemd-inhibit is checked for the call it makes.
import t, { type Test } from 'tap';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { pollUntil } from '@kubelet-ts/core';
import { FakeClock, startPrivateBus } from '@kubelet-ts/core/testing';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DBusConnection,
  DBusError,
  LogindShutdownTrigger,
  SystemdInhibitLock,
  decodeMessage,
  defaultShutdownTrigger,
  encodeMessage,
  type DBusMessage,
  type InhibitLock,
} from '../src/index.js';

async function privateBus(t: Test) {
  return startPrivateBus(t, { prefix: 'node-shutdown-dbus-' });
}

/** A fake logind (and systemd's KillUnit) on the bus: InhibitDelayMaxUSec comes from its drop-in directory on SIGHUP. */
async function fakeLogind(t: Test, address: string, options: { delayUSec: bigint; confDir: string; honourDropIn?: boolean }) {
  const connection = await DBusConnection.connect(address);
  t.teardown(() => connection.close());
  const calls: DBusMessage[] = [];
  let delay = options.delayUSec;
  connection.onMethodCall((call) => {
    calls.push(call);
    if (call.interface === 'org.freedesktop.DBus.Properties' && call.member === 'Get' && call.body[1] === 'InhibitDelayMaxUSec') {
      connection.reply(call, 'v', [{ signature: 't', value: delay }]);
    } else if (call.member === 'KillUnit') {
      if (options.honourDropIn ?? true) {
        const seconds = /InhibitDelayMaxSec=(\d+)/.exec(readFileSync(join(options.confDir, '99-kubelet.conf'), 'utf8'))?.[1];
        if (seconds) delay = BigInt(seconds) * 1_000_000n;
      }
      connection.reply(call);
    } else if (call.member === 'Inhibit') {
      connection.replyError(call, 'org.freedesktop.DBus.Error.NotSupported', 'the fake logind cannot pass a file descriptor');
    } else {
      connection.replyError(call, 'org.freedesktop.DBus.Error.UnknownMethod', `no ${call.member}`);
    }
  });
  for (const name of ['org.freedesktop.login1', 'org.freedesktop.systemd1']) {
    t.equal(await connection.requestName(name), 1, `owns ${name}`);
  }
  const prepareForShutdown = (active: boolean) => connection.emitSignal('/org/freedesktop/login1', 'org.freedesktop.login1.Manager', 'PrepareForShutdown', 'b', [active]);
  return { connection, calls, prepareForShutdown };
}

class RecordingLock implements InhibitLock {
  readonly calls: string[] = [];
  async acquire(): Promise<void> {
    this.calls.push('acquire');
  }
  async release(): Promise<void> {
    this.calls.push('release');
  }
}

t.test('the D-Bus client is re-exported from @kubelet-ts/core as before', async (t) => {
  const core = await import('@kubelet-ts/core');
  t.equal(DBusConnection, core.DBusConnection);
  t.equal(DBusError, core.DBusError);
  t.equal(encodeMessage, core.encodeMessage);
  t.equal(decodeMessage, core.decodeMessage);
});

t.test('logind: raises InhibitDelayMaxSec through the drop-in and SIGHUP, holds the lock, follows PrepareForShutdown', async (t) => {
  const { address, dir } = await privateBus(t);
  const confDir = join(dir, 'logind.conf.d');
  const logind = await fakeLogind(t, address, { delayUSec: 5_000_000n, confDir });
  const lock = new RecordingLock();
  const trigger = new LogindShutdownTrigger({ shutdownGracePeriodMs: 30_000, busAddress: address, lock, logindConfigDirectory: confDir });
  t.equal(trigger.name, 'logind');
  const events: boolean[] = [];
  let wake: () => void = () => undefined;
  await trigger.start((shuttingDown) => {
    events.push(shuttingDown);
    wake();
  });
  t.equal(readFileSync(join(confDir, '99-kubelet.conf'), 'utf8'), '# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=30\n', "Go's drop-in");
  const kill = logind.calls.find((c) => c.member === 'KillUnit')!;
  t.match(kill, { destination: 'org.freedesktop.systemd1', path: '/org/freedesktop/systemd1', interface: 'org.freedesktop.systemd1.Manager', body: ['systemd-logind.service', 'all', 1] }, 'SIGHUP to systemd-logind');
  t.equal(logind.calls.filter((c) => c.member === 'Get').length, 2, 'the delay is read again after the reload');
  t.same(lock.calls, ['acquire']);

  await new Promise<void>((resolve) => {
    wake = resolve;
    logind.prepareForShutdown(true);
  });
  await new Promise<void>((resolve) => {
    wake = resolve;
    logind.prepareForShutdown(false);
  });
  t.same(events, [true, false]);
  await trigger.releaseInhibitLock();
  await trigger.acquireInhibitLock();
  await trigger.stop();
  t.same(lock.calls, ['acquire', 'release', 'acquire', 'release']);
});

t.test('logind: when the bus goes away, the trigger watches again after 1 s (Go: dbusReconnectPeriod) with a new lock', async (t) => {
  const { address, dir, restart } = await privateBus(t);
  const confDir = join(dir, 'logind.conf.d');
  await fakeLogind(t, address, { delayUSec: 60_000_000n, confDir });
  const clock = new FakeClock();
  const lock = new RecordingLock();
  const trigger = new LogindShutdownTrigger({ shutdownGracePeriodMs: 30_000, busAddress: address, lock, logindConfigDirectory: confDir, clock });
  t.teardown(() => trigger.stop());
  const events: boolean[] = [];
  await trigger.start((shuttingDown) => events.push(shuttingDown));
  await restart();
  await pollUntil(() => clock.pendingTimers() === 1, 10, 10_000);
  t.equal(clock.nextTimerAt(), clock.now() + 1000, 'a restart is scheduled 1 s later');
  const logind = await fakeLogind(t, address, { delayUSec: 60_000_000n, confDir });
  clock.step(1000);
  await pollUntil(() => lock.calls.length === 3, 10, 10_000);
  t.same(lock.calls, ['acquire', 'release', 'acquire'], 'the lock is taken again from the new logind');
  // The match is added just after the lock: signal until the trigger hears one.
  await pollUntil(() => {
    if (events.length === 0) logind.prepareForShutdown(true);
    return events.length > 0;
  }, 10, 10_000);
  t.equal(events[0], true, 'PrepareForShutdown from the new bus is followed');
  await trigger.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('logind: a delay already long enough is left alone', async (t) => {
  const { address, dir } = await privateBus(t);
  const confDir = join(dir, 'logind.conf.d');
  const logind = await fakeLogind(t, address, { delayUSec: 60_000_000n, confDir });
  const trigger = new LogindShutdownTrigger({ shutdownGracePeriodMs: 30_000, busAddress: address, lock: new RecordingLock(), logindConfigDirectory: confDir });
  await trigger.start(() => undefined);
  t.notOk(logind.calls.some((c) => c.member === 'KillUnit'));
  await trigger.stop();
});

t.test('logind: a reload that does not raise the delay fails start() with Go\'s message and releases everything', async (t) => {
  const { address, dir } = await privateBus(t);
  const confDir = join(dir, 'logind.conf.d');
  await fakeLogind(t, address, { delayUSec: 5_000_000n, confDir, honourDropIn: false });
  const lock = new RecordingLock();
  const trigger = new LogindShutdownTrigger({ shutdownGracePeriodMs: 30_000, busAddress: address, lock, logindConfigDirectory: confDir });
  await t.rejects(trigger.start(() => undefined), {
    message:
      'node shutdown manager was unable to update logind InhibitDelayMaxSec to 30s (ShutdownGracePeriod), current value of InhibitDelayMaxSec (5s) is less than requested ShutdownGracePeriod',
  });
  t.same(lock.calls, ['release'], 'never acquired; released on the way out');
});

t.test('systemd-inhibit asks logind for a delay lock on shutdown with Go\'s who and why', async (t) => {
  const { address, dir } = await privateBus(t);
  const logind = await fakeLogind(t, address, { delayUSec: 0n, confDir: join(dir, 'none') });
  const lock = new SystemdInhibitLock({ env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address } });
  await t.rejects(lock.acquire(), /systemd-inhibit exited \(1\) without the lock: .*cannot pass a file descriptor/);
  const inhibit = logind.calls.find((c) => c.member === 'Inhibit');
  t.match(inhibit, { interface: 'org.freedesktop.login1.Manager', path: '/org/freedesktop/login1', body: ['shutdown', 'kubelet', 'Kubelet needs time to handle node shutdown', 'delay'] });
});

t.test('the lock holder keeps its child until released', async (t) => {
  // A stand-in for systemd-inhibit with logind's lock granted: it runs the command it is given.
  const dir = mkdtempSync(join(tmpdir(), 'node-shutdown-inhibit-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const fake = join(dir, 'systemd-inhibit');
  writeFileSync(fake, `#!/bin/sh\necho "$@" > ${join(dir, 'args')}\nshift 4\nexec "$@"\n`);
  chmodSync(fake, 0o755);
  const lock = new SystemdInhibitLock({ command: fake });
  await lock.acquire();
  t.equal(readFileSync(join(dir, 'args'), 'utf8').split(' /bin/sh')[0], '--what=shutdown --who=kubelet --why=Kubelet needs time to handle node shutdown --mode=delay');
  await lock.acquire();
  await lock.release();
  await lock.release();
  t.pass('released; a second release is a no-op');
});

t.test('the default trigger: the signal without a system bus socket, and when logind does not answer', async (t) => {
  const before = process.listenerCount('SIGUSR2');
  const none = defaultShutdownTrigger({ shutdownGracePeriodMs: 30_000, busAddress: 'unix:path=/nonexistent/system_bus_socket', signal: 'SIGUSR2' });
  await none.start(() => undefined);
  t.equal(none.name, 'signal SIGUSR2');
  await none.stop();
  const { address } = await privateBus(t);
  const silent = defaultShutdownTrigger({ shutdownGracePeriodMs: 30_000, busAddress: address, signal: 'SIGUSR2' });
  await silent.start(() => undefined);
  t.equal(silent.name, 'signal SIGUSR2', 'no org.freedesktop.login1 on the bus: the signal');
  await silent.stop();
  t.equal(process.listenerCount('SIGUSR2'), before, 'no listener left');
});
