// HTTP Basic authentication of API requests (email:api_key), as Zulip's validate_api_key.
// Every failure is a 401 with Zulip's code and wording (UNAUTHORIZED; USER_DEACTIVATED and
// REALM_DEACTIVATED, as validate_account_and_subdomain). Lookups are cached in Redis
// (AUTH_CACHE_TTL_SECONDS, a minute), and for a few seconds in the process's own memory;
// actions that change a user's key, email, role or activity invalidate both (see
// invalidateAuthCache).
// Two public entries use it: the gateway, and the event tier for the long-polls the Ingress
// sends it directly (docs/adr/0006): one implementation, one cache, one invalidation channel.

import type http from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  csrfTokenMatches,
  duplicateRedis,
  type AuthCacheEnv,
  type ConnectionLogger,
  isCluster,
  readAuthCache,
  RedisKeys,
  SESSION_ID_FORMAT,
  sessionCacheKey,
  sessionHash,
  sessionIdFromCookies,
  SessionStore,
  userAuthCacheKey,
  writeAuthCache,
  type CachedAuth,
  type Redis,
  type Session,
} from '@teamchat/bus';
import {
  CsrfFailedError,
  NOT_LOGGED_IN,
  SESSION_AUTHENTICATE,
  UnauthorizedError,
  type Requester,
} from '@teamchat/core';
import type { Db } from '@teamchat/db';
import { BotType, hasApiKeyFormat, hashApiKey } from '@teamchat/domain';
import type { RealmEntry } from './realms';

export interface Credentials {
  /** null when only a key was sent (the legacy ?api_key= on file URLs). */
  email: string | null;
  apiKey: string;
}

/** Parses "Basic base64(email:key)"; null when there is no Authorization header. */
export function parseBasicAuth(header: string | undefined): Credentials | null {
  if (!header) return null;
  const [scheme, encoded] = header.trim().split(/\s+/, 2);
  if (scheme?.toLowerCase() !== 'basic' || !encoded) {
    throw new UnauthorizedError('This endpoint requires HTTP basic authentication.');
  }
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new UnauthorizedError('Invalid authorization header for basic auth');
  return { email: decoded.slice(0, colon), apiKey: decoded.slice(colon + 1) };
}

/** Methods Django's CSRF check lets through without a token. */
const CSRF_SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

/**
 * A state-changing request of a session must carry the session's CSRF token in X-CSRFToken, as
 * Django's CsrfViewMiddleware checks it (its reasons as Zulip reports them): 403 CSRF_FAILED.
 */
function checkCsrf(req: http.IncomingMessage, session: Pick<Session, 'csrfToken'>): void {
  if (CSRF_SAFE_METHODS.has(req.method ?? 'GET')) return;
  const given = req.headers['x-csrftoken'];
  const token = Array.isArray(given) ? given[0] : given;
  if (!token) throw new CsrfFailedError('CSRF token missing.');
  if (!csrfTokenMatches(session, token)) {
    throw new CsrfFailedError("CSRF token from the 'X-Csrftoken' HTTP header incorrect.");
  }
}

/** How long a lookup is kept in a process's own memory (less if Redis keeps it less). */
export const LOCAL_AUTH_TTL_MS = 10_000;
const LOCAL_MAX_ENTRIES = 50_000;

/**
 * Lookups kept in this process, which saves a Redis round trip on nearly every request. Safe
 * only while it hears every invalidation: it serves nothing unless its subscription to the
 * invalidation channel is up, and forgets everything when that connection drops. An
 * invalidation has left Redis before the action that caused it answers (invalidateAuthCache),
 * so it reaches every process that authenticates (gateways and event replicas) before any
 * request that could depend on it, and is read before a lookup trusts memory (see lookup).
 */
class LocalAuthCache {
  private readonly entries = new Map<string, { auth: CachedAuth; expiresAt: number }>();
  /** Live sessions by sessionCacheKey, each until the earlier of its end and the entries' lifetime. */
  private readonly sessions = new Map<string, { session: Session; expiresAt: number }>();
  private readonly lookups = new Map<string, { generation: number; auth: Promise<CachedAuth | null> }>();
  private subscribed = false;
  /** Bumped by every invalidation: a lookup that started before one must not be stored. */
  generation = 0;

