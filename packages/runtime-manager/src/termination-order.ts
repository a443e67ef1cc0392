// Termination ordering of sidecars (Go: pkg/kubelet/kuberuntime/kuberuntime_termination_order.go).
import type { V1Pod } from '@kubernetes/client-node';
import { abortReason, isRestartableInitContainer, realClock, type Clock } from '@kubelet-ts/core';

/** A one-shot latch: closed once, waited on by any number of callers (a closed Go channel). */
class Latch {
  closed = false;
  private readonly waiters = new Set<() => void>();

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** Resolves when closed; `unsubscribe` drops the waiter if the caller gives up first. */
  wait(): { done: Promise<void>; unsubscribe(): void } {
    if (this.closed) return { done: Promise.resolve(), unsubscribe: () => undefined };
    let wake!: () => void;
    const done = new Promise<void>((resolve) => (wake = resolve));
    this.waiters.add(wake);
    return { done, unsubscribe: () => this.waiters.delete(wake) };
  }
}

/**
 * Makes sidecars (restartable init containers) stop after the regular containers, and in reverse
 * spec order among themselves (Go: terminationOrdering). Each sidecar waits until every container
 * that must terminate before it has terminated, at most for what is left of its grace period.
 * Containers not running when the kill starts count as terminated.
 */
export class TerminationOrdering {
  /** By container name: closed when that container has terminated. */
  private readonly terminated = new Map<string, Latch>();
  /** By container name: what must have terminated before it may begin terminating. */
  private readonly prereqs = new Map<string, Latch[]>();
  private readonly clock: Clock;

  constructor(pod: V1Pod, runningContainerNames: string[], clock: Clock = realClock) {
    this.clock = clock;
    const running = new Set(runningContainerNames);
    const mainContainers: Latch[] = [];
    // Sidecars wait on the main containers: one latch per main container.
    for (const c of pod.spec?.containers ?? []) {
      const latch = new Latch();
      this.terminated.set(c.name, latch);
      mainContainers.push(latch);
      // Not running: nothing needs to wait for it.
      if (!running.has(c.name)) latch.close();
    }
    let previousSidecar: string | undefined;
    for (const ic of [...(pod.spec?.initContainers ?? [])].reverse()) {
      const latch = new Latch();
      this.terminated.set(ic.name, latch);
      if (!running.has(ic.name)) latch.close();
      if (isRestartableInitContainer(ic)) {
        // Every main container first, then the sidecar declared after this one.
        const prereqs = [...mainContainers];
        if (previousSidecar !== undefined) prereqs.push(this.terminated.get(previousSidecar)!);
        this.prereqs.set(ic.name, [...(this.prereqs.get(ic.name) ?? []), ...prereqs]);
        previousSidecar = ic.name;
      }
    }
  }

  /**
   * Waits until it is the container's turn to begin terminating, at most gracePeriodSeconds (no wait
   * for 0 or less). Resolves with the seconds waited (fractional, as Go's time.Since().Seconds());
   * rejects with the signal's reason when it aborts first.
   */
  async waitForTurn(name: string, gracePeriodSeconds: number, signal?: AbortSignal): Promise<number> {
    if (gracePeriodSeconds <= 0) return 0;
    if (signal?.aborted) throw abortReason(signal);
    const start = this.clock.now();
    const prereqs = (this.prereqs.get(name) ?? []).filter((latch) => !latch.closed);
    if (prereqs.length === 0) return 0;

    const timer = new AbortController();
    const expired = this.clock.sleep(gracePeriodSeconds * 1000, timer.signal).then(
      () => 'expired' as const,
      () => 'cancelled' as const,
    );
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      for (const latch of prereqs) {
        const waiter = latch.wait();
        const outcome = await Promise.race([waiter.done.then(() => 'terminated' as const), expired, aborted]);
        waiter.unsubscribe();
        if (outcome === 'aborted') throw abortReason(signal!);
        // The grace period ran out: stop waiting at once.
        if (outcome === 'expired') break;
      }
    } finally {
      timer.abort();
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
    return (this.clock.now() - start) / 1000;
  }

  /** Marks the container terminated; whoever waits on it may go on (Go: containerTerminated). */
  containerTerminated(name: string): void {
    const latch = this.terminated.get(name);
    if (!latch) return;
    latch.close();
    this.terminated.delete(name);
  }
}
