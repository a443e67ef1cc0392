// Every published package as an npm user meets it: `npm pack`, installed from the tarballs (the @kubelet-ts packages
// are not on the registry; their third-party dependencies come from it) into empty projects outside the workspace.
//
// - One project (npm's usual hoisted install) holds every tarball: imported from ESM and from CommonJS (require),
//   type-checked from TypeScript (node16 resolution with `skipLibCheck: false`, which checks every declaration file
//   our types reach, client-node's included; bundler resolution with `skipLibCheck: true`); publint and
//   arethetypeswrong check each tarball; the import time and RSS of each package above a bare node are printed, and
//   a module.register() hook proves that importing a package loads no module of @kubernetes/client-node.
// - Then one project per package, installed with `--install-strategy=linked` (each package sees only what it
//   declares, the project only its direct dependencies), whose dependencies are exactly the packages its README's
//   install line names: the package's entry points are imported there, and every README example (```ts example
//   fences) is run there with tsx. So an example cannot use a package the install line does not add, and a package
//   cannot use one it does not declare. The projects are the workspaces of one root, installed by one
//   `npm install --prefer-offline`: npm resolves and unpacks client-node once, not 21 times.
//
// `skipLibCheck: false` is checked in the shared (hoisted) project: there the @types/ws our packages declare is
// found from client-node's isomorphic-ws, as with pnpm (whose .pnpm/node_modules holds every package). Under npm's
// linked strategy it is not (nothing is hoisted and client-node does not declare @types/ws itself), so a strict
// project installed that way must add @types/ws itself, as for client-node alone; the linked projects here are
// run, not type-checked.
//
// The per-package checks run two at a time: most of each is waiting on a child process.
import t from 'tap';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import {
  extractInstallLine,
  extractReadmeExamples,
  extractTarball,
  readmeStructure,
  type ImportCost,
  type ReadmeExample,
  type WorkspacePackage,
  installConsumer,
  installLinkedProjects,
  internalClosure,
  javascriptSubpaths,
  measureImport,
  importRecordingLoads,
  requireEach,
  packPackages,
  publishedPackages,
  run,
  subpathSpecifier,
  tarballFiles,
  toolEntry,
  unresolvedSources,
  writeConsumerTsconfig,
  writeLoadRecorder,
  CONSUMER_TSCONFIGS,
  TYPEDOC_SITE,
} from '../src/index.js';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const rootManifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
const rootLicense = await readFile(join(root, 'LICENSE'), 'utf8');
const REPOSITORY_URL = 'git+https://github.com/kubelet-ts/kubelet-ts.git';
const CLIENT_NODE = '@kubernetes/client-node';
// PACKAGE_CHECK_ONLY=core,cri-client narrows the run while working on a few packages.
const only = process.env.PACKAGE_CHECK_ONLY?.split(',').map((n) => (n.startsWith('@') ? n : `@kubelet-ts/${n}`));
const allPackages = publishedPackages(root);
const packages = only ? allPackages.filter((p) => only.includes(p.manifest.name)) : allPackages;
const byName = new Map(allPackages.map((p) => [p.manifest.name, p]));
// The range our packages use for each third-party package (lint-deps keeps it to one), for install lines naming one.
const thirdPartyRanges = new Map<string, string>();
for (const pkg of allPackages) {
  for (const [dep, range] of Object.entries({ ...pkg.manifest.peerDependencies, ...pkg.manifest.dependencies })) {
    if (!byName.has(dep)) thirdPartyRanges.set(dep, range);
  }
}
const work = await mkdtemp(join(tmpdir(), 'kubelet-ts-pack-'));
// Not t.teardown: tap may run the root test's teardown while this file is still awaiting its set-up.
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

const tarballs = await packPackages(root, allPackages, join(work, 'tarballs'));
const tsc = toolEntry('typescript', 'tsc');
const tsx = toolEntry('tsx');
const attw = toolEntry('@arethetypeswrong/cli', 'attw');

t.equal(tarballs.size, allPackages.length, `npm pack made one tarball for each of the ${allPackages.length} published packages`);

