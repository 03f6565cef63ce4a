// The event tier's public entry (docs/adr/0006): the Ingress sends GET and DELETE /api/v1/events
// and POST /api/v1/register straight to the event replicas, with the client's own HTTP Basic
// credentials, as Zulip's nginx sends the polls to Tornado. A replica checks them as the gateway does, with the same code
// (@teamchat/runtime's Authenticator and RealmDirectory: the same Redis cache of key lookups,
// the same in-process cache dropped by the same invalidation channel) and spends the same
// rate-limit budget (RateLimiter, the same Redis buckets). Requests from the gateway keep
// their internal token. The web app's /json/events comes here too (Zulip's nginx sends it to
// Tornado): authenticated by the session cookie, with the gateway's CSRF rule for DELETE.

import type http from 'node:http';
import {
  INTERNAL_TOKEN_HEADER,
  REQUEST_ID_HEADER,
  requestIdOf,
  signInternalToken,
  type Requester,
} from '@teamchat/core';
import {
  Authenticator,
  mayPark,
  RateLimiter,
  rateLimitSettings,
  RealmDirectory,
  type BaseDeps,
} from '@teamchat/runtime';
import type { EventsEnv } from '../env';

const PUBLIC_PATHS = ['/api/v1/events', '/api/v1/register'];
const JSON_EVENTS_PATH = '/json/events';
const EVENTS_PATH = '/api/v1/events';

/** Requests that came as /json/events: a browser's, authenticated by its session cookie. */
const bySession = new WeakSet<http.IncomingMessage>();

/**
 * A client's /json/events (the web app's alias of /api/v1/events) is served as /api/v1/events,
 * remembered as a session's request. Never the gateway's (it forwards /json as /api/v1), so any
 * internal token it carries is the client's own and dropped.
 */
export function takeJsonAlias(req: http.IncomingMessage): void {
  const url = req.url ?? '';
  if (
    !url.startsWith(JSON_EVENTS_PATH) ||
    (url.length > JSON_EVENTS_PATH.length && url[JSON_EVENTS_PATH.length] !== '?')
  )
    return;
  req.url = EVENTS_PATH + url.slice(JSON_EVENTS_PATH.length);
  delete req.headers[INTERNAL_TOKEN_HEADER];
  bySession.add(req);
}

/** /api/v1/events (GET, DELETE) or /api/v1/register (POST), with any query string. */
export function isPublicPath(req: http.IncomingMessage): boolean {
  const path = (req.url ?? '').split('?', 1)[0];
  return PUBLIC_PATHS.includes(path);
}

/**
 * A request of a client, not of the gateway: it carries credentials of its own, or no internal
 * token (then it is refused as the gateway refuses a request without credentials). The gateway
 * never forwards an Authorization header.
 */
export function isDirect(req: http.IncomingMessage): boolean {
  return req.headers.authorization !== undefined || req.headers[INTERNAL_TOKEN_HEADER] === undefined;
}

export class PublicEntry {
  private readonly realms: RealmDirectory;
  private readonly authenticator: Authenticator;
  private readonly rateLimiter: RateLimiter;

  constructor(
    private readonly base: BaseDeps,
    config: EventsEnv,
  ) {
    this.realms = new RealmDirectory(base.db);
    this.authenticator = new Authenticator(
      base.db,
      base.redis,
      base.env,
      base.logger,
      `events:${config.EVENTS_REPLICA_ID}`,
    );
    this.rateLimiter = new RateLimiter(base.redis, base.env.REDIS_PREFIX, rateLimitSettings(config), base.logger);
  }

  /**
   * The caller of a direct request, as the gateway finds it: the realm the Host header names,
   * the Basic credentials checked against it (401 with Zulip's wording otherwise), then one
   * request of the user's rate-limit budget unless the poll may park. Also gives the request
   * (and its answer) a request id, as the gateway does.
   */
  async admit(req: http.IncomingMessage, res: http.ServerResponse, query: URLSearchParams): Promise<Requester> {
    const requestId = requestIdOf(req);
    req.headers[REQUEST_ID_HEADER] = requestId;
    if (!res.headersSent) res.setHeader(REQUEST_ID_HEADER, requestId);
    const hostRealm = await this.realms.byHost(req.headers.host);
    let user: Requester;
    try {
      user = bySession.has(req)
        ? (await this.authenticator.requireSession(req, hostRealm)).user
        : await this.authenticator.requireUser(req.headers.authorization, hostRealm);
    } catch (refusal) {
      // Refused credentials spend the address's anonymous budget, as at the gateway.
      throw await this.rateLimiter.failedAuthentication(req, res, refusal);
    }
    if (!mayPark(req, query)) await this.rateLimiter.check(req, res, user);
    return user;
  }

  /**
   * Admits a direct request the service's express app serves (DELETE, a GET with a body): it
   * continues with an internal token signed here for the user, as if the gateway had sent it.
   */
  async admitForApp(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> {
    const user = await this.admit(req, res, url.searchParams);
    delete req.headers.authorization;
    req.headers[INTERNAL_TOKEN_HEADER] = signInternalToken(this.base.env.INTERNAL_JWT_SECRET, {
      user,
      realmId: user.realmId,
      method: req.method ?? 'GET',
      path: url.pathname,
    });
  }

  close(): void {
    this.authenticator.close();
  }
}
