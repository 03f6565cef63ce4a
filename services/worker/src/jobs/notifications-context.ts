// What the notification jobs share in one worker process: the bouncer client (null when push
// notifications are not configured), the mailer and the reader of clients' activity.

import { activityReader, BouncerClient, createMailer, type ActivityReader, type Mailer } from '@teamchat/notifications';
import type { WorkerDeps } from './processor';

export interface NotificationContext {
  bouncer: BouncerClient | null;
  mailer: Mailer;
  activity: ActivityReader;
}

const contexts = new WeakMap<WorkerDeps['config'], NotificationContext>();

export function notificationContext(deps: WorkerDeps): NotificationContext {
  let context = contexts.get(deps.config);
  if (!context) {
    context = {
      bouncer: BouncerClient.configured(deps.config) ? new BouncerClient(deps.config) : null,
      mailer: createMailer(deps.config, deps.logger),
      activity: activityReader({ db: deps.db, redis: deps.redis, prefix: deps.env.REDIS_PREFIX }, deps.config),
    };
    contexts.set(deps.config, context);
  }
  return context;
}

/** Redis keys of a user's missed-message email batch (see message-notifications.ts and email.ts). */
export function missedMessageKeys(deps: WorkerDeps, userId: number, batch?: number) {
  const base = `${deps.env.REDIS_PREFIX}notifications:missed:${userId}`;
  return {
    /** Sorted set of "messageId:trigger", by message id: the batch being gathered. */
    pending: base,
    /** The number of the batch being gathered; an email job starts the next one. */
    batch: `${base}:batch`,
    /** The batch an email job took, kept until it is sent. */
    claimed: `${base}:claimed:${batch}`,
    /** Set once the batch's email goes out: a retried job never sends it again. */
    sent: `${base}:sent:${batch}`,
  };
}
