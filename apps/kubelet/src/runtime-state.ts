import type { Clock } from '@kubelet-ts/core';

/** Go: maxWaitForContainerRuntime; the runtime counts as down when no status check succeeded for this long. */
export const MAX_WAIT_FOR_CONTAINER_RUNTIME_MS = 30_000;

export interface HealthCheck {
  name: string;
  check(): Error | undefined;
}

/**
 * What the kubelet knows of the runtime's health (Go: runtimeState): the last successful status check,
 * the runtime's own not-ready reason, and health checks such as the PLEG's.
 */
export class RuntimeState {
  private lastBaseRuntimeSync = 0;
  private runtimeError?: Error;
  private networkError?: Error;
  private readonly healthChecks: HealthCheck[] = [];

  constructor(private readonly clock: Clock) {}

  addHealthCheck(check: HealthCheck): void {
    this.healthChecks.push(check);
  }

  setRuntimeSync(time: number): void {
    this.lastBaseRuntimeSync = time;
  }

  setRuntimeError(error: Error | undefined): void {
    this.runtimeError = error;
  }

  /** The runtime's pod network is not ready (Go: setNetworkState); host-network pods still run. */
  setNetworkError(error: Error | undefined): void {
    this.networkError = error;
  }

  /** Why pods that need the pod network cannot start now; reported in the node's Ready condition. */
  networkErrors(): Error[] {
    return this.networkError ? [this.networkError] : [];
  }

  /** Every reason the kubelet should not sync pods now; empty when the runtime is usable. */
  runtimeErrors(): Error[] {
    const errors: Error[] = [];
    if (this.lastBaseRuntimeSync === 0) {
      errors.push(new Error('container runtime status check may not have completed yet'));
    } else if (this.lastBaseRuntimeSync + MAX_WAIT_FOR_CONTAINER_RUNTIME_MS <= this.clock.now()) {
      errors.push(new Error('container runtime is down'));
    }
    for (const health of this.healthChecks) {
      const error = health.check();
      if (error) errors.push(new Error(`${health.name} is not healthy: ${error.message}`));
    }
    if (this.runtimeError) errors.push(this.runtimeError);
    return errors;
  }
}