  constructor(
    private readonly subscriber: Redis,
    private readonly channel: string,
    /**
     * False: serve nothing from memory, only track invalidations (the generation). On a Redis
     * Cluster a revoked key was still served from memory once in the cluster pass (zulip-js:
     * a deactivated user's next request answered), the invalidation not heard in time; until
     * that is understood, a Cluster gateway reads Redis's cache on every request.
     */
    private readonly keepEntries: boolean,
    private readonly ttlMs: number,
  ) {
    // A shard channel (see invalidateAuthCache). A Cluster subscribes on the channel's master with
    // a connection of its own, replaced (-subscriber, then +subscriber) when that node goes away.
    subscriber.on('smessage', (_channel: string, message: string) => this.invalidate(JSON.parse(message) as string[]));
    for (const connected of ['ready', 'subscribersReady']) subscriber.on(connected, () => void this.subscribe());
    for (const dropped of ['close', '-subscriber']) subscriber.on(dropped, () => this.forgetAll());
  }

  private async subscribe(): Promise<void> {
    try {
      await this.subscriber.ssubscribe(this.channel);
      // A lookup that began before now may have missed an invalidation: it must not be kept.
      this.generation++;
      this.subscribed = true;
    } catch {
      this.forgetAll(); // not subscribed yet: the 'ready' of the next connection retries
    }
  }

  private forgetAll(): void {
    this.subscribed = false;
    this.generation++;
    this.entries.clear();
    this.sessions.clear();
  }

  /** Whether memory may answer: only while every invalidation is heard, and not on a Cluster. */
  private get serving(): boolean {
    return this.subscribed && this.keepEntries;
  }

  private invalidate(names: string[]): void {
    this.generation++;
    for (const name of names) {
      this.entries.delete(name);
      this.sessions.delete(name);
    }
  }

  getSession(name: string): Session | undefined {
    if (!this.serving) return undefined;
    const entry = this.sessions.get(name);
    if (!entry) return undefined;
    if (entry.expiresAt > Date.now()) return entry.session;
    this.sessions.delete(name);
    return undefined;
  }

  setSession(name: string, session: Session): void {
    if (!this.serving) return;
    if (this.sessions.size >= LOCAL_MAX_ENTRIES) this.sessions.delete(this.sessions.keys().next().value!);
    this.sessions.set(name, { session, expiresAt: Math.min(session.expiresAt, Date.now() + this.ttlMs) });
  }

  get(apiKeyHash: string): CachedAuth | undefined {
    if (!this.serving) return undefined;
    const entry = this.entries.get(apiKeyHash);
    if (!entry) return undefined;
    if (entry.expiresAt > Date.now()) return entry.auth;
    this.entries.delete(apiKeyHash);
    return undefined;
  }

  /**
   * A lookup of this key under way and begun since the last invalidation, which a request may
   * wait for instead of reading Redis itself: when an entry expires, every poll of a user's
   * clients misses memory in the same moment (10 at once per user in bench/events).
   */
  sharedLookup(apiKeyHash: string): Promise<CachedAuth | null> | undefined {
    const lookup = this.lookups.get(apiKeyHash);
    return lookup?.generation === this.generation && this.serving ? lookup.auth : undefined;
  }

  shareLookup(apiKeyHash: string, auth: Promise<CachedAuth | null>): void {
    if (!this.serving) return;
    const lookup = { generation: this.generation, auth };
    this.lookups.set(apiKeyHash, lookup);
    const forget = () => {
      if (this.lookups.get(apiKeyHash) === lookup) this.lookups.delete(apiKeyHash);
    };
    auth.then(forget, forget);
  }

