// The contract between the services that enqueue background jobs and the worker that runs
// them: every queue's name and the payload its jobs carry, declared once. JobClient types its
// queues by this map, and each worker processor takes Job<JobData[its queue]>, so a producer and
// the worker that disagree about a payload fail to compile.

/** POST /mark_all_as_read (messages service): mark every unread message of one user read. */
export interface MarkAllReadJobData {
  userId: number;
  realmId: number;
  /** Rows per batch (MARK_ALL_READ_BATCH_SIZE of the messages service). */
  batchSize: number;
  /** Pause between batches (MARK_ALL_READ_BATCH_PAUSE_MS), to leave the database room. */
  pauseMs: number;
}

/** POST /streams/{id}/delete_topic (channels service): delete a topic's messages. */
export interface DeleteTopicJobData {
  realmId: number;
  streamId: number;
  topic: string;
  actingUserId: number;
  /** Protected history: only the messages this user received are deleted. */
  onlyReceivedBy: number | null;
}

/**
 * Uploads no message links any more. Enqueued with {attachmentIds} after messages are deleted;
 * scheduled by the uploads service with {unreferencedOlderThanWeeks}; delayed by the uploads
 * service's UPLOADS_TUS_EXPIRE_AFTER_MS with {unfinishedUpload} when a tus upload is created.
 */
export interface UploadsCleanupJobData {
  /** Delete these now, if no message links them. */
  attachmentIds?: number[];
  /** Delete every unlinked upload older than this. */
  unreferencedOlderThanWeeks?: number;
  /** A resumable upload's path id: removed (bytes, tus metadata) unless it became an attachment. */
  unfinishedUpload?: string;
}

/**
 * A scheduled message's delivery (messages service, POST/PATCH /scheduled_messages), delayed
 * until its time. The worker asks the messages service to deliver it, which does so at most
 * once and only when it is due: a stale job (the time was changed, or it was sent) does nothing.
 */
export interface ScheduledMessageJobData {
  realmId: number;
  scheduledMessageId: number;
  senderId: number;
}

/**
 * POST /export/realm (uploads service): write the organisation's archive into the uploads
 * storage and record it in realm_export row `exportId` (docs/export-format.md).
 */
export interface RealmExportJobData {
  realmId: number;
  exportId: number;
}

/**
 * A sent message's notifications (messages service, after the send commits), delayed by the
 * worker's PUSH_NOTIFICATION_DELAY_MS: decides who gets a push or an email (packages/notifications).
 */
export interface MessageNotificationsJobData {
  realmId: number;
  messageId: number;
  /** Only these recipients (an edit that mentions them for the first time); absent: everyone. */
  onlyUserIds?: number[];
}

/** One push notification of one message to one user's devices, through the bouncer. */
export interface PushNotificationJobData {
  realmId: number;
  userId: number;
  messageId: number;
  /** Why (NotificationTrigger of packages/notifications). */
  trigger: string;
}

/** Messages a user read (messages service, flags) or deleted ones: their push notifications are removed from the devices. */
export interface PushRemovalJobData {
  realmId: number;
  userId: number;
  messageIds: number[];
  /** The messages were deleted (messages service): no flags are left to check or clear. */
  deleted?: boolean;
}

/** A device token added or removed (users service): registered with or removed from the bouncer. */
export interface PushDeviceJobData {
  realmId: number;
  userId: number;
  op: 'register' | 'unregister';
  kind: number;
  token: string;
  iosAppId: string | null;
}

/**
 * An email: an invitation (users service, POST /invites and resend), a user's missed-message
 * batch (worker), or a password-reset link asked for by address (web service: the worker tells an
 * address with no active account so, and the form answers the same either way).
 */
export type EmailJobData =
  | { kind: 'invitation'; realmId: number; preregistrationId: number; resend: boolean }
  | { kind: 'missed-messages'; realmId: number; userId: number; batch: number }
  | { kind: 'password-reset'; realmId: number; email: string };

/**
 * A message that mentions an outgoing webhook bot in a channel, or is a direct message to one
 * (messages service, after the send commits; Zulip's get_service_bot_events): the worker posts
 * it to the bot's service and sends the service's answer as the bot's reply.
 */
export interface OutgoingWebhookJobData {
  realmId: number;
  messageId: number;
  botId: number;
  trigger: 'mention' | 'direct_message';
}

/**
 * An image upload's thumbnails (uploads service, after the upload commits; Zulip's "thumbnail"
 * queue): the worker makes the formats it lacks, stores them, and re-renders the messages that
 * show its placeholder. Also enqueued by a send that raced the job (messages service).
 */
export interface ThumbnailJobData {
  realmId: number;
  /** The upload's image_attachment row. */
  imageAttachmentId: number;
}

/** Every queue's job payload, by queue name: the one list of queues. */
export interface JobData {
  'mark-all-read': MarkAllReadJobData;
  'delete-topic': DeleteTopicJobData;
  'uploads-cleanup': UploadsCleanupJobData;
  'scheduled-message': ScheduledMessageJobData;
  'message-notifications': MessageNotificationsJobData;
  'push-notification': PushNotificationJobData;
  'push-removal': PushRemovalJobData;
  'push-device': PushDeviceJobData;
  email: EmailJobData;
  'realm-export': RealmExportJobData;
  'outgoing-webhook': OutgoingWebhookJobData;
  thumbnail: ThumbnailJobData;
}

export type JobQueueName = keyof JobData;

/** The queue names by a name code can use (a name that is not a queue of JobData fails to compile). */
export const JOB_QUEUES = {
  markAllRead: 'mark-all-read',
  deleteTopic: 'delete-topic',
  uploadsCleanup: 'uploads-cleanup',
  scheduledMessage: 'scheduled-message',
  messageNotifications: 'message-notifications',
  pushNotification: 'push-notification',
  pushRemoval: 'push-removal',
  pushDevice: 'push-device',
  email: 'email',
  realmExport: 'realm-export',
  outgoingWebhook: 'outgoing-webhook',
  thumbnail: 'thumbnail',
} as const satisfies Record<string, JobQueueName>;
