// What may appear in spans: no credentials, no user content. Shared by the instrumentations
// set up in sdk.ts (and tested on their own).

/** Query parameters whose values never reach a span (Zulip's legacy ?api_key= on file URLs, signed URLs). */
export const REDACTED_QUERY_PARAMETERS = [
  'api_key',
  'key',
  'password',
  'token',
  'secret',
  'sig',
  'signature',
  'Signature',
  'AWSAccessKeyId',
  'X-Amz-Signature',
  'X-Amz-Credential',
  'X-Amz-Security-Token',
  'X-Goog-Signature',
];

const REDACTED = 'REDACTED';
const redactedNames = new Set(REDACTED_QUERY_PARAMETERS.map((name) => name.toLowerCase()));

/** A query string (without '?') with the values of sensitive parameters replaced. */
export function redactQueryString(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const separator = pair.indexOf('=');
      const rawName = separator === -1 ? pair : pair.slice(0, separator);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // A malformed escape: compare the raw name.
      }
      return redactedNames.has(name.toLowerCase()) && separator !== -1 ? `${rawName}=${REDACTED}` : pair;
    })
    .join('&');
}

/** Long hex strings in Redis keys are hashes of API keys (auth cache) or ids; keep them out. */
function maskKey(key: unknown): string {
  return String(key).replace(/[0-9a-f]{32,}/gi, '…');
}

/**
 * db.statement for an ioredis command: the command and the key it touches, never the values
 * (job data, event payloads and message contents travel as Lua script arguments).
 */
export function redisStatement(command: string, args: ReadonlyArray<unknown>): string {
  const name = command.toUpperCase();
  if (args.length === 0 || name === 'AUTH' || name === 'HELLO' || name === 'CLIENT') return name;
  // EVAL script numkeys key... / EVALSHA sha numkeys key...: the first key names the structure.
  const keyIndex =
    name === 'EVAL' || name === 'EVALSHA' || name === 'EVAL_RO' || name === 'EVALSHA_RO' || name === 'FCALL' ? 2 : 0;
  const key = args[keyIndex];
  const rest = args.length - (key === undefined ? 0 : 1);
  return [name, key === undefined ? '' : maskKey(key), rest > 0 ? `[${rest} other arguments]` : '']
    .filter(Boolean)
    .join(' ');
}
