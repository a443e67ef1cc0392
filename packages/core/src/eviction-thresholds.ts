// Eviction thresholds (Go: pkg/kubelet/eviction/api/types.go and ParseThresholdConfig in
// pkg/kubelet/eviction/helpers.go): --eviction-hard, --eviction-soft, --eviction-soft-grace-period and
// --eviction-minimum-reclaim parsed into one list, used by the eviction manager and by the node
// allocatable reservation.
import { formatDuration, parseDuration } from './duration.js';
import { Quantity } from './quantity.js';

/**
 * The eviction signals (Go: evictionapi.Signal*). The containerfs signals are newer Go's (1.29+): they are
 * accepted so a configuration naming them still parses, but nothing observes them (Go 1.20 rejects them).
 */
export const EVICTION_SIGNALS = [
  'memory.available',
  'allocatableMemory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'containerfs.available',
  'containerfs.inodesFree',
  'pid.available',
] as const;
export type EvictionSignal = (typeof EVICTION_SIGNALS)[number];

/** evictionapi.ThresholdValue: exactly one of quantity and percentage (a fraction of capacity, float32 as in Go). */
export interface EvictionThresholdValue {
  quantity?: Quantity;
  percentage?: number;
}

/** evictionapi.Threshold. The value fields are inline (quantity / percentage). */
export interface EvictionThreshold extends EvictionThresholdValue {
  signal: EvictionSignal;
  /** Every signal uses LessThan. */
  operator: 'LessThan';
  /** How long the threshold must be met before it acts; 0 or undefined: a hard threshold. */
  gracePeriodMs?: number;
  /** Once met, the threshold stays met until the signal is this much above it (--eviction-minimum-reclaim). */
  minReclaim?: EvictionThresholdValue;
}

/** The kubelet's Linux default for --eviction-hard (Go: DefaultEvictionHard). */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = Object.freeze({
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
});

/** Go's kubetypes.NodeAllocatableEnforcementKey: --enforce-node-allocatable=pods adds allocatableMemory.available. */
export const NODE_ALLOCATABLE_ENFORCEMENT_KEY = 'pods';

/** A signal -> value map, as the kubelet configuration holds it (Go: map[string]string). */
export type EvictionStatements = Record<string, string> | ReadonlyMap<string, string>;

const entries = (statements: EvictionStatements | undefined): [string, string][] =>
  statements === undefined ? [] : statements instanceof Map ? [...statements] : Object.entries(statements);

function validSignal(signal: string): signal is EvictionSignal {
  return (EVICTION_SIGNALS as readonly string[]).includes(signal);
}

function checkSignal(signal: string): EvictionSignal {
  if (!validSignal(signal)) throw new Error(`unsupported eviction signal ${signal}`);
  return signal;
}

/** Go's float32(strconv.ParseFloat(strings.TrimRight(s, "%"), 32)) / 100, kept at float32 precision. */
function parsePercentage(text: string): number {
  const body = text.replace(/%+$/, '');
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(body)) {
    throw new Error(`strconv.ParseFloat: parsing ${JSON.stringify(body)}: invalid syntax`);
  }
  return Math.fround(Math.fround(Number(body)) / 100);
}

/**
 * Go's ParseThresholdConfig: the hard thresholds, then the soft ones (each needs a grace period), with
 * minimum reclaims attached by signal; with `pods` in allocatableConfig (--enforce-node-allocatable), an
 * allocatableMemory.available copy of each hard memory.available threshold. `evictionHard` undefined
 * takes the kubelet's default (DEFAULT_EVICTION_HARD, as Go's config defaulting does); an empty map
 * gives no hard thresholds. Throws an Error with Go's message on bad input.
 */
export function parseThresholdConfig(
  allocatableConfig: readonly string[] | undefined,
  evictionHard?: EvictionStatements,
  evictionSoft?: EvictionStatements,
  evictionSoftGracePeriod?: EvictionStatements,
  evictionMinimumReclaim?: EvictionStatements,
): EvictionThreshold[] {
  const results = parseThresholdStatements(evictionHard ?? DEFAULT_EVICTION_HARD);
  const soft = parseThresholdStatements(evictionSoft);
  const gracePeriods = parseGracePeriods(evictionSoftGracePeriod);
  const minReclaims = parseMinimumReclaims(evictionMinimumReclaim);
  for (const threshold of soft) {
    const period = gracePeriods.get(threshold.signal);
    if (period === undefined) throw new Error(`grace period must be specified for the soft eviction threshold ${threshold.signal}`);
    threshold.gracePeriodMs = period;
  }
  results.push(...soft);
  for (const threshold of results) {
    const minReclaim = minReclaims.get(threshold.signal);
    if (minReclaim) threshold.minReclaim = minReclaim;
  }
  if (allocatableConfig?.includes(NODE_ALLOCATABLE_ENFORCEMENT_KEY)) {
    for (const threshold of [...results]) {
      if (threshold.signal !== 'memory.available' || !isHardEvictionThreshold(threshold)) continue;
      const copy: EvictionThreshold = { ...threshold, signal: 'allocatableMemory.available' };
      delete copy.gracePeriodMs;
      results.push(copy);
    }
  }
  return results;
}

