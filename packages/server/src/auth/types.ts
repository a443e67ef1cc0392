// The contracts of the kubelet API's authentication and authorization (Go: k8s.io/apiserver's
// authenticator.Request, user.Info, authorizer.Attributes and authorizer.Authorizer).
import type { IncomingMessage } from 'node:http';

/** Who made a request (Go: user.Info / user.DefaultInfo). */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** Go's user.Anonymous, user.AllUnauthenticated and user.AllAuthenticated. */
export const ANONYMOUS_USER = 'system:anonymous';
export const UNAUTHENTICATED_GROUP = 'system:unauthenticated';
export const AUTHENTICATED_GROUP = 'system:authenticated';

/**
 * What an authenticator concluded. `{ user }` is a success. `{ user: undefined }` means this
 * authenticator found no credential it handles (the next one may run). `{ user: undefined, error }`
 * means it found a credential and rejected it, or could not check it: Go's (nil, false, err). A
 * union still tries the others, but when none succeeds the request is refused even if anonymous
 * access is on, as Go's union of the kubelet does.
 */
export type AuthenticationResult = { user: UserInfo; error?: undefined } | { user: undefined; error?: Error };

/** Go's authenticator.Request. A rejected promise counts as `{ user: undefined, error }`. */
export interface Authenticator {
  authenticate(request: IncomingMessage): Promise<AuthenticationResult>;
}

/** Go's authorizer.AttributesRecord as the kubelet fills it for its own API. */
export interface RequestAttributes {
  user: UserInfo;
  verb: string;
  namespace: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  name: string;
  resourceRequest: boolean;
  path: string;
}

export type Decision = 'allow' | 'deny' | 'no-opinion';

export interface AuthorizationResult {
  decision: Decision;
  reason?: string;
}

/** Go's authorizer.Authorizer. A rejection is Go's non-nil error: the kubelet answers 500. */
export interface Authorizer {
  authorize(attrs: RequestAttributes): Promise<AuthorizationResult>;
}
