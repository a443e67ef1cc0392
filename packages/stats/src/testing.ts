// Test doubles for other components' tests, published as `@kubelet-ts/stats/testing`.
import { formatTime } from '@kubelet-ts/core';
import { cpuAndMemoryOnly, type Summary, type SummarySource } from './api.js';

/** A summary with a node and no pods: the starting point of a FakeSummaryProvider. */
export function emptySummary(nodeName = 'fake-node', timeMs = Date.parse('2026-01-01T00:00:00Z')): Summary {
  return { node: { nodeName, startTime: formatTime(timeMs) }, pods: [] };
}

/**
 * Returns the summary it is given (a copy each time, so callers cannot change it), records each call,
 * and fails every call while `error` is set.
 */
export class FakeSummaryProvider implements SummarySource {
  summary: Summary;
  /** When set, get() and getCPUAndMemoryStats() reject with it. */
  error: Error | undefined;
  readonly calls: Array<{ method: 'get'; updateStats: boolean } | { method: 'getCPUAndMemoryStats' }> = [];

  constructor(summary: Summary = emptySummary()) {
    this.summary = summary;
  }

  async get(updateStats: boolean): Promise<Summary> {
    this.calls.push({ method: 'get', updateStats });
    if (this.error) throw this.error;
    return structuredClone(this.summary);
  }

  /** The CPU and memory part of the summary, as SummaryProvider answers it. */
  async getCPUAndMemoryStats(): Promise<Summary> {
    this.calls.push({ method: 'getCPUAndMemoryStats' });
    if (this.error) throw this.error;
    return cpuAndMemoryOnly(this.summary);
  }
}