/** Go's parseThresholdStatements: one threshold per signal; "0%" and "100%" are ignored. */
export function parseThresholdStatements(statements: EvictionStatements | undefined): EvictionThreshold[] {
  const out: EvictionThreshold[] = [];
  for (const [signal, val] of entries(statements)) {
    const threshold = parseThresholdStatement(signal, val);
    if (threshold) out.push(threshold);
  }
  return out;
}

/** Go's parseThresholdStatement: a threshold, or undefined when it is to be ignored ("0%", "100%"). */
export function parseThresholdStatement(signal: string, val: string): EvictionThreshold | undefined {
  const sig = checkSignal(signal);
  if (val.endsWith('%')) {
    if (val === '0%' || val === '100%') return undefined;
    const percentage = parsePercentage(val);
    if (percentage < 0) throw new Error(`eviction percentage threshold ${signal} must be >= 0%: ${val}`);
    if (percentage > 1) throw new Error(`eviction percentage threshold ${signal} must be <= 100%: ${val}`);
    return { signal: sig, operator: 'LessThan', percentage };
  }
  const quantity = Quantity.parse(val);
  if (quantity.sign() <= 0) throw new Error(`eviction threshold ${signal} must be positive: ${quantity.toString()}`);
  return { signal: sig, operator: 'LessThan', quantity };
}

/** Go's parseGracePeriods: signal -> ms (Go durations, "1m30s"). */
function parseGracePeriods(statements: EvictionStatements | undefined): Map<EvictionSignal, number> {
  const out = new Map<EvictionSignal, number>();
  for (const [signal, val] of entries(statements)) {
    const sig = checkSignal(signal);
    const period = parseDuration(val);
    if (period < 0) throw new Error(`invalid eviction grace period specified: ${val}, must be a positive value`);
    out.set(sig, period);
  }
  return out;
}

/** Go's parseMinimumReclaims: signal -> quantity or percentage. */
function parseMinimumReclaims(statements: EvictionStatements | undefined): Map<EvictionSignal, EvictionThresholdValue> {
  const out = new Map<EvictionSignal, EvictionThresholdValue>();
  for (const [signal, val] of entries(statements)) {
    const sig = checkSignal(signal);
    if (val.endsWith('%')) {
      const percentage = parsePercentage(val);
      if (percentage <= 0) throw new Error(`eviction percentage minimum reclaim ${signal} must be positive: ${val}`);
      out.set(sig, { percentage });
      continue;
    }
    const quantity = Quantity.parse(val);
    if (quantity.sign() < 0) throw new Error(`negative eviction minimum reclaim specified for ${signal}`);
    out.set(sig, { quantity });
  }
  return out;
}

/** Go's isHardEvictionThreshold: no grace period. */
export function isHardEvictionThreshold(threshold: EvictionThreshold): boolean {
  return !threshold.gracePeriodMs;
}

/**
 * evictionapi.GetThresholdQuantity: the quantity, or percentage * capacity (BinarySI, truncated as Go's
 * int64 conversion does); an unknown capacity counts as 0.
 */
export function getThresholdQuantity(value: EvictionThresholdValue, capacity: Quantity | undefined): Quantity {
  if (value.quantity) return value.quantity;
  return Quantity.fromValue(Math.trunc((capacity?.value() ?? 0) * (value.percentage ?? 0)), 'BinarySI');
}

/** Go's formatThreshold, for logs: `threshold(signal=memory.available, operator=LessThan, value=100Mi, gracePeriod=0s)`. */
export function formatEvictionThreshold(threshold: EvictionThreshold): string {
  const value = threshold.quantity ? threshold.quantity.toString() : `${+((threshold.percentage ?? 0) * 100).toPrecision(7)}%`;
  return `threshold(signal=${threshold.signal}, operator=${threshold.operator}, value=${value}, gracePeriod=${formatDuration(threshold.gracePeriodMs ?? 0)})`;
}
