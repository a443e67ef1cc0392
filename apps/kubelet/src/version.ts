import { readFileSync } from 'node:fs';

/** The kubelet-ts version, reported as the kubelet version. */
export const KUBELET_VERSION: string = `v${(JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version}`;
