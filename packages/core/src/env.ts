// Reading configuration from the environment: each service declares what it needs in its
// own env.ts; loadEnv validates everything at boot and reports every problem at once.

export interface EnvVar<T> {
  parse(raw: string): T;
  default?: T;
  description: string;
}

export type EnvSpec = Record<string, EnvVar<unknown>>;
export type EnvOf<S extends EnvSpec> = { [K in keyof S]: S[K] extends EnvVar<infer T> ? T : never };

export class EnvError extends Error {}

export function loadEnv<S extends EnvSpec>(spec: S, source: NodeJS.ProcessEnv = process.env): EnvOf<S> {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, variable] of Object.entries(spec)) {
    const raw = source[name];
    if (raw === undefined || raw === '') {
      if (variable.default === undefined) problems.push(`${name} is missing (${variable.description})`);
      else out[name] = variable.default;
      continue;
    }
    try {
      out[name] = variable.parse(raw);
    } catch (error) {
      // The value itself is not echoed: it may be a secret or a URL with credentials.
      problems.push(`${name} is invalid: ${(error as Error).message} (${variable.description})`);
    }
  }
  if (problems.length) throw new EnvError(`Bad configuration:\n  - ${problems.join('\n  - ')}`);
  return out as EnvOf<S>;
}

export const env = {
  string(description: string, defaultValue?: string): EnvVar<string> {
    return { parse: (raw) => raw, default: defaultValue, description };
  },
  int(description: string, defaultValue?: number): EnvVar<number> {
    return {
      parse(raw) {
        if (!/^-?\d+$/.test(raw)) throw new Error('not an integer');
        return Number(raw);
      },
      default: defaultValue,
      description,
    };
  },
  bool(description: string, defaultValue?: boolean): EnvVar<boolean> {
    return {
      parse(raw) {
        if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
        if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
        throw new Error('not a boolean');
      },
      default: defaultValue,
      description,
    };
  },
  /** One of a fixed set of words (a misspelt value fails at boot, not where it is used). */
  oneOf<T extends string>(description: string, values: readonly T[], defaultValue?: T): EnvVar<T> {
    return {
      parse(raw) {
        if (!(values as readonly string[]).includes(raw)) throw new Error(`not one of ${values.join(', ')}`);
        return raw as T;
      },
      default: defaultValue,
      description,
    };
  },
  url(description: string, defaultValue?: string): EnvVar<string> {
    return {
      parse(raw) {
        new URL(raw);
        return raw.replace(/\/$/, '');
      },
      default: defaultValue,
      description,
    };
  },
};

/** pino's levels (an unknown one makes pino throw when the logger is made). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Variables every service reads. */
export const commonEnv = {
  DATABASE_URL: env.url('PostgreSQL connection string'),
  REDIS_URL: env.url('Redis connection string', 'redis://127.0.0.1:6379'),
  REDIS_CLUSTER_NODES: env.string(
    'Redis Cluster seed nodes (host:port,host:port,...): when set, a Cluster instead of REDIS_URL (whose credentials it uses)',
    '',
  ),
  REDIS_PREFIX: env.string('prefix of every Redis key this deployment uses', 'tc:'),
  REDIS_WAIT_REPLICAS: env.int(
    "replicas that must hold the event tier's writes before they count as done (WAIT; 0: the master's answer)",
    0,
  ),
  REDIS_WAIT_TIMEOUT_MS: env.int('how long a write waits for REDIS_WAIT_REPLICAS before it fails', 500),
  INTERNAL_JWT_SECRET: env.string('secret shared by the gateway and services to sign internal tokens'),
  LOG_LEVEL: env.oneOf('pino log level', LOG_LEVELS, 'info'),
  HOST: env.string('interface to listen on', '127.0.0.1'),
};
