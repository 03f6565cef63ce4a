// The events an action committed, read the way producers write them: through the outbox. A
// published row leaves the outbox after EVENT_OUTBOX_HOLD_MS, so committedSince reads such an
// event from its intake entry instead; the mark is the outbox id sequence, not the rows.

import { setTimeout as sleep } from 'node:timers/promises';
import { committedSince, outboxMark, type LocalEcho, type OutboxPayload, type Recipient } from '@teamchat/bus';
import type { BaseDeps } from '@teamchat/runtime';

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
 * How often the events are read while `fn` runs: well within the outbox hold. A row published
 * longer ago than the hold has left the outbox, and its intake entry may be trimmed by then (a
 * loaded CI machine once took longer than the hold between two actions and missed the first event).
 */
const READ_EVERY_MS = 250;

/** The events committed through the outbox while `fn` ran, oldest first (its outbox ids, not its clock). */
export async function captureEvents(stack: EventSource, fn: () => Promise<unknown>): Promise<CapturedEvent[]> {
  const { db, redis, bus } = stack.deps;
  const mark = await outboxMark(db);
  const seen = new Map<bigint, OutboxPayload>();
  const read = async () => {
    for (const { id, payload } of await committedSince(db, redis, bus, mark)) seen.set(id, payload);
  };
  const done = new AbortController();
  const reading = (async () => {
    for (;;) {
      try {
        await sleep(READ_EVERY_MS, undefined, { signal: done.signal });
      } catch {
        return; // fn finished
      }
      await read();
    }
  })();
  reading.catch(() => undefined); // its failure is thrown below, once fn is done
  try {
    await fn();
  } finally {
    done.abort();
    await reading;
  }
  await read();
  const oldestFirst = [...seen].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return oldestFirst.map(([, payload]) => ({
    event: payload.event as CapturedEvent['event'],
    recipientIds: payload.users.map((user) => (typeof user === 'number' ? user : user.id)).sort((a, b) => a - b),
    ...(payload.users.some((user) => typeof user !== 'number') && { recipients: payload.users }),
    ...(payload.echo && { echo: payload.echo }),
  }));
}

/** The captured events of one type (and op, when given). */
export function ofType(events: CapturedEvent[], type: string, op?: string): CapturedEvent[] {
  return events.filter(({ event }) => event.type === type && (op === undefined || event.op === op));
}
