// Password-login throttling, against password guessing. Zulip's authenticate_by_username rule: an
// account takes at most 5 password attempts in 30 minutes, and a successful login clears its count.
// On top of it, a client address takes a number of failed attempts across all accounts in its
// window (guessing one password for many accounts); its successful logins give their attempt back,
// so an office behind one NAT is not locked out by its own users.
//
// Both counts are sliding logs (sorted sets of attempt times) in Redis, checked and extended
// by one script, so every users replica shares them and concurrent attempts cannot slip past.
// A refused attempt is not recorded. Both keys share one hash tag (one Redis Cluster slot).

import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from '@teamchat/bus';
import { env, type EnvOf, type Logger } from '@teamchat/core';
import { hashPassword, verifyPassword } from '@teamchat/domain';

export const loginThrottleEnvSpec = {
  LOGIN_RATE_LIMIT_ENABLED: env.bool('throttle password logins (POST /fetch_api_key)', true),
  LOGIN_RATE_LIMIT_ACCOUNT_ATTEMPTS: env.int(
    "password attempts per account per window (Zulip's authenticate_by_username)",
    5,
  ),
  LOGIN_RATE_LIMIT_ACCOUNT_WINDOW_SECONDS: env.int('the per-account login window, in seconds', 1800),
  LOGIN_RATE_LIMIT_IP_ATTEMPTS: env.int('failed password attempts per client address per window', 30),
  LOGIN_RATE_LIMIT_IP_WINDOW_SECONDS: env.int('the per-address login window, in seconds', 1800),
};

export type LoginThrottleEnv = EnvOf<typeof loginThrottleEnvSpec>;

// KEYS: account log, address log. ARGV: account limit, account window ms, address limit,
// address window ms, attempt id. Returns {1, 0} (recorded) or {0, ms until an attempt frees up}.
const ATTEMPT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = 0
for i = 1, 2 do
  local limit, window = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  if redis.call('ZCARD', KEYS[i]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
    local free = tonumber(oldest[2]) + window - now
    if free > wait then wait = free end
  end
end
if wait > 0 then return {0, wait} end
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])
end
return {1, 0}
`;

type ThrottleRedis = Redis & {
  teamchatLoginAttempt(account: string, address: string, ...args: (string | number)[]): Promise<[number, number]>;
};

/** One admitted attempt: report how it ended. */
export interface LoginAttempt {
  succeeded(): Promise<void>;
}

export class LoginThrottle {
  private readonly redis: ThrottleRedis;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly settings: LoginThrottleEnv,
    private readonly logger: Logger,
  ) {
    if (!('teamchatLoginAttempt' in redis)) {
      redis.defineCommand('teamchatLoginAttempt', { numberOfKeys: 2, lua: ATTEMPT_SCRIPT });
    }
    this.redis = redis as ThrottleRedis;
  }

  private accountKey(realmId: number, username: string): string {
    // Hashed: the key names an account without spelling out its email address.
    const digest = createHash('sha256').update(`${realmId}:${username}`).digest('hex').slice(0, 32);
    return `${this.prefix}{login-throttle}:account:${digest}`;
  }

  private addressKey(address: string): string {
    return `${this.prefix}{login-throttle}:address:${address}`;
  }

  /**
   * Records an attempt for the account (realm + normalised username) from `address`, or
   * returns the seconds until one is allowed again. null when the throttle is off or Redis
   * cannot be reached (a protection, not a dependency: the login is checked as usual).
   */
  async attempt(
    realmId: number,
    username: string,
    address: string,
  ): Promise<{ retryAfterSeconds: number } | LoginAttempt | null> {
    if (!this.settings.LOGIN_RATE_LIMIT_ENABLED) return null;
    const s = this.settings;
    const accountKey = this.accountKey(realmId, username);
    const addressKey = this.addressKey(address);
    const attemptId = randomUUID();
    let admitted: number;
    let waitMs: number;
    try {
      [admitted, waitMs] = await this.redis.teamchatLoginAttempt(
        accountKey,
        addressKey,
        s.LOGIN_RATE_LIMIT_ACCOUNT_ATTEMPTS,
        s.LOGIN_RATE_LIMIT_ACCOUNT_WINDOW_SECONDS * 1000,
        s.LOGIN_RATE_LIMIT_IP_ATTEMPTS,
        s.LOGIN_RATE_LIMIT_IP_WINDOW_SECONDS * 1000,
        attemptId,
      );
    } catch (error) {
      this.logger.warn({ err: error }, 'login throttle check failed; attempt allowed');
      return null;
    }
    if (admitted !== 1) return { retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    return {
      succeeded: async () => {
        // Zulip clears the account's history on success; the address gets this attempt back.
        await this.redis
          .pipeline()
          .del(accountKey)
          .zrem(addressKey, attemptId)
          .exec()
          .catch((error: unknown) => this.logger.warn({ err: error }, 'login throttle reset failed'));
      },
    };
  }
}

let dummyPasswordHash: Promise<string> | undefined;

/**
 * Whether `password` matches the stored hash. Without a usable hash (no such account, or one
 * without a password) the password is checked against a dummy hash all the same, so the
 * answer takes as long as for an existing account.
 */
export async function passwordMatches(password: string, storedHash: string | null | undefined): Promise<boolean> {
  if (storedHash?.startsWith('scrypt$')) return verifyPassword(password, storedHash);
  dummyPasswordHash ??= hashPassword(randomUUID());
  await verifyPassword(password, await dummyPasswordHash);
  return false;
}
