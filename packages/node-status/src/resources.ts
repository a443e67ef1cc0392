// --kube-reserved / --system-reserved (Go: parseResourceList in cmd/kubelet/app/server.go) and the
// node allocatable reservation (the thresholds come from @kubelet-ts/core's parseThresholdConfig)
// (Go: containerManagerImpl.GetNodeAllocatableReservation / hardEvictionReservation).
import { getThresholdQuantity, Quantity, type EvictionThreshold } from '@kubelet-ts/core';

/** Resource name -> quantity, as v1.ResourceList. */
export type ResourceList = Map<string, Quantity>;

export const RESOURCE_CPU = 'cpu';
export const RESOURCE_MEMORY = 'memory';
export const RESOURCE_PODS = 'pods';
export const RESOURCE_EPHEMERAL_STORAGE = 'ephemeral-storage';
/** pidlimit.PIDs: may be reserved, never reported in node capacity. */
export const RESOURCE_PID = 'pid';

const reservable = new Set([RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_PID]);

/**
 * cliflag.MapStringString: "k1=v1,k2=v2" (spaces around keys and values trimmed, empty items
 * skipped). A later key wins, as in Go's map.
 */
export function parseMapStringString(text: string): Map<string, string> {
  return parsePairs(text, '=', 'malformed pair, expect string=string');
}

/** cliflag.LangleSeparatedMapStringString: "k1<v1,k2<v2". */
export function parseLangleSeparatedMapStringString(text: string): Map<string, string> {
  return parsePairs(text, '<', 'malformed pair, expect string<string');
}

function parsePairs(text: string, sep: string, malformed: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item.length === 0) continue;
    const at = item.indexOf(sep);
    if (at < 0) throw new Error(`${malformed}: ${JSON.stringify(item)}`);
    out.set(item.slice(0, at).trim(), item.slice(at + 1).trim());
  }
  return out;
}

/**
 * Parses `--kube-reserved`/`--system-reserved`: "cpu=100m,memory=100Mi,ephemeral-storage=1Gi,pid=100"
 * (or the KubeletConfiguration map form). Only cpu, memory, ephemeral-storage and pid may be
 * reserved; quantities may not be negative. Errors carry Go's messages, naming the bad token.
 */
export function parseResourceList(input: string | Record<string, string> | Map<string, string> | undefined): ResourceList {
  const rl: ResourceList = new Map();
  if (input === undefined) return rl;
  const pairs = typeof input === 'string' ? parseMapStringString(input) : input instanceof Map ? input : new Map(Object.entries(input));
  for (const [k, v] of pairs) {
    if (!reservable.has(k)) throw new Error(`cannot reserve ${JSON.stringify(k)} resource`);
    let q: Quantity;
    try {
      q = Quantity.parse(v);
    } catch (err) {
      throw new Error(`failed to parse quantity ${JSON.stringify(v)} for ${JSON.stringify(k)} resource: ${(err as Error).message}`);
    }
    if (q.sign() < 0) throw new Error(`resource quantity for ${JSON.stringify(k)} cannot be negative: ${v}`);
    rl.set(k, q);
  }
  return rl;
}

/** hardEvictionReservation: memory.available and nodefs.available thresholds reserve memory and ephemeral-storage. */
export function hardEvictionReservation(thresholds: readonly EvictionThreshold[], capacity: ResourceList): ResourceList {
  const out: ResourceList = new Map();
  for (const t of thresholds) {
    if (t.operator !== 'LessThan') continue;
    if (t.signal === 'memory.available') out.set(RESOURCE_MEMORY, getThresholdQuantity(t, capacity.get(RESOURCE_MEMORY)));
    else if (t.signal === 'nodefs.available') out.set(RESOURCE_EPHEMERAL_STORAGE, getThresholdQuantity(t, capacity.get(RESOURCE_EPHEMERAL_STORAGE)));
  }
  return out;
}

/**
 * GetNodeAllocatableReservation: for each resource of the container manager's capacity, system
 * reserved + kube reserved + the hard eviction reservation; zero entries are left out.
 */
export function nodeAllocatableReservation(
  capacity: ResourceList,
  reserved: { kubeReserved?: ResourceList; systemReserved?: ResourceList; evictionHard?: readonly EvictionThreshold[] },
): ResourceList {
  const eviction = hardEvictionReservation(reserved.evictionHard ?? [], capacity);
  const out: ResourceList = new Map();
  for (const k of capacity.keys()) {
    let v = Quantity.zero();
    for (const part of [reserved.systemReserved?.get(k), reserved.kubeReserved?.get(k), eviction.get(k)]) {
      if (part) v = v.add(part);
    }
    if (!v.isZero()) out.set(k, v);
  }
  return out;
}

/**
 * Allocatable as the MachineInfo setter computes it: capacity minus the reservation, never below
 * zero, keeping the capacity's format.
 */
export function allocatableFrom(capacity: ResourceList, reservation: ResourceList): ResourceList {
  const out: ResourceList = new Map();
  for (const [k, cap] of capacity) {
    let v = cap;
    const r = reservation.get(k);
    if (r) v = v.sub(r);
    if (v.sign() < 0) v = Quantity.zero(cap.format);
    out.set(k, v);
  }
  return out;
}

/** v1helper.IsExtendedResourceName: a domain-prefixed name outside kubernetes.io, not requests.*. */
export function isExtendedResourceName(name: string): boolean {
  if (name.startsWith('requests.')) return false;
  const slash = name.indexOf('/');
  if (slash < 0) return false;
  const domain = name.slice(0, slash);
  if (domain === 'kubernetes.io' || domain.endsWith('.kubernetes.io')) return false;
  return true;
}
