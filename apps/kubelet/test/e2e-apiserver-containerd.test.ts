import t from 'tap';
import { readContainerdEnv } from '@kubelet-ts/cri-conformance';
import { apiServerScenarios } from './e2e/apiserver-scenarios.js';

const env = readContainerdEnv();
apiServerScenarios(t, { name: 'containerd', endpoint: env.endpoint, busyboxImage: env.busyboxImage, scratchRoot: env.root }, { outageSeconds: 0 });
