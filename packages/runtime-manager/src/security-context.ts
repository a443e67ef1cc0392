// The checks and settings of a container's security context that depend on more than the pod spec:
// runAsNonRoot against the image's user (Go v1.20: pkg/kubelet/kuberuntime security_context_others.go
// verifyRunAsNonRoot, kuberuntime_container.go getImageUser) and the AppArmor profile handed to the
// runtime (Go: pkg/security/apparmor helpers.go GetProfile, kuberuntime helpers.go getAppArmorProfile).
import type { V1AppArmorProfile, V1Container, V1Pod } from '@kubernetes/client-node';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { formatPod } from './helpers.js';

/** The user an image runs as, from the runtime's ImageStatus (Go: getImageUser's result). */
export interface ImageUser {
  /** The numeric user id, when the image names one (or names none at all: then 0, root). */
  uid?: number;
  /** The user name when the image names a non-numeric user; '' otherwise. */
  username: string;
}

/**
 * The image's user as the runtime reports it (Go: getImageUser): the numeric `uid` when set, else the
 * non-numeric `username`; an image that names neither (or an ImageStatus with no image) runs as root,
 * uid 0.
 */
export function imageUser(image: runtimeapi.Image | runtimeapi.ImageInit | null | undefined): ImageUser {
  if (image) {
    const uid = image.uid?.value;
    if (uid !== undefined && uid !== null) return { uid: Number(uid), username: '' };
    if (image.username) return { username: image.username };
  }
  return { uid: 0, username: '' };
}

/** The largest user id Kubernetes accepts (Go: validation.IsValidUserID, math.MaxInt32). */
export const MAX_USER_ID = 2147483647;

function effectiveRunAsNonRoot(pod: V1Pod, container: V1Container): boolean {
  const own = container.securityContext?.runAsNonRoot;
  if (own !== undefined && own !== null) return own;
  return pod.spec?.securityContext?.runAsNonRoot === true;
}

function effectiveRunAsUser(pod: V1Pod, container: V1Container): number | undefined {
  const own = container.securityContext?.runAsUser;
  if (own !== undefined && own !== null) return own;
  const podUser = pod.spec?.securityContext?.runAsUser;
  return podUser !== undefined && podUser !== null ? podUser : undefined;
}

/**
 * Go's verifyRunAsNonRoot: when the container's effective runAsNonRoot (the container's, else the
 * pod's) is true, its effective runAsUser (the container's, else the pod's) must not be 0; without a
 * runAsUser the image's user decides: uid 0 fails, a non-numeric user name cannot be verified and
 * fails, and (as Go does since v1.22) a uid outside 1..2147483647 fails. Returns Go's message of the
 * failure, or undefined when the container may run.
 */
export function verifyRunAsNonRoot(pod: V1Pod, container: V1Container, user: ImageUser): string | undefined {
  if (!effectiveRunAsNonRoot(pod, container)) return undefined;
  const where = `(pod: ${JSON.stringify(formatPod(pod))}, container: ${container.name})`;
  const runAsUser = effectiveRunAsUser(pod, container);
  if (runAsUser !== undefined) {
    return runAsUser === 0 ? `container's runAsUser breaks non-root policy ${where}` : undefined;
  }
  if (user.uid === undefined) {
    return user.username.length > 0
      ? `container has runAsNonRoot and image has non-numeric user (${user.username}), cannot verify user is non-root ${where}`
      : undefined;
  }
  if (user.uid === 0) return `container has runAsNonRoot and image will run as root ${where}`;
  if (!Number.isInteger(user.uid) || user.uid < 1 || user.uid > MAX_USER_ID) {
    return `container has runAsNonRoot and image has an invalid user id (${user.uid}). (Must be 1-(${MAX_USER_ID})): must be between 0 and ${MAX_USER_ID}, inclusive ${where}`;
  }
  return undefined;
}

/**
 * Go's determineEffectiveSecurityContext for the user: without a runAsUser in the spec the image's
 * uid goes to the runtime as runAsUser, and its user name as runAsUsername.
 */
