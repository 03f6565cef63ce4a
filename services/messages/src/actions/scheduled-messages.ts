// Scheduled messages (Zulip's zerver/actions/scheduled_messages.py): schedule, edit, delete,
// and deliver. The owner's clients follow them through `scheduled_messages` events.
//
// Delivery is a BullMQ job delayed until the message's time (enqueued after the row commits),
// run by the worker, which calls deliver here (the messages service owns `message`). It is
// exactly once by construction in the database: one transaction locks the row, skips it when
// delivered, failed or not yet due, sends the message with the send path inside that
// transaction, and marks it delivered with its message id, so a retried or duplicated job, the
// worker's poll of due rows, or a worker killed mid-call can never send it twice (the second
// caller waits on the lock, then sees delivered). A job for an old time finds the row not due
// (or delivered) and does nothing, so a PATCH of the time only has to enqueue a new job.

import { JsonableError, type Requester } from '@teamchat/core';
import { Prisma, transaction, type Db, type ScheduledMessage, type Tx } from '@teamchat/db';
import { getSystemBot, scheduledMessageDict, writeInternalMessage, type ScheduledMessageDict } from '@teamchat/domain';
import type { MessagesDeps } from '../deps';
import { accessScheduledMessage, checkScheduledMessage, type ScheduledAddress } from '../lib/scheduled-messages';
import { doSendMessage } from './send-message';

/** Zulip's SCHEDULED_MESSAGE_LATE_CUTOFF_MINUTES: later than this, a scheduled message fails instead. */
export const SCHEDULED_MESSAGE_LATE_CUTOFF_MS = 10 * 60_000;
export const DELIVERY_NOT_IN_FUTURE = 'Scheduled delivery time must be in the future.';

// The `scheduled_messages` event (not in the bus's ZulipEvent list yet, so typed here).
type ScheduledMessagesEvent =
  | { type: 'scheduled_messages'; op: 'add'; scheduled_messages: ScheduledMessageDict[] }
  | { type: 'scheduled_messages'; op: 'update'; scheduled_message: ScheduledMessageDict }
  | { type: 'scheduled_messages'; op: 'remove'; scheduled_message_id: number };

function sendScheduledEvent(
  deps: Pick<MessagesDeps, 'bus'>,
  tx: Tx,
  realmId: number,
  userId: number,
  event: ScheduledMessagesEvent,
) {
  return deps.bus.sendEventOnCommit(tx, realmId, event, [userId]);
}

/** Enqueues the delivery job for the row's time (best effort: the worker's poll delivers due rows whose job was lost). */
async function enqueueDelivery(deps: MessagesDeps, row: ScheduledMessage): Promise<void> {
  const at = row.scheduled_timestamp.getTime();
  try {
    await deps.jobs.queue('scheduled-message').add(
      'scheduled-message',
      { realmId: row.realm_id, scheduledMessageId: row.id, senderId: row.sender_id },
      {
        // One job per message and time: a repeated enqueue for the same time joins it.
        jobId: `scheduled-message-${row.id}-${at}`,
        delay: Math.max(0, at - Date.now()),
        removeOnComplete: true,
        removeOnFail: 1000,
      },
    );
  } catch (error) {
    deps.logger.warn({ err: error, scheduled_message_id: row.id }, 'enqueueing a scheduled message failed');
  }
}

/** Drops the delayed job of an old time, if still there (it would do nothing anyway). */
async function dropDelivery(deps: MessagesDeps, row: ScheduledMessage): Promise<void> {
  const jobId = `scheduled-message-${row.id}-${row.scheduled_timestamp.getTime()}`;
  await deps.jobs
    .queue('scheduled-message')
    .remove(jobId)
    .catch(() => undefined);
}

export function checkDeliveryTime(timestamp: number): Date {
  const deliverAt = new Date(timestamp * 1000);
  if (deliverAt.getTime() <= Date.now()) throw new JsonableError(DELIVERY_NOT_IN_FUTURE);
  return deliverAt;
}

export interface ScheduleInput {
  address: ScheduledAddress;
  content: string;
  deliverAt: Date;
  readBySender: boolean | undefined;
  sendingClient: string;
  defaultReadBySender: boolean;
}

/** Zulip's check_schedule_message + do_schedule_messages. */
export async function doScheduleMessage(deps: MessagesDeps, requester: Requester, input: ScheduleInput) {
  const checked = await checkScheduledMessage(deps, requester, input.address, input.content);
  // Zulip's legacy default: read for the sender from its own apps, unless sent to oneself only.
  const toSelfOnly = checked.type === 'private' && checked.to.every((id) => id === requester.userId);
  const readBySender = input.readBySender ?? (input.defaultReadBySender && !toSelfOnly);
  const row = await transaction(deps.db, async (tx) => {
    const created = await tx.db.scheduledMessage.create({
      data: {
        realm_id: requester.realmId,
        sender_id: requester.userId,
        ...checked,
        scheduled_timestamp: input.deliverAt,
        read_by_sender: readBySender,
        sending_client: input.sendingClient,
      },
    });
    await sendScheduledEvent(deps, tx, requester.realmId, requester.userId, {
      type: 'scheduled_messages',
      op: 'add',
      scheduled_messages: [scheduledMessageDict(created)],
    });
    return created;
  });
  await enqueueDelivery(deps, row);
  return row.id;
}

