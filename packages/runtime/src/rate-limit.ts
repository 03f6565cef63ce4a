// API rate limits, as Zulip's: each authenticated user has a budget of requests per window
// ("api_by_user", Zulip's default 200 per 60 s), each IP address one for unauthenticated
// requests ("api_by_ip", 100 per 60 s). Past it: 429 RATE_LIMIT_HIT with `retry-after` and the
// Retry-After header; every checked answer carries X-RateLimit-Limit/-Remaining/-Reset.
//
// The budget is a token bucket kept in Redis as its "theoretical arrival time" (GCRA): one key
// per user or address, one atomic Lua script per request, on Redis' clock, so every gateway
// replica, and every event replica serving polls directly (docs/adr/0006), shares the same budget. A full bucket holds `limit` requests and refills at
// `limit` per window: a burst of `limit`, then that rate.

import type http from 'node:http';
import type { Redis } from '@teamchat/bus';
import {
  env,
  hasRequestBody,
  RateLimitedError,
  UnauthorizedError,
  type EnvOf,
  type Logger,
  type Requester,
} from '@teamchat/core';
import { publicClientAddress } from './client-address';

export interface RateLimitRule {
  /** Requests allowed per window (also the largest burst). */
  limit: number;
  windowSeconds: number;
}

export interface RateLimitSettings {
  enabled: boolean;
  user: RateLimitRule;
  ip: RateLimitRule;
  /** Take the client address from the last X-Forwarded-For entry (set by a proxy in front). */
  trustForwardedFor: boolean;
}

/** Zulip's DEFAULT_RATE_LIMITING_RULES for the API. */
export const ZULIP_RATE_LIMITS: RateLimitSettings = {
  enabled: true,
  user: { limit: 200, windowSeconds: 60 },
  ip: { limit: 100, windowSeconds: 60 },
  trustForwardedFor: false,
};

// The RATE_LIMIT_* variables, spread into the env specs of the gateway and the event tier (their env.ts).
export const rateLimitEnvSpec = {
  RATE_LIMIT_ENABLED: env.bool('apply the API rate limits (off for benchmarks)', ZULIP_RATE_LIMITS.enabled),
  RATE_LIMIT_USER_REQUESTS: env.int('API requests each user may make per window', ZULIP_RATE_LIMITS.user.limit),
  RATE_LIMIT_USER_WINDOW_SECONDS: env.int('the per-user window, in seconds', ZULIP_RATE_LIMITS.user.windowSeconds),
  RATE_LIMIT_IP_REQUESTS: env.int(
    'unauthenticated API requests each IP address may make per window',
    ZULIP_RATE_LIMITS.ip.limit,
  ),
  RATE_LIMIT_IP_WINDOW_SECONDS: env.int('the per-IP window, in seconds', ZULIP_RATE_LIMITS.ip.windowSeconds),
  RATE_LIMIT_TRUST_FORWARDED_FOR: env.bool(
    'take the client address from the last X-Forwarded-For entry (behind a proxy)',
    ZULIP_RATE_LIMITS.trustForwardedFor,
  ),
};

export type RateLimitEnv = EnvOf<typeof rateLimitEnvSpec>;

// KEYS[1]: the bucket. ARGV: limit, window (ms). Returns {allowed, remaining, retry-after ms, full-again ms}.
const GCRA_SCRIPT = `
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local interval = window / limit
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local allowed_at = tat + interval - window
if now < allowed_at then
  return {0, 0, math.ceil(allowed_at - now), math.ceil(tat - now)}
end
tat = tat + interval
redis.call('SET', KEYS[1], tostring(tat), 'PX', math.max(1, math.ceil(tat - now)))
return {1, math.floor((window - (tat - now)) / interval), 0, math.ceil(tat - now)}
`;

interface Verdict {
  allowed: boolean;
  remaining: number;
  retryAfterMs: number;
  fullAgainMs: number;
}

type RateLimitRedis = Redis & {
  teamchatRateLimit(key: string, limit: number, windowMs: number): Promise<[number, number, number, number]>;
};

