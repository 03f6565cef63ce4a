// The event_outbox table, seen from producers: the one INSERT every event is written with, and
// the deletion of the rows a producer published itself.

import { Prisma, type Db } from '@teamchat/db';
import type { ZulipEvent, ZulipEventWithSql } from './event-types';

/** A recipient: a user id, or a user id with fields merged into that user's copy (e.g. message flags). */
export type Recipient = number | ({ id: number } & Record<string, unknown>);

/** Local echo of a sent message: the sender's queue and the id it chose (not for clients, so beside the event). */
export interface LocalEcho {
  queueId: string;
  localId: string;
}

/** What an outbox row holds (its `payload` column). */
export interface OutboxPayload {
  event: ZulipEvent;
  users: Recipient[];
  echo?: LocalEcho;
  /**
   * A channel message's: whether its channel is private, as the producer saw it when sending
   * (realm-wide queues take public channels' messages only). For the event tier, never a client.
   */
  inviteOnly?: boolean;
}

/** An outbox row as its INSERT returns it; `payload` only when the statement computed part of it. */
export interface OutboxRow {
  id: string;
  xid: string;
  payload?: OutboxPayload;
}

export interface OutboxInsert {
  realmId: number;
  /** Field values, or SQL expressions of the statement for fields only it knows (e.g. the ids it changed). */
  event: ZulipEventWithSql;
  /** The recipients, or a SQL expression of the statement giving them as a jsonb array. */
  users: Recipient[] | Prisma.Sql;
  echo?: LocalEcho;
  /** A channel message's: whether its channel is private (OutboxPayload.inviteOnly). */
  inviteOnly?: boolean;
  /** What follows FROM (with any WHERE/HAVING): one row is written per row it yields, none if none. */
  from?: Prisma.Sql;
}

/**
 * The INSERT of an outbox row, as a statement of its own or a CTE of a larger one, returning
 * `id` and `xid` (and `payload` when SQL computes part of it: the caller does not know it).
 * The one place event_outbox rows are written. `created_at` is the write's time, not the
 * transaction's start: the relay's grace counts from the row's write.
 */
export function outboxInsertSql(insert: OutboxInsert): { sql: Prisma.Sql; payload: OutboxPayload | null } {
  const known: Record<string, unknown> = {};
  const computed: Prisma.Sql[] = [];
  for (const [key, value] of Object.entries(insert.event)) {
    if (value instanceof Prisma.Sql) computed.push(Prisma.sql`${key}::text, ${value}`);
    else known[key] = value;
  }
  // Beside the event: the local echo, the channel's privacy.
  const beside = {
    ...(insert.echo !== undefined && { echo: insert.echo }),
    ...(insert.inviteOnly !== undefined && { inviteOnly: insert.inviteOnly }),
  };
  const from = insert.from === undefined ? Prisma.empty : Prisma.sql`FROM ${insert.from}`;
  if (computed.length === 0 && !(insert.users instanceof Prisma.Sql)) {
    const payload: OutboxPayload = { event: known as ZulipEvent, users: insert.users, ...beside };
    return {
      sql: Prisma.sql`INSERT INTO event_outbox (realm_id, payload, created_at) SELECT ${insert.realmId}::int, ${JSON.stringify(payload)}::jsonb, clock_timestamp() ${from}
        RETURNING id::text AS id, xid::text AS xid`,
      payload,
    };
  }
  const event = computed.length
    ? Prisma.sql`${JSON.stringify(known)}::jsonb || jsonb_build_object(${Prisma.join(computed)})`
    : Prisma.sql`${JSON.stringify(known)}::jsonb`;
  const users = insert.users instanceof Prisma.Sql ? insert.users : Prisma.sql`${JSON.stringify(insert.users)}::jsonb`;
  const rest = Prisma.join(
    [
      insert.echo === undefined ? Prisma.empty : Prisma.sql`, 'echo', ${JSON.stringify(insert.echo)}::jsonb`,
      insert.inviteOnly === undefined ? Prisma.empty : Prisma.sql`, 'inviteOnly', ${insert.inviteOnly}::boolean`,
    ],
    '',
  );
  return {
    sql: Prisma.sql`INSERT INTO event_outbox (realm_id, payload, created_at)
      SELECT ${insert.realmId}::int, jsonb_build_object('event', ${event}, 'users', ${users}${rest}), clock_timestamp() ${from}
      RETURNING id::text AS id, xid::text AS xid, payload`,
    payload: null,
  };
}

/** How often a producer deletes the rows it published (once held long enough). */
export const OUTBOX_DELETE_INTERVAL_MS = 200;
/** Ids kept for deletion at most; past it (deletes failing for long) the oldest are left to the relay. */
const MAX_PENDING_DELETES = 100_000;
const DELETE_CHUNK = 5_000;

/**
 * The rows this process published, deleted in batches once each has been published for
 * `holdMs`: Redis may run with `appendfsync everysec`, so a publish is durable only a moment
 * later (and Redis 7.0 has no WAITAOF to ask). Until then the row stays, for the relay to
 * republish should Redis lose the entry. A failed delete is tried again at the next round.
 */
export class PublishedRowDeleter {
  private pending: { id: string; due: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private deleting: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly holdMs: number,
    private readonly logger?: { warn(object: object, message: string): void },
  ) {}

  add(outboxId: string): void {
    // After close the row is left to the relay (its marker keeps it from being published twice).
    if (this.closed) return;
    this.pending.push({ id: outboxId, due: Date.now() + this.holdMs });
    if (this.pending.length > MAX_PENDING_DELETES) {
      const dropped = this.pending.splice(0, this.pending.length - MAX_PENDING_DELETES);
      this.logger?.warn(
        { dropped: dropped.length },
        'too many published outbox rows left to delete; the relay will delete the oldest',
      );
    }
    this.timer ??= setInterval(() => void this.deleteDue(Date.now()), OUTBOX_DELETE_INTERVAL_MS).unref();
  }

  /** Deletes what is left, once its hold has passed (at most holdMs from now). */
  async close(): Promise<void> {
    this.closed = true;
    const last = Math.max(0, ...this.pending.map((row) => row.due));
    if (last > Date.now()) await new Promise((resolve) => setTimeout(resolve, last - Date.now()));
    await this.deleteDue(Infinity);
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One round at a time: a slow DELETE does not pile up rounds. */
  private deleteDue(until: number): Promise<void> {
    this.deleting = this.deleting.then(async () => {
      const due = this.pending.filter((row) => row.due <= until);
      for (let start = 0; start < due.length; start += DELETE_CHUNK) {
        const chunk = due.slice(start, start + DELETE_CHUNK);
        try {
          await this.db.$executeRaw`DELETE FROM event_outbox WHERE id = ANY(${chunk.map((row) => row.id)}::bigint[])`;
        } catch (error) {
          this.logger?.warn(
            { err: error, rows: due.length - start },
            'deleting published outbox rows failed; trying again',
          );
          break;
        }
        const deleted = new Set(chunk);
        this.pending = this.pending.filter((row) => !deleted.has(row));
      }
      if (this.pending.length === 0 && this.timer !== undefined) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    });
    return this.deleting;
  }
}
