// A private D-Bus daemon for tests (Debian's `dbus` package): fake services (logind, systemd1) own names on it and
// the clients under test connect to its address, as they would to the system bus.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PrivateBus {
  /** The bus address (`unix:path=<dir>/bus`); it stays the same across restart(). */
  address: string;
  /** A private temporary directory, removed at teardown (the bus's socket and config live in it). */
  dir: string;
  /** Stops the daemon (every connection to it closes) and starts a new one on the same address. */
  restart(): Promise<void>;
  /** Stops the daemon; restart() starts it again. */
  stop(): Promise<void>;
}

export interface PrivateBusOptions {
  /** The temporary directory's name prefix (default "kts-dbus-"). */
  prefix?: string;
  /** The dbus-daemon binary (default "dbus-daemon" on PATH). */
  command?: string;
}

const BUS_CONFIG = (socket: string) => `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/><allow user="*"/></policy>
</busconfig>
`;

/**
 * Starts a dbus-daemon that lets anyone own any name and send anywhere, listening on a socket in a new temporary
 * directory. The host's teardown stops it and removes the directory. Rejects when dbus-daemon cannot be started.
 */
export async function startPrivateBus(host: { teardown(fn: () => unknown): void }, options: PrivateBusOptions = {}): Promise<PrivateBus> {
  const dir = mkdtempSync(join(tmpdir(), options.prefix ?? 'kts-dbus-'));
  const socket = join(dir, 'bus');
  const config = join(dir, 'bus.conf');
  writeFileSync(config, BUS_CONFIG(socket));
  const command = options.command ?? 'dbus-daemon';

  const launch = async (): Promise<() => Promise<void>> => {
    const daemon = spawn(command, [`--config-file=${config}`, '--nofork', '--print-address'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    daemon.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      let out = '';
      daemon.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve();
      });
      daemon.once('exit', (code, signal) => reject(new Error(`private bus: ${command} exited (${code ?? signal}) before listening on ${socket}: ${stderr.trim()}`)));
      daemon.once('error', (error) => reject(new Error(`private bus: cannot run ${command} (Debian package dbus): ${error.message}`)));
    });
    return async () => {
      if (daemon.exitCode !== null || daemon.signalCode !== null) return;
      const exited = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      await exited;
    };
  };

  let stopCurrent: (() => Promise<void>) | undefined;
  try {
    stopCurrent = await launch();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const stop = async () => {
    const current = stopCurrent;
    stopCurrent = undefined;
    await current?.();
  };
  host.teardown(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    address: `unix:path=${socket}`,
    dir,
    stop,
    restart: async () => {
      await stop();
      stopCurrent = await launch();
    },
  };
}
