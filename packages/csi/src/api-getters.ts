// CSIDriver and VolumeAttachment objects read from the API server for the volume plugin. A missing object
// is `undefined` (no CSIDriver means Go's defaults; a VolumeAttachment not made yet is waited for); any other
// failure rejects with the API server's message and status code.
import type { KubeConfig, V1CSIDriver, V1VolumeAttachment } from '@kubernetes/client-node';
import { apiErrorCode, apiErrorMessage, lazyApiClient } from '@kubelet-ts/core';
import type { CsiDriverObjectGetter, VolumeAttachmentGetter } from './types.js';

async function orUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (apiErrorCode(err) === 404) return undefined;
    throw Object.assign(new Error(apiErrorMessage(err), { cause: err }), { statusCode: apiErrorCode(err) });
  }
}

/** CSIDriver and VolumeAttachment getters over storage.k8s.io/v1 (client-node is loaded on the first read). */
export function createCsiApiGetters(kubeConfig: KubeConfig): CsiDriverObjectGetter & VolumeAttachmentGetter {
  const api = lazyApiClient(kubeConfig, (k) => k.StorageV1Api);
  return {
    getCSIDriver: async (name: string): Promise<V1CSIDriver | undefined> => orUndefined(async () => (await api()).readCSIDriver({ name })),
    getVolumeAttachment: async (name: string): Promise<V1VolumeAttachment | undefined> => orUndefined(async () => (await api()).readVolumeAttachment({ name })),
  };
}
