// usageNanoCores from two cumulative CPU samples (Go: criStatsProvider.cpuUsageCache and
// getAndUpdateContainerUsageNanoCores). Runtimes and cgroup files give cumulative CPU time only;
// the rate needs the previous sample, which this cache keeps per id.

export interface CpuSample {
  /** When the sample was taken, in nanoseconds since the epoch. */
  timestampNs: number;
  /** Cumulative CPU time, in core-nanoseconds. */
  usageCoreNanoSeconds: number;
}

interface CpuUsageRecord {
  sample: CpuSample;
  usageNanoCores?: number;
}

/** Go: defaultCachePeriod — a record not refreshed for this long is dropped. */
export const CPU_USAGE_CACHE_PERIOD_MS = 10 * 60_000;

export class CpuUsageCache {
  private readonly records = new Map<string, CpuUsageRecord>();

  /**
   * Records `sample` for `id` and returns the usage since the previous sample, in nanocores; undefined
   * for the first sample or after the counter went backwards (the container or cgroup was recreated).
   * A sample taken less than `minIntervalNs` after the previous one (or not after it at all) keeps the
   * previous sample and returns the previous rate, so two scrapes in a row do not make a rate of noise.
   */
  update(id: string, sample: CpuSample, minIntervalNs = 0): number | undefined {
    const cached = this.records.get(id);
    if (!cached || sample.usageCoreNanoSeconds < cached.sample.usageCoreNanoSeconds) {
      this.records.set(id, { sample });
      return undefined;
    }
    const intervalNs = sample.timestampNs - cached.sample.timestampNs;
    if (intervalNs <= 0 || intervalNs < minIntervalNs) return cached.usageNanoCores;
    const usageNanoCores = Math.trunc(((sample.usageCoreNanoSeconds - cached.sample.usageCoreNanoSeconds) / intervalNs) * 1e9);
    this.records.set(id, { sample, usageNanoCores });
    return usageNanoCores;
  }

  /** The rate computed by the last update() for id, without taking a new sample. */
  get(id: string): number | undefined {
    return this.records.get(id)?.usageNanoCores;
  }

  /** Drops records whose sample is older than the cache period (Go: cleanupOutdatedCaches). */
  cleanup(nowMs: number, periodMs = CPU_USAGE_CACHE_PERIOD_MS): void {
    for (const [id, record] of this.records) {
      if (nowMs - record.sample.timestampNs / 1e6 > periodMs) this.records.delete(id);
    }
  }

  get size(): number {
    return this.records.size;
  }
}
