// The AppArmor admit handler (Go: pkg/security/apparmor validate.go NewValidator, and
// pkg/kubelet/lifecycle handlers.go NewAppArmorAdmitHandler). A pod that asks for an AppArmor profile
// (the container.apparmor.security.beta.kubernetes.io/<container> annotation, or the
// securityContext.appArmorProfile field of the pod or a container, other than unconfined) is refused
// with reason `AppArmor` when the host cannot enforce AppArmor, or when a localhost profile it names
// is not loaded.
//
// Go v1.20 registered this handler as a "soft" one: the pod stayed Pending with its containers
// `Blocked`, retried forever. Go v1.31 made it a regular admit handler (kubernetes#125393, #125776:
// pods held that way kept their reserved capacity and had to be cleaned up by hand), and so does
// this one: the pod is failed with reason AppArmor.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  APPARMOR_CONTAINER_ANNOTATION_PREFIX,
  APPARMOR_PROFILE_LOCALHOST_PREFIX,
  APPARMOR_PROFILE_RUNTIME_DEFAULT,
  APPARMOR_PROFILE_UNCONFINED,
  appArmorProfileFor,
} from '@kubelet-ts/runtime-manager';
import type { PodAdmitAttributes, PodAdmitHandler, PodAdmitResult } from './admission.js';

/** The reason of a pod refused for AppArmor (Go: AppArmorNotAdmittedReason). */
export const AppArmorNotAdmittedReason = 'AppArmor';

/** Reads the host's files; tests give a fake root. */
export interface AppArmorHostFs {
  exists(path: string): boolean;
  /** The file's text; throws when it cannot be read. */
  readFile(path: string): string;
}

/** The host's files under `root` (default `/`): point it at a fake sysfs tree in tests. */
export function appArmorHostFs(root = '/'): AppArmorHostFs {
  return {
    exists: (path) => existsSync(join(root, path)),
    readFile: (path) => readFileSync(join(root, path), 'utf8'),
  };
}

/**
 * Whether AppArmor is enabled on the host (Go: runc's apparmor.IsEnabled):
 * /sys/kernel/security/apparmor exists and /sys/module/apparmor/parameters/enabled starts with `Y`.
 */
export function isAppArmorEnabled(fs: AppArmorHostFs): boolean {
  try {
    if (!fs.exists('/sys/kernel/security/apparmor')) return false;
    const enabled = fs.readFile('/sys/module/apparmor/parameters/enabled');
    return enabled.length > 1 && enabled[0] === 'Y';
  } catch {
    return false;
  }
}

/** Go: getAppArmorFS: `<securityfs mount>/apparmor` from /proc/mounts. Throws naming what is missing. */
export function findAppArmorFs(fs: AppArmorHostFs): string {
  let mounts: string;
  try {
    mounts = fs.readFile('/proc/mounts');
  } catch (err) {
    throw new Error(`could not open /proc/mounts: ${(err as Error).message}`, { cause: err });
  }
  for (const line of mounts.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 3 || fields[2] !== 'securityfs') continue;
    const path = join(fields[1], 'apparmor');
    if (!fs.exists(path)) throw new Error(`path ${path} does not exist`);
    return path;
  }
  throw new Error('securityfs not found');
}

/**
 * The profile names in an AppArmor `profiles` file (Go: getLoadedProfiles/parseProfileName): each line
 * is `[namespace://]name (mode)`; lines without a mode are skipped.
 */
export function parseLoadedProfiles(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const mode = line.indexOf('(');
    if (mode < 0) continue;
    const name = line.slice(0, mode).trim();
    if (name) names.add(name);
  }
  return names;
}

/** Go: ValidateProfileFormat for an annotation value. */
export function validateAppArmorProfileFormat(profile: string): string | undefined {
  if (profile === '' || profile === APPARMOR_PROFILE_RUNTIME_DEFAULT || profile === APPARMOR_PROFILE_UNCONFINED) return undefined;
  if (!profile.startsWith(APPARMOR_PROFILE_LOCALHOST_PREFIX)) return `invalid AppArmor profile name: ${JSON.stringify(profile)}`;
  return undefined;
}

function allContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? []), ...((pod.spec?.ephemeralContainers ?? []) as V1Container[])];
}

