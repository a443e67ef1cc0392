import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DBusConnection, formatDuration, defaultLogger, realClock, systemBusAddress, type Clock, type DBusMessage, type Logger, type TimerHandle } from '@kubelet-ts/core';
import type { ShutdownTrigger } from './trigger.js';

const LOGIND_SERVICE = 'org.freedesktop.login1';
const LOGIND_OBJECT = '/org/freedesktop/login1';
const LOGIND_INTERFACE = 'org.freedesktop.login1.Manager';
/** Go: the inhibitor's who/why/what/mode. */
export const INHIBIT_WHO = 'kubelet';
export const INHIBIT_WHY = 'Kubelet needs time to handle node shutdown';
/** Go: logindConfigDirectory and kubeletLogindConf. */
export const LOGIND_CONFIG_DIRECTORY = '/etc/systemd/logind.conf.d/';
export const KUBELET_LOGIND_CONF = '99-kubelet.conf';
/** Go: dbusReconnectPeriod, the wait before watching again after the bus connection ended. */
export const DBUS_RECONNECT_PERIOD_MS = 1000;

/** Holds logind's delay inhibitor lock for "shutdown" (Go: InhibitShutdown / ReleaseInhibitLock on the returned fd). */
export interface InhibitLock {
  acquire(): Promise<void>;
  release(): Promise<void>;
}

/**
 * The lock through `systemd-inhibit --what=shutdown --mode=delay`: logind answers Inhibit with a file descriptor that
 * must stay open, and Node cannot receive one over a unix socket, so a child systemd-inhibit holds it for us. Its
 * command waits on our stdin pipe: if the kubelet dies, the pipe closes and the lock goes with it.
 */
export class SystemdInhibitLock implements InhibitLock {
  private child?: ChildProcess;

  constructor(private readonly options: { command?: string; env?: NodeJS.ProcessEnv } = {}) {}

  async acquire(): Promise<void> {
    if (this.child) return;
    const child = spawn(
      this.options.command ?? 'systemd-inhibit',
      ['--what=shutdown', `--who=${INHIBIT_WHO}`, `--why=${INHIBIT_WHY}`, '--mode=delay', '/bin/sh', '-c', 'echo inhibited; exec cat >/dev/null'],
      { stdio: ['pipe', 'pipe', 'pipe'], env: this.options.env ?? process.env },
    );
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      let stdout = '';
      const onData = (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('inhibited')) {
          cleanup();
          resolve();
        }
      };
      const onExit = (code: number | null) => {
        cleanup();
        reject(new Error(`systemd-inhibit exited (${code}) without the lock: ${stderr.trim()}`));
      };
      const onError = (error: Error) => {
        cleanup();
        reject(error);
      };
      const cleanup = () => {
        child.stdout!.off('data', onData);
        child.off('exit', onExit);
        child.off('error', onError);
      };
      child.stdout!.on('data', onData);
      child.once('exit', onExit);
      child.once('error', onError);
    });
    this.child = child;
  }

  async release(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin!.end();
    child.kill('SIGTERM');
    await exited;
  }
}

export interface LogindShutdownTriggerOptions {
  /** shutdownGracePeriod: logind's InhibitDelayMaxSec is raised to it when smaller (Go: OverrideInhibitDelay). */
  shutdownGracePeriodMs: number;
  /** Default $DBUS_SYSTEM_BUS_ADDRESS or the system bus socket. */
  busAddress?: string;
  /** Default a SystemdInhibitLock on the same bus. */
  lock?: InhibitLock;
  /** Default /etc/systemd/logind.conf.d/. */
  logindConfigDirectory?: string;
  /** For the reconnect period. */
  clock?: Clock;
  logger?: Logger;
}

/**
 * Go's logind integration (pkg/kubelet/nodeshutdown/systemd): reads InhibitDelayMaxUSec, raises it through a
 * logind.conf.d drop-in and a SIGHUP to systemd-logind when it is below shutdownGracePeriod, takes a delay inhibitor
 * lock and watches PrepareForShutdown(true/false).
 */
export class LogindShutdownTrigger implements ShutdownTrigger {
  readonly name = 'logind';
  private connection?: DBusConnection;
  private readonly lock: InhibitLock;
  private readonly logger: Logger;
  private readonly busAddress: string;
  private readonly clock: Clock;
  private stopped = false;
  private restartTimer?: TimerHandle;
  private restarting?: Promise<void>;