const readmes = new Map<string, string>();
const examplesByPackage = new Map<string, ReadmeExample[]>();
for (const pkg of packages) {
  const readme = await readFile(join(pkg.dir, 'README.md'), 'utf8');
  readmes.set(pkg.manifest.name, readme);
  examplesByPackage.set(pkg.manifest.name, extractReadmeExamples(readme));
}

// The shared project: every tarball the checked packages and their examples need, npm's usual (hoisted) install.
const project = join(work, 'consumer');
const installed = internalClosure([...packages.map((p) => p.manifest.name), ...[...examplesByPackage.values()].flat().flatMap((e) => e.packages).filter((d) => byName.has(d))], byName);
const install = await installConsumer(
  project,
  installed.map((n) => tarballs.get(n) as string),
  { '@types/node': rootManifest.devDependencies['@types/node'] },
);
t.equal(install.code, 0, `npm install of ${installed.length} tarballs into an empty project succeeds`, { stderr: install.stderr });
if (install.code !== 0) process.exit(1);
const tree = await run('npm', ['ls', '--all', '--omit=dev'], { cwd: project });
t.equal(tree.code, 0, 'npm ls: every dependency of every package is installed at a version its range allows', { output: tree.stdout.slice(-3000) + tree.stderr });

const specifiersOf = (pkg: WorkspacePackage) => javascriptSubpaths(pkg.manifest.exports).map((s) => subpathSpecifier(pkg.manifest.name, s));
const exampleFile = (name: string, i: number) => `${name.replace('@kubelet-ts/', '')}.readme-example-${i + 1}.ts`;

// Every README example is written here for tsc to check (it runs in its package's own project below).
const exampleFiles: string[] = [];
for (const [name, examples] of examplesByPackage) {
  for (const [i, example] of examples.entries()) {
    await writeFile(join(project, exampleFile(name, i)), example.code);
    exampleFiles.push(exampleFile(name, i));
  }
}

await writeLoadRecorder(project);
let records = 0;
const importRecordingClientNode = (specifiers: string[]) =>
  importRecordingLoads(project, specifiers, `/${CLIENT_NODE}/`, join(work, `loads-${++records}.txt`));

// One package at a time and before anything else runs, so that the figures are the package's own.
await t.test('import time and RSS above a bare node (printed, not asserted)', async (t) => {
  // The recorder's control: one small module of client-node (no imports of its own), imported directly.
  const control = await importRecordingClientNode([`${CLIENT_NODE}/dist/types.js`]);
  const controlUrls = control.imports[0]?.urls ?? [];
  t.ok(control.code === 0 && controlUrls.some((u) => u.endsWith('/dist/types.js')), `the load recorder sees a module of ${CLIENT_NODE} when one is imported`, {
    stderr: control.stderr,
    urls: controlUrls,
  });
  const bare = await measureImport(project, []);
  t.equal(bare.code, 0, 'a bare node runs the measuring script', { stderr: bare.stderr });
  const bareRss = bare.cost?.rssBytes ?? 0;
  const rows: [string, ImportCost][] = [];
  for (const pkg of [...packages.map((p) => p.manifest.name), CLIENT_NODE]) {
    const measured = await measureImport(project, [pkg]);
    t.equal(measured.code, 0, `import('${pkg}') in a fresh node`, { stderr: measured.stderr });
    if (measured.cost) rows.push([pkg, measured.cost]);
  }
  const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  const width = Math.max(...rows.map(([name]) => name.length));
  t.comment(
    [
      `import of each package's main entry in a fresh node (Node ${process.version}; bare node: ${mib(bareRss)} MiB RSS)`,
      `${'package'.padEnd(width)}  import ms  RSS above bare node (MiB)`,
      ...rows.map(([name, cost]) => `${name.padEnd(width)}  ${cost.ms.toFixed(0).padStart(9)}  ${mib(cost.rssBytes - bareRss).padStart(8)}`),
    ].join('\n'),
  );
});

