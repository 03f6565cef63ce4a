// Building a service's express app from its route table: internal-token check, the Zulip
// wire format (urlencoded, multipart and JSON bodies), the success and error envelopes,
// 404/405 for unknown paths and methods, health endpoints (/metrics: serve()'s admin port), and for every request
// one log line (with its request id and trace id) and its Prometheus metrics.

import type http from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import multer from 'multer';
import { activeTraceIds, httpServerMetrics, type DeferredCounts, type Histogram } from '@teamchat/telemetry';
import {
  asJsonableError,
  JsonableError,
  MethodNotAllowedError,
  ResourceNotFoundError,
  UnauthorizedError,
} from './errors';
import {
  INTERNAL_TOKEN_HEADER,
  type InternalClaims,
  REQUEST_ID_HEADER,
  type Requester,
  verifyInternalToken,
} from './internal-token';
import type { Logger } from './logger';
import { BODY_LIMITS } from './limits';
import { RequestParams } from './params';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** Returned by a view that wrote the response itself (file downloads, tus). */
export const RESPONDED = Symbol('responded');
export type ViewResult = Record<string, unknown> | void | typeof RESPONDED;

export interface ViewContext<D> {
  req: Request;
  res: Response;
  params: RequestParams;
  deps: D;
  requestId: string;
  /** The realm the request is for. */
  realmId: number;
  /** The authenticated user; routes with auth "anonymous" get null. */
  requester: Requester | null;
  log: Logger;
}

/** A view of an authenticated route: `requester` is always set. */
export type AuthedContext<D> = ViewContext<D> & { requester: Requester };

export interface Route<D> {
  method: HttpMethod;
  /** An express path pattern, e.g. "/api/v1/streams/:stream_id". */
  path: string;
  view: (ctx: AuthedContext<D>) => Promise<ViewResult> | ViewResult;
  /** "user" (default): needs an authenticated user. "anonymous": the realm is enough. */
  auth?: 'user' | 'anonymous';
  /** "form" (default): parse the body here. "raw": the view reads the request stream itself. */
  body?: 'form' | 'raw';
  /** Largest accepted form body of this route, when smaller than the service's (BODY_LIMITS). */
  bodyLimitBytes?: number;
}

export interface ServiceAppOptions<D> {
  name: string;
  routes: Route<D>[];
  deps: D;
  internalSecret: string;
  logger: Logger;
  /** Readiness check (PostgreSQL, Redis, ...); throw if not ready. */
  ready?: () => Promise<void>;
  /** Largest accepted form body (BODY_LIMITS.default when not given). */
  bodyLimitBytes?: number;
  /**
   * Runs after a user's request other than GET succeeds, before it is answered (the read
   * replica: where that write left the primary, for the user's organisation). Its failure is
   * not the request's: the write has committed.
   */
  afterWrite?: (requester: Requester) => Promise<void>;
}

/**
 * A value already serialized as JSON (register's cached user list: megabytes a view would
 * otherwise parse or stringify again). jsonSuccess writes the text as it is when the value is
 * at the top level of an answer; anywhere else JSON.stringify reads it back through toJSON.
 */
export class JsonText {
  constructor(readonly text: string) {}

  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** JSON of `body`, with its top-level JsonText values written as they are. */
function stringifyAnswer(body: Record<string, unknown>): string {
  if (!Object.values(body).some((value) => value instanceof JsonText)) return JSON.stringify(body);
  const rest: Record<string, unknown> = {};
  let texts = '';
  for (const [key, value] of Object.entries(body)) {
    if (value instanceof JsonText) texts += `,${JSON.stringify(key)}:${value.text}`;
    else rest[key] = value;
  }
  // rest holds result and msg at least: its JSON ends with the closing brace.
  return `${JSON.stringify(rest).slice(0, -1)}${texts}}`;
}

export function jsonSuccess(
  res: http.ServerResponse,
  data: Record<string, unknown> = {},
  ignored: string[] = [],
): void {
  const body: Record<string, unknown> = { result: 'success', msg: '', ...data };
  if (ignored.length) body.ignored_parameters_unsupported = ignored;
  sendJson(res, 200, stringifyAnswer(body));
}

export function sendError(
  res: http.ServerResponse,
  error: JsonableError,
  headers: http.OutgoingHttpHeaders = {},
): void {
  sendJson(res, error.status, JSON.stringify(error.toJSON()), { ...error.headers, ...headers });
}

/**
 * Writes a JSON text answer with node's own response — express's res.json adds nothing we use
 * (no ETags, no JSONP), and the gateway and the long-poll path have no express. Nothing when
 * an answer has begun already.
 */
export function sendJson(
  res: http.ServerResponse,
  status: number,
  body: string,
  headers: http.OutgoingHttpHeaders = {},
): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  // Encoded once here: node writing a large string measures at twice the CPU (register's
  // 2.4 MB answer at 8,000 users: ~19 vs ~10 ms for the server and its client together).
  const bytes = Buffer.from(body);
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': bytes.length,
  });
  res.end(bytes);
}

