// SystemdUnitManager over D-Bus: org.freedesktop.systemd1.Manager on the system bus, as go-systemd's dbus package
// calls it for libcontainer's systemd cgroup manager (StartTransientUnit / StopUnit with a wait for the job's
// JobRemoved signal, SetUnitProperties, ResetFailedUnit). The connection is made on first use and made again after
// it failed or dropped (libcontainer's dbusConnManager.retryOnDisconnect), so the kubelet starts without systemd
// answering and follows a restarted dbus-daemon.
import {
  DBusConnection,
  DBusError,
  defaultLogger,
  realClock,
  splitSignature,
  systemBusAddress,
  type Clock,
  type DBusMessage,
  type DBusValue,
  type Logger,
  type TimerHandle,
} from '@kubelet-ts/core';
import { SystemdError, type SystemdUnitManager, type UnitProperty } from './systemd-units.js';

export const SYSTEMD_BUS_NAME = 'org.freedesktop.systemd1';
export const SYSTEMD_OBJECT_PATH = '/org/freedesktop/systemd1';
export const SYSTEMD_MANAGER_INTERFACE = 'org.freedesktop.systemd1.Manager';
/** The match rule go-systemd adds for job completions (its jobListener). */
export const JOB_REMOVED_MATCH = `type='signal',sender='${SYSTEMD_BUS_NAME}',path='${SYSTEMD_OBJECT_PATH}',interface='${SYSTEMD_MANAGER_INTERFACE}',member='JobRemoved'`;
/** libcontainer's startUnit/stopUnit wait for the job: 30 s. */
export const SYSTEMD_JOB_TIMEOUT_MS = 30_000;
/** Tries of one call while the connection it used turns out closed (retryOnDisconnect loops; we bound it). */
const MAX_DISCONNECT_RETRIES = 3;

export interface SystemdDbusUnitManagerOptions {
  /** The bus address; default $DBUS_SYSTEM_BUS_ADDRESS or unix:path=/run/dbus/system_bus_socket. */
  address?: string;
  /** How long a job may run before startTransientUnit/stopUnit give up (default 30 s). */
  jobTimeoutMs?: number;
  clock?: Clock;
  logger?: Logger;
}

interface Connected {
  dbus: DBusConnection;
  /** Jobs we wait for, by job object path. */
  jobs: Map<string, (outcome: JobOutcome) => void>;
  /** JobRemoved results that came while a call creating a job was still unanswered (kept until that answer). */
  early: Map<string, string>;
  /** Calls creating a job that are not answered yet. */
  inFlight: number;
}

type JobOutcome = { result: string } | { error: Error };

/** Encodes one unit property as systemd's a(sv) entry, refusing values its signature cannot carry. */
export function encodeUnitProperty(property: UnitProperty): DBusValue {
  const { name, signature, value } = property;
  const where = `systemd unit property ${name}`;
  let types: string[];
  try {
    types = splitSignature(signature);
  } catch (err) {
    throw new Error(`${where}: invalid D-Bus signature ${JSON.stringify(signature)}: ${(err as Error).message}`);
  }
  if (types.length !== 1) throw new Error(`${where}: D-Bus signature ${JSON.stringify(signature)} is not one complete type`);
  const fits = (type: string, v: unknown): boolean => {
    if (type.startsWith('a')) {
      const element = type.slice(1);
      return Array.isArray(v) && v.every((e) => fits(element, e));
    }
    if (type.startsWith('(') || type.startsWith('{')) {
      const fields = splitSignature(type.slice(1, -1));
      return Array.isArray(v) && v.length === fields.length && fields.every((f, i) => fits(f, v[i]));
    }
    switch (type) {
      case 'b':
        return typeof v === 'boolean';
      case 's':
      case 'o':
      case 'g':
        return typeof v === 'string';
      case 'd':
        return typeof v === 'number';
      case 'y':
        return integerIn(v, 0n, 0xffn);
      case 'n':
        return integerIn(v, -0x8000n, 0x7fffn);
      case 'q':
        return integerIn(v, 0n, 0xffffn);
      case 'i':
        return integerIn(v, -0x8000_0000n, 0x7fff_ffffn);
      case 'u':
        return integerIn(v, 0n, 0xffff_ffffn);
      case 'x':
        return integerIn(v, -(2n ** 63n), 2n ** 63n - 1n);
      case 't':
        return integerIn(v, 0n, 2n ** 64n - 1n);
      default:
        return false;
    }
  };
  if (!fits(signature, value)) {
    throw new Error(`${where}: value ${printable(value)} does not fit D-Bus signature ${JSON.stringify(signature)}`);
  }
  return [name, { signature, value: value as DBusValue }];
}

function integerIn(v: unknown, min: bigint, max: bigint): boolean {
  if (typeof v === 'bigint') return v >= min && v <= max;
  if (typeof v === 'number') return Number.isSafeInteger(v) && BigInt(v) >= min && BigInt(v) <= max;
  return false;
}

