import { pollUntil } from '@kubelet-ts/core';

/**
 * Polls `probe` until it returns a value other than undefined or false, and returns that value. On time-out the
 * error names what did not happen and the last thing seen (`describe`), so a failing e2e case says why. Every
 * intervalMs; benchmarks timing what they wait for poll faster.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
  describe?: () => string,
  intervalMs = 250,
): Promise<Exclude<T, undefined | false>> {
  let value: T | undefined | false;
  let lastError: unknown;
  try {
    await pollUntil(
      async () => {
        try {
          value = await probe();
          lastError = undefined;
        } catch (error) {
          lastError = error;
          value = undefined;
        }
        return value !== undefined && value !== false;
      },
      intervalMs,
      timeoutMs,
    );
  } catch {
    const seen = lastError ? `; last error: ${(lastError as Error).message}` : '';
    throw new Error(`${what} did not happen within ${timeoutMs} ms${seen}${describe ? `\n${describe()}` : ''}`);
  }
  if (process.env.KUBELET_E2E_TIMES) console.error(`${new Date().toISOString()} ${what}`);
  return value as Exclude<T, undefined | false>;
}
