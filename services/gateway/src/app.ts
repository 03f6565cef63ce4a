// The gateway: the public HTTP entry (but for GET and DELETE /api/v1/events, which the Ingress
// sends straight to the event tier: docs/adr/0006). For each request it finds the owning service,
// authenticates the caller, signs a short-lived internal token and streams the request to
// the service and the answer back. /json/<x> (Zulip's web app) is /api/v1/<x> authenticated by
// the session cookie instead of HTTP Basic, with a CSRF check: the same rule, the same upstream
// path, so services never see /json. Plain node:http on purpose: long-polls and high-rate
// endpoints pass through no middleware stack, whose cost every request and parked poll would pay.

import http from 'node:http';
import { pipeline } from 'node:stream/promises';
import { DEFAULT_AUTH_CACHE_TTL_SECONDS, sessionIdFromCookies, type Redis, type Session } from '@teamchat/bus';
import {
  asJsonableError,
  CSRF_COOKIE_NAME,
  EMBED_REGISTER_HEADER,
  EMBEDS_HEADER,
  hasRequestBody,
  INTERNAL_TOKEN_HEADER,
  JsonableError,
  LANGUAGE_COOKIE_NAME,
  REQUEST_ID_HEADER,
  requestIdOf,
  ResourceNotFoundError,
  sendError,
  SESSION_CSRF_HEADER,
  SESSION_ID_HEADER,
  serviceError,
  signInternalToken,
  StateDataIntoPage,
  UnauthorizedError,
  type Logger,
  type Requester,
} from '@teamchat/core';
import type { Db } from '@teamchat/db';
import {
  Authenticator,
  CLIENT_ADDRESS_HEADER,
  mayPark,
  parseBasicAuth,
  RateLimiter,
  rateLimitSettings,
  RealmDirectory,
  storesReachable,
  type Credentials,
  type RateLimitEnv,
  type RunningService,
} from '@teamchat/runtime';
import { countUpstreamFailure, observeGatewayRequest } from './observe';
import { LONG_POLL_TIMEOUT_DEFAULT_MS, UPSTREAM_SOCKET_DEFAULTS, type GatewayEnv } from './env';
import { matchRoute, type RouteRule, type ServiceName } from './routes';
import { UpstreamAgent } from './upstream-agent';

export interface GatewayDeps {
  /** The RATE_LIMIT_* settings default to Zulip's limits, the UPSTREAM_SOCKET_* ones to gatewayEnvSpec's. */
  env: Pick<GatewayEnv, 'INTERNAL_JWT_SECRET' | 'REDIS_PREFIX' | 'UPSTREAM_TIMEOUT_MS'> &
    Partial<RateLimitEnv> &
    Partial<
      Pick<
        GatewayEnv,
        | 'UPSTREAM_SOCKET_MAX_AGE_MS'
        | 'UPSTREAM_SOCKET_IDLE_MS'
        | 'UPSTREAM_LONG_POLL_TIMEOUT_MS'
        | 'AUTH_CACHE_TTL_SECONDS'
      >
    >;
  db: Db;
  redis: Redis;
  logger: Logger;
  serviceUrls: Record<ServiceName, string>;
}

/** Headers a service must not receive from the client (credentials stay at the gateway). */
const STRIPPED_REQUEST_HEADERS = new Set([
  'authorization',
  'cookie',
  'connection',
  'keep-alive',
  INTERNAL_TOKEN_HEADER,
  SESSION_ID_HEADER,
  SESSION_CSRF_HEADER,
  CLIENT_ADDRESS_HEADER,
  EMBEDS_HEADER,
  // Read here only (client-address.ts); services get the address this gateway resolved.
  'x-forwarded-for',
]);
const HOP_BY_HOP_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding']);

function sendJsonError(res: http.ServerResponse, error: JsonableError, requestId: string): void {
  // A forwarded answer already under way cannot become an error: cut it short instead.
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendError(res, error, { [REQUEST_ID_HEADER]: requestId });
}

/**
 * The service answered before reading the whole body (a refusal: 412, 413, 401...): the rest
 * of the body is read and dropped, as node does for an unread request, so the client's
 * keep-alive connection is free again (instead of stalling until its timeout); the upstream
 * request, never to be finished, is dropped too.
 */
function discardRequestBody(req: http.IncomingMessage, upstreamReq: http.ClientRequest): void {
  req.unpipe(upstreamReq);
  upstreamReq.destroy();
  req.resume();
}

/**
 * The cookies a service may read, none of them a credential: Django's language cookie (a
 * spectator's language) and CSRF cookie (the login form's check). The session's stays here.
 */