// require(): the packages are ESM. Node 20.19+ and 22.12+ require() them (require(esm)); before that (Node 20.18,
// or --no-experimental-require-module), Node says ERR_REQUIRE_ESM naming the file, not a misleading
// ERR_PACKAGE_PATH_NOT_EXPORTED. One process for all packages each way.
const packageNames = packages.map((p) => p.manifest.name);
const requireNow = await requireEach(project, packageNames);
t.equal(requireNow.code, 0, `require() of each package from CommonJS on Node ${process.version}`, { stderr: requireNow.stderr });
const requireOld = process.allowedNodeEnvironmentFlags.has('--no-experimental-require-module')
  ? await requireEach(project, packageNames, ['--no-experimental-require-module'])
  : undefined;
if (requireOld) t.equal(requireOld.code, 0, 'require() of each package from CommonJS without require(esm)', { stderr: requireOld.stderr });

t.test('TypeScript', async (t) => {
  const files = ['imports.ts', ...exampleFiles];
  let imports = '';
  for (const [i, spec] of packages.flatMap(specifiersOf).entries()) imports += `import * as m${i} from '${spec}';\nconsole.log(Object.keys(m${i}).length);\n`;
  await writeFile(join(project, 'imports.ts'), imports);
  for (const mode of Object.keys(CONSUMER_TSCONFIGS) as (keyof typeof CONSUMER_TSCONFIGS)[]) {
    const tsconfig = await writeConsumerTsconfig(project, mode, files);
    const checked = await run(process.execPath, [tsc, '-p', tsconfig], { cwd: project });
    const settings = CONSUMER_TSCONFIGS[mode];
    t.equal(checked.code, 0, `moduleResolution ${settings.moduleResolution}, skipLibCheck ${settings.skipLibCheck}: every export subpath and every README example type-checks`, {
      output: checked.stdout + checked.stderr,
    });
  }
});

// The README projects: for each package, exactly the packages its install line names (the package alone when there
// is no install line, which its own test reports), installed linked. Third-party packages on an install line come
// from the registry at the range our packages use; one that none of them uses is reported and left out.
const installLines = new Map(packages.map((p) => [p.manifest.name, extractInstallLine(readmes.get(p.manifest.name) ?? '')?.packages ?? [p.manifest.name]]));
const readmeRoot = join(work, 'readme');
const readmeProjectPath = (name: string) => `readme-${name.replace('@kubelet-ts/', '')}`;
const linkedInstall = await installLinkedProjects(
  readmeRoot,
  packages.map((p) => {
    const installs = installLines.get(p.manifest.name) as string[];
    return {
      path: readmeProjectPath(p.manifest.name),
      tarballs: installs.filter((d) => byName.has(d)).map((d) => tarballs.get(d) as string),
      dependencies: Object.fromEntries(installs.filter((d) => thirdPartyRanges.has(d)).map((d) => [d, thirdPartyRanges.get(d) as string])),
    };
  }),
  internalClosure(packages.flatMap((p) => (installLines.get(p.manifest.name) as string[]).filter((d) => byName.has(d))), byName).map((n) => tarballs.get(n) as string),
);
t.equal(linkedInstall.code, 0, `npm install --install-strategy=linked of each README's install line (${packages.length} projects)`, { stderr: linkedInstall.stderr });

