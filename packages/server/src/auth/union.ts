// Composition of authenticators (Go: k8s.io/apiserver's request/union, group.AuthenticatedGroupAdder
// and request/anonymous).
import type { IncomingMessage } from 'node:http';
import { ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, type Authenticator, type AuthenticationResult } from './types.js';

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** Go's utilerrors.NewAggregate message: one error as is, several as "[a, b]". */
export class AggregateAuthenticationError extends Error {
  constructor(readonly errors: Error[]) {
    super(errors.length === 1 ? (errors[0] as Error).message : `[${errors.map((e) => e.message).join(', ')}]`);
    this.name = 'AggregateAuthenticationError';
  }
}

export interface UnionAuthenticatorOptions {
  /** Stop at the first error instead of trying the next authenticator (Go's NewFailOnError). */
  failOnError?: boolean;
}

/**
 * Go's unionAuthRequestHandler: tries each authenticator in order and returns the first user. An
 * error from one is remembered and the next is tried; when none names a user, the errors are
 * reported together. With failOnError the first error ends the search.
 */
export class UnionAuthenticator implements Authenticator {
  private readonly authenticators: Authenticator[];
  private readonly failOnError: boolean;

  constructor(authenticators: Authenticator[], opts: UnionAuthenticatorOptions = {}) {
    this.authenticators = [...authenticators];
    this.failOnError = opts.failOnError ?? false;
  }

  async authenticate(request: IncomingMessage): Promise<AuthenticationResult> {
    const errors: Error[] = [];
    for (const authenticator of this.authenticators) {
      let result: AuthenticationResult;
      try {
        result = await authenticator.authenticate(request);
      } catch (err) {
        result = { user: undefined, error: asError(err) };
      }
      if (result.error) {
        if (this.failOnError) return { user: undefined, error: result.error };
        errors.push(result.error);
        continue;
      }
      if (result.user) return { user: result.user };
    }
    return errors.length > 0 ? { user: undefined, error: new AggregateAuthenticationError(errors) } : { user: undefined };
  }
}

/**
 * Go's AuthenticatedGroupAdder: adds system:authenticated to every user the wrapped authenticator
 * names, unless it is system:anonymous or already in system:authenticated or system:unauthenticated.
 */
export class AuthenticatedGroupAdder implements Authenticator {
  constructor(private readonly inner: Authenticator) {}

  async authenticate(request: IncomingMessage): Promise<AuthenticationResult> {
    const result = await this.inner.authenticate(request);
    if (!result.user || result.error) return result;
    const user = result.user;
    if (user.name === ANONYMOUS_USER) return result;
    if (user.groups.some((g) => g === AUTHENTICATED_GROUP || g === UNAUTHENTICATED_GROUP)) return result;
    return { user: { ...user, groups: [...user.groups, AUTHENTICATED_GROUP] } };
  }
}

/**
 * Go's anonymous authenticator: every request is system:anonymous in group system:unauthenticated.
 * The kubelet puts it after the others with failOnError, so it only answers requests that carried
 * no credential at all (a bad token or certificate is still refused).
 */
export class AnonymousAuthenticator implements Authenticator {
  async authenticate(_request: IncomingMessage): Promise<AuthenticationResult> {
    return { user: { name: ANONYMOUS_USER, groups: [UNAUTHENTICATED_GROUP] } };
  }
}