  set(apiKeyHash: string, auth: CachedAuth): void {
    if (!this.serving) return;
    // Map keeps insertion order: the first key is the oldest entry.
    if (this.entries.size >= LOCAL_MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(apiKeyHash, { auth, expiresAt: Date.now() + this.ttlMs });
  }

  close(): void {
    this.subscriber.disconnect();
  }
}

const KEY_READ_BATCH = 500;

const USER_KEY_PREFIX = userAuthCacheKey(0).slice(0, -1);

const AUTH_USER_FIELDS = {
  id: true,
  realm_id: true,
  role: true,
  email: true,
  delivery_email: true,
  is_bot: true,
  bot_type: true,
  is_active: true,
  realm: { select: { deactivated: true } },
} as const;

function cachedAuthOf(user: {
  id: number;
  realm_id: number;
  role: number;
  email: string;
  delivery_email: string;
  is_bot: boolean;
  bot_type: number | null;
  is_active: boolean;
  realm: { deactivated: boolean };
}): CachedAuth {
  return {
    userId: user.id,
    realmId: user.realm_id,
    role: user.role,
    email: user.email,
    deliveryEmail: user.delivery_email,
    isBot: user.is_bot,
    isIncomingWebhook: user.bot_type === BotType.INCOMING_WEBHOOK,
    isActive: user.is_active,
    realmDeactivated: user.realm.deactivated,
  };
}

/**
 * Reads of keys missing from both caches, gathered over one turn of the event loop and made in
 * one statement per batch (of at most KEY_READ_BATCH keys): a crowd polling again at once (a big
 * channel's message, a replica's restart, every cached lookup gone after a minute) costs a few
 * statements, not one each. 10,000 polls with no cached authentication parked again in
 * 1.3–1.8 s, against 3.5–4.4 s with one statement each (bench/README.md, bigchannel).
 */
class KeyReads {
  private waiting = new Map<
    string,
    Array<{ resolve: (auth: CachedAuth | null) => void; reject: (error: unknown) => void }>
  >();

  constructor(private readonly db: Db) {}

  read(apiKeyHash: string): Promise<CachedAuth | null> {
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) setImmediate(() => void this.flush());
      const waiters = this.waiting.get(apiKeyHash);
      if (waiters) waiters.push({ resolve, reject });
      else this.waiting.set(apiKeyHash, [{ resolve, reject }]);
    });
  }

  private async flush(): Promise<void> {
    const batch = this.waiting;
    this.waiting = new Map();
    const hashes = [...batch.keys()];
    for (let start = 0; start < hashes.length; start += KEY_READ_BATCH) {
      const chunk = hashes.slice(start, start + KEY_READ_BATCH);
      try {
        const found = await this.lookUp(chunk);
        for (const hash of chunk) for (const waiter of batch.get(hash)!) waiter.resolve(found.get(hash) ?? null);
      } catch (error) {
        for (const hash of chunk) for (const waiter of batch.get(hash)!) waiter.reject(error);
      }
    }
  }

  /** Entries are API-key hashes, or a session's user (userAuthCacheKey): one statement for each kind present. */
  private async lookUp(cacheKeys: string[]): Promise<Map<string, CachedAuth>> {
    const userIds = cacheKeys
      .filter((key) => key.startsWith(USER_KEY_PREFIX))
      .map((key) => Number(key.slice(USER_KEY_PREFIX.length)));
    const keyHashes = cacheKeys.filter((key) => !key.startsWith(USER_KEY_PREFIX));
    const [keys, users] = await Promise.all([
      keyHashes.length
        ? this.db.apiKey.findMany({
            where: { key_hash: { in: keyHashes } },
            select: { key_hash: true, user: { select: AUTH_USER_FIELDS } },
          })
        : [],
      userIds.length ? this.db.userProfile.findMany({ where: { id: { in: userIds } }, select: AUTH_USER_FIELDS }) : [],
    ]);
    return new Map([
      ...keys.map(({ key_hash, user }) => [key_hash, cachedAuthOf(user)] as const),
      ...users.map((user) => [userAuthCacheKey(user.id), cachedAuthOf(user)] as const),
    ]);
  }
}

