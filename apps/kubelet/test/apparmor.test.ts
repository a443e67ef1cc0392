import t from 'tap';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import {
  AppArmorAdmitHandler,
  appArmorHostFs,
  AppArmorValidator,
  isAppArmorEnabled,
  isAppArmorRequired,
  parseLoadedProfiles,
} from '../src/lifecycle/index.js';

/** A fake host root with AppArmor enabled (securityfs at /sys/kernel/security) and these profiles loaded. */
/** What these tests use of a tap test. */
interface WithTestdir {
  testdir(fixture: Record<string, never>): string;
}

function enabledHost(t: WithTestdir, profiles: string[] = ['k8s-deny-write (enforce)', 'ns://scoped (complain)']): string {
  const root = t.testdir({});
  mkdirSync(join(root, 'sys/kernel/security/apparmor'), { recursive: true });
  mkdirSync(join(root, 'sys/module/apparmor/parameters'), { recursive: true });
  mkdirSync(join(root, 'proc'), { recursive: true });
  writeFileSync(join(root, 'sys/module/apparmor/parameters/enabled'), 'Y\n');
  writeFileSync(join(root, 'proc/mounts'), 'sysfs /sys sysfs rw 0 0\nsecurityfs /sys/kernel/security securityfs rw,nosuid 0 0\n');
  writeFileSync(join(root, 'sys/kernel/security/apparmor/profiles'), profiles.map((p) => `${p}\n`).join(''));
  return root;
}

function pod(opts: { annotations?: Record<string, string>; phase?: string; podProfile?: object; containerProfile?: object } = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'u1', annotations: opts.annotations },
    spec: {
      securityContext: opts.podProfile ? { appArmorProfile: opts.podProfile as never } : undefined,
      containers: [{ name: 'app', image: 'busybox', securityContext: opts.containerProfile ? { appArmorProfile: opts.containerProfile as never } : undefined }],
      initContainers: [{ name: 'init', image: 'busybox' }],
    },
    status: opts.phase === undefined ? undefined : { phase: opts.phase },
  };
}

const annotation = (container: string, value: string) => ({ [`container.apparmor.security.beta.kubernetes.io/${container}`]: value });

t.test('isAppArmorRequired: annotations other than unconfined, or a confining field', async (t) => {
  t.equal(isAppArmorRequired(pod()), false);
  t.equal(isAppArmorRequired(pod({ annotations: { other: 'x' } })), false);
  t.equal(isAppArmorRequired(pod({ annotations: annotation('app', 'unconfined') })), false);
  t.equal(isAppArmorRequired(pod({ annotations: annotation('app', 'runtime/default') })), true);
  t.equal(isAppArmorRequired(pod({ annotations: { ...annotation('init', 'unconfined'), ...annotation('app', 'localhost/x') } })), true, 'any confining annotation counts');
  t.equal(isAppArmorRequired(pod({ podProfile: { type: 'Unconfined' } })), false);
  t.equal(isAppArmorRequired(pod({ podProfile: { type: 'RuntimeDefault' } })), true);
  t.equal(isAppArmorRequired(pod({ containerProfile: { type: 'Localhost', localhostProfile: 'x' } })), true);
});

t.test('the host check: disabled, missing, enabled', async (t) => {
  t.equal(isAppArmorEnabled(appArmorHostFs(t.testdir({}))), false, 'an empty root (this machine: no /sys/kernel/security/apparmor)');
  const off = enabledHost(t);
  writeFileSync(join(off, 'sys/module/apparmor/parameters/enabled'), 'N\n');
  t.equal(isAppArmorEnabled(appArmorHostFs(off)), false, 'the module says N');
  t.equal(isAppArmorEnabled(appArmorHostFs(enabledHost(t))), true);

  const noSecurityfs = enabledHost(t);
  writeFileSync(join(noSecurityfs, 'proc/mounts'), 'sysfs /sys sysfs rw 0 0\n');
  t.equal(new AppArmorValidator({ fs: appArmorHostFs(noSecurityfs) }).validateHost(), 'error finding AppArmor FS: securityfs not found');
  t.equal(new AppArmorValidator({ fs: appArmorHostFs(enabledHost(t)) }).validateHost(), undefined);
});

