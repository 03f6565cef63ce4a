// The short-lived token the gateway gives every request it forwards. Services accept no
// request without one: it proves the gateway authenticated the caller, names the user and
// realm, and is bound to the request's method and path so it cannot be replayed elsewhere.

import crypto from 'node:crypto';
import { UnauthorizedError } from './errors';

export const INTERNAL_TOKEN_HEADER = 'x-teamchat-internal-token';
export const REQUEST_ID_HEADER = 'x-request-id';

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
  requestId: string;
}

interface TokenPayload {
  u?: [number, number, number, string, boolean];
  r: number | null;
  m: string;
  p: string;
  rid: string;
}

/**
 * The secret as a KeyObject, made once (a string secret would be turned into a key on every
 * call, which costs more than the HMAC itself).
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

// The token is a standard JWT (RFC 7519, HS256), built and checked here directly: every request
// through the gateway signs one and every service verifies one, and a general-purpose JWT
// library (several JSON and base64 passes, option validation) costs several times the HMAC.
const JWT_HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

function hmac(secret: string, signingInput: string): string {
  return crypto.createHmac('sha256', secretKey(secret)).update(signingInput).digest('base64url');
}

export function signInternalToken(secret: string, claims: InternalClaims): string {
  const iat = Math.floor(Date.now() / 1000);
  const payload: TokenPayload & { iat: number; exp: number; aud: string; iss: string } = {
    r: claims.realmId,
    m: claims.method,
    p: claims.path,
    rid: claims.requestId,
    iat,
    exp: iat + LIFETIME_SECONDS,
    aud: AUDIENCE,
    iss: ISSUER,
  };
  if (claims.user) {
    const u = claims.user;
    payload.u = [u.userId, u.realmId, u.role, u.email, u.isBot];
  }
  const signingInput = `${JWT_HEADER}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return `${signingInput}.${hmac(secret, signingInput)}`;
}

function sameString(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}

/** The token's claims if its signature, algorithm, issuer, audience and lifetime are right; else null. */
function decodeVerified(secret: string, token: string): (TokenPayload & Record<string, unknown>) | null {
  const firstDot = token.indexOf('.');
  const secondDot = token.indexOf('.', firstDot + 1);
  if (firstDot < 0 || secondDot < 0 || token.indexOf('.', secondDot + 1) >= 0) return null;
  const headerPart = token.slice(0, firstDot);
  if (headerPart !== JWT_HEADER) {
    // Another spelling of the same header (other key order or spacing) is still a JWT.
    const header = JSON.parse(Buffer.from(headerPart, 'base64url').toString()) as { alg?: unknown; typ?: unknown };
    if (header?.alg !== 'HS256' || (header.typ !== undefined && header.typ !== 'JWT')) return null;
  }
  if (!sameString(hmac(secret, token.slice(0, secondDot)), token.slice(secondDot + 1))) return null;
  const payload = JSON.parse(Buffer.from(token.slice(firstDot + 1, secondDot), 'base64url').toString()) as TokenPayload & Record<string, unknown>;
  if (typeof payload !== 'object' || payload === null) return null;
  const now = Math.floor(Date.now() / 1000);
  if (payload.iss !== ISSUER) return null;
  if (payload.aud !== AUDIENCE && !(Array.isArray(payload.aud) && payload.aud.includes(AUDIENCE))) return null;
  if (typeof payload.exp !== 'number' || now >= payload.exp) return null;
  if (payload.nbf !== undefined && (typeof payload.nbf !== 'number' || now < payload.nbf)) return null;
  return payload;
}

/** Verifies the token for this request; throws UnauthorizedError if it is missing, forged, expired or reused. */
export function verifyInternalToken(secret: string, token: string | undefined, method: string, path: string): InternalClaims {
  if (!token) throw new UnauthorizedError('Requests must come through the gateway');
  let payload: TokenPayload | null;
  try {
    payload = decodeVerified(secret, token);
  } catch {
    payload = null;
  }
  if (!payload) throw new UnauthorizedError('Invalid internal token');
  if (payload.m !== method || payload.p !== path) throw new UnauthorizedError('Invalid internal token');
  const user = payload.u
    ? { userId: payload.u[0], realmId: payload.u[1], role: payload.u[2], email: payload.u[3], isBot: payload.u[4] }
    : null;
  return { user, realmId: payload.r, method: payload.m, path: payload.p, requestId: payload.rid };
}