/** Where a key is used: incoming-webhook bots' keys are refused but on the webhook URLs. */
export interface KeyUse {
  allowWebhookAccess?: boolean;
}

export class Authenticator {
  private readonly local: LocalAuthCache;
  private readonly keyReads: KeyReads;
  readonly sessions: SessionStore;

  constructor(
    db: Db,
    private readonly redis: Redis,
    private readonly cache: AuthCacheEnv,
    /** Where the invalidation subscriber's connection errors go. */
    logger: ConnectionLogger,
    /** Names the process's invalidation subscriber connection (`<name>-auth-invalidations`). */
    connectionName = 'gateway',
  ) {
    this.keyReads = new KeyReads(db);
    this.sessions = new SessionStore(redis, cache.REDIS_PREFIX);
    this.local = new LocalAuthCache(
      duplicateRedis(redis, `${connectionName}-auth-invalidations`, logger),
      new RedisKeys(cache.REDIS_PREFIX).authInvalidations(),
      !isCluster(redis),
      Math.min(LOCAL_AUTH_TTL_MS, cache.AUTH_CACHE_TTL_SECONDS * 1000),
    );
  }

  close(): void {
    this.local.close();
  }

  private async lookup(apiKeyHash: string): Promise<CachedAuth | null> {
    if (this.local.get(apiKeyHash) || this.local.sharedLookup(apiKeyHash)) {
      // An invalidation that left Redis before this request was sent may sit unread in the same
      // batch of ready sockets, behind the request: the event loop's check phase comes after it.
      await nextTurn();
      const known = this.local.get(apiKeyHash) ?? this.local.sharedLookup(apiKeyHash);
      if (known) return known;
    }
    const generation = this.local.generation;
    const auth = this.readThrough(apiKeyHash, generation);
    this.local.shareLookup(apiKeyHash, auth);
    return auth;
  }

  private async readThrough(apiKeyHash: string, generation: number): Promise<CachedAuth | null> {
    const auth =
      (await readAuthCache(this.redis, this.cache, apiKeyHash)) ?? (await this.readAndCache(apiKeyHash, generation));
    // Invalidated while we looked: what we read may be older than the invalidation.
    if (auth && generation === this.local.generation) this.local.set(apiKeyHash, auth);
    return auth;
  }

  private async readAndCache(apiKeyHash: string, generation: number): Promise<CachedAuth | null> {
    const auth = await this.keyReads.read(apiKeyHash);
    if (auth && generation === this.local.generation) await writeAuthCache(this.redis, this.cache, apiKeyHash, auth);
    return auth;
  }

  /**
   * The caller of an endpoint that requires credentials (HTTP Basic), on the realm the Host
   * header names (`hostRealm`, from RealmDirectory.byHost): the checks of every public entry.
   */
  async requireUser(authorization: string | undefined, hostRealm: RealmEntry | undefined): Promise<Requester> {
    const credentials = parseBasicAuth(authorization);
    if (!credentials) throw new UnauthorizedError();
    return this.authenticateOnHost(credentials, hostRealm);
  }

  /** The user these credentials belong to, refused unless `hostRealm` is theirs. */
  async authenticateOnHost(
    credentials: Credentials,
    hostRealm: RealmEntry | undefined,
    options: KeyUse = {},
  ): Promise<Requester> {
    // Zulip refuses a key on a host that names no organisation, as on another organisation's.
    if (!hostRealm) throw new UnauthorizedError('Account is not associated with this subdomain');
    return this.authenticate(credentials, hostRealm.id, options);
  }

