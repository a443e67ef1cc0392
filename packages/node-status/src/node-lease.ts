// The node lease heartbeat (Go: k8s.io/component-helpers/apimachinery/lease controller, with the
// kubelet's setNodeOwnerFunc as newLeasePostProcessFunc).
import type { V1Lease, V1OwnerReference } from '@kubernetes/client-node';
import {
  apiErrorMessage,
  formatMicroTime,
  isAbortError,
  isConflict,
  isNotFound,
  jitterUntil,
  defaultLogger,
  realClock,
  type Clock,
  type Logger,
} from '@kubelet-ts/core';
import { toKubeClient, type KubeClient, type KubeClientSource } from './kube-client.js';

/** Go's NamespaceNodeLease. */
export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
/** Go's maxUpdateRetries: immediate retries of a renewal before waiting for the next interval. */
export const LEASE_MAX_UPDATE_RETRIES = 5;
/** Go's maxBackoff for backoffEnsureLease. */
export const LEASE_MAX_BACKOFF_MS = 7000;

export interface NodeLeaseControllerOptions {
  nodeName: string;
  kubeClient: KubeClientSource;
  clock?: Clock;
  logger?: Logger;
  /** Default nodeName (the lease's holderIdentity). */
  holderIdentity?: string;
  /** --node-lease-duration-seconds (default 40). */
  leaseDurationSeconds?: number;
  /** Default 10 s: leaseDurationSeconds * NodeLeaseRenewIntervalFraction (0.25). */
  renewIntervalMs?: number;
  /** Default kube-node-lease. */
  leaseNamespace?: string;
  /** Called when a renewal fails again within one sync (Go: closes the heartbeat client's connections). */
  onRepeatedHeartbeatFailure?: () => void;
  /**
   * Sets the owner reference to the Node (Go: setNodeOwnerFunc). Default: GET the node for its uid
   * until it is known; set false to leave the lease without an owner.
   */
  ownNodeLease?: boolean;
}

/** The lease heartbeat as the app uses it. */
export interface NodeLease {
  start(): void;
  stop(): Promise<void>;
  /** One renewal round (Go: controller.sync). */
  sync(): Promise<void>;
  /** The lease as last written. */
  latestLease(): V1Lease | undefined;
}

