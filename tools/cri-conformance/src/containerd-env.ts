import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ContainerdEnv {
  endpoint: string;
  root: string;
  busyboxImage: string;
  pauseImage: string;
  podCidr: string;
}

/**
 * Reads what tools/containerd/start.sh wrote. Missing env is an error, not a skip: the containerd
 * suite is part of the normal test run.
 */
export function readContainerdEnv(): ContainerdEnv {
  const root = process.env.KUBELET_TS_CONTAINERD_ROOT ?? '/tmp/kubelet-ts-containerd';
  const file = join(root, 'env');
  if (!existsSync(file)) {
    throw new Error(`containerd is not running for the tests: ${file} does not exist; start it with tools/containerd/start.sh (npm test does)`);
  }
  const values = Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  for (const key of ['CONTAINERD_ENDPOINT', 'BUSYBOX_IMAGE', 'PAUSE_IMAGE']) {
    if (!values[key]) throw new Error(`${file} has no ${key}`);
  }
  return {
    endpoint: values.CONTAINERD_ENDPOINT,
    root: values.CONTAINERD_ROOT ?? root,
    busyboxImage: values.BUSYBOX_IMAGE,
    pauseImage: values.PAUSE_IMAGE,
    podCidr: values.CONTAINERD_POD_CIDR ?? '',
  };
}