  /**
   * The user these credentials belong to. `hostRealmId` is the realm the Host header names,
   * if it names one: a key of another realm is refused there.
   */
  async authenticate(
    credentials: Credentials,
    hostRealmId: number | undefined,
    options: KeyUse = {},
  ): Promise<Requester> {
    const { email, apiKey } = credentials;
    if (!hasApiKeyFormat(apiKey)) throw new UnauthorizedError('Malformed API key');
    const auth = await this.lookup(hashApiKey(apiKey));
    const claimed = email?.trim().toLowerCase();
    if (
      !auth ||
      (claimed !== undefined && claimed !== auth.deliveryEmail.toLowerCase() && claimed !== auth.email.toLowerCase())
    ) {
      throw new UnauthorizedError('Invalid API key');
    }
    const user = admitted(auth, hostRealmId);
    // Zulip's validate_api_key: an incoming-webhook bot's key is good for its webhook URLs only.
    if (auth.isIncomingWebhook && !options.allowWebhookAccess) {
      throw new UnauthorizedError('This API is not available to incoming webhook bots.');
    }
    return user;
  }

  /**
   * The live session a cookie names: from memory as a key's lookup is (revocations reach every
   * process on the same channel before they return: SessionStore), else one Redis read.
   */
  private async session(sessionId: string): Promise<Session | null> {
    if (!SESSION_ID_FORMAT.test(sessionId)) return null;
    const hash = sessionHash(sessionId);
    const name = sessionCacheKey(hash);
    if (this.local.getSession(name)) {
      // As for keys: an invalidation already sent may wait behind this request in the same batch.
      await nextTurn();
      const known = this.local.getSession(name);
      if (known) return known;
    }
    const generation = this.local.generation;
    const session = await this.sessions.byHash(hash);
    if (session && generation === this.local.generation) this.local.setSession(name, session);
    return session;
  }

  /**
   * The user of a browser session (the `sessionid` cookie's value), with the checks of an API
   * key: an active user of an active realm, the realm the Host header names. The session and
   * its user are looked up as a key is (memory, Redis), and forgotten everywhere when revoked.
   * Every failure is a 401 asking for a session, as Zulip answers /json.
   */
  async authenticateSession(
    sessionId: string,
    hostRealm: RealmEntry | undefined,
  ): Promise<{ user: Requester; session: Session }> {
    const session = await this.session(sessionId);
    if (!session) throw new UnauthorizedError(NOT_LOGGED_IN, SESSION_AUTHENTICATE);
    const auth = await this.lookup(userAuthCacheKey(session.userId));
    if (!auth || !hostRealm || session.realmId !== auth.realmId) {
      throw new UnauthorizedError(NOT_LOGGED_IN, SESSION_AUTHENTICATE);
    }
    return { user: admitted(auth, hostRealm.id, SESSION_AUTHENTICATE), session };
  }

  /**
   * The caller of a request that requires a browser session (Zulip's /json): the session its
   * `sessionid` cookie names, admitted by authenticateSession, and (unless `csrf` is false: the
   * web service's pages check their forms' tokens themselves) checkCsrf's token. The checks of
   * every public entry, as requireUser's for HTTP Basic.
   */
  async requireSession(
    req: http.IncomingMessage,
    hostRealm: RealmEntry | undefined,
    options: { csrf?: boolean } = {},
  ): Promise<{ user: Requester; session: Session }> {
    const sessionId = sessionIdFromCookies(req.headers.cookie);
    if (!sessionId) throw new UnauthorizedError(undefined, SESSION_AUTHENTICATE);
    const caller = await this.authenticateSession(sessionId, hostRealm);
    if (options.csrf ?? true) checkCsrf(req, caller.session);
    return caller;
  }
}

/** The checks every credential passes once it names a user (Zulip's validate_account_and_subdomain). */
function admitted(auth: CachedAuth, hostRealmId: number | undefined, authenticate?: string): Requester {
  // The organisation before the account, each with its own code (clients tell them apart).
  if (auth.realmDeactivated) {
    throw new UnauthorizedError('This organization has been deactivated', authenticate, 'REALM_DEACTIVATED');
  }
  if (!auth.isActive) throw new UnauthorizedError('Account is deactivated', authenticate, 'USER_DEACTIVATED');
  if (hostRealmId !== undefined && hostRealmId !== auth.realmId) {
    throw new UnauthorizedError('Account is not associated with this subdomain', authenticate);
  }
  return { userId: auth.userId, realmId: auth.realmId, role: auth.role, email: auth.email, isBot: auth.isBot };
}
