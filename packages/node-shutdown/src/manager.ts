import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { isCriticalPod, KubeletEventReason, noopEventRecorder, defaultLogger, podRef, realClock, type Clock, type EventRecorder, type Logger } from '@kubelet-ts/core';
import type { ShutdownGracePeriods } from './config.js';
import type { ShutdownTrigger } from './trigger.js';

/** Go: nodeShutdownReason, the reason of a pod the shutdown terminated. */
export const NODE_SHUTDOWN_REASON = 'Terminated';
/** Go: nodeShutdownMessage. */
export const NODE_SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
/** Go: nodeShutdownNotAdmittedReason, the reason of a pod refused while the node shuts down. */
export const NODE_SHUTDOWN_NOT_ADMITTED_REASON = 'NodeShutdown';
/** Go: nodeShutdownNotAdmittedMessage. */
export const NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE = 'Pod was rejected as the node is shutting down.';
/** Go: ShutdownStatus's error while the node shuts down, which makes the node's Ready condition False. */
export const NODE_SHUTTING_DOWN_ERROR = 'node is shutting down';

/** Kills a pod through the kubelet's pod workers; statusFn sets its final status (Go: eviction.KillPodFunc). */
export type KillPodFunc = (pod: V1Pod, gracePeriodOverrideSeconds: number, statusFn: (status: V1PodStatus) => void) => Promise<void>;

export interface NodeShutdownManagerOptions extends ShutdownGracePeriods {
  /** Watches for the shutdown: logind over D-Bus, or a POSIX signal where there is no systemd. */
  trigger: ShutdownTrigger;
  /** The kubelet's active pods (Go: GetActivePods). */
  getPods: () => V1Pod[];
  killPod: KillPodFunc;
  /** Pushes the node's status at once, so the Ready condition says the node is shutting down (Go: syncNodeStatus). */
  syncNodeStatus?: () => unknown;
  /** Events about the node ("Shutdown"), with the node's reference. */
  recorder?: EventRecorder;
  nodeRef?: Parameters<EventRecorder['event']>[0];
  clock?: Clock;
  logger?: Logger;
}

/** The pods stopped together and how long the shutdown waits for them (Go: podShutdownGroup). */
export interface PodShutdownGroup {
  critical: boolean;
  gracePeriodSeconds: number;
  pods: V1Pod[];
}

/**
 * Go: nodeshutdown.managerImpl. While the trigger holds the shutdown back, a shutdown event marks the node
 * shutting down (pods are refused, Ready goes False), kills regular pods and then critical ones, each group
 * within its part of shutdownGracePeriod, and finally releases the inhibit lock. A cancelled shutdown takes the
 * lock again. With shutdownGracePeriod 0 it does nothing at all.
 */