// Two packages at a time: most of each is waiting on a child process.
t.jobs = 2;
for (const pkg of packages) {
  const name = pkg.manifest.name;
  const short = name.replace('@kubelet-ts/', '');
  t.test(name, { buffered: true }, async (t) => {
    // Where the time goes, printed for the CI budget (not asserted).
    const laps: string[] = [];
    let lapStart = performance.now();
    const lap = (label: string) => {
      const now = performance.now();
      laps.push(`${label} ${((now - lapStart) / 1000).toFixed(1)} s`);
      lapStart = now;
    };
    const tarball = tarballs.get(name) as string;
    const files = await tarballFiles(tarball);
    const unpacked = await extractTarball(tarball, join(work, 'unpacked', short));

    t.ok(files.includes('README.md'), 'the tarball has the README');
    t.ok(files.includes('LICENSE'), 'the tarball has the LICENSE');
    if (files.includes('LICENSE')) t.equal(await readFile(join(unpacked, 'LICENSE'), 'utf8'), rootLicense, "its LICENSE is the repository's (Apache-2.0)");
    t.notOk(
      files.some((f) => f.startsWith('test/') || /\.test\.ts$/.test(f) || f.endsWith('.tsbuildinfo')),
      'the tarball holds no tests or build state',
    );
    // src/ ships beside dist/: the declaration maps lead editors' go-to-definition to it, and the .js maps carry it too.
    t.ok(files.some((f) => f.startsWith('src/') && f.endsWith('.ts')), 'the tarball ships src/, where the declaration maps lead');
    const maps = files.filter((f) => f.endsWith('.map'));
    t.ok(maps.length > 0, `the tarball has source maps (${maps.length})`);
    const broken: string[] = [];
    for (const map of maps) for (const source of await unresolvedSources(join(unpacked, map))) broken.push(`${map} -> ${source}`);
    t.same(broken, [], 'every source map leads to its TypeScript (a file in the tarball, or sourcesContent)');
    const jsMapsWithoutContent: string[] = [];
    for (const map of maps.filter((f) => f.endsWith('.js.map'))) {
      const parsed = JSON.parse(await readFile(join(unpacked, map), 'utf8')) as { sources: string[]; sourcesContent?: unknown[] };
      if (!parsed.sourcesContent || parsed.sourcesContent.length !== parsed.sources.length) jsMapsWithoutContent.push(map);
    }
    t.same(jsMapsWithoutContent, [], 'every .js map embeds its sources (sourcesContent), for stack traces and debuggers');

    const m = pkg.manifest;
    t.match(m.engines?.node ?? '', /\S/, 'package.json states the Node versions it supports (engines.node)');
    t.equal(m.license, 'Apache-2.0', 'license is Apache-2.0');
    t.same(m.repository, { type: 'git', url: REPOSITORY_URL, directory: pkg.path }, 'repository names the git repository and the package directory');
    t.equal(m.homepage, `https://github.com/kubelet-ts/kubelet-ts/tree/main/${pkg.path}#readme`, 'homepage is the package README on GitHub');
    t.same(m.bugs, { url: 'https://github.com/kubelet-ts/kubelet-ts/issues' }, 'bugs leads to the issue tracker');

    // client-node's types (isomorphic-ws) need @types/ws, which client-node does not declare: a package whose
    // declaration files reach client-node's types declares it, so that `skipLibCheck: false` works for its users.
    const declarations = files.filter((f) => f.endsWith('.d.ts'));
    const reachClientNode: string[] = [];
    for (const file of declarations) {
      const text = await readFile(join(unpacked, file), 'utf8');
      if (/(?:from\s+|import\s*\(\s*)['"]@kubernetes\/client-node['"/]/.test(text)) reachClientNode.push(file);
    }
    if (reachClientNode.length > 0) {
      t.ok(m.dependencies?.['@types/ws'], `@types/ws is a dependency: ${reachClientNode.length} declaration files reach ${CLIENT_NODE}'s types (${reachClientNode[0]}, ...)`);
    } else {
      t.pass(`no declaration file reaches ${CLIENT_NODE}'s types, so @types/ws is not needed`);
    }

    // The README: what a user needs before the first example.
    const readme = readmes.get(name) ?? '';
    const structure = readmeStructure(readme);
    t.ok(structure.installLine, 'the README has an install line (an `npm install` in its first ```sh fence)');
    t.ok(structure.esmForNode, 'the README states that the package is ESM, for Node 20.18+');
    t.ok(structure.typedocLink, `the README links the API reference (${TYPEDOC_SITE})`);
    t.ok(structure.apiTable, 'the README has a table of the public API');
    const installs = installLines.get(name) as string[];
    t.ok(installs.includes(name), `the install line installs ${name}: ${installs.join(' ')}`);
    for (const dep of installs.filter((d) => !byName.has(d))) {
      t.ok(thirdPartyRanges.has(dep), `${dep} on the install line is a dependency of a @kubelet-ts package (installed at its range)`);
    }
    const examples = examplesByPackage.get(name) ?? [];
    t.ok(examples.length >= 2, `the README has runnable examples (a real one and one with ./testing): found ${examples.length}`);
    for (const example of examples) {
      const missing = example.packages.filter((p) => !installs.includes(p));
      t.same(missing, [], `README example at line ${example.line}: every package it imports is on the install line (${example.packages.join(', ')})`);
    }

    lap('tarball and README');
    // Loading, from the shared project: the main entry first, so that what it loaded is its own.
    const specifiers = specifiersOf(pkg);
    const imported = await importRecordingClientNode(specifiers);
    t.equal(imported.code, 0, `import() of ${specifiers.join(', ')} works from ESM`, { stderr: imported.stderr });
    for (const { specifier, exports } of imported.imports) t.ok(exports > 0, `${specifier} has exports (${exports})`);
    const main = imported.imports.find((i) => i.specifier === name);
    if (main) t.same(main.urls.slice(0, 5), [], `importing ${name} loads no module of ${CLIENT_NODE} (found ${main.urls.length})`);

    // require(): see requireNow and requireOld above.
    const now = requireNow.outcomes[name];
    t.ok(now && 'exports' in now && now.exports > 0, `require('${name}') works on Node ${process.version} (require(esm))`, { outcome: now });
    if (requireOld) {
      const old = requireOld.outcomes[name];
      const error = old && 'error' in old ? old.error : undefined;
      t.ok(
        error?.code === 'ERR_REQUIRE_ESM' && error.message.includes(`/${name}/dist/`),
        'without require(esm) (Node 20.18), require() fails with ERR_REQUIRE_ESM naming the ES module',
        { outcome: old },
      );
    }

    lap('import and require');
    const lint = await publint({ pack: { tarball: (await readFile(tarball)).buffer as ArrayBuffer }, level: 'suggestion', strict: true });
    t.same(
      lint.messages.map((msg) => `${msg.type}: ${formatMessage(msg, lint.pkg) ?? msg.code}`),
      [],
      'publint (strict, suggestions included) finds nothing',
    );

    lap('publint');
    const subpaths = javascriptSubpaths(m.exports);
    const assets = Object.keys(m.exports ?? {}).filter((s) => !subpaths.includes(s));
    const types = await run(
      process.execPath,
      [attw, tarball, '--profile', 'esm-only', '--format', 'ascii', '--no-color', ...(assets.length ? ['--exclude-entrypoints', ...assets] : [])],
      { cwd: project },
    );
    t.equal(types.code, 0, `arethetypeswrong (esm-only profile) finds no problem${assets.length ? ` (assets not checked: ${assets.join(', ')})` : ''}`, {
      output: types.stdout + types.stderr,
    });

    lap('attw');
    // The README's own project: exactly its install line, installed linked.
    const own = join(readmeRoot, readmeProjectPath(name));
    if (linkedInstall.code !== 0) return;
    const direct: string[] = [];
    for (const entry of await readdir(join(own, 'node_modules'))) {
      if (entry.startsWith('@')) for (const scoped of await readdir(join(own, 'node_modules', entry))) direct.push(`${entry}/${scoped}`);
      else if (!entry.startsWith('.')) direct.push(entry);
    }
    const expected = installs.filter((d) => byName.has(d) || thirdPartyRanges.has(d));
    t.same(direct.sort(), [...new Set(expected)].sort(), 'the project sees only the packages of the install line');
    const strictImport = await run(
      process.execPath,
      ['--input-type=module', '-e', `for (const spec of ${JSON.stringify(specifiers)}) await import(spec);`],
      { cwd: own },
    );
    t.equal(strictImport.code, 0, `import() of ${specifiers.join(', ')} works where ${name} sees only what it declares`, { stderr: strictImport.stderr });
    for (const [i, example] of examples.entries()) {
      const file = exampleFile(name, i);
      await writeFile(join(own, file), example.code);
      const ran = await run(process.execPath, [tsx, file], { cwd: own, timeoutMs: 60_000 });
      t.equal(ran.code, 0, `README example at line ${example.line} runs with only the install line's packages`, {
        stdout: ran.stdout.slice(-2000),
        stderr: ran.stderr.slice(-4000),
      });
    }
    lap('README examples');
    t.comment(`time: ${laps.join(', ')}`);
  });
}
