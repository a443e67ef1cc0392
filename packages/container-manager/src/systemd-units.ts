// The seam between the systemd cgroup driver and systemd's D-Bus API (org.freedesktop.systemd1.Manager).
// The driver (systemd-cgroup-manager.ts) speaks only this interface; systemd-dbus.ts implements it over the
// system bus, and ./testing's FakeSystemdManager serves the same methods on a private bus.

/** A D-Bus value of a unit property, as the D-Bus client encodes it (uint64 values as bigint). */
export type UnitPropertyValue = string | number | bigint | boolean | string[] | number[];

/** Go: systemdDbus.Property: a unit property name with its D-Bus signature ("s", "b", "t", "as", "au", ...). */
export interface UnitProperty {
  name: string;
  signature: string;
  value: UnitPropertyValue;
}

/** A D-Bus error reply from systemd, e.g. name "org.freedesktop.systemd1.UnitExists". */
export class SystemdError extends Error {
  constructor(
    readonly dbusName: string,
    message: string,
  ) {
    super(message);
    this.name = 'SystemdError';
  }
}

/** The error for the systemd driver without a connection to systemd (Go panics: "systemd cgroup manager not available"). */
export const SYSTEMD_MANAGER_UNAVAILABLE =
  'systemd cgroup manager not available: the systemd cgroup driver needs a connection to systemd (the systemdUnits option, e.g. a SystemdDbusUnitManager on the system bus) or a cgroupManager';

export const SYSTEMD_UNIT_EXISTS = 'org.freedesktop.systemd1.UnitExists';
export const SYSTEMD_NO_SUCH_UNIT = 'org.freedesktop.systemd1.NoSuchUnit';

/** What the systemd cgroup driver asks of systemd. */
export interface SystemdUnitManager {
  /**
   * StartTransientUnit(name, "replace", properties, []) and wait for the job's JobRemoved signal (libcontainer's
   * startUnit: 30 s, then `Timeout waiting for systemd to create <name>`). A job result other than "done"
   * rejects; UnitExists rejects with a SystemdError the driver handles as Go does.
   */
  startTransientUnit(name: string, properties: UnitProperty[]): Promise<void>;
  /** StopUnit(name, "replace") and wait for its job; NoSuchUnit rejects with a SystemdError. */
  stopUnit(name: string): Promise<void>;
  /** SetUnitProperties(name, runtime, properties). */
  setUnitProperties(name: string, runtime: boolean, properties: UnitProperty[]): Promise<void>;
  /** ResetFailedUnit(name); NoSuchUnit rejects with a SystemdError. */
  resetFailedUnit(name: string): Promise<void>;
  close(): void;
}
