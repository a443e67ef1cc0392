import { existsSync } from 'node:fs';
import { busSocketPath, defaultLogger, systemBusAddress, type Logger } from '@kubelet-ts/core';
import { FirstAvailableShutdownTrigger, LogindShutdownTrigger } from './logind.js';
import { SignalShutdownTrigger } from './signal-trigger.js';
import type { ShutdownTrigger } from './trigger.js';

/**
 * The kubelet's choice: logind when the system bus socket exists and logind answers on it, else SIGPWR (machines
 * without systemd). Which one was taken is logged when it starts.
 */
export function defaultShutdownTrigger(options: { shutdownGracePeriodMs: number; logger?: Logger; busAddress?: string; signal?: NodeJS.Signals }): ShutdownTrigger {
  const logger = options.logger ?? defaultLogger;
  const busAddress = options.busAddress ?? systemBusAddress();
  const signal = new SignalShutdownTrigger({ signal: options.signal });
  let socketExists = false;
  try {
    const path = busSocketPath(busAddress);
    socketExists = path.startsWith('\0') || existsSync(path);
  } catch {
    socketExists = false;
  }
  if (!socketExists) {
    logger.info('No system bus: node shutdown is signalled to the kubelet', { busAddress, signal: signal.name });
    return new FirstAvailableShutdownTrigger([signal], logger);
  }
  return new FirstAvailableShutdownTrigger([new LogindShutdownTrigger({ shutdownGracePeriodMs: options.shutdownGracePeriodMs, busAddress, logger }), signal], logger);
}
