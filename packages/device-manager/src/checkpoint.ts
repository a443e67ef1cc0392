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

/** FNV-1a, 32 bits, over a string's UTF-8 bytes (the hash Go's checksum package uses). */
function fnv32a(text: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(text, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * The checksum of the data: FNV-32a, as Go's, but over the data's canonical JSON (Go hashes its spew dump of the
 * Go struct, which has no TypeScript equivalent): a checkpoint written by the Go kubelet reads as corrupt here.
 */
export function checkpointChecksum(data: CheckpointData): number {
  const registered = Object.keys(data.RegisteredDevices)
    .sort()
    .map((k) => [k, [...data.RegisteredDevices[k]].sort()]);
  return fnv32a(JSON.stringify([data.PodDeviceEntries.map((e) => [e.PodUID, e.ContainerName, e.ResourceName, e.DeviceIDs, e.AllocResp]), registered]));
}

/** MarshalCheckpoint: the JSON as written. */
export function marshalCheckpoint(data: CheckpointData): string {
  return JSON.stringify({ Data: data, Checksum: checkpointChecksum(data) });
}

/**
 * UnmarshalCheckpoint + VerifyChecksum. Reads Go v1.20's DeviceIDs (a list) and v1.21+'s (a map of NUMA node
 * to ids). Throws CorruptCheckpointError when the JSON or the checksum is wrong.
 */
export function unmarshalCheckpoint(text: string): CheckpointData {
  let parsed: { Data?: { PodDeviceEntries?: unknown; RegisteredDevices?: unknown }; Checksum?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch (err) {
    throw new CorruptCheckpointError((err as Error).message);
  }
  if (typeof parsed !== 'object' || parsed === null || typeof parsed.Data !== 'object' || parsed.Data === null) throw new CorruptCheckpointError('no Data');
  const entries: PodDevicesEntry[] = [];
  for (const raw of (parsed.Data.PodDeviceEntries ?? []) as Array<Record<string, unknown>>) {
    const ids = raw.DeviceIDs;
    const deviceIds = Array.isArray(ids) ? ids.map(String) : ids && typeof ids === 'object' ? Object.values(ids as Record<string, string[]>).flat().map(String) : [];
    entries.push({
      PodUID: String(raw.PodUID ?? ''),
      ContainerName: String(raw.ContainerName ?? ''),
      ResourceName: String(raw.ResourceName ?? ''),
      DeviceIDs: deviceIds,
      AllocResp: String(raw.AllocResp ?? ''),
    });
  }
  const registered: Record<string, string[]> = {};
  for (const [k, v] of Object.entries((parsed.Data.RegisteredDevices ?? {}) as Record<string, unknown>)) registered[k] = Array.isArray(v) ? v.map(String) : [];
  const data: CheckpointData = { PodDeviceEntries: entries, RegisteredDevices: registered };
  if (parsed.Checksum !== checkpointChecksum(data)) throw new CorruptCheckpointError('checksum mismatch');
  return data;
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