/** Renews kube-node-lease/<node> every renewInterval; creates it when missing; owned by the Node. */
export class NodeLeaseController implements NodeLease {
  private readonly client: KubeClient;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly nodeName: string;
  private readonly holderIdentity: string;
  private readonly leaseDurationSeconds: number;
  private readonly renewIntervalMs: number;
  private readonly namespace: string;
  private readonly opts: NodeLeaseControllerOptions;
  private latest: V1Lease | undefined;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(opts: NodeLeaseControllerOptions) {
    this.opts = opts;
    this.nodeName = opts.nodeName;
    this.holderIdentity = opts.holderIdentity ?? opts.nodeName;
    this.leaseDurationSeconds = opts.leaseDurationSeconds ?? 40;
    this.renewIntervalMs = opts.renewIntervalMs ?? Math.round(this.leaseDurationSeconds * 1000 * 0.25);
    this.namespace = opts.leaseNamespace ?? NODE_LEASE_NAMESPACE;
    this.client = toKubeClient(opts.kubeClient, { timeoutMs: this.renewIntervalMs });
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? defaultLogger).with({ lease: `${this.namespace}/${this.nodeName}` });
  }

  latestLease(): V1Lease | undefined {
    return this.latest ? structuredClone(this.latest) : undefined;
  }

  /** Runs sync at once and then every renewInterval (4% jitter, sliding), as Go's Run. */
  start(): void {
    if (this.loop) return;
    if (this.abort.signal.aborted) this.abort = new AbortController();
    const signal = this.abort.signal;
    this.loop = jitterUntil(() => this.sync(), this.renewIntervalMs, 0.04, true, signal, this.clock, { logger: this.logger, name: 'nodeLease' });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    await this.running.catch(() => undefined);
    this.loop = undefined;
  }

  sync(): Promise<void> {
    const run = this.running.then(() => this.syncOnce(this.abort.signal));
    this.running = run.catch(() => undefined);
    return run;
  }

  private async syncOnce(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    try {
      if (this.latest) {
        // Optimistically renew from the last written version: no GET in the steady state.
        try {
          await this.retryUpdateLease(this.latest, signal);
          return;
        } catch (err) {
          if (signal.aborted) return;
          this.logger.info('Failed to update lease using latest lease, fallback to ensure lease', { err: apiErrorMessage(err) });
        }
      }
      const { lease, created } = await this.backoffEnsureLease(signal);
      if (!lease) return;
      this.latest = lease;
      if (!created) {
        try {
          await this.retryUpdateLease(lease, signal);
        } catch (err) {
          if (!signal.aborted) this.logger.error('Will retry updating lease', err, { intervalMs: this.renewIntervalMs });
        }
      }
    } catch (err) {
      if (signal.aborted && isAbortError(err)) return;
      throw err;
    }
  }

  /** backoffEnsureLease: GET or create until it works (100 ms doubling to 7 s between tries); undefined when stopped. */
  private async backoffEnsureLease(signal: AbortSignal): Promise<{ lease?: V1Lease; created: boolean }> {
    let sleep = 100;
    for (;;) {
      try {
        return await this.ensureLease(signal);
      } catch (err) {
        if (signal.aborted) return { created: false };
        sleep = Math.min(2 * sleep, LEASE_MAX_BACKOFF_MS);
        this.logger.error('Failed to ensure lease exists, will retry', err, { intervalMs: sleep });
        try {
          await this.clock.sleep(sleep, signal);
        } catch {
          return { created: false };
        }
      }
    }
  }

  private async ensureLease(signal: AbortSignal): Promise<{ lease?: V1Lease; created: boolean }> {
    try {
      const lease = await this.client.getLease(this.namespace, this.nodeName, { signal });
      return { lease, created: false };
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    let toCreate: V1Lease;
    try {
      toCreate = await this.newLease(undefined, signal);
    } catch {
      // Without the owner reference we do not create it; the next round tries again (as Go).
      return { created: false };
    }
    const lease = await this.client.createLease(toCreate, { signal });
    return { lease, created: true };
  }

  /** retryUpdateLease: up to 5 PUTs; a conflict re-reads the lease first. */
  private async retryUpdateLease(base: V1Lease, signal: AbortSignal): Promise<void> {
    let current: V1Lease | undefined = base;
    for (let i = 0; i < LEASE_MAX_UPDATE_RETRIES; i++) {
      if (signal.aborted) throw signal.reason;
      const toUpdate = await this.newLease(current, signal).catch(() => this.withRenewTime(current));
      try {
        this.latest = await this.client.updateLease(toUpdate, { signal });
        return;
      } catch (err) {
        if (signal.aborted) throw err;
        this.logger.error('Failed to update lease', err);
        if (isConflict(err)) {
          const ensured = await this.backoffEnsureLease(signal);
          current = ensured.lease ?? current;
          continue;
        }
        if (i > 0) this.opts.onRepeatedHeartbeatFailure?.();
      }
    }
    throw new Error(`failed ${LEASE_MAX_UPDATE_RETRIES} attempts to update lease`);
  }

  private withRenewTime(base: V1Lease | undefined): V1Lease {
    const lease: V1Lease = base
      ? structuredClone(base)
      : {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.nodeName, namespace: this.namespace },
          spec: { holderIdentity: this.holderIdentity, leaseDurationSeconds: this.leaseDurationSeconds },
        };
    lease.spec ??= {};
    // A MicroTime string with six digits: client-node would send a Date with three, which kube rejects.
    lease.spec.renewTime = formatMicroTime(this.clock.now()) as unknown as Date;
    return lease;
  }

  /** newLease: a copy of base (or a fresh lease) with renewTime now and, once the node's uid is known, the owner reference. */
  private async newLease(base: V1Lease | undefined, signal: AbortSignal): Promise<V1Lease> {
    const lease = this.withRenewTime(base);
    if ((this.opts.ownNodeLease ?? true) && !(lease.metadata?.ownerReferences?.length)) {
      try {
        const node = await this.client.getNode(this.nodeName, { signal });
        const owner: V1OwnerReference = { apiVersion: 'v1', kind: 'Node', name: this.nodeName, uid: node.metadata?.uid ?? '' };
        lease.metadata ??= {};
        lease.metadata.ownerReferences = [owner];
      } catch (err) {
        if (!signal.aborted) this.logger.error('Failed to get node when trying to set owner ref to the node lease', err);
        throw err;
      }
    }
    return lease;
  }
}
