// The kubelet's authenticator and authorizer from its configuration (Go: cmd/kubelet/app/auth.go
// BuildAuthn/BuildAuthz and k8s.io/apiserver's DelegatingAuthenticatorConfig.New).
import type { KubeConfig } from '@kubernetes/client-node';
import { realClock, type Clock, type Logger } from '@kubelet-ts/core';
import {
  createSubjectAccessReviewer,
  AlwaysAllowAuthorizer,
  SubjectAccessReviewAuthorizer,
  DEFAULT_CACHE_AUTHORIZED_TTL_MS,
  DEFAULT_CACHE_UNAUTHORIZED_TTL_MS,
  type SubjectAccessReviewer,
} from './authorizer.js';
import { createTokenReviewer, TokenReviewAuthenticator, WebSocketProtocolAuthenticator, DEFAULT_TOKEN_CACHE_TTL_MS, type TokenReviewer } from './token.js';
import type { Authenticator, Authorizer } from './types.js';
import { AnonymousAuthenticator, AuthenticatedGroupAdder, UnionAuthenticator } from './union.js';
import type { RetryBackoff } from './webhook.js';
import { loadClientCA, X509Authenticator } from './x509.js';

export interface AuthenticatorConfig {
  /** authentication.x509.clientCAFile: enables client certificate authentication. */
  x509ClientCAFile?: string;
  /** authentication.webhook.enabled: bearer tokens checked with TokenReviews. */
  webhookEnabled: boolean;
  /** authentication.webhook.cacheTTL. Default 2 min. */
  webhookCacheTTLMs?: number;
  /** authentication.anonymous.enabled. */
  anonymousEnabled: boolean;
  /** The API server the webhook asks; required with webhookEnabled unless tokenReviewer is given. */
  kubeConfig?: KubeConfig;
  /** Replaces the client built from kubeConfig (tests, embedders). */
  tokenReviewer?: TokenReviewer;
  retryBackoff?: RetryBackoff;
  clock?: Clock;
  logger?: Logger;
}

/**
 * Go's BuildAuthn: x509 (when a client CA is set), then bearer tokens and WebSocket-protocol tokens
 * (when the webhook is on), in a union that adds system:authenticated; with anonymous access, a
 * request that none of them recognised and none rejected becomes system:anonymous.
 */
export function createAuthenticator(config: AuthenticatorConfig): Authenticator {
  const clock = config.clock ?? realClock;
  const authenticators: Authenticator[] = [];
  if (config.x509ClientCAFile) {
    // Fails startup on a missing or empty bundle, as Go's kubelet does; the TLS server verifies with it.
    loadClientCA(config.x509ClientCAFile);
    authenticators.push(new X509Authenticator());
  }
  if (config.webhookEnabled) {
    const reviewer = config.tokenReviewer ?? (config.kubeConfig ? createTokenReviewer(config.kubeConfig) : undefined);
    if (!reviewer) throw new Error('no client provided, cannot use webhook authentication');
    const tokens = new TokenReviewAuthenticator({
      reviewer,
      clock,
      cacheTTLMs: config.webhookCacheTTLMs ?? DEFAULT_TOKEN_CACHE_TTL_MS,
      ...(config.retryBackoff ? { retryBackoff: config.retryBackoff } : {}),
      ...(config.logger ? { logger: config.logger } : {}),
    });
    authenticators.push(tokens, new WebSocketProtocolAuthenticator(tokens));
  }
  if (authenticators.length === 0) {
    if (config.anonymousEnabled) return new AnonymousAuthenticator();
    throw new Error('No authentication method configured');
  }
  const authenticator = new AuthenticatedGroupAdder(new UnionAuthenticator(authenticators));
  if (!config.anonymousEnabled) return authenticator;
  return new UnionAuthenticator([authenticator, new AnonymousAuthenticator()], { failOnError: true });
}

export type AuthorizationMode = 'AlwaysAllow' | 'Webhook';

export interface AuthorizerConfig {
  /** authorization.mode. */
  mode: AuthorizationMode | (string & {});
  /** authorization.webhook.cacheAuthorizedTTL. Default 5 min. */
  cacheAuthorizedTTLMs?: number;
  /** authorization.webhook.cacheUnauthorizedTTL. Default 30 s. */
  cacheUnauthorizedTTLMs?: number;
  /** The API server the webhook asks; required in Webhook mode unless subjectAccessReviewer is given. */
  kubeConfig?: KubeConfig;
  /** Replaces the client built from kubeConfig (tests, embedders). */
  subjectAccessReviewer?: SubjectAccessReviewer;
  retryBackoff?: RetryBackoff;
  clock?: Clock;
  logger?: Logger;
}

/** Go's BuildAuthz. */
export function createAuthorizer(config: AuthorizerConfig): Authorizer {
  switch (config.mode) {
    case 'AlwaysAllow':
      return new AlwaysAllowAuthorizer();
    case 'Webhook': {
      const reviewer = config.subjectAccessReviewer ?? (config.kubeConfig ? createSubjectAccessReviewer(config.kubeConfig) : undefined);
      if (!reviewer) throw new Error('no client provided, cannot use webhook authorization');
      return new SubjectAccessReviewAuthorizer({
        reviewer,
        clock: config.clock ?? realClock,
        cacheAuthorizedTTLMs: config.cacheAuthorizedTTLMs ?? DEFAULT_CACHE_AUTHORIZED_TTL_MS,
        cacheUnauthorizedTTLMs: config.cacheUnauthorizedTTLMs ?? DEFAULT_CACHE_UNAUTHORIZED_TTL_MS,
        ...(config.retryBackoff ? { retryBackoff: config.retryBackoff } : {}),
        ...(config.logger ? { logger: config.logger } : {}),
      });
    }
    case '':
      throw new Error('no authorization mode specified');
    default:
      throw new Error(`unknown authorization mode ${config.mode}`);
  }
}