export interface EditInput {
  type: 'stream' | 'private' | undefined;
  to: string | undefined;
  topic: string | undefined;
  content: string | undefined;
  deliverAt: Date | undefined;
  sendingClient: string;
  /** Parses `to` for the (new or existing) type. */
  parseTo(type: 'stream' | 'private', raw: string): number | number[];
}

/** Zulip's edit_scheduled_message. */
export async function doEditScheduledMessage(deps: MessagesDeps, requester: Requester, id: number, input: EditInput) {
  const { before, after } = await transaction(deps.db, async (tx) => {
    const row = await accessScheduledMessage(tx.db, requester.userId, id, { lock: true });
    // Locked: a delivery in progress has committed, and its delivered=true is seen here.
    if (row.delivered) throw new JsonableError('Scheduled message was already sent');
    if (row.failed && input.deliverAt === undefined) throw new JsonableError(DELIVERY_NOT_IN_FUTURE);
    const type = input.type ?? (row.type as 'stream' | 'private');
    const changes: Prisma.ScheduledMessageUpdateInput = { sending_client: input.sendingClient };
    if (input.type !== undefined || input.to !== undefined || input.content !== undefined) {
      const to = input.to !== undefined ? input.to : null;
      let address: ScheduledAddress;
      if (type === 'stream') {
        const streamId = to !== null ? (input.parseTo('stream', to) as number) : row.stream_id;
        address = { type: 'stream', streamId: streamId ?? 0, topic: input.topic ?? row.topic };
      } else {
        address = { type: 'private', to: to !== null ? (input.parseTo('private', to) as number[]) : row.to };
      }
      const checked = await checkScheduledMessage(
        { db: tx.db as unknown as Db },
        requester,
        address,
        input.content ?? row.content,
      );
      if (input.type !== undefined || input.to !== undefined) {
        Object.assign(changes, { type: checked.type, stream_id: checked.stream_id, to: checked.to });
        changes.topic = checked.topic;
      } else if (input.topic !== undefined && row.type === 'stream') {
        changes.topic = checked.topic;
      }
      if (input.content !== undefined) {
        changes.content = checked.content;
        changes.rendered_content = checked.rendered_content;
      }
    } else if (input.topic !== undefined && row.type === 'stream') {
      // Only the topic: checked as a channel message's topic would be.
      const checked = await checkScheduledMessage(
        { db: tx.db as unknown as Db },
        requester,
        { type: 'stream', streamId: row.stream_id!, topic: input.topic },
        row.content,
      );
      changes.topic = checked.topic;
    }
    if (input.deliverAt !== undefined) changes.scheduled_timestamp = input.deliverAt;
    if (row.failed) {
      changes.failed = false;
      changes.failure_message = null;
    }
    const updated = await tx.db.scheduledMessage.update({ where: { id: row.id }, data: changes });
    await sendScheduledEvent(deps, tx, requester.realmId, requester.userId, {
      type: 'scheduled_messages',
      op: 'update',
      scheduled_message: scheduledMessageDict(updated),
    });
    return { before: row, after: updated };
  });
  if (after.scheduled_timestamp.getTime() !== before.scheduled_timestamp.getTime() || before.failed) {
    await dropDelivery(deps, before);
    await enqueueDelivery(deps, after);
  }
}

/** Zulip's delete_scheduled_message. */
export async function doDeleteScheduledMessage(deps: MessagesDeps, requester: Requester, id: number) {
  const row = await transaction(deps.db, async (tx) => {
    const found = await accessScheduledMessage(tx.db, requester.userId, id, { lock: true });
    await tx.db.scheduledMessage.delete({ where: { id: found.id } });
    await sendScheduledEvent(deps, tx, requester.realmId, requester.userId, {
      type: 'scheduled_messages',
      op: 'remove',
      scheduled_message_id: found.id,
    });
    return found;
  });
  await dropDelivery(deps, row);
}

/**
 * The send path run inside `tx`: its statements join the transaction (a nested transaction()
 * runs in it too) and its events are published only once `tx` has committed.
 */