/**
 * Whether the pod asks for AppArmor (Go: isRequired): a pod or container appArmorProfile field of a
 * type other than Unconfined, or a per-container annotation whose value is not `unconfined`.
 */
export function isAppArmorRequired(pod: V1Pod): boolean {
  const confining = (type: string | undefined) => type !== undefined && type !== 'Unconfined';
  if (confining(pod.spec?.securityContext?.appArmorProfile?.type)) return true;
  if (allContainers(pod).some((c) => confining(c.securityContext?.appArmorProfile?.type))) return true;
  // Go v1.20 returned on the first annotation found (in map order); any confining one counts here.
  return Object.entries(pod.metadata?.annotations ?? {}).some(
    ([key, value]) => key.startsWith(APPARMOR_CONTAINER_ANNOTATION_PREFIX) && value !== APPARMOR_PROFILE_UNCONFINED,
  );
}

export interface AppArmorValidatorOptions {
  /** The host's files (default: the real host, `appArmorHostFs('/')`). */
  fs?: AppArmorHostFs;
}

/**
 * Go's apparmor.Validator: checks the host once when built (AppArmor enabled, its securityfs found),
 * and each pod that asks for AppArmor against it and the profiles loaded now.
 */
export class AppArmorValidator {
  private readonly fs: AppArmorHostFs;
  private readonly hostError?: string;
  private readonly appArmorFs?: string;

  constructor(opts: AppArmorValidatorOptions = {}) {
    this.fs = opts.fs ?? appArmorHostFs();
    if (!isAppArmorEnabled(this.fs)) {
      this.hostError = 'AppArmor is not enabled on the host';
      return;
    }
    try {
      this.appArmorFs = findAppArmorFs(this.fs);
    } catch (err) {
      this.hostError = `error finding AppArmor FS: ${(err as Error).message}`;
    }
  }

  /** Why this host cannot enforce AppArmor; undefined when it can (Go: ValidateHost). */
  validateHost(): string | undefined {
    return this.hostError;
  }

  /** Why the pod cannot run here; undefined when it can (Go: Validate). */
  validate(pod: V1Pod): string | undefined {
    if (!isAppArmorRequired(pod)) return undefined;
    if (this.hostError !== undefined) return this.hostError;
    const profilesPath = join(this.appArmorFs ?? '', 'profiles');
    let loaded: Set<string>;
    try {
      loaded = parseLoadedProfiles(this.fs.readFile(profilesPath));
    } catch (err) {
      return `could not read loaded profiles: failed to open ${profilesPath}: ${(err as Error).message}`;
    }
    const annotations = pod.metadata?.annotations ?? {};
    for (const container of allContainers(pod)) {
      const annotated = annotations[APPARMOR_CONTAINER_ANNOTATION_PREFIX + container.name];
      if (annotated !== undefined) {
        const invalid = validateAppArmorProfileFormat(annotated);
        if (invalid !== undefined) return invalid;
      }
      const profile = appArmorProfileFor(pod, container);
      if (profile?.type !== 'Localhost') continue;
      const name = profile.localhostProfile ?? '';
      if (name.trim() === '') return `invalid empty AppArmor profile name: ${JSON.stringify(`${APPARMOR_PROFILE_LOCALHOST_PREFIX}${name}`)}`;
      if (!loaded.has(name)) return `profile ${JSON.stringify(name)} is not loaded`;
    }
    return undefined;
  }
}

/**
 * Go's appArmorAdmitHandler: a pod not yet started (phase Pending, or none yet) that the validator
 * refuses is not admitted, reason `AppArmor`, message `Cannot enforce AppArmor: <why>`.
 */
export class AppArmorAdmitHandler implements PodAdmitHandler {
  constructor(private readonly validator: AppArmorValidator = new AppArmorValidator()) {}

  admit(attrs: PodAdmitAttributes): PodAdmitResult {
    // A running or finished pod is not checked again. Go skips any phase but Pending; a static pod has
    // no phase yet, and is checked here too.
    const phase = attrs.pod.status?.phase;
    if (phase !== undefined && phase !== '' && phase !== 'Pending') return { admit: true };
    const err = this.validator.validate(attrs.pod);
    if (err === undefined) return { admit: true };
    return { admit: false, reason: AppArmorNotAdmittedReason, message: `Cannot enforce AppArmor: ${err}` };
  }
}
