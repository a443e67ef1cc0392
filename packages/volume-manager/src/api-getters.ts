// Claims and PersistentVolumes read straight from the API server, as the Go kubelet does (no cache: a
// pod's claims are read when its volumes are set up).
import type { KubeConfig } from '@kubernetes/client-node';
import { apiErrorCode, apiErrorMessage, lazyApiClient } from '@kubelet-ts/core';
import type { PersistentVolumeGetter } from './types.js';

/** The API server's Status message instead of client-node's whole response, keeping the status code. */
function asApiError(err: unknown): Error {
  return Object.assign(new Error(apiErrorMessage(err), { cause: err }), { statusCode: apiErrorCode(err) });
}

export function createPersistentVolumeGetter(kubeConfig: KubeConfig): PersistentVolumeGetter {
  const api = lazyApiClient(kubeConfig, (k) => k.CoreV1Api);
  return {
    async getPersistentVolumeClaim(namespace, name) {
      try {
        return await (await api()).readNamespacedPersistentVolumeClaim({ namespace, name });
      } catch (err) {
        throw asApiError(err);
      }
    },
    async getPersistentVolume(name) {
      try {
        return await (await api()).readPersistentVolume({ name });
      } catch (err) {
        throw asApiError(err);
      }
    },
  };
}