/** Whether a request carries a body: most (GETs: polls, reads) do not, and skip what reads one. */
export function hasRequestBody(req: http.IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return length === undefined ? req.headers['transfer-encoding'] !== undefined : length !== '0';
}

export function createServiceApp<D>(options: ServiceAppOptions<D>): express.Express {
  const { routes, deps, internalSecret, logger } = options;
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.set('etag', false);

  app.use(observeRequests(options.name, logger));

  app.get('/health/live', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/health/ready', async (_req, res) => {
    try {
      await options.ready?.();
      res.json({ status: 'ok' });
    } catch (error) {
      res.status(503).json({ status: 'unavailable', reason: (error as Error).message });
    }
  });
  // GET /metrics is served on the process's admin port (serve() in @teamchat/runtime), not here.

  // Bodiless requests (GETs: most of a client's traffic) skip the three parsers, a tenth of a
  // GET's cost in the users service. An empty body has no fields either: zulip-js sends a POST
  // without parameters as an empty multipart body (not even the closing boundary), which busboy
  // would reject as "Unexpected end of form".
  const formParsers = new Map<number, express.RequestHandler>();
  const formParser = (limit: number): express.RequestHandler => {
    const known = formParsers.get(limit);
    if (known) return known;
    const multipartFields = multer({ limits: { fieldSize: limit, files: 0 } }).none();
    const urlencoded = express.urlencoded({ extended: false, limit, parameterLimit: 10_000 });
    const json = express.json({ limit, strict: false });
    const parseForm = (req: Request, res: Response, next: NextFunction) => {
      // Parsed already when a method override read the form (see below).
      if (!hasRequestBody(req) || res.locals.formParsed) return next();
      // By its declared length, before a byte is read: the urlencoded and JSON parsers would
      // refuse it too, but multer only bounds each field, not the sum of them.
      if (Number(req.headers['content-length']) > limit) {
        return next(new JsonableError('Request body too large', { status: 413 }));
      }
      urlencoded(req, res, (error?: unknown) => {
        if (error) return next(error);
        json(req, res, (error?: unknown) => {
          if (error) return next(error);
          countUndeclaredMultipart(req, limit);
          multipartFields(req, res, (error?: unknown) => {
            res.locals.formParsed = !error;
            next(error && multipartError(error));
          });
        });
      });
    };
    formParsers.set(limit, parseForm);
    return parseForm;
  };
  const serviceLimit = options.bodyLimitBytes ?? BODY_LIMITS.default;

  const allowedMethods = new Map<string, Set<string>>();
  for (const route of routes) {
    const methods = allowedMethods.get(route.path) ?? new Set<string>();
    methods.add(route.method);
    allowedMethods.set(route.path, methods);
  }

  // Zulip's rest_dispatch: a POST whose form (urlencoded or multipart) has a `method` field is
  // served as that method (the field is no parameter of it). The internal token is checked
  // against the POST it was signed for, before the form is read; paths with a raw POST route
  // (uploads, tus) are not read here, nor are overrides to a raw route offered.
  const rawPosts = new Set(
    routes.filter((route) => route.method === 'POST' && route.body === 'raw').map((r) => r.path),
  );
  for (const [path, methods] of allowedMethods) {
    const overridable = routes.filter(
      (route) => route.path === path && OVERRIDABLE_METHODS.has(route.method) && route.body !== 'raw',
    );
    if (overridable.length === 0 || rawPosts.has(path)) continue;
    const post = routes.find((route) => route.path === path && route.method === 'POST');
    const limit = Math.min(post?.bodyLimitBytes ?? serviceLimit, serviceLimit);
    // A POST another path's route serves is that route's (its own body limit, or a raw body):
    // /messages/:message_id (PATCH, DELETE) must not read /messages/flags ahead of it.
    const otherPosts = routes
      .filter((route) => route.method === 'POST' && route.path !== path)
      .map((route) => expressPathPattern(route.path));
    const servedElsewhere: express.RequestHandler = (req, _res, next) =>
      otherPosts.some((pattern) => pattern.test(req.path)) ? next('route') : next();
    app.post(
      path,
      servedElsewhere,
      verifyToken(internalSecret),
      formParser(limit),
      (req: Request, res: Response, next: NextFunction) => {
        const body = req.body as Record<string, unknown> | undefined;
        const wanted = body?.method;
        if (typeof wanted !== 'string' || !(req.is('urlencoded') || req.is('multipart'))) return next();
        delete body!.method;
        if (wanted === 'POST') return next();
        if (!methods.has(wanted)) return sendError(res, new MethodNotAllowedError([...methods]));
        req.method = wanted;
        next();
      },
    );
  }

  for (const route of routes) {
    const handlers = [
      authenticate(route, internalSecret),
      ...(route.body === 'raw' ? [] : [formParser(Math.min(route.bodyLimitBytes ?? serviceLimit, serviceLimit))]),
      async (req: Request, res: Response) => {
        const params = RequestParams.fromRequest(req);
        const claims = res.locals.claims as ReturnType<typeof verifyInternalToken>;
        const requestId = req.get(REQUEST_ID_HEADER) ?? '';
        let log: Logger | undefined;
        const ctx: ViewContext<D> = {
          req,
          res,
          params,
          deps,
          requestId,
          realmId: claims.user?.realmId ?? claims.realmId ?? 0,
          requester: claims.user,
          // Made on first use: few views log, and a child logger per request costs 2 % of a GET.
          get log() {
            return (log ??= logger.child({ request_id: requestId }));
          },
        };
        const result = await route.view(ctx as AuthedContext<D>);
        if (options.afterWrite && ctx.requester && route.method !== 'GET') {
          await options
            .afterWrite(ctx.requester)
            .catch((error: unknown) => ctx.log.warn({ err: error }, 'afterWrite failed'));
        }
        if (result === RESPONDED || res.headersSent) return;
        jsonSuccess(res, result ?? {}, params.ignored());
      },
    ];
    const method = route.method.toLowerCase() as 'get' | 'post' | 'patch' | 'put' | 'delete';
    app[method](route.path, ...handlers);
  }

  // A known path with another method: 405, as Zulip's rest_dispatch answers.
  for (const [path, methods] of allowedMethods) {
    app.all(path, (_req, res) => sendError(res, new MethodNotAllowedError([...methods])));
  }
  app.use((_req, res) => sendError(res, new ResourceNotFoundError()));

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const jsonable = toJsonable(error);
    if (jsonable.status >= 500) {
      logger.error(
        { err: error, method: req.method, path: req.path, request_id: req.get(REQUEST_ID_HEADER) },
        'request failed',
      );
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, jsonable);
  });

  return app;
}

