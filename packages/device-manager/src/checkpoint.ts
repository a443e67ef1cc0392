// The device manager's checkpoint, <root-dir>/device-plugins/kubelet_internal_checkpoint, in Go v1.20's JSON
// shape (pkg/kubelet/cm/devicemanager/checkpoint): {"Data":{"PodDeviceEntries":[...],"RegisteredDevices":{...}},
// "Checksum":N}. AllocResp is the protobuf encoding of the plugin's ContainerAllocateResponse, base64 in JSON.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** kubeletDeviceManagerCheckpoint. */
export const CHECKPOINT_FILE_NAME = 'kubelet_internal_checkpoint';

export interface PodDevicesEntry {
  PodUID: string;
  ContainerName: string;
  ResourceName: string;
  DeviceIDs: string[];
  /** base64 of the protobuf ContainerAllocateResponse. */
  AllocResp: string;
}

export interface CheckpointData {
  PodDeviceEntries: PodDevicesEntry[];
  RegisteredDevices: Record<string, string[]>;
}

/** errors.ErrCorruptCheckpoint's text. */
export class CorruptCheckpointError extends Error {
  constructor(detail: string) {
    super(`checkpoint is corrupted: ${detail}`);
    this.name = 'CorruptCheckpointError';
  }
}

/** FNV-1a, 32 bits, over a string's UTF-8 bytes (Go's hash/fnv New32a). */
function fnv32a(text: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(text, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The checkpoint's Data as JSON has it: Go's nil slices and maps are null, v1.21+ keeps DeviceIDs per NUMA node. */
interface RawEntry {
  PodUID?: unknown;
  ContainerName?: unknown;
  ResourceName?: unknown;
  DeviceIDs?: unknown;
  AllocResp?: unknown;
}
interface RawData {
  PodDeviceEntries?: RawEntry[] | null;
  RegisteredDevices?: Record<string, unknown> | null;
}

const goStringLess = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
const spewStrings = (v: unknown): string => (Array.isArray(v) ? `[${v.map(String).join(' ')}]` : '<nil>');

/**
 * What Go's checksum.New hashes: spew's `%#v` of the checkpointData struct (hashutil.DeepHashObject: SortKeys,
 * DisableMethods, SpewKeys), for Go v1.20's DeviceIDs ([]string) and v1.21+'s (checkpoint.DevicesPerNUMA).
 */
function spewCheckpointData(data: RawData): string {
  const entries = data.PodDeviceEntries;
  const entryText = (e: RawEntry): string => {
    let ids: string;
    if (e.DeviceIDs !== null && typeof e.DeviceIDs === 'object' && !Array.isArray(e.DeviceIDs)) {
      const perNuma = e.DeviceIDs as Record<string, unknown>;
      const keys = Object.keys(perNuma).sort((a, b) => Number(a) - Number(b));
      ids = `(checkpoint.DevicesPerNUMA)map[${keys.map((k) => `${Number(k)}:${spewStrings(perNuma[k])}`).join(' ')}]`;
    } else {
      ids = `([]string)${spewStrings(e.DeviceIDs)}`;
    }
    const alloc = typeof e.AllocResp === 'string' ? `[${[...Buffer.from(e.AllocResp, 'base64')].join(' ')}]` : '<nil>';
    return `{PodUID:(string)${String(e.PodUID ?? '')} ContainerName:(string)${String(e.ContainerName ?? '')} ResourceName:(string)${String(e.ResourceName ?? '')} DeviceIDs:${ids} AllocResp:([]uint8)${alloc}}`;
  };
  const entriesText = Array.isArray(entries) ? `[${entries.map(entryText).join(' ')}]` : '<nil>';
  const registered = data.RegisteredDevices;
  const registeredText =
    registered && typeof registered === 'object'
      ? `map[${Object.keys(registered)
          .sort(goStringLess)
          .map((k) => `${k}:${spewStrings(registered[k])}`)
          .join(' ')}]`
      : '<nil>';
  return `(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)${entriesText} RegisteredDevices:(map[string][]string)${registeredText}}`;
}

/** The data as Go v1.20 writes it: no entries is a nil slice (null). */
function toRaw(data: CheckpointData): RawData {
  return {
    PodDeviceEntries: data.PodDeviceEntries.length === 0 ? null : data.PodDeviceEntries.map((e) => ({ ...e })),
    RegisteredDevices: data.RegisteredDevices,
  };
}

/** Go's checkpoint checksum of the data: FNV-32a of spew's dump of the Go struct, so Go's kubelet and this one read each other's checkpoints. */
export function checkpointChecksum(data: CheckpointData): number {
  return fnv32a(spewCheckpointData(toRaw(data)));
}

/** MarshalCheckpoint: the JSON as written. */
export function marshalCheckpoint(data: CheckpointData): string {
  const raw = toRaw(data);
  return JSON.stringify({ Data: raw, Checksum: fnv32a(spewCheckpointData(raw)) });
}

/**
 * UnmarshalCheckpoint + VerifyChecksum. Reads Go v1.20's DeviceIDs (a list) and v1.21+'s (a map of NUMA node
 * to ids, flattened). Throws CorruptCheckpointError when the JSON or the checksum is wrong.
 */
export function unmarshalCheckpoint(text: string): CheckpointData {
  let parsed: { Data?: RawData | null; Checksum?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch (err) {
    throw new CorruptCheckpointError((err as Error).message);
  }
  if (typeof parsed !== 'object' || parsed === null || typeof parsed.Data !== 'object' || parsed.Data === null) throw new CorruptCheckpointError('no Data');
  if (parsed.Checksum !== fnv32a(spewCheckpointData(parsed.Data))) throw new CorruptCheckpointError('checksum mismatch');
  const entries: PodDevicesEntry[] = [];
  for (const raw of parsed.Data.PodDeviceEntries ?? []) {
    const ids = raw.DeviceIDs;
    const deviceIds = Array.isArray(ids) ? ids.map(String) : ids && typeof ids === 'object' ? Object.values(ids as Record<string, string[] | null>).flatMap((v) => v ?? []).map(String) : [];
    entries.push({
      PodUID: String(raw.PodUID ?? ''),
      ContainerName: String(raw.ContainerName ?? ''),
      ResourceName: String(raw.ResourceName ?? ''),
      DeviceIDs: deviceIds,
      AllocResp: typeof raw.AllocResp === 'string' ? raw.AllocResp : '',
    });
  }
  const registered: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(parsed.Data.RegisteredDevices ?? {})) registered[k] = Array.isArray(v) ? v.map(String) : [];
  return { PodDeviceEntries: entries, RegisteredDevices: registered };
}

/** Writes the checkpoint atomically (a temporary file renamed over it), as Go's file store. */
export async function writeCheckpointFile(path: string, data: CheckpointData): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp`;
  await writeFile(tmp, marshalCheckpoint(data), { mode: 0o644 });
  await rename(tmp, path);
}

/** The checkpoint on disk, or undefined when there is none; throws CorruptCheckpointError. */
export async function readCheckpointFile(path: string): Promise<CheckpointData | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return unmarshalCheckpoint(text);
}
