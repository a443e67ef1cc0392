/**
 * Service account tokens as kube-apiserver v1.20 issues and checks them: the TokenRequest subresource
 * (`POST .../serviceaccounts/{name}/token`, pkg/registry/core/serviceaccount/storage/token.go), the TokenReview API
 * (`POST /apis/authentication.k8s.io/v1/tokenreviews`, pkg/registry/authentication/tokenreview) over the service
 * account authenticators (pkg/serviceaccount: bound tokens of the issuer, and the token controller's legacy tokens),
 * and the legacy tokens the token controller writes into `kubernetes.io/service-account-token` secrets.
 *
 * Tokens are real JWTs, signed ES256 with a P-256 key made per server (kube-apiserver accepts EC service-account
 * keys as well as RSA ones; an EC key is made in a millisecond). Every answer, message and claim here was checked
 * against a real v1.20.2 (tools/kube), which was run with the same issuer and --api-audiences as the defaults here.
 */
import { createHash, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { badRequest, conflict, invalid, notFound } from './errors.js';
import { isObject, type Json, type JsonObject } from './patch.js';

/** kube-apiserver's --service-account-issuer in tools/kube (and what kubeadm clusters use). */
export const DEFAULT_SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
/** The issuer of the token controller's legacy secret tokens. */
export const LEGACY_ISSUER = 'kubernetes/serviceaccount';
/** token.WarnOnlyBoundTokenExpirationSeconds: a pod-bound request for exactly this long is extended (kube-api-access). */
export const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS = 3607;
/** token.ExpirationExtensionSeconds: one year. */
export const EXPIRATION_EXTENSION_SECONDS = 365 * 24 * 60 * 60;
/** jwt.DefaultLeeway (go-jose): exp, nbf and iat are checked with a minute's slack; deletions likewise. */
const LEEWAY_SECONDS = 60;

const TOKEN_REQUEST = { group: 'authentication.k8s.io', kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1' };
const TOKEN_REVIEW = { group: 'authentication.k8s.io', kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1' };

export interface TokenIssuerOptions {
  /** --service-account-issuer: the `iss` of bound tokens. Default https://kubernetes.default.svc.cluster.local. */
  issuer?: string;
  /** --api-audiences: what a request without audiences gets, and what a review without audiences checks for. Default [issuer]. */
  apiAudiences?: string[];
  /** --service-account-extend-token-expiration (default true): pod-bound requests for 3607 s get a token valid a year. */
  extendExpiration?: boolean;
  /** --service-account-max-token-expiration in seconds; 0 (the default) for none. */
  maxExpirationSeconds?: number;
}

/** What the issuer reads from the store: objects as stored (or undefined), and the time. */
export interface TokenObjects {
  get(resource: 'serviceaccounts' | 'pods' | 'secrets', namespace: string, name: string): JsonObject | undefined;
  now(): number;
}

/** The result of a TokenReview's authentication. */
export interface TokenAuthentication {
  authenticated: boolean;
  error?: string;
  user?: { username: string; uid: string; groups: string[]; extra?: Record<string, string[]> };
  audiences?: string[];
}

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

/** JSON with every object's keys sorted, as go-jose writes merged claims (through map[string]interface{}). */
function sortedJson(value: Json): string {
  const sort = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(sort);
    if (isObject(v)) {
      const out: JsonObject = {};
      for (const k of Object.keys(v).sort()) out[k] = sort(v[k]);
      return out;
    }
    return v;
  };
  return JSON.stringify(sort(value));
}

function meta(obj: JsonObject | undefined): JsonObject {
  return obj && isObject(obj.metadata) ? obj.metadata : {};
}

function str(v: Json | undefined): string {
  return typeof v === 'string' ? v : '';
}

/** Go's %q of a []string: `["a" "b"]`. */
function goQuoteList(list: string[]): string {
  return `[${list.map((s) => JSON.stringify(s)).join(' ')}]`;
}

/** RFC 3339 with whole seconds, as metav1.Time is written. */
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A failed authentication of a token the authenticators recognized: `[invalid bearer token, <why>]`. */
class TokenInvalid extends Error {}

export class ServiceAccountTokenIssuer {
  readonly issuer: string;
  readonly apiAudiences: string[];
  private readonly extendExpiration: boolean;
  private readonly maxExpirationSeconds: number;
  private readonly objects: TokenObjects;
  private keys: { privateKey: KeyObject; publicKey: KeyObject; kid: string } | undefined;

  constructor(objects: TokenObjects, options: TokenIssuerOptions = {}) {
    this.objects = objects;
    this.issuer = options.issuer ?? DEFAULT_SERVICE_ACCOUNT_ISSUER;
    this.apiAudiences = options.apiAudiences ?? [this.issuer];
    this.extendExpiration = options.extendExpiration ?? true;
    this.maxExpirationSeconds = options.maxExpirationSeconds ?? 0;
  }

  /** The signing key pair and its key id (kube's: base64url of the SHA-256 of the PKIX public key). */
  private key(): { privateKey: KeyObject; publicKey: KeyObject; kid: string } {
    if (!this.keys) {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const kid = b64url(createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest());
      this.keys = { privateKey, publicKey, kid };
    }
    return this.keys;
  }

  /** The public key that verifies every token this server issues (PEM), e.g. for a test's own verification. */
  get publicKeyPem(): string {
    return this.key().publicKey.export({ type: 'spki', format: 'pem' }).toString();
  }

  /** A signed JWT of the claims (keys sorted, as go-jose writes them). */
  signToken(claims: JsonObject): string {
    const { privateKey, kid } = this.key();
    const input = `${b64url(JSON.stringify({ alg: 'ES256', kid }))}.${b64url(sortedJson(claims))}`;
    const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' });
    return `${input}.${b64url(signature)}`;
  }

  /** The token the token controller writes into a service account's token secret (legacy claims, no expiry). */
  legacyToken(namespace: string, serviceAccount: string, serviceAccountUid: string, secretName: string): string {
    return this.signToken({
      iss: LEGACY_ISSUER,
      'kubernetes.io/serviceaccount/namespace': namespace,
      'kubernetes.io/serviceaccount/secret.name': secretName,
      'kubernetes.io/serviceaccount/service-account.name': serviceAccount,
      'kubernetes.io/serviceaccount/service-account.uid': serviceAccountUid,
      sub: `system:serviceaccount:${namespace}:${serviceAccount}`,
    });
  }

  // -------------------------------------------------------------------------------------------
  // TokenRequest

  /**
   * POST /api/v1/namespaces/{namespace}/serviceaccounts/{name}/token: validation (422), the service account (404),
   * the bound object (404, 409 on a uid mismatch, 400 for a kind other than Pod or Secret, or a pod of another
   * service account), then the token. The answer echoes the request with its defaults and carries the token.
   */
  request(namespace: string, name: string, body: unknown): JsonObject {
    if (!isObject(body)) throw badRequest(`the object provided is unrecognized (must be of type TokenRequest): couldn't get version/kind; json parse error: ${JSON.stringify(body)}`);
    checkTypeMeta(body, TOKEN_REQUEST);
    const spec = isObject(body.spec) ? body.spec : {};
    // SetDefaults_TokenRequestSpec (expirationSeconds) and the REST storage's audiences.
    const expirationSeconds = typeof spec.expirationSeconds === 'number' ? spec.expirationSeconds : 3600;
    const requested = Array.isArray(spec.audiences) ? spec.audiences.filter((a): a is string => typeof a === 'string') : [];
    const audiences = requested.length > 0 ? requested : [...this.apiAudiences];
    const ref = isObject(spec.boundObjectRef) ? spec.boundObjectRef : undefined;

    // ValidateTokenRequest.
    const errs = [];
    if (expirationSeconds < 600) errs.push({ type: 'FieldValueInvalid' as const, field: 'spec.expirationSeconds', value: expirationSeconds, detail: 'may not specify a duration less than 10 minutes' });
    if (expirationSeconds > 2 ** 32) errs.push({ type: 'FieldValueInvalid' as const, field: 'spec.expirationSeconds', value: expirationSeconds, detail: 'may not specify a duration larger than 2^32 seconds' });
    if (errs.length > 0) throw invalid(TOKEN_REQUEST.kind, TOKEN_REQUEST.group, '', errs);

    const sa = this.objects.get('serviceaccounts', namespace, name);
    if (!sa) throw notFound('serviceaccounts', '', name);

    let pod: JsonObject | undefined;
    let secret: JsonObject | undefined;
    if (ref) {
      const refName = str(ref.name);
      const apiVersion = str(ref.apiVersion);
      const kind = str(ref.kind);
      const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
      const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
      if (group !== '' || (kind !== 'Pod' && kind !== 'Secret')) throw badRequest(`cannot bind token to object of type ${group}/${version}, Kind=${kind}`);
      if (!refName) throw badRequest('Name parameter required.');
      const resource = kind === 'Pod' ? 'pods' : 'secrets';
      // The object is read through its own REST storage at the reference's version: only v1 finds anything.
      const obj = version === 'v1' ? this.objects.get(resource, namespace, refName) : undefined;
      if (!obj) throw notFound(resource, '', refName);
      if (kind === 'Pod') {
        const podSpec = isObject(obj.spec) ? obj.spec : {};
        if (str(podSpec.serviceAccountName) !== name) {
          throw badRequest(`cannot bind token for serviceaccount ${JSON.stringify(name)} to pod running with different serviceaccount name.`);
        }
        pod = obj;
      } else {
        secret = obj;
      }
      const uid = str(meta(obj).uid);
      if (str(ref.uid) && str(ref.uid) !== uid) {
        throw conflict(
          kind,
          '',
          refName,
          `the UID in the bound object reference (${str(ref.uid)}) does not match the UID in record. The object might have been deleted and then recreated`,
        );
      }
    }

    let seconds = expirationSeconds;
    if (this.maxExpirationSeconds > 0 && seconds > this.maxExpirationSeconds) seconds = this.maxExpirationSeconds;
    // A pod-bound token for exactly 3607 s (what 1.21+ admission projects) is valid a year and warns after 3607 s.
    let exp = seconds;
    let warnAfter = 0;
    if (this.extendExpiration && pod && seconds === WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS) {
      warnAfter = seconds;
      exp = EXPIRATION_EXTENSION_SECONDS;
    }
    const now = this.objects.now();
    const iat = Math.floor(now / 1000);
    const k8s: JsonObject = { namespace, serviceaccount: { name, uid: str(meta(sa).uid) } };
    if (pod) k8s.pod = { name: str(meta(pod).name), uid: str(meta(pod).uid) };
    if (secret) k8s.secret = { name: str(meta(secret).name), uid: str(meta(secret).uid) };
    if (warnAfter) k8s.warnafter = iat + warnAfter;
    const token = this.signToken({
      aud: audiences,
      exp: iat + exp,
      iat,
      iss: this.issuer,
      'kubernetes.io': k8s,
      nbf: iat,
      sub: `system:serviceaccount:${namespace}:${name}`,
    });

    const outMeta: JsonObject = {};
    const bodyMeta = isObject(body.metadata) ? body.metadata : {};
    if (typeof bodyMeta.name === 'string' && bodyMeta.name) outMeta.name = bodyMeta.name;
    if (typeof bodyMeta.namespace === 'string' && bodyMeta.namespace) outMeta.namespace = bodyMeta.namespace;
    outMeta.creationTimestamp = null;
    let boundObjectRef: Json = null;
    if (ref) {
      boundObjectRef = {};
      for (const key of ['kind', 'apiVersion', 'name', 'uid']) if (str(ref[key])) boundObjectRef[key] = str(ref[key]);
    }
    return {
      kind: TOKEN_REQUEST.kind,
      apiVersion: TOKEN_REQUEST.apiVersion,
      metadata: outMeta,
      spec: { audiences, expirationSeconds, boundObjectRef },
      status: { token, expirationTimestamp: rfc3339(now + seconds * 1000) },
    };
  }

  // -------------------------------------------------------------------------------------------
  // TokenReview

  /** POST /apis/authentication.k8s.io/v1/tokenreviews: the review with its status (201 even when not authenticated). */
  review(body: unknown): JsonObject {
    if (!isObject(body)) throw badRequest(`the object provided is unrecognized (must be of type TokenReview): couldn't get version/kind; json parse error: ${JSON.stringify(body)}`);
    checkTypeMeta(body, TOKEN_REVIEW);
    const spec = isObject(body.spec) ? body.spec : {};
    const token = str(spec.token);
    if (!token) throw badRequest('token is required for TokenReview in authentication');
    const requested = Array.isArray(spec.audiences) ? spec.audiences.filter((a): a is string => typeof a === 'string') : [];
    const result = this.authenticate(token, requested.length > 0 ? requested : this.apiAudiences);

    const outMeta: JsonObject = {};
    const bodyMeta = isObject(body.metadata) ? body.metadata : {};
    if (typeof bodyMeta.name === 'string' && bodyMeta.name) outMeta.name = bodyMeta.name;
    outMeta.creationTimestamp = null;
    const outSpec: JsonObject = { token };
    if (requested.length > 0) outSpec.audiences = requested;
    const status: JsonObject = {};
    if (result.authenticated) status.authenticated = true;
    const user: JsonObject = {};
    if (result.user) {
      user.username = result.user.username;
      user.uid = result.user.uid;
      user.groups = result.user.groups;
      if (result.user.extra) user.extra = result.user.extra;
    }
    status.user = user;
    if (result.audiences) status.audiences = result.audiences;
    if (result.error) status.error = result.error;
    return { kind: TOKEN_REVIEW.kind, apiVersion: TOKEN_REVIEW.apiVersion, metadata: outMeta, spec: outSpec, status };
  }

  /**
   * The service account authenticators on a bearer token, for the given audiences. A token they do not recognize
   * (not a JWT, another issuer) is `invalid bearer token`; one they recognize but refuse carries the reason too.
   */
  authenticate(token: string, audiences: string[]): TokenAuthentication {
    const parts = token.split('.');
    let header: JsonObject | undefined;
    let claims: JsonObject | undefined;
    if (parts.length === 3) {
      try {
        const h = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as Json;
        const c = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as Json;
        if (isObject(h) && isObject(c)) {
          header = h;
          claims = c;
        }
      } catch {
        // not a JWT
      }
    }
    const iss = claims ? str(claims.iss) : '';
    if (!header || !claims || (iss !== this.issuer && iss !== LEGACY_ISSUER)) return { authenticated: false, error: 'invalid bearer token' };
    try {
      return this.validate(parts, claims, iss === LEGACY_ISSUER, audiences);
    } catch (err) {
      if (err instanceof TokenInvalid) return { authenticated: false, error: `[invalid bearer token, ${err.message}]` };
      throw err;
    }
  }

  private validate(parts: string[], claims: JsonObject, legacy: boolean, requested: string[]): TokenAuthentication {
    const { publicKey } = this.key();
    const signed = verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(parts[2], 'base64url'));
    if (!signed) throw new TokenInvalid('square/go-jose: error in cryptographic primitive');

    // Audiences: a token without any (a legacy token) counts as one for the API server's own.
    const aud = Array.isArray(claims.aud) ? claims.aud.filter((a): a is string => typeof a === 'string') : typeof claims.aud === 'string' ? [claims.aud] : [];
    const tokenAudiences = aud.length > 0 ? aud : this.apiAudiences;
    const granted = requested.filter((a) => tokenAudiences.includes(a));
    if (granted.length === 0) throw new TokenInvalid(`token audiences ${goQuoteList(tokenAudiences)} is invalid for the target audiences ${goQuoteList(requested)}`);

    const now = Math.floor(this.objects.now() / 1000);
    let namespace: string;
    let saName: string;
    let saUid: string;
    const extra: Record<string, string[]> = {};
    if (legacy) {
      namespace = str(claims['kubernetes.io/serviceaccount/namespace']);
      saName = str(claims['kubernetes.io/serviceaccount/service-account.name']);
      saUid = str(claims['kubernetes.io/serviceaccount/service-account.uid']);
      const secretName = str(claims['kubernetes.io/serviceaccount/secret.name']);
      if (!saName) throw new TokenInvalid('serviceAccountName claim is missing');
      if (!saUid) throw new TokenInvalid('serviceAccountUID claim is missing');
      if (!secretName) throw new TokenInvalid('secretName claim is missing');
      if (!namespace) throw new TokenInvalid('namespace claim is missing');
      // The secret must still hold this very token, and the service account must still be the same one.
      const secret = this.objects.get('secrets', namespace, secretName);
      if (!secret || meta(secret).deletionTimestamp) throw new TokenInvalid('Token has been invalidated');
      const data = isObject(secret.data) ? secret.data : {};
      if (Buffer.from(str(data.token), 'base64').toString('utf8') !== parts.join('.')) throw new TokenInvalid("Token does not match server's copy");
      const sa = this.objects.get('serviceaccounts', namespace, saName);
      if (!sa || meta(sa).deletionTimestamp) throw new TokenInvalid('Token has been invalidated');
      if (str(meta(sa).uid) !== saUid) throw new TokenInvalid(`ServiceAccount UID (${str(meta(sa).uid)}) does not match claim (${saUid})`);
    } else {
      // go-jose's Validate with its default leeway of a minute.
      if (typeof claims.exp === 'number' && now - LEEWAY_SECONDS >= claims.exp) throw new TokenInvalid('Token has expired.');
      if ((typeof claims.nbf === 'number' && now + LEEWAY_SECONDS < claims.nbf) || (typeof claims.iat === 'number' && now + LEEWAY_SECONDS < claims.iat)) {
        throw new TokenInvalid('Token could not be validated.');
      }
      const k8s = isObject(claims['kubernetes.io']) ? claims['kubernetes.io'] : {};
      const saRef = isObject(k8s.serviceaccount) ? k8s.serviceaccount : {};
      namespace = str(k8s.namespace);
      saName = str(saRef.name);
      saUid = str(saRef.uid);
      // Things deleted more than the leeway ago no longer vouch for the token.
      const deletedBefore = (obj: JsonObject) => {
        const ts = meta(obj).deletionTimestamp;
        return typeof ts === 'string' && Date.parse(ts) / 1000 < now - LEEWAY_SECONDS;
      };
      const sa = this.objects.get('serviceaccounts', namespace, saName);
      if (!sa) throw new TokenInvalid(`serviceaccounts ${JSON.stringify(saName)} not found`);
      if (deletedBefore(sa)) throw new TokenInvalid('Token has been invalidated');
      if (str(meta(sa).uid) !== saUid) throw new TokenInvalid(`ServiceAccount UID (${str(meta(sa).uid)}) does not match claim (${saUid})`);
      if (isObject(k8s.secret)) {
        const secret = this.objects.get('secrets', namespace, str(k8s.secret.name));
        if (!secret || deletedBefore(secret)) throw new TokenInvalid('Token has been invalidated');
        if (str(meta(secret).uid) !== str(k8s.secret.uid)) throw new TokenInvalid(`Secret UID (${str(meta(secret).uid)}) does not match claim (${str(k8s.secret.uid)})`);
      }
      if (isObject(k8s.pod)) {
        const pod = this.objects.get('pods', namespace, str(k8s.pod.name));
        if (!pod || deletedBefore(pod)) throw new TokenInvalid('Token has been invalidated');
        if (str(meta(pod).uid) !== str(k8s.pod.uid)) throw new TokenInvalid(`Pod UID (${str(meta(pod).uid)}) does not match claim (${str(k8s.pod.uid)})`);
        extra['authentication.kubernetes.io/pod-name'] = [str(k8s.pod.name)];
        extra['authentication.kubernetes.io/pod-uid'] = [str(k8s.pod.uid)];
      }
    }
    const user: NonNullable<TokenAuthentication['user']> = {
      username: `system:serviceaccount:${namespace}:${saName}`,
      uid: saUid,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
    };
    if (Object.keys(extra).length > 0) user.extra = extra;
    return { authenticated: true, user, audiences: granted };
  }
}

/** A body's apiVersion/kind, when given, must name the type (400, as the decoder answers otherwise). */
function checkTypeMeta(body: JsonObject, type: { kind: string; apiVersion: string }): void {
  const kind = typeof body.kind === 'string' && body.kind ? body.kind : type.kind;
  const apiVersion = typeof body.apiVersion === 'string' && body.apiVersion ? body.apiVersion : type.apiVersion;
  if (kind === type.kind && apiVersion === type.apiVersion) return;
  const version = apiVersion.split('/').pop() ?? '';
  throw badRequest(
    `${kind} in version ${JSON.stringify(version)} cannot be handled as a ${type.kind}: no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)} in scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"`,
  );
}
