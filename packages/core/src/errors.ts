// The one error hierarchy. Views and actions throw these; one middleware renders them
// into Zulip's envelope {result: "error", msg, code, ...data} with the right HTTP status.
// Codes, statuses and wording follow Zulip Server 10.2 (zerver/lib/exceptions.py).

export type ErrorCode =
  | 'BAD_REQUEST'
  | 'REQUEST_VARIABLE_MISSING'
  | 'REQUEST_VARIABLE_INVALID'
  | 'REQUEST_CONFUSING_VAR'
  | 'INVALID_JSON'
  | 'BAD_NARROW'
  | 'BAD_IMAGE'
  | 'REALM_UPLOAD_QUOTA'
  | 'STREAM_DOES_NOT_EXIST'
  | 'CHANNEL_ALREADY_EXISTS'
  | 'UNAUTHORIZED'
  | 'AUTHENTICATION_FAILED'
  | 'USER_DEACTIVATED'
  | 'REALM_DEACTIVATED'
  | 'UNAUTHORIZED_PRINCIPAL'
  | 'CANNOT_DEACTIVATE_LAST_USER'
  | 'CANNOT_DEACTIVATE_GROUP_IN_USE'
  | 'EXPECTATION_MISMATCH'
  | 'SYSTEM_GROUP_REQUIRED'
  | 'BAD_EVENT_QUEUE_ID'
  | 'CSRF_FAILED'
  | 'RATE_LIMIT_HIT'
  | 'INVALID_PUSH_DEVICE_TOKEN'
  | 'INVALID_REMOTE_PUSH_DEVICE_TOKEN'
  | 'INVITATION_FAILED'
  | 'REACTION_ALREADY_EXISTS'
  | 'REACTION_DOES_NOT_EXIST'
  | 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED'
  | 'STREAM_WILDCARD_MENTION_NOT_ALLOWED'
  | 'TOPIC_WILDCARD_MENTION_NOT_ALLOWED'
  | 'UNSUPPORTED_WEBHOOK_EVENT_TYPE'
  | 'ANOMALOUS_WEBHOOK_PAYLOAD'
  | 'MISSING_HTTP_EVENT_HEADER'
  | 'INTERNAL_SERVER_ERROR';

export interface JsonableErrorOptions {
  code?: ErrorCode;
  status?: number;
  /** Extra fields of the envelope, e.g. {queue_id} or {objections}. */
  data?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export class JsonableError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly data: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(msg: string, options: JsonableErrorOptions = {}) {
    super(msg);
    this.name = new.target.name;
    this.code = options.code ?? 'BAD_REQUEST';
    this.status = options.status ?? 400;
    this.data = options.data ?? {};
    this.headers = options.headers ?? {};
  }

  /** The response body: {result, msg, code, ...data}. */
  toJSON(): Record<string, unknown> {
    return { result: 'error', msg: this.message, code: this.code, ...this.data };
  }
}

export const NOT_LOGGED_IN = 'Not logged in: API authentication or user session required';

/** What a 401 asks for: HTTP Basic on /api/v1, a session on /json (Zulip's www_authenticate="session"). */
export const BASIC_AUTHENTICATE = 'Basic realm="zulip"';
export const SESSION_AUTHENTICATE = 'Session realm="zulip"';

export class UnauthorizedError extends JsonableError {
  constructor(
    msg: string = NOT_LOGGED_IN,
    authenticate: string = BASIC_AUTHENTICATE,
    /** Credentials of a deactivated account or organisation have their own codes (clients tell them apart). */
    code: 'UNAUTHORIZED' | 'USER_DEACTIVATED' | 'REALM_DEACTIVATED' = 'UNAUTHORIZED',
  ) {
    super(msg, { code, status: 401, headers: { 'WWW-Authenticate': authenticate } });
  }
}

/**
 * A session-authenticated request that changes state without the session's CSRF token (Zulip's
 * CsrfFailureError, with Django's reasons).
 */
export class CsrfFailedError extends JsonableError {
  constructor(reason: string) {
    super(`CSRF error: ${reason}`, { code: 'CSRF_FAILED', status: 403, data: { reason } });
  }
}

/** Wrong username or password on the password login endpoints (fetch_api_key). */
export class AuthenticationFailedError extends JsonableError {
  constructor(msg = 'Your username or password is incorrect', code: ErrorCode = 'AUTHENTICATION_FAILED') {
    super(msg, { code, status: 401 });
  }
}

export class MissingArgumentError extends JsonableError {
  constructor(readonly varName: string) {
    super(`Missing '${varName}' argument`, { code: 'REQUEST_VARIABLE_MISSING', data: { var_name: varName } });
  }
}

/** A parameter that is present but not of the expected type or value. */
export class InvalidArgumentError extends JsonableError {
  constructor(msg: string) {
    super(msg, { code: 'BAD_REQUEST' });
  }
}

export class OrganizationAdministratorRequiredError extends JsonableError {
  constructor() {
    super('Must be an organization administrator', { code: 'UNAUTHORIZED_PRINCIPAL' });
  }
}

export class OrganizationOwnerRequiredError extends JsonableError {
  constructor() {
    super('Must be an organization owner', { code: 'UNAUTHORIZED_PRINCIPAL' });
  }
}

