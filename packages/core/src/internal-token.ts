// The short-lived token the gateway gives every request it forwards. Services accept no
// request without one: it proves the gateway authenticated the caller, names the user and
// realm, and is bound to the request's method and path so it cannot be replayed elsewhere.

import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
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

export function signInternalToken(secret: string, claims: InternalClaims): string {
  const payload: TokenPayload = { r: claims.realmId, m: claims.method, p: claims.path, rid: claims.requestId };
  if (claims.user) {
    const u = claims.user;
    payload.u = [u.userId, u.realmId, u.role, u.email, u.isBot];
  }
  return jwt.sign(payload, secretKey(secret), { algorithm: 'HS256', expiresIn: LIFETIME_SECONDS, issuer: ISSUER, audience: AUDIENCE });
}

/** Verifies the token for this request; throws UnauthorizedError if it is missing, forged, expired or reused. */
export function verifyInternalToken(secret: string, token: string | undefined, method: string, path: string): InternalClaims {
  if (!token) throw new UnauthorizedError('Requests must come through the gateway');
  let payload: TokenPayload;
  try {
    payload = jwt.verify(token, secretKey(secret), { algorithms: ['HS256'], issuer: ISSUER, audience: AUDIENCE }) as TokenPayload;
  } catch {
    throw new UnauthorizedError('Invalid internal token');
  }
  if (payload.m !== method || payload.p !== path) throw new UnauthorizedError('Invalid internal token');
  const user = payload.u
    ? { userId: payload.u[0], realmId: payload.u[1], role: payload.u[2], email: payload.u[3], isBot: payload.u[4] }
    : null;
  return { user, realmId: payload.r, method: payload.m, path: payload.p, requestId: payload.rid };
}
