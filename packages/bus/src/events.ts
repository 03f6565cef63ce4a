// Publishing events: the producer half of the event tier (design §4).
//
// sendEventOnCommit writes the event to the event_outbox table inside the caller's
// transaction and publishes it to Redis right after COMMIT. If that publish fails (Redis
// down, process killed), the relay (relayOutbox) publishes it later: nothing committed is
// lost, and a dedupe marker makes sure nothing is published twice.

import type { Logger } from '@teamchat/core';
import type { Db, Tx } from '@teamchat/db';
import type { Redis } from './redis';
import { RedisKeys } from './redis';

/** A recipient: a user id, or a user id with fields merged into that user's copy (e.g. message flags). */
export type Recipient = number | ({ id: number } & Record<string, unknown>);

export type ZulipEvent = { type: string } & Record<string, unknown>;

/** What travels on the intake stream. */
export interface IntakeEntry {
  /** event_outbox id; absent for transient events (typing). */
  outboxId?: string;
  /** Id of the transaction that produced the event (pg xid8, as text). */
  xid?: string;
  realmId: number;
  event: ZulipEvent;
  users: Recipient[];
}

/**
 * An event_outbox row a hot-path statement wrote itself (INSERT ... RETURNING id::text, xid::text,
 * payload), instead of calling sendEventOnCommit: one round trip instead of a transaction.
 */
export interface OutboxRow {
  id: string;
  xid: string;
  payload: { event: ZulipEvent; users: Recipient[] };
}

export const DEFAULT_EVENT_PARTITIONS = 8;
const SENT_MARKER_TTL_SECONDS = 24 * 3600;

const PUBLISH_ONCE = `
if ARGV[2] == '' or redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[3]) then
  return redis.call('XADD', KEYS[1], '*', 'e', ARGV[1])
end
return false
`;

export class EventBus {
  readonly keys: RedisKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    readonly partitions: number = DEFAULT_EVENT_PARTITIONS,
  ) {
    this.keys = new RedisKeys(prefix);
    if (!('teamchatPublishOnce' in redis)) {
      redis.defineCommand('teamchatPublishOnce', { numberOfKeys: 2, lua: PUBLISH_ONCE });
    }
  }

  partitionOf(realmId: number): number {
    return realmId % this.partitions;
  }

  /**
   * Sends `event` to `users` once the transaction `tx` commits (Zulip's send_event_on_commit).
   * The event is stored in the outbox inside the transaction, so it is never lost.
   */
  async sendEventOnCommit(tx: Tx, realmId: number, event: ZulipEvent, users: Recipient[]): Promise<void> {
    if (users.length === 0) return;
    const payload = JSON.stringify({ event, users });
    const [row] = await tx.db.$queryRaw<{ id: string; xid: string }[]>`
      INSERT INTO event_outbox (realm_id, payload) VALUES (${realmId}, ${payload}::jsonb)
      RETURNING id::text AS id, xid::text AS xid`;
    const entry: IntakeEntry = { outboxId: row.id, xid: row.xid, realmId, event, users };
    tx.onCommit(() => this.publish(entry));
  }

  /** Sends an event that changes no stored state (typing): no transaction, no outbox. */
  async sendTransientEvent(realmId: number, event: ZulipEvent, users: Recipient[]): Promise<void> {
    if (users.length === 0) return;
    await this.publish({ realmId, event, users });
  }

  /**
   * Publishes an outbox row whose statement has committed, as sendEventOnCommit does after
   * COMMIT. Never rejects: a failed publish is logged and the outbox relay sends the row later.
   */
  publishCommitted(realmId: number, row: OutboxRow, logger: Logger): Promise<void> {
    return this.publish({ outboxId: row.id, xid: row.xid, realmId, event: row.payload.event, users: row.payload.users }).catch((error) => {
      logger.warn({ err: error, outbox_id: row.id }, 'event publish failed; the outbox relay will send it');
    });
  }

  /** Appends the entry to its realm's intake stream, at most once per outbox row. */
  async publish(entry: IntakeEntry): Promise<void> {
    const partition = this.partitionOf(entry.realmId);
    await (this.redis as unknown as PublishOnce).teamchatPublishOnce(
      this.keys.intakeStream(partition),
      this.keys.intakeSent(partition, entry.outboxId ?? 'none'),
      JSON.stringify(entry),
      entry.outboxId ?? '',
      SENT_MARKER_TTL_SECONDS,
    );
  }
}

interface PublishOnce {
  teamchatPublishOnce(stream: string, marker: string, payload: string, outboxId: string, ttl: number): Promise<unknown>;
}

/**
 * Publishes outbox rows older than `olderThanMs` (their after-commit publish may have
 * failed) and deletes them. Safe to run in several processes at once (SKIP LOCKED) and
 * repeatedly (publishing is idempotent). Returns how many rows it handled.
 */
export async function relayOutbox(db: Db, bus: EventBus, options: { olderThanMs?: number; batchSize?: number } = {}): Promise<number> {
  const olderThanMs = options.olderThanMs ?? 2000;
  const batchSize = options.batchSize ?? 500;
  return db.$transaction(async (client) => {
    const rows = await client.$queryRaw<{ id: string; xid: string; realm_id: number; payload: { event: ZulipEvent; users: Recipient[] } }[]>`
      SELECT id::text AS id, xid::text AS xid, realm_id, payload FROM event_outbox
      WHERE created_at < now() - make_interval(secs => ${olderThanMs / 1000})
      ORDER BY id LIMIT ${batchSize} FOR UPDATE SKIP LOCKED`;
    if (rows.length === 0) return 0;
    for (const row of rows) {
      await bus.publish({ outboxId: row.id, xid: row.xid, realmId: row.realm_id, event: row.payload.event, users: row.payload.users });
    }
    const ids = rows.map((row) => BigInt(row.id));
    await client.$executeRaw`DELETE FROM event_outbox WHERE id = ANY(${ids})`;
    return rows.length;
  });
}