function withinTransaction(deps: MessagesDeps, tx: Tx): MessagesDeps {
  const db = new Proxy(tx.db, {
    get(target, property) {
      if (property === '$transaction') return (run: (client: typeof target) => unknown) => run(target);
      const value = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as unknown as Db;
  const bus = Object.create(deps.bus, {
    outboxWrite: {
      value: (...args: Parameters<MessagesDeps['bus']['outboxWrite']>) => {
        const write = deps.bus.outboxWrite(...args);
        return Object.create(write, {
          publish: {
            value: (row: Parameters<typeof write.publish>[0]) => {
              tx.onCommit(() => write.publish(row));
              return Promise.resolve();
            },
          },
        });
      },
    },
  }) as MessagesDeps['bus'];
  return { ...deps, db, bus };
}

export type DeliveryOutcome =
  | { outcome: 'delivered'; message_id: number }
  | { outcome: 'failed'; failure_message: string }
  | { outcome: 'skipped' };

/**
 * Delivers a due scheduled message (Zulip's try_deliver_one_scheduled_message), at most once.
 * A message the sender may no longer send (archived channel, lost access, ...) is marked failed
 * with Zulip's error, and its owner's clients get the update. Errors other than Zulip's (the
 * database unreachable) roll everything back and are thrown: the job or the next poll retries.
 */
export async function doDeliverScheduledMessage(
  deps: MessagesDeps,
  senderId: number,
  id: number,
): Promise<DeliveryOutcome> {
  return transaction(deps.db, async (tx) => {
    const [row] = await tx.db.$queryRaw<(ScheduledMessage & { due: boolean; late: boolean })[]>`
      SELECT *, scheduled_timestamp <= now() AS due,
        now() > scheduled_timestamp + make_interval(secs => ${SCHEDULED_MESSAGE_LATE_CUTOFF_MS / 1000}) AS late
      FROM scheduled_message WHERE id = ${id} AND sender_id = ${senderId} FOR UPDATE`;
    if (!row || row.delivered || row.failed || !row.due || row.delivery_type !== 1) return { outcome: 'skipped' };
    const sender = await tx.db.userProfile.findUniqueOrThrow({
      where: { id: row.sender_id },
      include: { realm: true },
    });
    // Zulip repeats validate_account_and_subdomain's checks, and tells no one of these failures.
    let failure: string;
    let notify = true;
    if (sender.realm.deactivated) {
      failure = 'This organization has been deactivated';
      notify = false;
    } else if (!sender.is_active) {
      failure = 'Account is deactivated';
      notify = false;
    } else if (row.late) {
      failure = 'Message could not be sent at the scheduled time.';
    } else {
      const requester: Requester = {
        userId: sender.id,
        realmId: sender.realm_id,
        role: sender.role,
        email: sender.email,
        isBot: sender.is_bot,
      };
      const options = { sendingClient: row.sending_client, readBySender: row.read_by_sender ?? false };
      // A refused send must leave the transaction usable to record the failure.
      await tx.db.$executeRaw`SAVEPOINT scheduled_send`;
      try {
        const sent = await doSendMessage(
          withinTransaction(deps, tx),
          requester,
          row.type === 'stream'
            ? { type: 'stream', to: row.stream_id!, topic: row.topic, content: row.content, options }
            : { type: 'private', to: row.to, content: row.content, options },
        );
        await tx.db.scheduledMessage.update({
          where: { id: row.id },
          data: { delivered: true, delivered_message_id: sent.id },
        });
        await sendScheduledEvent(deps, tx, row.realm_id, row.sender_id, {
          type: 'scheduled_messages',
          op: 'remove',
          scheduled_message_id: row.id,
        });
        return { outcome: 'delivered', message_id: sent.id };
      } catch (error) {
        if (!(error instanceof JsonableError)) throw error;
        await tx.db.$executeRaw`ROLLBACK TO SAVEPOINT scheduled_send`;
        failure = error.message;
      }
    }
    const updated = await tx.db.scheduledMessage.update({
      where: { id: row.id },
      data: { failed: true, failure_message: failure },
    });
    if (notify) {
      await sendScheduledEvent(deps, tx, row.realm_id, row.sender_id, {
        type: 'scheduled_messages',
        op: 'update',
        scheduled_message: scheduledMessageDict(updated),
      });
      // The notification bot tells the sender (Zulip's send_failed_scheduled_message_notification).
      const written = await writeInternalMessage(tx.db, {
        realm: sender.realm,
        sender: await getSystemBot(tx.db),
        to: { userIds: [sender.id] },
        content: failedScheduledMessageNotice(row.scheduled_timestamp, failure),
      });
      for (const { event, users } of written.events) await deps.bus.sendEventOnCommit(tx, row.realm_id, event, users);
    }
    return { outcome: 'failed', failure_message: failure };
  });
}

/** Python's str() of an aware UTC datetime, as Zulip writes the time into the notice. */
function pythonUtcDatetime(date: Date): string {
  const iso = date.toISOString();
  const fraction = date.getUTCMilliseconds() === 0 ? '' : `.${iso.slice(20, 23)}000`;
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction}+00:00`;
}

/** Zulip 10.2's words for a scheduled message that could not be sent. */
export function failedScheduledMessageNotice(scheduledAt: Date, error: string): string {
  return [
    `The message you scheduled for <time:${pythonUtcDatetime(scheduledAt)}>  was not sent because of the following error:`,
    `> ${error}`,
    '[View scheduled messages](#scheduled)',
  ].join('\n\n');
}
