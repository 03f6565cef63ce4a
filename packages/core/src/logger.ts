import pino from 'pino';
import { activeTraceIds } from '@teamchat/telemetry';

export type Logger = pino.Logger;

const REDACTED = '[redacted]';

/**
 * Field names whose values are secrets wherever they appear in a log record, at any depth
 * (case-insensitive; `-` and `_` are the same): API keys, passwords, tokens, the internal
 * token header, cookies, connection secrets.
 */
const SECRET_FIELD =
  /^(api[-_]?key|password|new[-_]password|old[-_]password|passwd|secret|client[-_]secret|token|access[-_]token|refresh[-_]token|id[-_]token|jwt|authorization|proxy[-_]authorization|cookie|set[-_]cookie|x[-_]teamchat[-_]internal[-_]token|internal[-_]jwt[-_]secret|.*[-_](secret|password|token|api[-_]key))$/i;

/** user:password@ in URLs (connection strings, proxied URLs). */
const URL_CREDENTIALS = /([a-z][a-z0-9+.-]*:\/\/)([^/\s:@]*):([^/\s@]*)@/gi;
/** Credentials in query strings (Zulip's ?api_key= on file URLs) and Basic/Bearer header values. */
const QUERY_SECRETS = /([?&](?:api_key|key|password|token|secret)=)[^&\s#"]*/gi;
const AUTH_SCHEMES = /\b(Basic|Bearer)\s+[A-Za-z0-9+/=._~-]{8,}/g;

/** A string with embedded credentials masked. */
export function scrubString(value: string): string {
  return value
    .replace(URL_CREDENTIALS, `$1$2:${REDACTED}@`)
    .replace(QUERY_SECRETS, `$1${REDACTED}`)
    .replace(AUTH_SCHEMES, `$1 ${REDACTED}`);
}

const MAX_DEPTH = 8;

/** A copy of a log record's fields with secrets masked (errors are serialized first). */
export function scrubSecrets(value: unknown, depth = 0, ancestors = new Set<object>()): unknown {
  if (typeof value === 'string') return scrubString(value);
  if (value === null || typeof value !== 'object') return value;
  if (Buffer.isBuffer(value) || value instanceof Date) return value;
  if (depth >= MAX_DEPTH || ancestors.has(value)) return '[elided]';
  ancestors.add(value);
  try {
    if (value instanceof Error) return scrubError(value, depth, ancestors);
    if (Array.isArray(value)) return value.map((item) => scrubSecrets(item, depth + 1, ancestors));
    const out: Record<string, unknown> = {};
    for (const [name, field] of Object.entries(value)) {
      out[name] =
        SECRET_FIELD.test(name) && field !== undefined && field !== null && field !== ''
          ? REDACTED
          : scrubSecrets(field, depth + 1, ancestors);
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}

/** An error as pino serializes it (type, message, stack, own fields, cause), masked. */
function scrubError(error: Error, depth: number, ancestors: Set<object>): unknown {
  const serialized = pino.stdSerializers.err(error) as unknown as Record<string, unknown>;
  const scrubbed = scrubSecrets({ ...serialized }, depth + 1, ancestors) as Record<string, unknown>;
  // Marks it as done: pino's err serializer passes it through instead of serializing it again.
  Object.defineProperty(scrubbed, SCRUBBED_ERROR, { value: true });
  return scrubbed;
}

const SCRUBBED_ERROR = Symbol('scrubbed error');

function serializeError(value: unknown): unknown {
  if (value && typeof value === 'object' && (value as Record<symbol, unknown>)[SCRUBBED_ERROR]) return value;
  return scrubSecrets(value);
}

/**
 * Structured JSON logs (one object per line). Every line written inside a traced request or
 * job carries its `trace_id` and `span_id`. Secrets are masked wherever they appear: by field
 * name at any depth, in URLs, query strings and Authorization values inside strings and error
 * messages.
 */
export function createLogger(service: string, level = 'info', destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: () => activeTraceIds() ?? {},
    formatters: {
      level: (label) => ({ level: label }),
      log: (record) => scrubSecrets(record) as Record<string, unknown>,
    },
    serializers: { err: serializeError },
    hooks: {
      // The message itself, e.g. logger.info(`connecting to ${url}`).
      logMethod(args, method) {
        const scrubbed = args.map((arg) => (typeof arg === 'string' ? scrubString(arg) : arg)) as typeof args;
        return method.apply(this, scrubbed);
      },
    },
  };
  const logger = destination ? pino(options, destination) : pino(options);
  // Child bindings skip the log formatter: mask them when the child is made. Children are
  // created from their parent's prototype, so grandchildren inherit this too.
  type Child = (this: Logger, bindings: pino.Bindings, childOptions?: pino.ChildLoggerOptions) => Logger;
  const pinoChild = logger.child as unknown as Child;
  const scrubbingChild: Child = function child(bindings, childOptions) {
    return pinoChild.call(this, scrubSecrets(bindings) as pino.Bindings, childOptions);
  };
  logger.child = scrubbingChild as unknown as typeof logger.child;
  return logger;
}