export class BadEventQueueIdError extends JsonableError {
  constructor(queueId: string) {
    super(`Bad event queue ID: ${queueId}`, { code: 'BAD_EVENT_QUEUE_ID', data: { queue_id: queueId } });
  }
}

export class CannotDeactivateLastUserError extends JsonableError {
  constructor(isLastOwner: boolean) {
    const entity = isLastOwner ? 'organization owner' : 'user';
    super(`Cannot deactivate the only ${entity}.`, {
      code: 'CANNOT_DEACTIVATE_LAST_USER',
      data: { is_last_owner: isLastOwner, entity },
    });
  }
}

export interface GroupObjection {
  type: string;
  /** The settings that use the group (absent for "subgroup" objections, which list supergroup_ids). */
  settings?: string[];
  [key: string]: unknown;
}

export class CannotDeactivateGroupInUseError extends JsonableError {
  constructor(objections: GroupObjection[]) {
    super('Cannot deactivate user group in use.', {
      code: 'CANNOT_DEACTIVATE_GROUP_IN_USE',
      data: { objections },
    });
  }
}

export class RateLimitedError extends JsonableError {
  constructor(secondsToFreedom: number) {
    super('API usage exceeded rate limit', {
      code: 'RATE_LIMIT_HIT',
      status: 429,
      data: { 'retry-after': secondsToFreedom },
      headers: { 'Retry-After': String(Math.ceil(secondsToFreedom)) },
    });
  }
}

export class ResourceNotFoundError extends JsonableError {
  constructor(msg = 'Endpoint does not exist') {
    super(msg, { code: 'BAD_REQUEST', status: 404 });
  }
}

export class MethodNotAllowedError extends JsonableError {
  constructor(allowed: string[]) {
    super('Method Not Allowed', { code: 'BAD_REQUEST', status: 405, headers: { Allow: allowed.join(', ') } });
  }
}

/** A store the request needed (PostgreSQL, Redis, S3) is unreachable for now: try again shortly. */
export class ServiceUnavailableError extends JsonableError {
  constructor(msg = 'Service temporarily unavailable, please try again') {
    super(msg, { code: 'BAD_REQUEST', status: 503, headers: { 'Retry-After': '1' } });
  }
}

// Prisma's codes for "no connection": can't reach, timed out, server closed it, pool timed out,
// too many connections.
const PRISMA_UNAVAILABLE_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']);
// PostgreSQL SQLSTATEs: class 08 (connection exception), 57P01-57P03 (shutting down, crashed,
// starting up), 53300 (too many connections).
const POSTGRES_UNAVAILABLE_STATE = /^(08...|57P0[123]|53300)$/;
const NETWORK_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/, // pg: the server went away mid-query
  /^Connection is closed\.$/, // ioredis: the command could not be sent
  /^Reached the max retries per request limit/, // ioredis: reconnecting for too long
  /^DatabaseNotReachable$/, // Prisma's driver adapter
  /^CLUSTERDOWN/, // Redis Cluster: a master failed and no replica took over yet
  /^Too many Cluster redirections/, // ioredis: retried past its limit during a failover
  /^Failed to refresh slots cache/, // ioredis: no node answered the topology query
  // Redis Cluster redirections ioredis did not follow: seen during a failover, when a command
  // reached a node that still named the dead master (the caller retries once the map settles).
  /^(MOVED|ASK) \d+ /,
  /^TRYAGAIN/,
  /^LOADING/, // a restarted node still reading its data
  // A script missing on a master just promoted (replicas get scripts' effects, not the scripts)
  // when ioredis's re-send with EVAL raced the failover too; the next try loads it.
  /^NOSCRIPT/,
  /^Redis connection closed with the command in flight$/, // bus settleOnClose
  /^Redis write not confirmed by its replicas/, // bus ReplicationError (REDIS_WAIT_REPLICAS)
];

/**
 * Whether an error means a store was unreachable (rather than a bug): a database restarting or
 * failing over, a Redis reconnecting. Looks through Prisma's and the drivers' wrappers.
 */
export function isStoreUnavailable(error: unknown): boolean {
  let current = error as
    { code?: unknown; message?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown } } | undefined;
  for (let depth = 0; current && typeof current === 'object' && depth < 6; depth++) {
    const code = typeof current.code === 'string' ? current.code : '';
    if (PRISMA_UNAVAILABLE_CODES.has(code) || POSTGRES_UNAVAILABLE_STATE.test(code) || NETWORK_ERRNOS.has(code))
      return true;
    const message = typeof current.message === 'string' ? current.message : '';
    if (UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
    current = (current.meta?.driverAdapterError ?? current.cause) as typeof current;
  }
  return false;
}

/**
 * Turns anything thrown into a JsonableError: an unreachable store becomes a 503 the client may
 * retry; anything else, a 500 without details.
 */
export function asJsonableError(error: unknown): JsonableError {
  if (error instanceof JsonableError) return error;
  if (isStoreUnavailable(error)) return new ServiceUnavailableError();
  return new JsonableError('Internal server error', { code: 'INTERNAL_SERVER_ERROR', status: 500 });
}
