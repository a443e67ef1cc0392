// The API reference: one typedoc site for every published package, built from the TSDoc comments. A warning fails
// it, so an exported function cannot name a type its package does not export, and a broken {@link} cannot land.
import t from 'tap';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publishedPackages, run, toolEntry } from '../src/index.js';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const out = mkdtempSync(join(tmpdir(), 'kubelet-ts-docs-'));
process.on('exit', () => rmSync(out, { recursive: true, force: true }));

const typedoc = await run(process.execPath, [toolEntry('typedoc'), '--out', out, '--treatWarningsAsErrors', '--logLevel', 'Warn'], {
  cwd: root,
  timeoutMs: 600_000,
});
t.equal(typedoc.code, 0, 'typedoc builds the site from typedoc.json with no warning', { output: typedoc.stdout + typedoc.stderr });
t.ok(existsSync(join(out, 'index.html')), 'the site has a front page');
for (const pkg of publishedPackages(root)) {
  const page = join(out, 'modules', `${pkg.manifest.name.replace('@', '_').replace('/', '_')}.html`);
  const dir = join(out, pkg.manifest.name.replace('@', '_').replace('/', '_'));
  t.ok(existsSync(page) || existsSync(dir), `${pkg.manifest.name} has its pages`);
}