const FORWARDED_COOKIES = new Set([LANGUAGE_COOKIE_NAME, CSRF_COOKIE_NAME]);

function forwardedCookies(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const kept = header
    .split(';')
    .map((pair) => pair.trim())
    .filter((pair) => FORWARDED_COOKIES.has(pair.slice(0, pair.indexOf('='))));
  return kept.length ? kept.join('; ') : undefined;
}

/** The web app's alias of /api/v1 (Zulip's /json). */
const JSON_PREFIX = '/json/';
/** Zulip's legacy ?api_key= on file URLs: the key alone identifies the user. */
function queryApiKey(url: URL): Credentials | null {
  const apiKey = url.searchParams.get('api_key');
  return apiKey ? { email: null, apiKey } : null;
}

/** A webhook URL's query without its key: the key has done its work here and goes no further. */
function searchWithoutApiKey(url: URL): string {
  if (!url.searchParams.has('api_key')) return url.search;
  const params = new URLSearchParams(url.searchParams);
  params.delete('api_key');
  const search = params.toString();
  return search ? `?${search}` : '';
}

export function createGateway(deps: GatewayDeps): RunningService {
  const { env, logger } = deps;
  const realms = new RealmDirectory(deps.db);
  const authCache = {
    REDIS_PREFIX: env.REDIS_PREFIX,
    AUTH_CACHE_TTL_SECONDS: env.AUTH_CACHE_TTL_SECONDS ?? DEFAULT_AUTH_CACHE_TTL_SECONDS,
  };
  const authenticator = new Authenticator(deps.db, deps.redis, authCache, logger);
  const rateLimiter = new RateLimiter(deps.redis, env.REDIS_PREFIX, rateLimitSettings(env), logger);
  // Upstream connections are reused, but each only for a while: new replicas of a service get
  // requests soon after a scale-out (see UpstreamAgent).
  const socketLimits = {
    maxSocketAgeMs: env.UPSTREAM_SOCKET_MAX_AGE_MS ?? UPSTREAM_SOCKET_DEFAULTS.maxAgeMs,
    idleSocketMs: env.UPSTREAM_SOCKET_IDLE_MS ?? UPSTREAM_SOCKET_DEFAULTS.idleMs,
  };
  const agent = new UpstreamAgent({ ...socketLimits, maxFreeSockets: 256 });
  // Long-polls hold one upstream connection each, thousands at once, and an event answers many
  // of them together: with the free-socket cap above, most of those connections would be closed
  // and opened again on every round. Their own agent keeps them all.
  const longPollAgent = new UpstreamAgent({ ...socketLimits, maxFreeSockets: 1_000_000 });
  const upstreams = Object.fromEntries(
    Object.entries(deps.serviceUrls).map(([name, url]) => [name, new URL(url)]),
  ) as Record<ServiceName, URL>;

  interface Caller {
    user: Requester | null;
    realmId: number | null;
    /** Set when a session cookie authenticated the request. */
    session?: Session;
  }

  async function authenticate(req: http.IncomingMessage, url: URL, rule: RouteRule, viaJson: boolean): Promise<Caller> {
    const hostRealm = await realms.byHost(req.headers.host);
    const anonymous = async () => {
      const realm = hostRealm ?? (await realms.fallback());
      return { user: null, realmId: realm?.id ?? null };
    };
    const bySession = async (sessionId: string): Promise<Caller> => {
      const { user, session } = await authenticator.authenticateSession(sessionId, hostRealm);
      return { user, realmId: user.realmId, session };
    };
    // /json: the session only, as Zulip's rest_dispatch (an Authorization header is not read),
    // with its CSRF token; pages: a session if there is a good one, else anonymous.
    if (viaJson || rule.auth === 'page') {
      try {
        const { user, session } = await authenticator.requireSession(req, hostRealm, { csrf: rule.auth !== 'page' });
        return { user, realmId: user.realmId, session };
      } catch (error) {
        const mayBeAnonymous =
          rule.auth === 'public' || rule.auth === 'page' || (viaJson && rule.spectators?.includes(req.method ?? ''));
        if (mayBeAnonymous && error instanceof UnauthorizedError) return anonymous();
        throw error;
      }
    }
    try {
      let credentials = parseBasicAuth(req.headers.authorization);
      if (!credentials && (rule.auth === 'file' || rule.auth === 'webhook')) credentials = queryApiKey(url);
      // Images in messages load with the browser's cookie (Zulip's override_api_url_scheme views),
      // and the web app's tus uploads send it.
      const sessionId =
        (rule.auth === 'file' || rule.sessionFallback) && !credentials
          ? sessionIdFromCookies(req.headers.cookie)
          : undefined;
      if (sessionId) return await bySession(sessionId);
      if (!credentials) {
        if (rule.auth !== 'public') throw new UnauthorizedError();
        return await anonymous();
      }
      const user = await authenticator.authenticateOnHost(credentials, hostRealm, {
        allowWebhookAccess: rule.auth === 'webhook',
      });
      return { user, realmId: user.realmId };
    } catch (error) {
      // Where Zulip never reads the header, credentials that fail (a stale key a client still
      // sends) make the request anonymous rather than a 401; good ones still count as the user's.
      if (rule.ignoreCredentials && error instanceof UnauthorizedError) return anonymous();
      throw error;
    }
  }

  function forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    rule: RouteRule,
    token: string,
    requestId: string,
    upstreamPath: string,
    caller: Caller,
  ) {
    const { session, user } = caller;
    const upstream = upstreams[rule.service];
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!STRIPPED_REQUEST_HEADERS.has(name)) headers[name] = value;
    }
    const cookies = forwardedCookies(req.headers.cookie);
    if (cookies) headers.cookie = cookies;
    headers[INTERNAL_TOKEN_HEADER] = token;
    headers[REQUEST_ID_HEADER] = requestId;
    // The client's address as the rate limiter sees it: the users service throttles logins by it.
    headers[CLIENT_ADDRESS_HEADER] = rateLimiter.clientAddress(req);
    headers['x-forwarded-host'] = req.headers.host ?? '';
    headers.host = upstream.host;
    if (session) {
      // Services learn which session (a password change keeps it, logout ends it), never its cookie;
      // the web service also gets its CSRF token for the page.
      headers[SESSION_ID_HEADER] = session.hash;
      if (rule.service === 'web') headers[SESSION_CSRF_HEADER] = session.csrfToken;
    }
    // A user's home page: the web service leaves register's answer to this gateway (embedRegister).
    const mayEmbed = rule.service === 'web' && user !== null && req.method === 'GET';
    if (mayEmbed) headers[EMBEDS_HEADER] = 'register';

    const upstreamReq = http.request({
      protocol: upstream.protocol,
      hostname: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: upstreamPath + (rule.auth === 'webhook' ? searchWithoutApiKey(url) : url.search),
      headers,
      agent: rule.longPoll ? longPollAgent : agent,
      timeout: rule.longPoll
        ? (env.UPSTREAM_LONG_POLL_TIMEOUT_MS ?? LONG_POLL_TIMEOUT_DEFAULT_MS)
        : env.UPSTREAM_TIMEOUT_MS,
    });
    upstreamReq.on('response', (upstreamRes) => {
      const responseHeaders: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(upstreamRes.headers)) {
        if (!HOP_BY_HOP_RESPONSE_HEADERS.has(name)) responseHeaders[name] = value;
      }
      responseHeaders[REQUEST_ID_HEADER] = requestId;
      const embed = upstreamRes.headers[EMBED_REGISTER_HEADER];
      if (mayEmbed && typeof embed === 'string' && upstreamRes.statusCode === 200) {
        delete responseHeaders[EMBED_REGISTER_HEADER];
        delete responseHeaders['content-length'];
        embedRegister(upstreamRes, res, responseHeaders, user, requestId, embed).catch((error: unknown) => {
          logger.warn({ err: error, request_id: requestId }, 'home page failed');
          sendJsonError(res, asJsonableError(error), requestId);
        });
        return;
      }
      res.writeHead(upstreamRes.statusCode ?? 502, responseHeaders);
      upstreamRes.pipe(res);
    });
    upstreamReq.on('timeout', () => upstreamReq.destroy(new Error('upstream timeout')));
    upstreamReq.on('error', (error) => {
      if (res.writableEnded) return;
      countUpstreamFailure(rule.service);
      logger.warn({ err: error, upstream: rule.service, request_id: requestId }, 'upstream request failed');
      sendJsonError(
        res,
        new JsonableError(`The ${rule.service} service is unavailable`, { code: 'BAD_REQUEST', status: 503 }),
        requestId,
      );
    });
    // A client that goes away (e.g. a long-poll cut short) releases the upstream request too.
    res.on('close', () => {
      if (!res.writableFinished) upstreamReq.destroy();
      else if (!req.complete) discardRequestBody(req, upstreamReq);
    });
    // Most requests (GETs: polls, reads) carry no body: end the upstream request at once
    // instead of setting up a pipe for nothing (measurably cheaper per request).
    if (!hasRequestBody(req)) upstreamReq.end();
    else req.pipe(upstreamReq);
  }

  /**
   * The web service's page (small, with STATE_DATA_MARK), then the event tier's POST /register
   * under the page's arguments for the same user, streamed into the page as it arrives: the
   * answer's megabytes cross one hop, as the API's own register does (see StateDataIntoPage).
   */
  async function embedRegister(
    pageAnswer: http.IncomingMessage,
    res: http.ServerResponse,
    headers: http.OutgoingHttpHeaders,
    user: Requester,
    requestId: string,
    params: string,
  ): Promise<void> {
    const pageChunks: Buffer[] = [];
    for await (const chunk of pageAnswer) pageChunks.push(chunk as Buffer);
    const form = new URLSearchParams(
      Object.entries(JSON.parse(params) as Record<string, unknown>).map(([name, value]): [string, string] => [
        name,
        typeof value === 'string' ? value : JSON.stringify(value),
      ]),
    ).toString();
    const path = '/api/v1/register';
    const upstream = upstreams.events;
    const answer = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const registerReq = http.request(
        {
          protocol: upstream.protocol,
          hostname: upstream.hostname,
          port: upstream.port,
          method: 'POST',
          path,
          agent,
          timeout: env.UPSTREAM_TIMEOUT_MS,
          headers: {
            [INTERNAL_TOKEN_HEADER]: signInternalToken(env.INTERNAL_JWT_SECRET, {
              user,
              realmId: user.realmId,
              method: 'POST',
              path,
            }),
            [REQUEST_ID_HEADER]: requestId,
            'content-type': 'application/x-www-form-urlencoded',
            'content-length': Buffer.byteLength(form),
          },
        },
        resolve,
      );
      registerReq.on('timeout', () => registerReq.destroy(new Error('upstream timeout')));
      registerReq.on('error', reject);
      res.on('close', () => {
        if (!res.writableFinished) registerReq.destroy();
      });
      registerReq.end(form);
    });
    if (answer.statusCode !== 200) {
      const chunks: Buffer[] = [];
      for await (const chunk of answer) chunks.push(chunk as Buffer);
      throw serviceError(
        answer.statusCode ?? 500,
        JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>,
      );
    }
    res.writeHead(200, headers);
    await pipeline(answer, StateDataIntoPage.around(Buffer.concat(pageChunks)), res);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const requestId = requestIdOf(req);
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://gateway');
    } catch {
      sendJsonError(res, new JsonableError('Malformed URL'), requestId);
      return;
    }
    if (url.pathname === '/health/live' || url.pathname === '/health/ready') {
      const ready = url.pathname === '/health/live' || (await isReady());
      res.writeHead(ready ? 200 : 503, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ status: ready ? 'ok' : 'unavailable' }));
      return;
    }
    const viaJson = url.pathname.startsWith(JSON_PREFIX);
    const apiPath = viaJson ? `/api/v1/${url.pathname.slice(JSON_PREFIX.length)}` : url.pathname;
    const rule = matchRoute(apiPath);
    const observation = observeGatewayRequest(req, res, { path: url.pathname, requestId, rule }, logger);
    if (!rule) {
      sendJsonError(res, new ResourceNotFoundError(), requestId);
      return;
    }
    try {
      const { user, realmId, session } = await authenticate(req, url, rule, viaJson);
      // A poll that may park spends no budget (see mayPark); every other request does.
      if (!(rule.longPoll && mayPark(req, url.searchParams))) await rateLimiter.check(req, res, user);
      observation.userId = user?.userId;
      observation.realmId = realmId;
      const token = signInternalToken(env.INTERNAL_JWT_SECRET, {
        user,
        realmId,
        method: req.method ?? 'GET',
        path: apiPath,
      });
      forward(req, res, url, rule, token, requestId, apiPath, { user, realmId, session });
    } catch (caught) {
      // Refused credentials spend the address's anonymous budget (429 once it is spent).
      const error = await rateLimiter.failedAuthentication(req, res, caught);
      const jsonable = asJsonableError(error);
      if (jsonable.status >= 500) logger.error({ err: error, request_id: requestId }, 'gateway error');
      // Drain the body so the client sees the answer instead of a reset.
      req.resume();
      sendJsonError(res, jsonable, requestId);
    }
  }

  async function isReady(): Promise<boolean> {
    return storesReachable(deps).then(
      () => true,
      () => false,
    );
  }

  return {
    handler: (req, res) => {
      handle(req, res).catch((error) => {
        logger.error({ err: error }, 'unhandled gateway error');
        sendJsonError(res, asJsonableError(error), requestIdOf(req));
      });
    },
    async close() {
      agent.destroy();
      longPollAgent.destroy();
      authenticator.close();
    },
  };
}
