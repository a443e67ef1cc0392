// The downwardAPI volume plugin (Go: pkg/volume/downwardapi): pod metadata and container resources
// as files, on tmpfs.
import type { V1DownwardAPIVolumeFile, V1Pod, V1Volume } from '@kubernetes/client-node';
import { extractFieldPathAsString, extractResourceValueByContainerName, type NodeAllocatable } from '@kubelet-ts/core';
import type { FileProjection } from '../atomic-writer.js';
import type { MountedVolume, NodeFacts, VolumeContext, VolumeHost, VolumePlugin } from '../types.js';
import { aggregateErrors, DEFAULT_MODE, podLogName, setUpApiVolume, tearDownApiVolume, type ApiVolumePluginOptions } from './api-volume.js';

export const DOWNWARD_API_PLUGIN_NAME = 'kubernetes.io/downward-api';

export function nodeAllocatable(node: NodeFacts): NodeAllocatable {
  return {
    milliCpu: node.allocatableMilliCpu,
    memoryBytes: node.allocatableMemoryBytes,
    ephemeralStorageBytes: node.allocatableEphemeralStorageBytes,
  };
}

/**
 * Go: downwardapi.CollectData: one file per item, a fieldRef read from the pod's metadata, a
 * resourceFieldRef from the named container (a missing limit reads as node allocatable). Every
 * item is tried; the errors come back together as Go's aggregate.
 */
export function collectDownwardAPIData(
  items: V1DownwardAPIVolumeFile[] | undefined,
  pod: V1Pod,
  node: NodeFacts,
  defaultMode: number | undefined,
): Map<string, FileProjection> {
  const errs: unknown[] = [];
  const data = new Map<string, FileProjection>();
  for (const item of items ?? []) {
    const projection: FileProjection = { data: '', mode: item.mode ?? defaultMode ?? DEFAULT_MODE };
    try {
      if (item.fieldRef) projection.data = extractFieldPathAsString(pod, item.fieldRef.fieldPath);
      else if (item.resourceFieldRef) {
        projection.data = extractResourceValueByContainerName(item.resourceFieldRef, pod, item.resourceFieldRef.containerName ?? '', nodeAllocatable(node));
      }
    } catch (err) {
      errs.push(err);
    }
    data.set(item.path, projection);
  }
  const err = aggregateErrors(errs);
  if (err) throw err;
  return data;
}

export class DownwardAPIPlugin implements VolumePlugin {
  readonly name = DOWNWARD_API_PLUGIN_NAME;
  readonly requiresRemount = true;

  constructor(private readonly opts: ApiVolumePluginOptions = {}) {}

  canSupport(volume: V1Volume): boolean {
    return volume.downwardAPI !== undefined && volume.downwardAPI !== null;
  }

  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    const source = ctx.volume.downwardAPI!;
    ctx.host.logger.v(3).info('Setting up a downwardAPI volume', { volume: ctx.volume.name, pod: podLogName(ctx.pod), dir: ctx.dir });
    let data: Map<string, FileProjection>;
    try {
      data = collectDownwardAPIData(source.items, ctx.pod, ctx.host.node, source.defaultMode);
    } catch (err) {
      ctx.host.logger.error('Error preparing data for downwardAPI volume', err, { volume: ctx.volume.name, pod: podLogName(ctx.pod) });
      throw err;
    }
    return setUpApiVolume(ctx, 'memory', data, this.opts);
  }

  tearDown(dir: string, host: VolumeHost): Promise<void> {
    return tearDownApiVolume(dir, host);
  }
}
