import type { ShutdownTrigger } from './trigger.js';

/** The signal that means "the node is shutting down" by default: SIGPWR, the power-failure signal init systems use. */
export const DEFAULT_SHUTDOWN_SIGNAL: NodeJS.Signals = 'SIGPWR';

export interface SignalShutdownTriggerOptions {
  /** Default SIGPWR. Not SIGTERM/SIGINT (they stop the kubelet itself) nor SIGUSR1 (Node's inspector). */
  signal?: NodeJS.Signals;
  /** A signal that cancels the shutdown (Go: PrepareForShutdown(false)); none by default. */
  cancelSignal?: NodeJS.Signals;
  /** The process whose signals are watched; default the current one. */
  process?: Pick<NodeJS.Process, 'on' | 'off'>;
}

const RESERVED: ReadonlySet<string> = new Set(['SIGTERM', 'SIGINT', 'SIGKILL', 'SIGSTOP', 'SIGUSR1']);

/**
 * A shutdown trigger for machines without systemd-logind: whoever shuts the node down (an init script, a
 * cloud agent, a test) sends the kubelet a signal, waits for the pods to stop (shutdownGracePeriod), then
 * goes on. There is no inhibitor lock: nothing holds the shutdown back but the sender's own wait.
 */
export class SignalShutdownTrigger implements ShutdownTrigger {
  readonly name: string;
  private readonly signal: NodeJS.Signals;
  private readonly cancelSignal?: NodeJS.Signals;
  private readonly process: Pick<NodeJS.Process, 'on' | 'off'>;
  private listeners: Array<[NodeJS.Signals, () => void]> = [];

  constructor(options: SignalShutdownTriggerOptions = {}) {
    this.signal = options.signal ?? DEFAULT_SHUTDOWN_SIGNAL;
    this.cancelSignal = options.cancelSignal;
    for (const s of [this.signal, this.cancelSignal]) {
      if (s !== undefined && RESERVED.has(s)) throw new Error(`${s} cannot signal a node shutdown: the kubelet or Node uses it`);
    }
    if (this.cancelSignal === this.signal) throw new Error('the shutdown and cancel signals must differ');
    this.process = options.process ?? globalThis.process;
    this.name = `signal ${this.signal}`;
  }

  async start(onEvent: (shuttingDown: boolean) => void): Promise<void> {
    if (this.listeners.length > 0) throw new Error('the signal shutdown trigger is already started');
    this.listen(this.signal, () => onEvent(true));
    if (this.cancelSignal) this.listen(this.cancelSignal, () => onEvent(false));
  }

  async acquireInhibitLock(): Promise<void> {}

  async releaseInhibitLock(): Promise<void> {}

  async stop(): Promise<void> {
    for (const [signal, listener] of this.listeners) this.process.off(signal, listener);
    this.listeners = [];
  }

  private listen(signal: NodeJS.Signals, listener: () => void): void {
    this.process.on(signal, listener);
    this.listeners.push([signal, listener]);
  }
}