/** Probes and scrapes: neither logged nor counted. */
const OPERATIONAL_PATHS = new Set(['/health/live', '/health/ready', '/metrics']);

/** The route template a request matched (`/api/v1/streams/:stream_id`), for metric labels. */
function routeTemplate(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? `${req.baseUrl ?? ''}${path}` : 'unmatched';
}

/**
 * The status the client got: the response's, or 499 (nginx's "client closed request") when
 * the client went away before the response was done or before it sent its whole request.
 */
export function answeredStatus(req: http.IncomingMessage, res: http.ServerResponse): number {
  const clientGone = !res.writableFinished || (!req.complete && req.socket.destroyed);
  return clientGone ? 499 : res.statusCode;
}

/** A request-metrics bundle: in flight (by the base labels), answered and duration (by method, route, status). */
export interface RequestMetrics {
  inFlightCounts: DeferredCounts<string>;
  requestCounts: DeferredCounts<string>;
  duration: Histogram<string>;
}

/** What the log line and metrics say about a request, known once it is answered. */
export interface RequestOutcome {
  method: string;
  /** Route label (`/api/v1/streams/:stream_id`), or "unmatched". */
  route: string;
  /** Further fields of the log line (path, request id, user...). */
  fields: Record<string, unknown>;
}

/**
 * One log line and the request metrics for one request, written when the response ends (or
 * the client goes away: status 499, as nginx logs it). The trace ids are the request's server
 * span, captured when the request arrives. `base` labels every metric (the service, or the
 * gateway's upstream). Used by every express app, by handlers that answer without express (the
 * event tier's long-poll path) and by the gateway.
 */
export function observeRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  logger: Logger,
  metrics: RequestMetrics,
  base: Record<string, string>,
  describe: () => RequestOutcome,
): void {
  const started = process.hrtime.bigint();
  const traceIds = activeTraceIds();
  const baseKey = Object.values(base).join('\0');
  const baseLabels = () => base;
  metrics.inFlightCounts.add(baseKey, baseLabels, 1);
  let observed = false;
  const observe = () => {
    if (observed) return;
    observed = true;
    metrics.inFlightCounts.add(baseKey, baseLabels, -1);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const { method, route, fields } = describe();
    const status = answeredStatus(req, res);
    metrics.requestCounts.add(`${baseKey}\0${method}\0${route}\0${status}`, () => ({
      ...base,
      method,
      route,
      status: String(status),
    }));
    metrics.duration.observe({ ...base, method, route }, seconds);
    if (!logger.isLevelEnabled('info')) return;
    logger.info({ method, route, status, ms: Math.round(seconds * 1e4) / 10, ...fields, ...traceIds }, 'request');
  };
  res.on('finish', observe);
  res.on('close', observe);
}

