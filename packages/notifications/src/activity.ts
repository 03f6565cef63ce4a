// Whether a user is "idle" for notifications: Zulip's rule (zerver/tornado/event_queue.py
// receiver_is_off_zulip, and message_send.py's presence_idle_user_ids) is idle = no event queue
// of the user that receives messages is being polled, OR the user's presence has not been
// active for OFFLINE_THRESHOLD_SECS (140 s).
//
// The queues live in Redis, written by the events service (services/events/src/lib/queue-store.ts).
// This reads them without changing anything: the user index `<prefix>events:user:<id>` lists a
// user's queues; each queue's hash `<prefix>{q:<id>}:m` holds its descriptor (d: which event
// types it takes), its lifespan (l, ms) and, while a poll is parked on it, k. Every poll sets the
// hash's time to live to lifespan + park allowance (the events service's heartbeat + 5 s), so
// the time since the last poll is (l + allowance) - PTTL. A queue is being polled when a poll
// is parked on it, or its last poll is recent (a client between two polls).
//
// Why both signals, as Zulip: the queue says whether a client gets the message at all (an app
// in the background polls nothing), presence says whether someone is looking (a browser tab
// left open polls forever).

import type { Db } from '@teamchat/db';
import type { Redis } from '@teamchat/bus';
import { PRESENCE_OFFLINE_THRESHOLD_SECONDS } from '@teamchat/domain';
import type { NotificationsConfig } from './config';

export interface ActivityReader {
  /** Users of `userIds` with a client polling a queue that takes message events. */
  pollingUserIds(userIds: number[]): Promise<Set<number>>;
  /** Users of `userIds` whose presence was active within the offline threshold. */
  presenceActiveUserIds(userIds: number[]): Promise<Set<number>>;
  /** Users of `userIds` that are idle (see above). */
  idleUserIds(userIds: number[]): Promise<Set<number>>;
}

export function activityReader(
  deps: { db: Db; redis: Redis; prefix: string },
  config: Pick<
    NotificationsConfig,
    'EVENTS_HEARTBEAT_MIN_MS' | 'EVENTS_HEARTBEAT_JITTER_MS' | 'PUSH_NOTIFICATION_CLIENT_GRACE_MS'
  >,
): ActivityReader {
  const parkAllowanceMs = config.EVENTS_HEARTBEAT_MIN_MS + config.EVENTS_HEARTBEAT_JITTER_MS + 5000;

  async function pollingUserIds(userIds: number[]): Promise<Set<number>> {
    const polling = new Set<number>();
    if (userIds.length === 0) return polling;
    const indexes = await Promise.all(userIds.map((id) => deps.redis.smembers(`${deps.prefix}events:user:${id}`)));
    const queues = userIds.flatMap((userId, i) => indexes[i].map((queueId) => ({ userId, queueId })));
    if (queues.length === 0) return polling;
    // One command per key (queues are in different cluster slots): ioredis pipelines them.
    const answers = await Promise.all(
      queues.map(async ({ queueId }) => {
        const meta = `${deps.prefix}{q:${queueId}}:m`;
        const [fields, ttl] = await Promise.all([deps.redis.hmget(meta, 'l', 'k', 'd'), deps.redis.pttl(meta)]);
        return { fields, ttl };
      }),
    );
    queues.forEach(({ userId }, i) => {
      const { fields, ttl } = answers[i];
      const [lifespan, parked, descriptor] = fields;
      if (lifespan === null || ttl < 0) return;
      if (!takesMessages(descriptor)) return;
      const sinceLastPollMs = Number(lifespan) + parkAllowanceMs - ttl;
      // A parked poll whose client vanished stays parked until its heartbeat: bounded by the allowance.
      if (
        (parked !== null && sinceLastPollMs < parkAllowanceMs) ||
        sinceLastPollMs < config.PUSH_NOTIFICATION_CLIENT_GRACE_MS
      ) {
        polling.add(userId);
      }
    });
    return polling;
  }

  async function presenceActiveUserIds(userIds: number[]): Promise<Set<number>> {
    if (userIds.length === 0) return new Set();
    const since = new Date(Date.now() - PRESENCE_OFFLINE_THRESHOLD_SECONDS * 1000);
    const rows = await deps.db.userPresence.findMany({
      where: { user_profile_id: { in: userIds }, last_active_time: { gte: since } },
      select: { user_profile_id: true },
    });
    return new Set(rows.map((row) => row.user_profile_id));
  }

  return {
    pollingUserIds,
    presenceActiveUserIds,
    async idleUserIds(userIds) {
      const [polling, present] = await Promise.all([pollingUserIds(userIds), presenceActiveUserIds(userIds)]);
      return new Set(userIds.filter((id) => !polling.has(id) || !present.has(id)));
    },
  };
}

/** Zulip's ClientDescriptor.accepts_messages: no event_types filter, or one that includes "message". */
function takesMessages(descriptor: string | null): boolean {
  if (descriptor === null) return false;
  try {
    const types = (JSON.parse(descriptor) as { eventTypes?: string[] | null }).eventTypes;
    return types === null || types === undefined || types.includes('message');
  } catch {
    return false;
  }
}
