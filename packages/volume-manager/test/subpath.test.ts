import t, { type Test } from 'tap';
import { chmod, mkdir, mkdtemp, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { expandSubPathExpr, prepareSubPath, safeMakeDir } from '../src/subpath.js';

/** A temp dir (symlinks resolved) with a volume and a directory outside it. */
async function layout(t: Test): Promise<{ root: string; vol: string; outside: string }> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'vm-subpath-')));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const vol = join(root, 'vol');
  const outside = join(root, 'outside');
  await mkdir(vol);
  await mkdir(outside);
  return { root, vol, outside };
}

const names = { volumeMountName: 'data', containerName: 'app' };

t.test('expandSubPathExpr: $(VAR) from the environment, $$ escapes, missing or empty values fail', async (t) => {
  const env = new Map([
    ['POD_NAME', 'web-0'],
    ['NS', 'default'],
    ['EMPTY', ''],
  ]);
  t.equal(expandSubPathExpr('logs/$(NS)/$(POD_NAME)', env), 'logs/default/web-0');
  t.equal(expandSubPathExpr('$$(POD_NAME)', env), '$(POD_NAME)', '$$ is a literal $');
  t.equal(expandSubPathExpr('a$b', env), 'a$b', 'a lone $ stays');
  t.equal(expandSubPathExpr('$(POD_NAME', env), '$(POD_NAME', 'an unterminated reference stays');
  t.throws(() => expandSubPathExpr('$(ZED)/$(ALPHA)/$(ZED)', env), { message: 'missing value for ALPHA, ZED' });
  t.throws(() => expandSubPathExpr('$(EMPTY)', env), { message: 'missing value for EMPTY' });
});

t.test('absolute subPaths and .. elements are refused with Go messages', async (t) => {
  const { vol } = await layout(t);
  await t.rejects(prepareSubPath({ volumePath: vol, subPath: '/etc', ...names }), { message: 'error SubPath `/etc` must not be an absolute path' });
  await t.rejects(prepareSubPath({ volumePath: vol, subPath: 'a/../../etc', ...names }), { message: "unable to provision SubPath `a/../../etc`: must not contain '..'" });
  await t.rejects(prepareSubPath({ volumePath: vol, subPath: '..', ...names }), { message: "unable to provision SubPath `..`: must not contain '..'" });
  t.equal(await prepareSubPath({ volumePath: vol, subPath: '..hidden', ...names }), join(vol, '..hidden'), 'a name starting with .. is fine');
  t.equal(await prepareSubPath({ volumePath: vol, subPath: '', ...names }), vol, 'no subPath: the volume itself');
});

t.test('an existing directory or file inside the volume is returned resolved', async (t) => {
  const { vol } = await layout(t);
  await mkdir(join(vol, 'd'));
  await writeFile(join(vol, 'd', 'f'), 'x');
  await symlink('d', join(vol, 'rel-link'));
  t.equal(await prepareSubPath({ volumePath: vol, subPath: 'd', ...names }), join(vol, 'd'));
  t.equal(await prepareSubPath({ volumePath: vol, subPath: 'd/f', ...names }), join(vol, 'd', 'f'));
  t.equal(await prepareSubPath({ volumePath: vol, subPath: 'rel-link/f', ...names }), join(vol, 'd', 'f'), 'a symlink that stays inside is allowed');
  t.equal(await prepareSubPath({ volumePath: vol, subPath: './d//f', ...names }), join(vol, 'd', 'f'), 'the path is cleaned');
});

