// Which realm a Host header names. Realms are few, so each public entry (the gateway, an event
// replica) keeps the whole list in memory and refreshes it every few seconds instead of querying
// per request.

import type { Db } from '@teamchat/db';

export interface RealmEntry {
  id: number;
  host: string;
  deactivated: boolean;
}

/** Zulip's SYSTEM_BOT_REALM (packages/domain's notification-bot.ts). */
const SYSTEM_BOT_REALM = 'zulipinternal';

const REFRESH_MS = 5_000;
/** How long a host known to name no realm is not looked up again. */
const MISS_TTL_MS = 1_000;

export class RealmDirectory {
  private realms: RealmEntry[] = [];
  private loadedAt = 0;
  private loading: Promise<void> | null = null;
  private readonly misses = new Map<string, number>();

  constructor(private readonly db: Db) {}

  private async refresh(): Promise<void> {
    this.realms = await this.db.realm.findMany({
      // The system bots' organisation (zulipinternal) is served on no host.
      where: { string_id: { not: SYSTEM_BOT_REALM } },
      select: { id: true, host: true, deactivated: true },
      orderBy: { id: 'asc' },
    });
    this.loadedAt = Date.now();
  }

  private async ensureFresh(): Promise<void> {
    if (Date.now() - this.loadedAt < REFRESH_MS) return;
    this.loading ??= this.refresh().finally(() => (this.loading = null));
    await this.loading;
  }

  /** The realm served on `host` (exact match, then without the port), if any. */
  async byHost(host: string | undefined): Promise<RealmEntry | undefined> {
    await this.ensureFresh();
    if (!host) return undefined;
    const found = this.find(host);
    if (found) return found;
    // A realm created since the last refresh: look the host up directly, once a second at most.
    const lower = host.toLowerCase();
    if ((this.misses.get(lower) ?? 0) > Date.now()) return undefined;
    const hostname = lower.split(':')[0];
    const created = await this.db.realm.findFirst({
      where: {
        string_id: { not: SYSTEM_BOT_REALM },
        OR: [{ host: lower }, { host: hostname }, { host: { startsWith: `${hostname}:` } }],
      },
      select: { id: true, host: true, deactivated: true },
    });
    if (created) {
      this.realms.push(created);
      return created;
    }
    if (this.misses.size > 10_000) this.misses.clear();
    this.misses.set(lower, Date.now() + MISS_TTL_MS);
    return undefined;
  }

  private find(host: string): RealmEntry | undefined {
    const lower = host.toLowerCase();
    const hostname = lower.split(':')[0];
    return (
      this.realms.find((realm) => realm.host === lower) ??
      this.realms.find((realm) => realm.host.split(':')[0] === hostname)
    );
  }

  /** For a host that names no realm (e.g. 127.0.0.1 in development): the first realm. */
  async fallback(): Promise<RealmEntry | undefined> {
    await this.ensureFresh();
    return this.realms[0];
  }
}