function printable(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** Whether the failure is the connection's, not systemd's answer (go-systemd: dbus.ErrClosed). */
function isDisconnect(err: unknown, dbus: DBusConnection): boolean {
  return !(err instanceof DBusError) && dbus.closed;
}

/** A D-Bus error reply as the contract's SystemdError; other errors unchanged. */
function systemdError(err: unknown): unknown {
  if (err instanceof DBusError) {
    const text = err.message.startsWith(`${err.errorName}: `) ? err.message.slice(err.errorName.length + 2) : err.message;
    return new SystemdError(err.errorName, text);
  }
  return err;
}

export class SystemdDbusUnitManager implements SystemdUnitManager {
  private readonly address: string;
  private readonly jobTimeoutMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  /** The connection being made or made; current once it is up. */
  private connection?: Promise<Connected>;
  private current?: Connected;
  private closed = false;

  constructor(options: SystemdDbusUnitManagerOptions = {}) {
    this.address = options.address ?? systemBusAddress();
    this.jobTimeoutMs = options.jobTimeoutMs ?? SYSTEMD_JOB_TIMEOUT_MS;
    if (!(this.jobTimeoutMs > 0)) throw new Error(`SystemdDbusUnitManager: jobTimeoutMs must be positive, got ${options.jobTimeoutMs}`);
    this.clock = options.clock ?? realClock;
    this.logger = options.logger ?? defaultLogger;
  }

  async startTransientUnit(name: string, properties: UnitProperty[]): Promise<void> {
    const encoded = properties.map(encodeUnitProperty);
    this.logger.v(4).info('systemd: StartTransientUnit', { unit: name, properties: properties.map((p) => p.name).join(',') });
    const outcome = await this.runJob('StartTransientUnit', name, 'ssa(sv)a(sa(sv))', [name, 'replace', encoded, []]);
    if ('error' in outcome) throw outcome.error;
    if (outcome.result === 'timeout') throw new Error(`Timeout waiting for systemd to create ${name}`);
    if (outcome.result !== 'done') throw new Error(`error creating systemd unit \`${name}\`: got \`${outcome.result}\``);
  }

  async stopUnit(name: string): Promise<void> {
    this.logger.v(4).info('systemd: StopUnit', { unit: name });
    const outcome = await this.runJob('StopUnit', name, 'ss', [name, 'replace']);
    if ('error' in outcome) throw outcome.error;
    if (outcome.result === 'timeout') throw new Error(`Timed out while waiting for systemd to remove ${name}`);
    if (outcome.result !== 'done') throw new Error(`error removing unit \`${name}\`: got \`${outcome.result}\``);
  }

  async setUnitProperties(name: string, runtime: boolean, properties: UnitProperty[]): Promise<void> {
    const encoded = properties.map(encodeUnitProperty);
    this.logger.v(4).info('systemd: SetUnitProperties', { unit: name, runtime, properties: properties.map((p) => p.name).join(',') });
    await this.call('SetUnitProperties', 'sba(sv)', [name, runtime, encoded]);
  }

  async resetFailedUnit(name: string): Promise<void> {
    this.logger.v(4).info('systemd: ResetFailedUnit', { unit: name });
    await this.call('ResetFailedUnit', 's', [name]);
  }

  /** Closes the connection; later calls reject. */
  close(): void {
    this.closed = true;
    const connection = this.connection;
    this.connection = undefined;
    this.current = undefined;
    void connection?.then(
      (c) => c.dbus.close(),
      () => undefined,
    );
  }

  /** A Manager method call on a live connection, connecting first and again after a dropped connection. */
  private async call(member: string, signature: string, body: DBusValue[]): Promise<DBusMessage> {
    return this.withConnection(async (c) => {
      try {
        return await c.dbus.call({ destination: SYSTEMD_BUS_NAME, path: SYSTEMD_OBJECT_PATH, interface: SYSTEMD_MANAGER_INTERFACE, member, signature, body });
      } catch (err) {
        throw systemdError(err);
      }
    });
  }

  /**
   * Calls a method answering with a job path, then waits for that job's JobRemoved: its result ("done", "failed",
   * "canceled", "timeout", "dependency", "skipped"), or "timeout" of our own after jobTimeoutMs (the call included).
   */
  private runJob(member: string, unit: string, signature: string, body: DBusValue[]): Promise<JobOutcome> {
    return new Promise<JobOutcome>((resolve) => {
      let settled = false;
      let job: string | undefined;
      let owner: Connected | undefined;
      const settle = (outcome: JobOutcome) => {
        if (settled) return;
        settled = true;
        timer.cancel();
        if (job !== undefined) owner?.jobs.delete(job);
        resolve(outcome);
      };
      const timer: TimerHandle = this.clock.setTimeout(() => {
        this.logger.v(4).info('systemd: no JobRemoved in time', { unit, job: job ?? '', timeoutMs: this.jobTimeoutMs });
        settle({ result: 'timeout' });
      }, this.jobTimeoutMs);
      this.withConnection(async (c) => {
        c.inFlight++;
        let reply: DBusMessage;
        try {
          reply = await c.dbus.call({ destination: SYSTEMD_BUS_NAME, path: SYSTEMD_OBJECT_PATH, interface: SYSTEMD_MANAGER_INTERFACE, member, signature, body });
        } catch (err) {
          throw systemdError(err);
        } finally {
          c.inFlight--;
        }
        return { c, path: reply.body[0] as string };
      }).then(
        ({ c, path }) => {
          const early = c.early.get(path);
          if (c.inFlight === 0) c.early.clear();
          else c.early.delete(path);
          if (settled) return;
          this.logger.v(4).info('systemd: waiting for job', { unit, job: path });
          job = path;
          owner = c;
          if (early !== undefined) return settle({ result: early });
          if (c.dbus.closed) return settle({ error: new Error(`D-Bus connection to systemd lost while waiting for job ${path} of unit ${unit}`) });
          c.jobs.set(path, settle);
        },
        (error: Error) => settle({ error }),
      );
    });
  }

  /** Runs op on the connection, connecting when there is none; a closed connection is dropped and op runs again. */
  private async withConnection<T>(op: (c: Connected) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const c = await this.connected();
      try {
        return await op(c);
      } catch (err) {
        if (!isDisconnect(err, c.dbus) || attempt >= MAX_DISCONNECT_RETRIES) throw err;
        this.logger.v(4).info('systemd: D-Bus connection closed, connecting again', { err: (err as Error).message });
        this.drop(c);
      }
    }
  }

  private connected(): Promise<Connected> {
    if (this.closed) return Promise.reject(new Error('SystemdDbusUnitManager: closed'));
    if (!this.connection) {
      const attempt = this.connect();
      this.connection = attempt;
      // A failed connect is not kept: the next call tries again.
      attempt.catch(() => {
        if (this.connection === attempt) this.connection = undefined;
      });
    }
    return this.connection;
  }

  private async connect(): Promise<Connected> {
    let dbus: DBusConnection;
    try {
      dbus = await DBusConnection.connect(this.address);
    } catch (err) {
      throw new Error(`failed to connect to systemd over D-Bus at ${this.address}: ${(err as Error).message}`, { cause: err });
    }
    const c: Connected = { dbus, jobs: new Map(), early: new Map(), inFlight: 0 };
    try {
      await dbus.addMatch(JOB_REMOVED_MATCH, (signal) => this.onJobRemoved(c, signal));
      // Manager.Subscribe: systemd then sends its Manager signals to us for every job, not only ours.
      await dbus.call({ destination: SYSTEMD_BUS_NAME, path: SYSTEMD_OBJECT_PATH, interface: SYSTEMD_MANAGER_INTERFACE, member: 'Subscribe' });
    } catch (err) {
      await dbus.close();
      throw new Error(`failed to subscribe to systemd's job signals over D-Bus at ${this.address}: ${(systemdError(err) as Error).message}`, { cause: err });
    }
    dbus.onClose((error) => {
      this.logger.v(4).info('systemd: D-Bus connection closed', { address: this.address, err: error?.message ?? '' });
      this.drop(c);
      // The jobs go on in systemd, but their JobRemoved can no longer reach us.
      const waiting = [...c.jobs];
      c.jobs.clear();
      for (const [path, settle] of waiting) settle({ error: new Error(`D-Bus connection to systemd lost while waiting for job ${path}`) });
    });
    if (this.closed || dbus.closed) {
      await dbus.close();
      throw new Error(this.closed ? 'SystemdDbusUnitManager: closed' : `D-Bus connection to systemd at ${this.address} closed while subscribing`);
    }
    this.current = c;
    this.logger.v(4).info('systemd: connected', { address: this.address, name: dbus.uniqueName });
    return c;
  }

  private drop(c: Connected): void {
    if (this.current === c) {
      this.current = undefined;
      this.connection = undefined;
    }
    if (!c.dbus.closed) void c.dbus.close();
  }

  private onJobRemoved(c: Connected, signal: DBusMessage): void {
    if (signal.member !== 'JobRemoved' || signal.interface !== SYSTEMD_MANAGER_INTERFACE) return;
    const [, job, unit, result] = signal.body as [number, string, string, string];
    const waiter = c.jobs.get(job);
    this.logger.v(4).info('systemd: JobRemoved', { job, unit, result });
    if (waiter) {
      c.jobs.delete(job);
      waiter({ result });
    } else if (c.inFlight > 0) {
      c.early.set(job, result);
    }
  }
}
