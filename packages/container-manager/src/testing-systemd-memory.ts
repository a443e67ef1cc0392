// InMemorySystemdUnits: systemd's Manager with no bus at all, for unit tests of the systemd driver that care about
// the calls and the units, not about D-Bus (FakeSystemdManager is the one served on a bus).
import { SYSTEMD_NO_SUCH_UNIT, SYSTEMD_UNIT_EXISTS, SystemdError, type SystemdUnitManager, type UnitProperty } from './systemd-units.js';

/** One call as InMemorySystemdUnits received it, in systemd's method names. */
export interface InMemorySystemdCall {
  method: 'StartTransientUnit' | 'StopUnit' | 'SetUnitProperties' | 'ResetFailedUnit';
  unit: string;
  properties?: UnitProperty[];
}

/**
 * Transient units by name with the properties they were started with. As systemd: a second start of a loaded unit
 * fails UnitExists, stopping or setting properties of a unit that is not loaded fails NoSuchUnit. Every call is
 * recorded in `calls`.
 */
export class InMemorySystemdUnits implements SystemdUnitManager {
  readonly units = new Map<string, UnitProperty[]>();
  readonly calls: InMemorySystemdCall[] = [];
  closed = false;

  async startTransientUnit(name: string, properties: UnitProperty[]): Promise<void> {
    this.calls.push({ method: 'StartTransientUnit', unit: name, properties });
    if (this.units.has(name)) throw new SystemdError(SYSTEMD_UNIT_EXISTS, `Unit ${name} already exists.`);
    this.units.set(name, properties);
  }

  async setUnitProperties(name: string, _runtime: boolean, properties: UnitProperty[]): Promise<void> {
    this.calls.push({ method: 'SetUnitProperties', unit: name, properties });
    if (!this.units.has(name)) throw new SystemdError(SYSTEMD_NO_SUCH_UNIT, `Unit ${name} not loaded.`);
  }

  async stopUnit(name: string): Promise<void> {
    this.calls.push({ method: 'StopUnit', unit: name });
    if (!this.units.delete(name)) throw new SystemdError(SYSTEMD_NO_SUCH_UNIT, `Unit ${name} not loaded.`);
  }

  async resetFailedUnit(name: string): Promise<void> {
    this.calls.push({ method: 'ResetFailedUnit', unit: name });
  }

  close(): void {
    this.closed = true;
  }
}
