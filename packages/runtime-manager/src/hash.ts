// The container spec hash (Go: kubecontainer.HashContainer), stored in the
// io.kubernetes.container.hash annotation. When the hash of the spec differs from the hash a running
// container was created with, computePodActions restarts the container.
//
// What is hashed: the fields whose change needs a new container - name, image, command, args,
// workingDir, env, envFrom, ports, volumeMounts, volumeDevices, securityContext, lifecycle, stdin,
// stdinOnce and tty - as canonical JSON (keys sorted, undefined/null dropped), with FNV-1a 32 bit,
// printed as lower-case hex like Go's strconv.FormatUint(hash, 16).
//
// Left out on purpose: resources (Go clears them too: resizes are not restarts), probes (they are
// re-read by the prober, no restart needed), and the fields the API server defaults
// (imagePullPolicy, terminationMessagePath/Policy, restartPolicy) so a pod from a source that does
// not default them keeps its hash once defaulted. Go >= 1.31 hashes only name and image; for API
// pods that is equivalent, since the API server only lets the image change.
import type { V1Container } from '@kubernetes/client-node';
import { canonicalJson } from '@kubelet-ts/core';

const HASHED_FIELDS = [
  'name',
  'image',
  'command',
  'args',
  'workingDir',
  'env',
  'envFrom',
  'ports',
  'volumeMounts',
  'volumeDevices',
  'securityContext',
  'lifecycle',
  'stdin',
  'stdinOnce',
  'tty',
] as const;

/** FNV-1a, 32 bit, over the UTF-8 bytes of text. */
export function fnv32a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The container's spec hash as lower-case hex (see the module comment for the fields hashed). */
export function hashContainer(container: V1Container): string {
  const picked: Record<string, unknown> = {};
  for (const field of HASHED_FIELDS) {
    const value = (container as unknown as Record<string, unknown>)[field];
    if (value === undefined || value === null) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    if (value === false) continue;
    picked[field] = value;
  }
  // Null members are left out too, so a field written as null hashes as one not written at all.
  return fnv32a(canonicalJson(picked, { omitNull: true })).toString(16);
}
