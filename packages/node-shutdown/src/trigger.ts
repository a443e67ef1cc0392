/**
 * What tells the kubelet that the node is about to shut down (Go learns it from systemd-logind's
 * PrepareForShutdown signal while it holds a delay inhibitor lock).
 */
export interface ShutdownTrigger {
  /** Shown in the kubelet's log ("logind", "signal SIGPWR"). */
  readonly name: string;
  /**
   * Starts watching: `onEvent(true)` when a shutdown starts, `onEvent(false)` when a shutdown was cancelled.
   * Takes the inhibit lock first where that means something. Rejects when the trigger cannot work here.
   */
  start(onEvent: (shuttingDown: boolean) => void): Promise<void>;
  /** Takes the inhibit lock again (after a cancelled shutdown). A no-op where there is no lock. */
  acquireInhibitLock(): Promise<void>;
  /** Lets the shutdown go on (Go: ReleaseInhibitLock). A no-op where there is no lock. */
  releaseInhibitLock(): Promise<void>;
  /** Stops watching and releases everything it holds (timers, sockets, child processes, listeners). */
  stop(): Promise<void>;
}
