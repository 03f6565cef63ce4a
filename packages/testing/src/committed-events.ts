// The events an action committed, read the way producers write them: through the outbox. A
// published row leaves the outbox after EVENT_OUTBOX_HOLD_MS, so committedSince reads such an
// event from its intake entry instead; the mark is the outbox id sequence, not the rows.

import { randomUUID } from 'node:crypto';
import { committedSince, outboxMark, type LocalEcho, type Recipient } from '@teamchat/bus';
import type { BaseDeps } from '@teamchat/runtime';
import { checkDeclaredEvent } from './event-check';

export interface CapturedEvent {
  event: Record<string, any> & { type: string };
  /** Who the event goes to, sorted (per-user fields of a recipient, such as message flags, left out). */
  recipientIds: number[];
  /** The recipients as written, only when some carry per-user fields (a message's flags). */
  recipients?: Recipient[];
  /** A sent message's local echo: beside the event, never in it. */
  echo?: LocalEcho;
}

/** What `stack` needs (a Stack of @teamchat/stack fits; structural, so this package needs no service). */
export interface EventSource {
  deps: Pick<BaseDeps, 'db' | 'redis' | 'bus'>;
}

/**
 * The events committed through the outbox while `fn` ran, oldest first (its outbox ids, not its clock).
 *
 * A published row leaves the outbox after the hold, and the event tier trims intake entries
 * every consumer group has read. So while `fn` runs, a consumer group of the capture's own sits
 * on every intake stream, reading nothing: the entries added meanwhile stay until it is gone.
 * (Reading every 250 ms instead raced the trim: a loaded CI machine stalled longer than the hold
 * and the first of two events was missed.) The groups come before the mark, so every event
 * committed after the mark is published while they exist.
 */
export async function captureEvents(stack: EventSource, fn: () => Promise<unknown>): Promise<CapturedEvent[]> {
  const { db, redis, bus } = stack.deps;
  const group = `capture-${randomUUID()}`;
  const streams = Array.from({ length: bus.partitions }, (_, partition) => bus.keys.intakeStream(partition));
  for (const stream of streams) await redis.xgroup('CREATE', stream, group, '$', 'MKSTREAM');
  try {
    const mark = await outboxMark(db);
    await fn();
    const committed = await committedSince(db, redis, bus, mark);
    for (const { payload } of committed) checkDeclaredEvent(payload.event, 'committed');
    return committed.map(({ payload }) => ({
      event: payload.event as CapturedEvent['event'],
      recipientIds: payload.users.map((user) => (typeof user === 'number' ? user : user.id)).sort((a, b) => a - b),
      ...(payload.users.some((user) => typeof user !== 'number') && { recipients: payload.users }),
      ...(payload.echo && { echo: payload.echo }),
    }));
  } finally {
    // A stream gone meanwhile (a Redis restarted by a fault test) has no group left to destroy.
    for (const stream of streams) await redis.xgroup('DESTROY', stream, group).catch(() => 0);
  }
}

/** The captured events of one type (and op, when given). */
export function ofType(events: CapturedEvent[], type: string, op?: string): CapturedEvent[] {
  return events.filter(({ event }) => event.type === type && (op === undefined || event.op === op));
}
