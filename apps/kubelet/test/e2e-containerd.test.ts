import t from 'tap';
import { readContainerdEnv } from '@kubelet-ts/cri-conformance';
import { kubeletScenarios } from './e2e/scenarios.js';

const env = readContainerdEnv();
kubeletScenarios(t, { name: 'containerd', endpoint: env.endpoint, busyboxImage: env.busyboxImage, scratchRoot: env.root });
