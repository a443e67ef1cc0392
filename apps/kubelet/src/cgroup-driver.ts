// The cgroup driver the kubelet uses: the runtime's when it says (Go 1.28+: KubeletCgroupDriverFromCRI,
// getCgroupDriverFromCRI), else the configured one. containerd 1.6 has no RuntimeConfig RPC; there a mismatch
// only shows when runc refuses a sandbox, so that failure gets the fix appended (cgroupDriverMismatchHint).
import { isUnimplemented, type RuntimeService } from '@kubelet-ts/cri-client';
import type { Clock, Logger } from '@kubelet-ts/core';

export type CgroupDriverName = 'cgroupfs' | 'systemd';

/** Go: getCgroupDriverFromCRI's three tries, 2 s apart, "hoping that any errors are transient". */
const RUNTIME_CONFIG_TRIES = 3;
const RUNTIME_CONFIG_RETRY_MS = 2_000;

/**
 * Asks the runtime for its cgroup driver. Unimplemented (containerd 1.6) and an answer without `linux` keep the
 * configured driver. Unlike Go, which exits when the runtime keeps failing, the kubelet keeps its configured
 * driver and says so: an unreachable runtime must not crash it (it is retried and reported by the PLEG and the
 * node's Ready condition).
 */
export async function cgroupDriverFromRuntime(
  runtime: Pick<RuntimeService, 'runtimeConfig'>,
  configured: CgroupDriverName,
  deps: { clock: Clock; logger: Logger; signal?: AbortSignal },
): Promise<CgroupDriverName> {
  const { clock, logger } = deps;
  logger.v(4).info('Getting CRI runtime configuration information');
  let lastError: unknown;
  for (let attempt = 0; attempt < RUNTIME_CONFIG_TRIES; attempt++) {
    if (attempt > 0) await clock.sleep(RUNTIME_CONFIG_RETRY_MS, deps.signal);
    try {
      const response = await runtime.runtimeConfig({ timeoutMs: 10_000 });
      const driver = response.linux?.cgroupDriver;
      if (response.linux === null || response.linux === undefined || driver === undefined) return configured;
      const fromRuntime: CgroupDriverName = driver === 'SYSTEMD' ? 'systemd' : driver === 'CGROUPFS' ? 'cgroupfs' : invalidDriver(driver);
      if (fromRuntime !== configured) {
        logger.warn('The container runtime uses another cgroup driver than the kubelet configuration; using the runtime\'s', {
          cgroupDriver: fromRuntime,
          configuredCgroupDriver: configured,
        });
      }
      logger.info('Using cgroup driver setting received from the CRI runtime', { cgroupDriver: fromRuntime });
      return fromRuntime;
    } catch (error) {
      if (isUnimplemented(error)) {
        logger.info(
          'CRI implementation should be updated to support RuntimeConfig when KubeletCgroupDriverFromCRI feature gate has been enabled. Falling back to using cgroupDriver from kubelet config.',
        );
        return configured;
      }
      if (deps.signal?.aborted) throw error;
      lastError = error;
    }
  }
  logger.error('Failed to get the cgroup driver from the container runtime; using cgroupDriver from the kubelet configuration', lastError, {
    cgroupDriver: configured,
  });
  return configured;
}

function invalidDriver(driver: unknown): never {
  throw new Error(`runtime returned an unknown cgroup driver ${String(driver)}`);
}

// runc's refusal of a cgroupfs path when it runs with the systemd driver (libcontainer/specconv).
const RUNC_WANTS_SLICE = /expected cgroupsPath to be of format "slice:prefix:name" for systemd cgroups/;

/**
 * The fix to append to a sandbox failure caused by drivers that disagree, or undefined. With the kubelet on
 * cgroupfs and containerd on systemd (SystemdCgroup = true), runc refuses every sandbox. (The other way round
 * containerd turns the kubelet's slice into runc's `slice:cri-containerd:<id>` form itself and runc's cgroupfs
 * driver takes it as a relative path: no error to add a hint to; only the RuntimeConfig answer catches it.)
 */
export function cgroupDriverMismatchHint(message: string, kubeletDriver: CgroupDriverName): string | undefined {
  if (kubeletDriver === 'cgroupfs' && RUNC_WANTS_SLICE.test(message)) {
    return 'the container runtime uses the systemd cgroup driver but the kubelet uses "cgroupfs": set cgroupDriver: systemd in the kubelet configuration (--cgroup-driver=systemd), or SystemdCgroup = false in containerd\'s runc options, so both agree';
  }
  return undefined;
}
