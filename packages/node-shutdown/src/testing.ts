import type { ShutdownTrigger } from './trigger.js';

/** A ShutdownTrigger driven by the test: shutdown()/cancel() emit the events; the lock calls are counted. */
export class FakeShutdownTrigger implements ShutdownTrigger {
  readonly name = 'fake';
  /** Calls in order: 'start', 'acquire', 'release', 'stop'. */
  readonly calls: string[] = [];
  /** Whether the inhibit lock is held. */
  locked = false;
  /** Makes start() reject with this error. */
  failStart?: Error;
  private onEvent?: (shuttingDown: boolean) => void;

  async start(onEvent: (shuttingDown: boolean) => void): Promise<void> {
    this.calls.push('start');
    if (this.failStart) throw this.failStart;
    this.onEvent = onEvent;
    this.locked = true;
  }

  async acquireInhibitLock(): Promise<void> {
    this.calls.push('acquire');
    this.locked = true;
  }

  async releaseInhibitLock(): Promise<void> {
    this.calls.push('release');
    this.locked = false;
  }

  async stop(): Promise<void> {
    this.calls.push('stop');
    this.onEvent = undefined;
    this.locked = false;
  }

  get started(): boolean {
    return this.onEvent !== undefined;
  }

  /** The node starts shutting down (logind's PrepareForShutdown(true)). */
  shutdown(): void {
    if (!this.onEvent) throw new Error('FakeShutdownTrigger: not started');
    this.onEvent(true);
  }

  /** The shutdown was cancelled (PrepareForShutdown(false)). */
  cancel(): void {
    if (!this.onEvent) throw new Error('FakeShutdownTrigger: not started');
    this.onEvent(false);
  }
}