/** observeRequest for a service: its user and realm come from the internal token, its id from the gateway's header. */
export function observeServiceRequest(
  service: string,
  logger: Logger,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  describe: () => { method: string; route: string; path: string; claims?: InternalClaims },
): void {
  observeRequest(req, res, logger, httpServerMetrics(), { service }, () => {
    const { method, route, path, claims } = describe();
    return {
      method,
      route,
      fields: {
        path,
        request_id: req.headers[REQUEST_ID_HEADER],
        user_id: claims?.user?.userId,
        realm_id: claims?.user?.realmId ?? claims?.realmId ?? undefined,
      },
    };
  });
}

function observeRequests(service: string, logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (OPERATIONAL_PATHS.has(req.path)) return next();
    observeServiceRequest(service, logger, req, res, () => ({
      method: req.method,
      route: routeTemplate(req),
      path: req.path,
      claims: res.locals.claims as InternalClaims | undefined,
    }));
    next();
  };
}

/** What an express path (`/a/:id`, `/files/*path`) matches, as a regular expression. */
function expressPathPattern(path: string): RegExp {
  const escaped = path.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${escaped.replace(/:\w+/g, '[^/]+').replace(/\*\w*/g, '.*')}/?$`);
}

/** The methods a POST's `method` field may ask for (Zulip's method override). */
const OVERRIDABLE_METHODS = new Set(['PATCH', 'PUT', 'DELETE']);

/** Checks the internal token against the request as it came (before a method override). */
function verifyToken(secret: string) {
  return (req: Request, res: Response, next: NextFunction) => {
    res.locals.claims = verifyInternalToken(secret, req.get(INTERNAL_TOKEN_HEADER), req.method, req.path);
    next();
  };
}

function authenticate<D>(route: Route<D>, secret: string) {
  return (req: Request, res: Response, next: NextFunction) => {
    const token = req.get(INTERNAL_TOKEN_HEADER);
    // Verified already, as the POST it was signed for, when the method was overridden.
    const claims =
      (res.locals.claims as InternalClaims | undefined) ?? verifyInternalToken(secret, token, req.method, req.path);
    if ((route.auth ?? 'user') === 'user' && !claims.user) throw new UnauthorizedError();
    res.locals.claims = claims;
    next();
  };
}

/** Any failure of the multipart parser (multer, or busboy under it) is the body's fault: a 400. */
/**
 * A multipart body without a declared length (chunked) is counted as it arrives: multer bounds
 * each field, not their sum. Past `limit`, an error on the request makes multer stop reading and
 * answer with it. Attached in the tick multer pipes the request, so no chunk flows unseen.
 */
function countUndeclaredMultipart(req: Request, limit: number): void {
  if (req.headers['content-length'] !== undefined || !req.is('multipart')) return;
  let received = 0;
  const count = (chunk: Buffer) => {
    received += chunk.length;
    if (received <= limit) return;
    req.off('data', count);
    req.emit('error', new JsonableError('Request body too large', { status: 413 }));
  };
  req.on('data', count);
}

function multipartError(error: unknown): JsonableError {
  if (error instanceof JsonableError) return error;
  const e = error as { name?: string; code?: string; message?: string };
  if (e?.name === 'MulterError' && e.code === 'LIMIT_UNEXPECTED_FILE')
    return new JsonableError('This endpoint does not accept files');
  return new JsonableError(`Malformed multipart body: ${e?.message ?? 'bad request'}`);
}

/** Errors of the JSON and form body parsers (body-parser) become 4xx envelopes. */
function toJsonable(error: unknown): JsonableError {
  if (error instanceof JsonableError) return error;
  // Multipart bodies' failures arrive already translated (multipartError).
  const e = error as { type?: string; status?: number; message?: string };
  if (e?.type === 'entity.too.large') return new JsonableError('Request body too large', { status: 413 });
  if (e?.type === 'entity.parse.failed') return new JsonableError('Malformed JSON', { code: 'INVALID_JSON' });
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    return new JsonableError(`Malformed request: ${e.message ?? 'bad request'}`, { status: e.status });
  }
  return asJsonableError(error);
}