  constructor(private readonly options: LogindShutdownTriggerOptions) {
    this.busAddress = options.busAddress ?? systemBusAddress();
    this.clock = options.clock ?? realClock;
    this.lock = options.lock ?? new SystemdInhibitLock({ env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: this.busAddress } });
    this.logger = options.logger ?? defaultLogger;
  }

  async start(onEvent: (shuttingDown: boolean) => void): Promise<void> {
    this.stopped = false;
    try {
      await this.watch(onEvent);
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /**
   * Go's start(): connect, check the inhibit delay, take the lock, follow PrepareForShutdown. When the bus connection
   * ends (logind or D-Bus restarted), Go starts over after dbusReconnectPeriod (1 s) until it works again.
   */
  private async watch(onEvent: (shuttingDown: boolean) => void): Promise<void> {
    const connection = await DBusConnection.connect(this.busAddress);
    this.connection = connection;
    const requested = this.options.shutdownGracePeriodMs;
    const current = await this.currentInhibitDelayMs();
    if (requested > current) {
      try {
        await this.overrideInhibitDelay(requested);
      } catch (error) {
        throw new Error(`unable to override inhibit delay by shutdown manager: ${(error as Error).message}`, { cause: error });
      }
      await this.reloadLogindConf();
      const updated = await this.currentInhibitDelayMs();
      if (requested > updated) {
        throw new Error(
          `node shutdown manager was unable to update logind InhibitDelayMaxSec to ${formatDuration(requested)} (ShutdownGracePeriod), current value of InhibitDelayMaxSec (${formatDuration(updated)}) is less than requested ShutdownGracePeriod`,
        );
      }
    }
    await this.lock.acquire();
    await connection.addMatch(`type='signal',interface='${LOGIND_INTERFACE}',member='PrepareForShutdown',path='${LOGIND_OBJECT}'`, (message: DBusMessage) => {
      if (message.interface !== LOGIND_INTERFACE || message.member !== 'PrepareForShutdown' || message.path !== LOGIND_OBJECT) return;
      onEvent(message.body[0] === true);
    });
    connection.onClose((error) => {
      // Not when stop() closed it.
      if (this.connection !== connection || this.stopped) return;
      this.logger.error('Ended to watching the node for shutdown events', error);
      this.scheduleRestart(onEvent);
    });
  }

  private scheduleRestart(onEvent: (shuttingDown: boolean) => void): void {
    this.restartTimer = this.clock.setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopped) return;
      this.logger.v(1).info('Restarting watch for node shutdown events');
      this.restarting = (async () => {
        // The old lock belonged to the logind that went away (Go: a new lock replaces it).
        await this.lock.release();
        await this.connection?.close();
        await this.watch(onEvent);
      })().catch((error: unknown) => {
        this.logger.error('Unable to watch the node for shutdown events', error);
        if (!this.stopped) this.scheduleRestart(onEvent);
      });
    }, DBUS_RECONNECT_PERIOD_MS);
  }

  /** Go: CurrentInhibitDelay: logind's InhibitDelayMaxUSec, in ms. */
  async currentInhibitDelayMs(): Promise<number> {
    const value = await this.connection!.getProperty(LOGIND_SERVICE, LOGIND_OBJECT, LOGIND_INTERFACE, 'InhibitDelayMaxUSec');
    if (typeof value !== 'bigint' && typeof value !== 'number') throw new Error('InhibitDelayMaxUSec is not a number');
    return Number(value) / 1000;
  }

  /** Go: OverrideInhibitDelay: the drop-in that raises InhibitDelayMaxSec. */
  async overrideInhibitDelay(delayMs: number): Promise<void> {
    const dir = this.options.logindConfigDirectory ?? LOGIND_CONFIG_DIRECTORY;
    await mkdir(dir, { recursive: true, mode: 0o755 });
    await writeFile(join(dir, KUBELET_LOGIND_CONF), `# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=${Math.round(delayMs / 1000)}\n`, { mode: 0o644 });
  }

  /** Go: ReloadLogindConf: systemd sends SIGHUP to systemd-logind.service. */
  async reloadLogindConf(): Promise<void> {
    await this.connection!.call({
      destination: 'org.freedesktop.systemd1',
      path: '/org/freedesktop/systemd1',
      interface: 'org.freedesktop.systemd1.Manager',
      member: 'KillUnit',
      signature: 'ssi',
      body: ['systemd-logind.service', 'all', 1],
    });
  }

  acquireInhibitLock(): Promise<void> {
    return this.lock.acquire();
  }

  releaseInhibitLock(): Promise<void> {
    return this.lock.release();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.restartTimer?.cancel();
    this.restartTimer = undefined;
    await this.restarting;
    await this.lock.release();
    const connection = this.connection;
    this.connection = undefined;
    await connection?.close();
  }
}

/**
 * Starts the first trigger that works here, in order (e.g. logind, then a signal); its name is the chosen one's.
 * Each failure is logged.
 */
export class FirstAvailableShutdownTrigger implements ShutdownTrigger {
  private chosen?: ShutdownTrigger;

  constructor(
    private readonly candidates: ShutdownTrigger[],
    private readonly logger: Logger = defaultLogger,
  ) {}

  get name(): string {
    return this.chosen?.name ?? this.candidates.map((c) => c.name).join(' or ');
  }

  async start(onEvent: (shuttingDown: boolean) => void): Promise<void> {
    const errors: string[] = [];
    for (const candidate of this.candidates) {
      try {
        await candidate.start(onEvent);
        this.chosen = candidate;
        this.logger.info('Watching for node shutdown events', { trigger: candidate.name });
        return;
      } catch (error) {
        errors.push(`${candidate.name}: ${(error as Error).message}`);
        this.logger.info('Node shutdown trigger unavailable', { trigger: candidate.name, err: (error as Error).message });
      }
    }
    throw new Error(`no node shutdown trigger works here: ${errors.join('; ')}`);
  }

  acquireInhibitLock(): Promise<void> {
    return this.chosen?.acquireInhibitLock() ?? Promise.resolve();
  }

  releaseInhibitLock(): Promise<void> {
    return this.chosen?.releaseInhibitLock() ?? Promise.resolve();
  }

  async stop(): Promise<void> {
    await this.chosen?.stop();
  }
}
