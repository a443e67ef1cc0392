import 'reflect-metadata';
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { container } from 'tsyringe';
import type { V1Node } from '@kubernetes/client-node';
import { noopLogger } from '@kubelet-ts/core';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { FLAG_SECTIONS, HELP_WIDTH, KUBELET_VERSION, Tokens, helpText, parseFlags, registerKubeletDeps, resolveConfig, usage, versionInfo, type FlagSpec } from '../src/index.js';

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const packageVersion = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const allFlags = FLAG_SECTIONS.flatMap((section) => section.flags);

/** The binary from source, as an operator runs it: exit code, stdout, stderr. */
function kubelet(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

interface HelpRow {
  name: string;
  /** Where the usage text starts. */
  column: number;
  /** Spaces between the name (and type) and the text. */
  gap: number;
}

/** A flag's first line as pflag prints it: `      --name type   text` or `  -v, --v Level   text`. */
const FLAG_LINE = /^(?: {2}-\w, --| {6}--)([a-z][a-z0-9-]*)(?: \S+)?( {2,})\S/;

/** The help's sections: their flag rows and the continuation lines of their texts. */
function parseHelp(text: string): Map<string, { rows: HelpRow[]; continuations: string[]; lines: string[] }> {
  const sections = new Map<string, { rows: HelpRow[]; continuations: string[]; lines: string[] }>();
  let current: { rows: HelpRow[]; continuations: string[]; lines: string[] } | undefined;
  for (const line of text.split('\n')) {
    const header = /^(\S.*) flags:$/.exec(line);
    if (header) {
      current = { rows: [], continuations: [], lines: [] };
      sections.set(header[1], current);
      continue;
    }
    if (!current || line === '') continue;
    current.lines.push(line);
    const row = FLAG_LINE.exec(line);
    if (row) current.rows.push({ name: row[1], column: row.index + row[0].length - 1, gap: row[2].length });
    else current.continuations.push(line);
  }
  return sections;
}

t.test('--help lists every flag once, in its section, aligned as pflag does', async (t) => {
  for (const width of [HELP_WIDTH, 100, 0]) {
    const text = usage(width);
    const sections = parseHelp(text);
    t.same([...sections.keys()], FLAG_SECTIONS.map((s) => s.name), `width ${width}: the sections, in order`);
    const listed = [...sections.values()].flatMap((s) => s.rows.map((row) => row.name));
    t.same([...listed].sort(), allFlags.map((f) => f.name).sort(), `width ${width}: every flag exactly once`);
    for (const [name, { rows, continuations, lines }] of sections) {
      const columns = new Set(rows.map((row) => row.column));
      t.equal(columns.size, 1, `width ${width}: ${name}: one usage column`);
      const [column] = columns;
      t.ok(rows.every((row) => row.gap >= 2), `width ${width}: ${name}: no flag name runs into its text`);
      t.ok(
        continuations.every((line) => line.length > column && line.slice(0, column).trim() === '' && line[column] !== ' '),
        `width ${width}: ${name}: continuation lines start at the usage column`,
      );
      if (width > 0) {
        // pflag breaks only at spaces: a longer line is one word that cannot be broken. When the next piece has no
        // space before the width, pflag's wrapN gives up and prints the rest of the text as it is (a feature gate list
        // with a long gate name, as Go's --help at this width does).
        const tooLong = lines.filter((line) => line.length > width && !/^\s+\w+=true\|false \((ALPHA|BETA) - default=(true|false)\)$/.test(line));
        t.ok(tooLong.every((line) => !line.slice(column).includes(' ')), `width ${width}: lines fit but for unbreakable words: ${tooLong.join(' / ')}`);
      }
    }
    t.same([...listed], [...sections.values()].flatMap((s) => s.rows.map((row) => row.name).sort()), `width ${width}: sorted by name within a section`);
  }
});

t.test('--help reads like the Go kubelet\'s', async (t) => {
  const text = helpText();
  t.match(text, /^The kubelet is the primary "node agent" that runs on each node\./);
  t.match(text, /--pod-manifest-path/, 'the description names the pod sources');
  t.match(text, /--manifest-url/);
  t.match(text, /--kubeconfig/);
  t.notMatch(text.split('\n\nUsage:')[0], /later/, 'no promises of things to come');
  // Unwrapped, each flag is one line (but for the feature gates' list).
  const flat = helpText(0);
  t.match(text, /\n\nUsage:\n {2}kubelet \[flags\]\n\nRuntime flags:\n\n/);
  t.match(text, /\n {2}-h, --help {2,}help for kubelet\n/, "pflag's shorthand form");
  t.match(text, /\n {2}-v, --v Level {2,}number for the log level verbosity\n/);
  t.match(text, /\n {6}--version version\[=true\] {2,}Print version information and quit/);
  t.match(flat, /\n {6}--root-dir string {2,}Directory path for managing kubelet files \(volume mounts,etc\)\. \(default "\/var\/lib\/kubelet"\)\n/, 'strings defaults are quoted');
  t.match(flat, /\n {6}--sync-frequency duration {2,}Max period between synchronizing running containers and config \(default 1m0s\)\n/);
  t.match(flat, /\n {6}--address ip {2,}.*\(default 0\.0\.0\.0\)/, 'other defaults are not');
  t.match(flat, /\n {6}--register-node {2,}Register the node/, 'bools have no type');
  t.match(text, /--feature-gates mapStringBool {2,}A set of key=value pairs that describe feature gates for alpha\/experimental\n {2,}features\. Options are:\n {2,}APIListChunking=true\|false \(BETA - default=true\)\n {2,}APIPriorityAndFairness=true\|false \(BETA - default=true\)\n/, "Go v1.20's gates, sorted");
  t.match(text, /\n {2,}EventedPLEG=true\|false \(ALPHA - default=false\)\n/, 'and the newer ones kubelet-ts implements');
  t.notMatch(text, /RuntimeClass=true\|false/, 'GA gates are not listed, as Go lists them');
  for (const zero of ['--runonce', '--read-only-port int32', '--minimum-container-ttl-duration duration', '--anonymous-auth']) {
    const line = flat.split('\n').find((l) => l.startsWith(`      ${zero} `))!;
    t.notMatch(line, /\(default/, `${zero}: zero values show no default`);
  }
});

/** A value each kind of flag takes. */
function sample(spec: FlagSpec): string[] {
  const values: Record<string, string> = { ip: '127.0.0.1', duration: '1s', int32: '2', port: '2', gates: 'EventedPLEG=true', strings: 'a=b', string: spec.name === 'logging-format' ? 'json' : 'x' };
  return spec.kind === 'bool' || spec.kind === 'version' ? [`--${spec.name}`] : [`--${spec.name}=${values[spec.kind]}`];
}

t.test('the parser takes every flag --help lists, by name and shorthand', async (t) => {
  for (const spec of allFlags) {
    const flags = parseFlags(sample(spec));
    t.not(flags[spec.key], undefined, `--${spec.name}`);
  }
  t.same(parseFlags(['-h']), { help: true });
  t.same(parseFlags(['-v', '3']), { verbosity: 3 });
  t.same(parseFlags(['-v=3']), { verbosity: 3 });
  t.same(parseFlags(['-v3']), { verbosity: 3 });
  t.same(parseFlags(['--v=3']), { verbosity: 3 });
  t.same(parseFlags(['--pod_manifest_path=/m']), { podManifestPath: '/m' }, 'underscores are hyphens, as cliflag.WordSepNormalizeFunc');
  t.throws(() => parseFlags(['--h']), { message: 'unknown flag: --h' }, 'shorthands take one dash');
});

t.test('--version values as Go\'s verflag', async (t) => {
  t.same(parseFlags(['--version']), { version: true });
  t.same(parseFlags(['--version=raw']), { version: 'raw' });
  t.same(parseFlags(['--version=false']), { version: false });
  t.throws(() => parseFlags(['--version=soon']), { message: 'invalid argument "soon" for "--version" flag: must be true, false or raw' });
  t.throws(() => parseFlags(['--version', 'raw']), /unexpected argument "raw"/, 'a value only after =, as pflag');
  t.throws(() => parseFlags(['--address=localhost']), { message: 'invalid argument "localhost" for "--address" flag: "localhost" is not a valid IP address' });
  t.throws(() => parseFlags(['--max-pods=3000000000']), /value out of range/);
});

t.test('the version printed is the one the node reports', async (t) => {
  t.equal(KUBELET_VERSION, `v1.20.2+kubelet-ts.${packageVersion}`);
  t.same(versionInfo(), {
    major: '1',
    minor: '20',
    gitVersion: KUBELET_VERSION,
    kubeletTsVersion: packageVersion,
    nodeVersion: process.version,
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  });
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-version-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const c = container.createChildContainer();
  registerKubeletDeps(c, resolveConfig(parseFlags([`--root-dir=${dir}`, '--hostname-override=node1', '--container-runtime-endpoint=unix:///nonexistent.sock'])));
  c.register(Tokens.RuntimeService, { useValue: new FakeRuntimeService() });
  c.register(Tokens.ImageService, { useValue: new FakeImageService() });
  c.register(Tokens.Logger, { useValue: noopLogger });
  const node = await c.resolve<() => Promise<V1Node>>(Tokens.NodeAnyWay)();
  t.equal(node.status?.nodeInfo?.kubeletVersion, KUBELET_VERSION, 'nodeInfo.kubeletVersion');
});

t.test('the binary: --help, --version, and bad flags', async (t) => {
  const [help, short, version, raw, unknown, badValue, badVersion] = await Promise.all([
    kubelet(['--help']),
    kubelet(['-h']),
    kubelet(['--version']),
    kubelet(['--version=raw']),
    kubelet(['--no-such-flag=1']),
    kubelet(['--sync-frequency=soon']),
    kubelet(['--version=soon']),
  ]);
  t.equal(help.code, 0);
  t.equal(help.stdout, helpText(HELP_WIDTH), 'piped: the fixed width');
  t.equal(short.code, 0);
  t.equal(short.stdout, help.stdout);
  t.equal(version.code, 0);
  t.equal(version.stdout, `Kubernetes ${KUBELET_VERSION}\n`);
  t.equal(raw.code, 0);
  t.same(JSON.parse(raw.stdout), versionInfo());
  for (const [result, message] of [
    [unknown, 'unknown flag: --no-such-flag'],
    [badValue, 'invalid argument "soon" for "--sync-frequency" flag: time: invalid duration "soon"'],
    [badVersion, 'invalid argument "soon" for "--version" flag: must be true, false or raw'],
  ] as const) {
    t.equal(result.code, 2, message);
    t.equal(result.stdout, '');
    t.equal(result.stderr, `Error: ${message}\nRun 'kubelet --help' for usage.\n`);
  }
});
