// A long-lived process that makes mount(2) and umount2(2) calls for SystemMounter, so that a tmpfs
// volume costs a line over a pipe rather than the fork and exec of mount(8) (a fork of the kubelet's
// whole address space). The helper is perl (perl-base is Essential on Debian and its derivatives;
// most other distributions ship it too) calling syscall() with the architecture's numbers; where it
// cannot run, SystemMounter uses mount(8) and umount(8) as before.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants } from 'node:os';

/** MS_BIND of mount(2). */
export const MS_BIND = 0x1000;

/**
 * mount(2) and umount2(2) numbers by Node's process.arch, with the perl archname the helper must
 * report (so that a perl of another ABI, e.g. x32 or 32-bit on a 64-bit host, is not handed the
 * wrong numbers: it declines instead).
 */
const syscalls: Record<string, { mount: number; umount2: number; archname: string }> = {
  x64: { mount: 165, umount2: 166, archname: '^x86_64-linux(?!-gnux32)' },
  arm64: { mount: 40, umount2: 39, archname: '^aarch64-linux' },
  riscv64: { mount: 40, umount2: 39, archname: '^riscv64-linux' },
  loong64: { mount: 40, umount2: 39, archname: '^loongarch64-linux' },
  arm: { mount: 21, umount2: 52, archname: '^arm[^-]*-linux' },
  ia32: { mount: 21, umount2: 52, archname: '^i[3-6]86-linux' },
  s390x: { mount: 21, umount2: 52, archname: '^s390x-linux' },
  ppc64: { mount: 21, umount2: 52, archname: '^(powerpc|ppc)64(le)?-linux' },
};

/**
 * The helper. Requests are lines `<id> mount <source> <target> <fstype> <flags> <data>` and
 * `<id> umount <target> <flags>`, strings hex-encoded (`-` for NULL) so that any path passes;
 * each is answered `<id> <errno>` (0 for success), in order. It exits at the end of its input, so
 * it does not outlive the kubelet even when the kubelet is killed.
 */
const SCRIPT = String.raw`
use strict;
use Config;
my ($nr_mount, $nr_umount2, $archname) = @ARGV;
$| = 1;
if ($^O ne 'linux' || $Config{archname} !~ /$archname/) { print "unsupported $^O $Config{archname}\n"; exit 3; }
print "ready $$\n";
while (defined(my $line = <STDIN>)) {
  chomp $line;
  my ($id, $op, @a) = split / /, $line, -1;
  my @s = map { $_ eq '-' ? 0 : pack('H*', $_) } @a; # 0 is passed as a NULL pointer, a string as a pointer to it
  my $r = -1;
  if ($op eq 'mount' && @a == 5) {
    $r = syscall($nr_mount + 0, $s[0], $s[1], $s[2], hex($a[3]) + 0, $s[4]);
  } elsif ($op eq 'umount' && @a == 2) {
    $r = syscall($nr_umount2 + 0, $s[0], hex($a[1]) + 0);
  } else {
    $! = 22;
  }
  print $id, ' ', ($r == -1 ? $! + 0 : 0), "\n";
}
`;

/** The helper cannot run here (no perl, another architecture); callers use mount(8). */
export class MountHelperUnavailableError extends Error {
  override name = 'MountHelperUnavailableError';
}

/** The helper exited while a request was outstanding: whether the call was made is not known. */
export class MountHelperExitedError extends Error {
  override name = 'MountHelperExitedError';
}

/** What spawns the helper (tests inject another command or a failing one). */
export type MountHelperSpawn = (file: string, args: string[]) => ChildProcessWithoutNullStreams;

export interface MountHelperOptions {
  /** Default `perl`. */
  perl?: string;
  /** Default process.arch. */
  arch?: string;
  /** Default child_process.spawn. */
  spawn?: MountHelperSpawn;
}

/** A failed call: errno and its name (EPERM, EBUSY ...). */
export interface SyscallResult {
  errno: number;
  /** The errno's name, undefined on success. */
  code?: string;
}

const errnoNames = new Map<number, string>(Object.entries(constants.errno).map(([name, n]) => [n, name]));

const hex = (s: string | undefined): string => (s === undefined ? '-' : Buffer.from(s, 'utf8').toString('hex'));

interface Running {
  child: ChildProcessWithoutNullStreams;
  pending: Map<number, { resolve: (r: SyscallResult) => void; reject: (e: Error) => void }>;
  ready: Promise<void>;
}

/**
 * One helper process, started on the first call and again after it died. It holds the event loop
 * only while a call is outstanding (the kubelet exits as if it were not there) and is ended by
 * close() or, at the latest, when this process exits and its stdin closes.
 */
export class MountHelper {
  private readonly perl: string;
  private readonly arch: string;
  private readonly spawnHelper: MountHelperSpawn;
  private running?: Running;
  private unavailable?: MountHelperUnavailableError;
  private nextId = 1;
  private closed = false;
  /** Helper processes started so far. */
  starts = 0;