export class NodeShutdownManager {
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly recorder: EventRecorder;
  private shuttingDown = false;
  private started = false;
  private readonly abort = new AbortController();
  /** Events are handled one at a time in arrival order, as Go's single goroutine does. */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly options: NodeShutdownManagerOptions) {
    this.clock = options.clock ?? realClock;
    this.logger = options.logger ?? defaultLogger;
    this.recorder = options.recorder ?? noopEventRecorder;
  }

  /** Go: isFeatureEnabled: the gate is on and shutdownGracePeriod > 0 (the gate is the caller's to check). */
  get enabled(): boolean {
    return this.options.shutdownGracePeriodMs > 0;
  }

  /** Starts watching for shutdown events; resolves once the trigger watches. Rejects when the trigger cannot work. */
  async start(): Promise<void> {
    if (!this.enabled || this.started) return;
    this.logger.info('Creating node shutdown manager', {
      shutdownGracePeriodRequested: `${this.options.shutdownGracePeriodMs / 1000}s`,
      shutdownGracePeriodCriticalPods: `${this.options.shutdownGracePeriodCriticalPodsMs / 1000}s`,
      trigger: this.options.trigger.name,
    });
    await this.options.trigger.start((shuttingDown) => this.onEvent(shuttingDown));
    this.started = true;
  }

  /** Stops watching and abandons the waits of a shutdown in progress (the kubelet is stopping). */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.options.trigger.stop();
    await this.queue;
  }

  /** Go: ShutdownStatus: an error while the node shuts down, for the Ready condition. */
  shutdownStatus(): Error | undefined {
    return this.shuttingDown ? new Error(NODE_SHUTTING_DOWN_ERROR) : undefined;
  }

  /** Go: Admit: every pod is refused while the node shuts down. */
  admit(_attrs?: unknown): { admit: boolean; reason?: string; message?: string } {
    if (this.shuttingDown) return { admit: false, reason: NODE_SHUTDOWN_NOT_ADMITTED_REASON, message: NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE };
    return { admit: true };
  }

  /** Resolves when the events received so far have been handled (a shutdown's pods killed or its budgets spent). */
  idle(): Promise<void> {
    return this.queue;
  }

  private onEvent(shuttingDown: boolean): void {
    this.queue = this.queue.then(() => this.handleEvent(shuttingDown));
  }

  private async handleEvent(shuttingDown: boolean): Promise<void> {
    if (this.abort.signal.aborted) return;
    this.logger.v(1).info('Shutdown manager detected new shutdown event', { event: shuttingDown ? 'shutdown' : 'cancelled' });
    if (this.options.nodeRef) {
      this.recorder.event(
        this.options.nodeRef,
        'Normal',
        KubeletEventReason.NodeShutdown,
        shuttingDown ? 'Shutdown manager detected shutdown event' : 'Shutdown manager detected shutdown cancellation',
      );
    }
    this.shuttingDown = shuttingDown;
    if (!shuttingDown) {
      try {
        await this.options.trigger.acquireInhibitLock();
      } catch (error) {
        this.logger.error('Shutdown manager failed to take the inhibit lock again', error);
      }
      return;
    }
    // Go: go m.syncNodeStatus(): the Ready condition says so at once, not at the next status period.
    try {
      void Promise.resolve(this.options.syncNodeStatus?.()).catch((error: unknown) => this.logger.error('Failed to update node status on shutdown', error));
    } catch (error) {
      this.logger.error('Failed to update node status on shutdown', error);
    }
    await this.processShutdownEvent();
  }

  /** Go: groupByPriority with the two groups of migrateConfig: regular pods first, then critical ones. */
  groups(pods: V1Pod[]): PodShutdownGroup[] {
    const criticalSeconds = Math.floor(this.options.shutdownGracePeriodCriticalPodsMs / 1000);
    const regularSeconds = Math.floor((this.options.shutdownGracePeriodMs - this.options.shutdownGracePeriodCriticalPodsMs) / 1000);
    return [
      { critical: false, gracePeriodSeconds: regularSeconds, pods: pods.filter((pod) => !isCriticalPod(pod)) },
      { critical: true, gracePeriodSeconds: criticalSeconds, pods: pods.filter((pod) => isCriticalPod(pod)) },
    ];
  }

  private async processShutdownEvent(): Promise<void> {
    this.logger.v(1).info('Shutdown manager processing shutdown event');
    const signal = this.abort.signal;
    try {
      for (const group of this.groups(this.options.getPods())) {
        // Go: a group without pods is not waited for.
        if (group.pods.length === 0) continue;
        const kills = group.pods.map((pod) => this.killPod(pod, group.gracePeriodSeconds));
        const timer = new AbortController();
        const onStop = () => timer.abort();
        signal.addEventListener('abort', onStop, { once: true });
        try {
          const outcome = await Promise.race([
            Promise.all(kills).then(() => 'done' as const),
            this.clock.sleep(group.gracePeriodSeconds * 1000, timer.signal).then(
              () => 'timeout' as const,
              () => 'stopped' as const,
            ),
          ]);
          if (outcome === 'timeout') {
            this.logger.v(1).info('Shutdown manager pod killing time out', { gracePeriod: group.gracePeriodSeconds, critical: group.critical });
          }
          if (outcome === 'stopped') return;
        } finally {
          timer.abort();
          signal.removeEventListener('abort', onStop);
        }
      }
    } finally {
      try {
        await this.options.trigger.releaseInhibitLock();
      } catch (error) {
        this.logger.error('Shutdown manager failed to release the inhibit lock', error);
      }
      this.logger.v(1).info('Shutdown manager completed processing shutdown event, node will shutdown shortly');
    }
  }

  private async killPod(pod: V1Pod, groupGracePeriodSeconds: number): Promise<void> {
    let gracePeriodOverride = groupGracePeriodSeconds;
    // Go: a pod asking for less than the group's budget keeps its own terminationGracePeriodSeconds.
    const own = pod.spec?.terminationGracePeriodSeconds;
    if (own !== undefined && own !== null && own <= gracePeriodOverride) gracePeriodOverride = own;
    this.logger.v(1).info('Shutdown manager killing pod with gracePeriod', { pod: podRef(pod), gracePeriod: gracePeriodOverride });
    try {
      await this.options.killPod(pod, gracePeriodOverride, (status) => {
        // Go: Failed, unless it already succeeded.
        if (status.phase !== 'Succeeded') status.phase = 'Failed';
        status.message = NODE_SHUTDOWN_MESSAGE;
        status.reason = NODE_SHUTDOWN_REASON;
      });
      this.logger.v(1).info('Shutdown manager finished killing pod', { pod: podRef(pod) });
    } catch (error) {
      this.logger.v(1).info('Shutdown manager failed killing pod', { pod: podRef(pod), err: (error as Error).message });
    }
  }
}
