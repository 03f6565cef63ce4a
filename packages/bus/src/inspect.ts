// What was committed after a point, for tests and operators: a published event leaves the
// outbox after the hold, and an intake entry the event tier fanned out may be trimmed, so each
// event is read from wherever it still is (the outbox row, else its intake entry).

import type { Db } from '@teamchat/db';
import type { EventBus, IntakeEntry } from './events';
import type { OutboxPayload } from './outbox';
import type { Redis } from './redis';

/** The newest outbox id handed out so far: what commits after it has larger ids. */
export async function outboxMark(db: Db): Promise<bigint> {
  const [row] = await db.$queryRaw<
    { last: bigint }[]
  >`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS last FROM event_outbox_id_seq`;
  return row.last;
}

/** The events committed after `mark`, by outbox id (oldest first). */
export async function committedSince(
  db: Db,
  redis: Redis,
  bus: EventBus,
  mark: bigint,
): Promise<{ id: bigint; payload: OutboxPayload }[]> {
  const rows = await db.$queryRaw<
    { id: bigint; payload: OutboxPayload }[]
  >`SELECT id, payload FROM event_outbox WHERE id > ${mark}`;
  const found = new Map(rows.map((row) => [row.id, row.payload]));
  for (let partition = 0; partition < bus.partitions; partition++) {
    for (const [, fields] of await redis.xrange(bus.keys.intakeStream(partition), '-', '+')) {
      const { outboxId, event, users, echo } = JSON.parse(fields[1]) as IntakeEntry;
      if (outboxId !== undefined && BigInt(outboxId) > mark && !found.has(BigInt(outboxId))) {
        found.set(BigInt(outboxId), { event, users, ...(echo && { echo }) });
      }
    }
  }
  return [...found.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, payload]) => ({ id, payload }));
}