t.test('a host without AppArmor: pods asking for a profile are refused with Go\'s reason and message', async (t) => {
  const handler = new AppArmorAdmitHandler(new AppArmorValidator({ fs: appArmorHostFs(t.testdir({})) }));
  const refused = { admit: false, reason: 'AppArmor', message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host' };
  t.same(handler.admit({ pod: pod({ annotations: annotation('app', 'runtime/default'), phase: 'Pending' }), otherPods: [] }), refused, 'annotation');
  t.same(handler.admit({ pod: pod({ podProfile: { type: 'RuntimeDefault' } }) , otherPods: [] }), refused, 'pod field, no phase yet (a static pod)');
  t.same(handler.admit({ pod: pod({ containerProfile: { type: 'Localhost', localhostProfile: 'x' } }), otherPods: [] }), refused, 'container field');
  t.same(handler.admit({ pod: pod({ annotations: annotation('app', 'unconfined') }), otherPods: [] }), { admit: true }, 'unconfined asks for nothing');
  t.same(handler.admit({ pod: pod(), otherPods: [] }), { admit: true }, 'no profile');
  t.same(handler.admit({ pod: pod({ annotations: annotation('app', 'runtime/default'), phase: 'Running' }), otherPods: [] }), { admit: true }, 'a running pod is not checked again');
});

t.test('a host with AppArmor: profiles are validated against those loaded', async (t) => {
  const root = enabledHost(t);
  const handler = new AppArmorAdmitHandler(new AppArmorValidator({ fs: appArmorHostFs(root) }));
  const admit = (p: V1Pod) => handler.admit({ pod: p, otherPods: [] });
  t.same(admit(pod({ annotations: annotation('app', 'runtime/default') })), { admit: true });
  t.same(admit(pod({ annotations: annotation('app', 'localhost/k8s-deny-write') })), { admit: true }, 'a loaded profile');
  t.same(admit(pod({ annotations: annotation('init', 'localhost/ns://scoped') })), { admit: true }, 'a namespaced profile, init container');
  t.same(admit(pod({ annotations: annotation('app', 'localhost/missing') })), {
    admit: false,
    reason: 'AppArmor',
    message: 'Cannot enforce AppArmor: profile "missing" is not loaded',
  });
  t.same(admit(pod({ annotations: annotation('app', 'bogus') })), {
    admit: false,
    reason: 'AppArmor',
    message: 'Cannot enforce AppArmor: invalid AppArmor profile name: "bogus"',
  });
  t.same(admit(pod({ containerProfile: { type: 'Localhost', localhostProfile: 'k8s-deny-write' } })), { admit: true }, 'the field, loaded');
  t.same(admit(pod({ podProfile: { type: 'Localhost', localhostProfile: 'gone' } })).message, 'Cannot enforce AppArmor: profile "gone" is not loaded', 'the pod field applies to every container');
  t.same(admit(pod({ containerProfile: { type: 'Localhost', localhostProfile: ' ' } })).message, 'Cannot enforce AppArmor: invalid empty AppArmor profile name: "localhost/ "');

  // profiles are read at each admission: one loaded later is found
  writeFileSync(join(root, 'sys/kernel/security/apparmor/profiles'), 'missing (enforce)\n');
  t.same(admit(pod({ annotations: annotation('app', 'localhost/missing') })), { admit: true }, 'loaded since');

  // an unreadable profiles file refuses, naming it
  const unreadable = enabledHost(t);
  const validator = new AppArmorValidator({ fs: appArmorHostFs(unreadable) });
  rmSync(join(unreadable, 'sys/kernel/security/apparmor/profiles'));
  t.match(validator.validate(pod({ annotations: annotation('app', 'runtime/default') })), /^could not read loaded profiles: failed to open \/sys\/kernel\/security\/apparmor\/profiles: ENOENT/);
});

t.test('parseLoadedProfiles: `name (mode)` lines, others skipped', async (t) => {
  t.same([...parseLoadedProfiles('a (enforce)\nns://b (complain)\ngarbage\n\n/usr/bin/c (kill)\n')], ['a', 'ns://b', '/usr/bin/c']);
});

t.test('the real host of this machine', async (t) => {
  // The kubelet's default validator reads the real host: this machine kind has AppArmor disabled.
  const enabled = isAppArmorEnabled(appArmorHostFs());
  const validator = new AppArmorValidator();
  t.equal(validator.validateHost() === undefined, enabled, 'the validator agrees with the host check');
});
