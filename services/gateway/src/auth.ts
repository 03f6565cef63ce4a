// HTTP Basic authentication of API requests (email:api_key), as Zulip's validate_api_key.
// Every failure is a 401 UNAUTHORIZED, with Zulip's wording. Lookups are cached in Redis
// for a minute; actions that change a user's key, email, role or activity invalidate it.

import { readAuthCache, writeAuthCache, type CachedAuth, type Redis } from '@teamchat/bus';
import { UnauthorizedError, type Requester } from '@teamchat/core';
import type { Db } from '@teamchat/db';
import { hasApiKeyFormat, hashApiKey } from '@teamchat/domain';

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

export class Authenticator {
  constructor(
    private readonly db: Db,
    private readonly redis: Redis,
    private readonly redisPrefix: string,
  ) {}

  private async lookup(apiKeyHash: string): Promise<CachedAuth | null> {
    const cached = await readAuthCache(this.redis, this.redisPrefix, apiKeyHash);
    if (cached) return cached;
    const key = await this.db.apiKey.findUnique({
      where: { key_hash: apiKeyHash },
      select: {
        user: {
          select: {
            id: true,
            realm_id: true,
            role: true,
            email: true,
            delivery_email: true,
            is_bot: true,
            is_active: true,
            realm: { select: { deactivated: true } },
          },
        },
      },
    });
    if (!key) return null;
    const { user } = key;
    const auth: CachedAuth = {
      userId: user.id,
      realmId: user.realm_id,
      role: user.role,
      email: user.email,
      deliveryEmail: user.delivery_email,
      isBot: user.is_bot,
      isActive: user.is_active,
      realmDeactivated: user.realm.deactivated,
    };
    await writeAuthCache(this.redis, this.redisPrefix, apiKeyHash, auth);
    return auth;
  }

  /**
   * The user these credentials belong to. `hostRealmId` is the realm the Host header names,
   * if it names one: a key of another realm is refused there.
   */
  async authenticate(credentials: Credentials, hostRealmId: number | undefined): Promise<Requester> {
    const { email, apiKey } = credentials;
    if (!hasApiKeyFormat(apiKey)) throw new UnauthorizedError('Malformed API key');
    const auth = await this.lookup(hashApiKey(apiKey));
    const claimed = email?.trim().toLowerCase();
    if (!auth || (claimed !== undefined && claimed !== auth.deliveryEmail.toLowerCase() && claimed !== auth.email.toLowerCase())) {
      throw new UnauthorizedError('Invalid API key');
    }
    if (!auth.isActive) throw new UnauthorizedError('Account is deactivated');
    if (auth.realmDeactivated) throw new UnauthorizedError('This organization has been deactivated');
    if (hostRealmId !== undefined && hostRealmId !== auth.realmId) {
      throw new UnauthorizedError('Account is not associated with this subdomain');
    }
    return { userId: auth.userId, realmId: auth.realmId, role: auth.role, email: auth.email, isBot: auth.isBot };
  }
}