export class RateLimiter {
  private readonly redis: RateLimitRedis;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    readonly settings: RateLimitSettings,
    private readonly logger?: Logger,
  ) {
    if (!('teamchatRateLimit' in redis))
      redis.defineCommand('teamchatRateLimit', { numberOfKeys: 1, lua: GCRA_SCRIPT });
    this.redis = redis as RateLimitRedis;
  }

  /**
   * Spends one request of the caller's budget (the user's, or the address's when there is no
   * user): sets the X-RateLimit-* headers, throws RateLimitedError when the budget is spent.
   */
  async check(req: http.IncomingMessage, res: http.ServerResponse, user: Requester | null): Promise<void> {
    if (!this.settings.enabled) return;
    const rule = user ? this.settings.user : this.settings.ip;
    const key = user
      ? `${this.prefix}ratelimit:user:${user.userId}`
      : `${this.prefix}ratelimit:ip:${this.clientAddress(req)}`;
    let verdict: Verdict;
    try {
      verdict = await this.spend(key, rule);
    } catch (error) {
      // Redis unreachable: the limits are a protection, not a dependency; serve the request.
      this.logger?.warn({ err: error }, 'rate limit check failed; request allowed');
      return;
    }
    res.setHeader('X-RateLimit-Limit', String(rule.limit));
    res.setHeader('X-RateLimit-Remaining', String(verdict.remaining));
    res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + verdict.fullAgainMs) / 1000)));
    if (!verdict.allowed) throw new RateLimitedError(Math.max(1, Math.ceil(verdict.retryAfterMs / 1000)));
  }

  /**
   * A request whose credentials were refused spends the anonymous budget of its address, as any
   * request without a user does: guessing API keys is bounded like every anonymous request, and
   * past the budget the answer is 429 instead of 401. Returns the error to answer with.
   */
  async failedAuthentication(req: http.IncomingMessage, res: http.ServerResponse, refusal: unknown): Promise<unknown> {
    if (!(refusal instanceof UnauthorizedError)) return refusal;
    try {
      await this.check(req, res, null);
    } catch (limited) {
      return limited;
    }
    return refusal;
  }

  private async spend(key: string, rule: RateLimitRule): Promise<Verdict> {
    const [allowed, remaining, retryAfterMs, fullAgainMs] = await this.redis.teamchatRateLimit(
      key,
      rule.limit,
      rule.windowSeconds * 1000,
    );
    return { allowed: allowed === 1, remaining, retryAfterMs, fullAgainMs };
  }

  /** The client's address this limiter counts by (client-address.ts). */
  clientAddress(req: http.IncomingMessage): string {
    return publicClientAddress(req, this.settings.trustForwardedFor);
  }
}

/** The settings from the gateway's or the event tier's environment (see README, "Configuration"). */
export function rateLimitSettings(env: Partial<RateLimitEnv>): RateLimitSettings {
  return {
    enabled: env.RATE_LIMIT_ENABLED ?? ZULIP_RATE_LIMITS.enabled,
    user: {
      limit: env.RATE_LIMIT_USER_REQUESTS ?? ZULIP_RATE_LIMITS.user.limit,
      windowSeconds: env.RATE_LIMIT_USER_WINDOW_SECONDS ?? ZULIP_RATE_LIMITS.user.windowSeconds,
    },
    ip: {
      limit: env.RATE_LIMIT_IP_REQUESTS ?? ZULIP_RATE_LIMITS.ip.limit,
      windowSeconds: env.RATE_LIMIT_IP_WINDOW_SECONDS ?? ZULIP_RATE_LIMITS.ip.windowSeconds,
    },
    trustForwardedFor: env.RATE_LIMIT_TRUST_FORWARDED_FOR ?? ZULIP_RATE_LIMITS.trustForwardedFor,
  };
}

/**
 * A GET /events that may park: a queue id, no dont_block (or dont_block=false), and no body
 * (the events service also reads parameters from a GET's body, which the gateway does not see).
 * Such a poll spends no rate-limit budget, at the gateway as at the event tier: a client on a
 * busy realm polls again after every answer, and a refused poll would cut it off from its events
 * (each poll is cheap when parked). Every other request on the events path (non-blocking polls,
 * which may create queues, and DELETE) spends the budget.
 */
export function mayPark(req: http.IncomingMessage, query: URLSearchParams): boolean {
  if (req.method !== 'GET' || hasRequestBody(req) || !query.has('queue_id')) return false;
  const dontBlock = query.get('dont_block');
  return dontBlock === null || dontBlock === 'false';
}