  constructor(opts: MountHelperOptions = {}) {
    this.perl = opts.perl ?? 'perl';
    this.arch = opts.arch ?? process.arch;
    this.spawnHelper = opts.spawn ?? ((file, args) => spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] }));
  }

  /** The running helper's pid, if one runs. */
  get pid(): number | undefined {
    return this.running?.child.pid;
  }

  /** mount(2); resolves with errno 0 or the failure's errno. */
  mount(source: string | undefined, target: string, fsType: string | undefined, flags: number, data: string | undefined): Promise<SyscallResult> {
    return this.call(`mount ${hex(source)} ${hex(target)} ${hex(fsType)} ${flags.toString(16)} ${hex(data)}`);
  }

  /** umount2(2); resolves with errno 0 or the failure's errno. */
  umount(target: string, flags = 0): Promise<SyscallResult> {
    return this.call(`umount ${hex(target)} ${flags.toString(16)}`);
  }

  /** Ends the helper; later calls reject as unavailable. */
  close(): void {
    this.closed = true;
    const running = this.running;
    this.running = undefined;
    if (!running) return;
    running.child.stdin.end();
    running.child.kill('SIGTERM');
    for (const p of running.pending.values()) p.reject(new MountHelperExitedError('the mount helper was closed'));
    running.pending.clear();
  }

  private async call(request: string): Promise<SyscallResult> {
    // A helper that exits between its start and this call's write is replaced; the request was not sent.
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw new MountHelperUnavailableError('the mount helper is closed');
      if (this.unavailable) throw this.unavailable;
      if (attempt === 3) throw new MountHelperUnavailableError(`the mount helper (${this.perl}) exits as soon as it starts`);
      const running = this.running ?? this.start();
      await running.ready;
      if (this.running !== running) continue;
      const id = this.nextId++;
      return new Promise<SyscallResult>((resolve, reject) => {
        if (running.pending.size === 0) this.hold(running, true);
        running.pending.set(id, { resolve, reject });
        running.child.stdin.write(`${id} ${request}\n`);
      });
    }
  }

  /** Keeps the event loop alive while calls are outstanding, not while idle. */
  private hold(running: Running, on: boolean): void {
    const streams = [running.child.stdout, running.child.stderr, running.child.stdin] as Array<{ ref?: () => void; unref?: () => void }>;
    for (const s of streams) (on ? s.ref : s.unref)?.call(s);
    if (on) running.child.ref();
    else running.child.unref();
  }

  private start(): Running {
    const { mount, umount2, archname } = syscalls[this.arch] ?? {};
    if (mount === undefined || process.platform !== 'linux') {
      this.unavailable = new MountHelperUnavailableError(`no mount(2) numbers for ${process.platform}/${this.arch}`);
      throw this.unavailable;
    }
    this.starts++;
    const child = this.spawnHelper(this.perl, ['-e', SCRIPT, String(mount), String(umount2), archname]);
    const pending: Running['pending'] = new Map();
    let stderr = '';
    let buffered = '';
    let markReady: () => void = () => undefined;
    let failStart: (e: Error) => void = () => undefined;
    let started = false;
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failStart = reject;
    });
    const running: Running = { child, pending, ready };
    this.running = running;
    this.hold(running, true);

    const exited = (why: string): void => {
      if (this.running === running) this.running = undefined;
      if (!started) {
        // It never answered: perl is missing or declined this architecture; mount(8) from now on.
        this.unavailable = new MountHelperUnavailableError(`the mount helper (${this.perl}) did not start: ${why}${stderr ? `: ${stderr.trim()}` : ''}`);
        failStart(this.unavailable);
        return;
      }
      for (const p of pending.values()) p.reject(new MountHelperExitedError(`the mount helper (${this.perl}, pid ${child.pid}) exited before answering: ${why}`));
      pending.clear();
    };
    child.on('error', (err) => exited(err.message));
    child.on('exit', (code, signal) => exited(signal ? `signal ${signal}` : `exit status ${code}`));
    child.stdin.on('error', () => undefined); // EPIPE after an exit: reported by 'exit'
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (!started) {
          if (line.startsWith('ready ')) {
            started = true;
            markReady();
            this.hold(running, false);
          } else {
            stderr = `${line}\n${stderr}`;
          }
          continue;
        }
        const space = line.indexOf(' ');
        const id = Number(line.slice(0, space));
        const errno = Number(line.slice(space + 1));
        const waiter = pending.get(id);
        if (!waiter) continue;
        pending.delete(id);
        if (pending.size === 0) this.hold(running, false);
        waiter.resolve(errno === 0 ? { errno: 0 } : { errno, code: errnoNames.get(errno) ?? `errno ${errno}` });
      }
    });
    return running;
  }
}
