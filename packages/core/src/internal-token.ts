// The short-lived token the gateway gives every request it forwards. Services accept no
// request without one: it proves the gateway authenticated the caller, names the user and
// realm, and is bound to the request's method and path so it cannot be replayed elsewhere.
// (The request id travels in its own header: it is for logs, and keeping it out of the token
// lets one token serve a client's repeated calls, e.g. every long-poll of GET /events.)

import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import { UnauthorizedError } from './errors';

export const INTERNAL_TOKEN_HEADER = 'x-teamchat-internal-token';
export const REQUEST_ID_HEADER = 'x-request-id';
/**
 * Set by the gateway on a request authenticated by a session cookie: the session's hash (what
 * revocation names it by; never the cookie itself, which stays at the gateway). Stripped from
 * clients' requests, like the internal token.
 */
export const SESSION_ID_HEADER = 'x-teamchat-session';
/** Set by the gateway on requests to the web service with a session: its CSRF token, for the page's csrfmiddlewaretoken. */
export const SESSION_CSRF_HEADER = 'x-teamchat-session-csrf';

/** The request id a public entry (gateway, event tier) gives a request: the client's, if well-formed, or a new one. */
export function requestIdOf(req: { headers: Record<string, string | string[] | undefined> }): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && /^[\w.-]{8,64}$/.test(given) ? given : crypto.randomUUID();
}

const ISSUER = 'teamchat-gateway';
const AUDIENCE = 'teamchat-services';
const LIFETIME_SECONDS = 60;

export interface Requester {
  userId: number;
  realmId: number;
  role: number;
  email: string;
  isBot: boolean;
}

export interface InternalClaims {
  /** The authenticated user, or null for an endpoint that needs none (e.g. server_settings). */
  user: Requester | null;
  /** The realm the request is for (from the user, or from the Host header when anonymous). */
  realmId: number | null;
  method: string;
  /** Path without the query string. */
  path: string;
}

interface TokenPayload {
  u?: [number, number, number, string, boolean];
  r: number | null;
  m: string;
  p: string;
  exp: number;
}

/**
 * The secret as a KeyObject, made once: given a string, jsonwebtoken first tries (and fails) to
 * parse it as a PEM key on every call, which costs far more than the HMAC itself.
 */
const secretKeys = new Map<string, crypto.KeyObject>();
function secretKey(secret: string): crypto.KeyObject {
  let key = secretKeys.get(secret);
  if (!key) {
    key = crypto.createSecretKey(Buffer.from(secret));
    secretKeys.set(secret, key);
  }
  return key;
}

/**
 * Signing and verifying cost ~9 % and ~8 % of the gateway's and an event replica's CPU when
 * every delivery is answered by a new poll, so both are remembered: the gateway reuses a token
 * for the same claims while it has at least half its life left, and a service remembers the
 * tokens it has verified until they expire. Both maps are bounded (oldest entry dropped).
 */
const REUSE_SECONDS = LIFETIME_SECONDS / 2;
const CACHE_ENTRIES = 10_000;
const signed = new Map<string, { token: string; reuseUntilMs: number }>();
const verified = new Map<string, TokenPayload>();

function remember<V>(cache: Map<string, V>, key: string, value: V): void {
  cache.delete(key);
  if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
  cache.set(key, value);
}

export function signInternalToken(secret: string, claims: InternalClaims): string {
  const payload: Omit<TokenPayload, 'exp'> = { r: claims.realmId, m: claims.method, p: claims.path };
  if (claims.user) {
    const u = claims.user;
    payload.u = [u.userId, u.realmId, u.role, u.email, u.isBot];
  }
  const key = secret + JSON.stringify(payload);
  const now = Date.now();
  const known = signed.get(key);
  if (known && known.reuseUntilMs > now) return known.token;
  const token = jwt.sign(payload, secretKey(secret), {
    algorithm: 'HS256',
    expiresIn: LIFETIME_SECONDS,
    issuer: ISSUER,
    audience: AUDIENCE,
  });
  remember(signed, key, { token, reuseUntilMs: now + REUSE_SECONDS * 1000 });
  return token;
}

/** Verifies the token for this request; throws UnauthorizedError if it is missing, forged, expired or for another method or path. */
export function verifyInternalToken(
  secret: string,
  token: string | undefined,
  method: string,
  path: string,
): InternalClaims {
  if (!token) throw new UnauthorizedError('Requests must come through the gateway');
  const payload = verifiedPayload(secret, token);
  if (payload.m !== method || payload.p !== path) throw new UnauthorizedError('Invalid internal token');
  const user = payload.u
    ? { userId: payload.u[0], realmId: payload.u[1], role: payload.u[2], email: payload.u[3], isBot: payload.u[4] }
    : null;
  return { user, realmId: payload.r, method: payload.m, path: payload.p };
}

function verifiedPayload(secret: string, token: string): TokenPayload {
  const key = secret + token;
  const known = verified.get(key);
  // jsonwebtoken's own rule: expired once the current second reaches exp.
  if (known && Math.floor(Date.now() / 1000) < known.exp) return known;
  let payload: TokenPayload;
  try {
    payload = jwt.verify(token, secretKey(secret), {
      algorithms: ['HS256'],
      issuer: ISSUER,
      audience: AUDIENCE,
    }) as TokenPayload;
  } catch {
    throw new UnauthorizedError('Invalid internal token');
  }
  remember(verified, key, payload);
  return payload;
}
