// The configMap volume plugin (Go: pkg/volume/configmap): a ConfigMap's keys as files, on disk.
import type { V1ConfigMap, V1KeyToPath, V1Volume } from '@kubernetes/client-node';
import { isNotFound } from '@kubelet-ts/core';
import type { FileProjection } from '../atomic-writer.js';
import { VolumeSetupError, type MountedVolume, type VolumeContext, type VolumeHost, type VolumePlugin } from '../types.js';
import { DEFAULT_MODE, podLogName, setUpApiVolume, tearDownApiVolume, type ApiVolumePluginOptions } from './api-volume.js';

export const CONFIGMAP_PLUGIN_NAME = 'kubernetes.io/configmap';

/**
 * Go: configmap.MakePayload: every key of data and binaryData (base64 in the API object) with
 * defaultMode, or only the listed items at their paths with their own mode. A listed key the
 * ConfigMap lacks is an error unless the volume is optional.
 */
export function makeConfigMapPayload(
  items: V1KeyToPath[] | undefined,
  configMap: V1ConfigMap,
  defaultMode: number | undefined,
  optional: boolean,
): Map<string, FileProjection> {
  const mode = defaultMode ?? DEFAULT_MODE;
  const data = configMap.data ?? {};
  const binaryData = configMap.binaryData ?? {};
  const payload = new Map<string, FileProjection>();
  if (!items || items.length === 0) {
    for (const [name, value] of Object.entries(data)) payload.set(name, { data: Buffer.from(value), mode });
    for (const [name, value] of Object.entries(binaryData)) payload.set(name, { data: Buffer.from(value, 'base64'), mode });
    return payload;
  }
  for (const ktp of items) {
    let content: Buffer;
    if (Object.hasOwn(data, ktp.key)) content = Buffer.from(data[ktp.key]);
    else if (Object.hasOwn(binaryData, ktp.key)) content = Buffer.from(binaryData[ktp.key], 'base64');
    else if (optional) continue;
    else throw new VolumeSetupError(`configmap references non-existent config key: ${ktp.key}`);
    payload.set(ktp.path, { data: content, mode: ktp.mode ?? mode });
  }
  return payload;
}

export class ConfigMapPlugin implements VolumePlugin {
  readonly name = CONFIGMAP_PLUGIN_NAME;
  readonly requiresRemount = true;

  constructor(private readonly opts: ApiVolumePluginOptions = {}) {}

  canSupport(volume: V1Volume): boolean {
    return volume.configMap !== undefined && volume.configMap !== null;
  }

  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    const source = ctx.volume.configMap!;
    const namespace = ctx.pod.metadata?.namespace ?? '';
    const name = source.name ?? '';
    const optional = source.optional === true;
    ctx.host.logger.v(3).info('Setting up volume', { volume: ctx.volume.name, pod: ctx.pod.metadata?.uid, dir: ctx.dir });
    let configMap: V1ConfigMap;
    try {
      configMap = await ctx.host.configMaps.getConfigMap(namespace, name);
    } catch (err) {
      if (!(isNotFound(err) && optional)) {
        ctx.host.logger.error("Couldn't get configMap", err, { configMap: `${namespace}/${name}` });
        throw err;
      }
      configMap = { metadata: { namespace, name } };
    }
    ctx.host.logger.v(3).info('Received configMap', {
      configMap: `${namespace}/${name}`,
      pieces: Object.keys(configMap.data ?? {}).length + Object.keys(configMap.binaryData ?? {}).length,
      pod: podLogName(ctx.pod),
    });
    const payload = makeConfigMapPayload(source.items, configMap, source.defaultMode, optional);
    // Go keeps configMaps on disk: tmpfs would charge their memory to no cgroup.
    return setUpApiVolume(ctx, 'disk', payload, this.opts);
  }

  tearDown(dir: string, host: VolumeHost): Promise<void> {
    return tearDownApiVolume(dir, host);
  }
}