export function applyImageUser(securityContext: runtimeapi.LinuxContainerSecurityContextInit, user: ImageUser): void {
  if (securityContext.runAsUser !== undefined && securityContext.runAsUser !== null) return;
  if (user.uid !== undefined) securityContext.runAsUser = { value: user.uid };
  securityContext.runAsUsername = user.username;
}

/** The prefix of the (deprecated) per-container AppArmor annotation. */
export const APPARMOR_CONTAINER_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';
/** The annotation value (and deprecated CRI string) of the runtime's default profile. */
export const APPARMOR_PROFILE_RUNTIME_DEFAULT = 'runtime/default';
/** The annotation value (and deprecated CRI string) for no AppArmor confinement. */
export const APPARMOR_PROFILE_UNCONFINED = 'unconfined';
/** The prefix of an annotation value naming a profile loaded on the node. */
export const APPARMOR_PROFILE_LOCALHOST_PREFIX = 'localhost/';

/**
 * The profile an annotation value asks for (Go: getProfileFromPodAnnotations); undefined for a value
 * that is none of runtime/default, unconfined or localhost/<name>.
 */
export function appArmorProfileFromAnnotation(value: string | undefined): V1AppArmorProfile | undefined {
  if (value === undefined) return undefined;
  if (value === APPARMOR_PROFILE_RUNTIME_DEFAULT) return { type: 'RuntimeDefault' };
  if (value === APPARMOR_PROFILE_UNCONFINED) return { type: 'Unconfined' };
  if (value.startsWith(APPARMOR_PROFILE_LOCALHOST_PREFIX)) {
    return { type: 'Localhost', localhostProfile: value.slice(APPARMOR_PROFILE_LOCALHOST_PREFIX.length) };
  }
  return undefined;
}

/**
 * The AppArmor profile of a container (Go: apparmor.GetProfile): the container's
 * securityContext.appArmorProfile, else the pod's annotation for the container, else the pod's
 * securityContext.appArmorProfile; undefined when none is set.
 */
export function appArmorProfileFor(pod: V1Pod, container: V1Container): V1AppArmorProfile | undefined {
  const own = container.securityContext?.appArmorProfile;
  if (own) return own;
  const annotated = appArmorProfileFromAnnotation(pod.metadata?.annotations?.[APPARMOR_CONTAINER_ANNOTATION_PREFIX + container.name]);
  if (annotated) return annotated;
  return pod.spec?.securityContext?.appArmorProfile ?? undefined;
}

/** The AppArmor settings for the CRI: the SecurityProfile and the deprecated profile string. */
export interface CriAppArmorProfile {
  /** The profile as a CRI SecurityProfile (RuntimeDefault, Unconfined, or Localhost with its name). */
  apparmor: runtimeapi.SecurityProfileInit;
  /** runtime/default, unconfined or localhost/<name> (the CRI's deprecated apparmor_profile). */
  apparmorProfile: string;
}

/**
 * A profile as the CRI wants it (Go: getAppArmorProfile). Throws, with Go's message, for a Localhost
 * profile without a name and for an unknown type.
 */
export function criAppArmorProfile(profile: V1AppArmorProfile): CriAppArmorProfile {
  switch (profile.type) {
    case 'RuntimeDefault':
      return { apparmor: { profileType: 'RuntimeDefault' }, apparmorProfile: APPARMOR_PROFILE_RUNTIME_DEFAULT };
    case 'Unconfined':
      return { apparmor: { profileType: 'Unconfined' }, apparmorProfile: APPARMOR_PROFILE_UNCONFINED };
    case 'Localhost': {
      const name = profile.localhostProfile;
      if (name === undefined || name === null) throw new Error('missing localhost apparmor profile name');
      return { apparmor: { profileType: 'Localhost', localhostRef: name }, apparmorProfile: APPARMOR_PROFILE_LOCALHOST_PREFIX + name };
    }
    default:
      throw new Error(`unknown apparmor profile type: ${JSON.stringify(profile.type)}`);
  }
}