t.test('missing directories are created with the volume mode, whatever the umask', async (t) => {
  const { root, vol } = await layout(t);
  await chmod(vol, 0o2775);
  const old = process.umask(0o077);
  t.teardown(() => void process.umask(old));
  t.equal(await prepareSubPath({ volumePath: vol, subPath: 'a/b/c', ...names }), join(vol, 'a', 'b', 'c'));
  for (const p of ['a', 'a/b', 'a/b/c']) t.equal((await stat(join(vol, p))).mode & 0o7777, 0o2775, `${p} has the volume's mode`);

  // A volume reached through a symlink (as a PV path may be) works the same.
  await symlink(vol, join(root, 'vol-link'));
  t.equal(await prepareSubPath({ volumePath: join(root, 'vol-link'), subPath: 'x/y', ...names }), join(vol, 'x', 'y'));
});

t.test('a symlink out of the volume is refused; Go keeps the host paths out of the message', async (t) => {
  const { vol, outside } = await layout(t);
  await writeFile(join(outside, 'secret'), 'x');
  await symlink(outside, join(vol, 'escape'));
  const logger = new RecordingLogger();
  const err = (await prepareSubPath({ volumePath: vol, subPath: 'escape', ...names, logger }).catch((e: unknown) => e)) as Error;
  t.equal(err.message, 'failed to prepare subPath for volumeMount "data" of container "app"');
  t.equal((err.cause as Error).message, `subpath "${outside}" not within volume path "${vol}"`);
  t.match(logger.entries, [{ level: 'error', msg: 'Failed to prepare subPath for volumeMount' }]);

  const viaFile = (await prepareSubPath({ volumePath: vol, subPath: 'escape/secret', ...names }).catch((e: unknown) => e)) as Error;
  t.equal((viaFile.cause as Error).message, `subpath "${join(outside, 'secret')}" not within volume path "${vol}"`);

  await symlink('/etc/passwd', join(vol, 'abs-escape'));
  const abs = (await prepareSubPath({ volumePath: vol, subPath: 'abs-escape', ...names }).catch((e: unknown) => e)) as Error;
  t.match((abs.cause as Error).message, /^subpath "\/etc\/passwd" not within volume path/);
});

t.test('directories are never created through a symlink that leaves the volume', async (t) => {
  const { vol, outside } = await layout(t);
  await symlink(outside, join(vol, 'escape'));
  const err = (await prepareSubPath({ volumePath: vol, subPath: 'escape/new/deeper', ...names }).catch((e: unknown) => e)) as Error;
  t.equal(err.message, 'failed to create subPath directory for volumeMount "data" of container "app"');
  t.equal((err.cause as Error).message, `path ${outside} is outside of allowed base ${vol}`);
  await t.rejects(stat(join(outside, 'new')), { code: 'ENOENT' }, 'nothing created outside');

  // A dangling symlink: mkdir must not create its target.
  await symlink(join(outside, 'planted'), join(vol, 'dangling'));
  const dangling = (await prepareSubPath({ volumePath: vol, subPath: 'dangling', ...names }).catch((e: unknown) => e)) as Error;
  t.equal(dangling.message, 'failed to create subPath directory for volumeMount "data" of container "app"');
  t.equal((dangling.cause as Error).message, `cannot create directory ${join(vol, 'dangling')}: file exists`);
  await t.rejects(stat(join(outside, 'planted')), { code: 'ENOENT' });
});

t.test('safeMakeDir refuses a path outside its base and a file in the way', async (t) => {
  const { root, vol } = await layout(t);
  await t.rejects(safeMakeDir('../x', vol, 0o755), { message: `path ${join(root, 'x')} is outside of allowed base ${vol}` });
  await writeFile(join(vol, 'file'), '');
  await t.rejects(safeMakeDir('file', vol, 0o755), { message: `mkdir ${join(vol, 'file')}: not a directory` });
  await t.rejects(safeMakeDir('file/sub', vol, 0o755), { message: `error opening directory ${join(vol, 'file', 'sub')}: not a directory` });
  await safeMakeDir('ok/nested', vol, 0o750);
  t.equal((await stat(join(vol, 'ok', 'nested'))).mode & 0o777, 0o750);
  await t.resolves(safeMakeDir('ok/nested', vol, 0o750), 'an existing directory is fine');
});
