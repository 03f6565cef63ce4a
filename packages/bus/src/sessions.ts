// Browser sessions (Zulip's web app: a session cookie plus a CSRF token, docs/web-app.md), shared
// by every process through Redis: the web service creates them at login, the gateway and the
// event tier resolve them (through @teamchat/runtime's Authenticator, with the same user checks
// as an API key), and the users service revokes them (deactivation, password change).
//
// The cookie carries a random id; Redis keeps only its sha256, so a copy of Redis (or a log of
// its keys) holds no usable cookie. Each session is one key with the cookie's lifetime; each
// user has a set of their sessions' hashes, so all of them can be ended at once. The two live in
// different Cluster slots and are never touched by one command (crossSlotPipeline for many).

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { announceAuthInvalidation } from './auth-cache';
import { crossSlotPipeline, RedisKeys, type Redis } from './redis';

/** The cookie's name, as Django's SESSION_COOKIE_NAME. */
export const SESSION_COOKIE_NAME = 'sessionid';
/** Zulip's SESSION_COOKIE_AGE: two weeks from login (SESSION_COOKIE_AGE_SECONDS). */
export const DEFAULT_SESSION_COOKIE_AGE_SECONDS = 14 * 24 * 60 * 60;

/** 32 random bytes, base64url: what a session id looks like (anything else is refused unread). */
export const SESSION_ID_FORMAT = /^[A-Za-z0-9_-]{43}$/;

export interface Session {
  /** sha256 of the session id: what revocation and the services' internal header name it by. */
  hash: string;
  userId: number;
  realmId: number;
  /** The token a state-changing request of this session must send (X-CSRFToken, csrfmiddlewaretoken). */
  csrfToken: string;
  /** When it ends (ms since the epoch), as Redis will expire it. */
  expiresAt: number;
}

interface StoredSession {
  u: number;
  r: number;
  c: string;
  x: number;
}

export function sessionHash(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex');
}

/**
 * A session's name in the processes' in-memory auth caches (Authenticator), and on the
 * invalidation channel that makes them drop it when it is revoked.
 */
export function sessionCacheKey(hash: string): string {
  return `session:${hash}`;
}

/** Whether `given` is the session's CSRF token (in constant time). */
export function csrfTokenMatches(session: Pick<Session, 'csrfToken'>, given: string | undefined): boolean {
  if (!given) return false;
  const expected = Buffer.from(session.csrfToken);
  const actual = Buffer.from(given);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

export class SessionStore {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = new RedisKeys(prefix);
  }

  /** A new session of the user, living `ageSeconds`; the id goes in the cookie and nowhere else. */
  async create(
    user: { userId: number; realmId: number },
    ageSeconds: number,
  ): Promise<{ id: string; session: Session }> {
    const id = randomBytes(32).toString('base64url');
    const session: Session = {
      hash: sessionHash(id),
      userId: user.userId,
      realmId: user.realmId,
      csrfToken: randomBytes(32).toString('base64url'),
      expiresAt: Date.now() + ageSeconds * 1000,
    };
    // Indexed first: a session that exists can always be found by its user's revocation. The
    // index lives as long as the user's newest session.
    const index = this.keys.userSessions(user.userId);
    await this.redis.pipeline().sadd(index, session.hash).expire(index, ageSeconds).exec();
    const stored: StoredSession = { u: session.userId, r: session.realmId, c: session.csrfToken, x: session.expiresAt };
    await this.redis.set(this.keys.session(session.hash), JSON.stringify(stored), 'PXAT', session.expiresAt);
    return { id, session };
  }

  /** The live session this cookie value names, or null (unknown, expired, revoked, malformed). */
  async get(sessionId: string): Promise<Session | null> {
    return SESSION_ID_FORMAT.test(sessionId) ? this.byHash(sessionHash(sessionId)) : null;
  }

  /** The live session of this hash, or null. */
  async byHash(hash: string): Promise<Session | null> {
    const stored = await this.redis.get(this.keys.session(hash));
    if (!stored) return null;
    const { u, r, c, x } = JSON.parse(stored) as StoredSession;
    return { hash, userId: u, realmId: r, csrfToken: c, expiresAt: x };
  }

  /** Ends one session (logout). */
  async revoke(session: Pick<Session, 'hash' | 'userId'>): Promise<void> {
    await this.redis.del(this.keys.session(session.hash));
    await this.redis.srem(this.keys.userSessions(session.userId), session.hash);
    await this.announce([session.hash]);
  }

  /** Processes holding these sessions in memory drop them before the revocation returns. */
  private announce(hashes: string[]): Promise<void> {
    return announceAuthInvalidation(this.redis, this.keys.prefix, hashes.map(sessionCacheKey));
  }

  /**
   * Ends every session of the user (deactivation), or every one but `keepHash` (a password
   * change keeps the session that made it, as Django's update_session_auth_hash).
   */
  async revokeUser(userId: number, keepHash?: string): Promise<void> {
    const index = this.keys.userSessions(userId);
    const hashes = (await this.redis.smembers(index)).filter((hash) => hash !== keepHash);
    if (hashes.length === 0) return;
    const batch = crossSlotPipeline(this.redis);
    for (const hash of hashes) batch.del(this.keys.session(hash));
    for (const [error] of (await batch.exec()) ?? []) if (error) throw error;
    await this.redis.srem(index, ...hashes);
    await this.announce(hashes);
  }
}

/** The value of the session cookie in a Cookie header, if any. */
export function sessionIdFromCookies(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE_NAME) return part.slice(eq + 1).trim();
  }
  return undefined;
}
