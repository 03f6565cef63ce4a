export {
  clusterNodes,
  confirmReplicated,
  createRedis,
  crossSlotPipeline,
  durabilityOf,
  duplicateRedis,
  forEachMaster,
  isCluster,
  sameSlotGroups,
  RedisKeys,
  ReplicationError,
  settleOnClose,
  slotOf,
  spreadTag,
  type ConnectionLogger,
  type Durability,
  type Redis,
  type RedisClientOptions,
  type RedisTarget,
} from './redis';
export {
  EventBus,
  OutboxWrite,
  relayOutbox,
  outboxBacklog,
  DEFAULT_EVENT_PARTITIONS,
  DEFAULT_RECIPIENT_SHARDS,
  recipientShard,
  DEFAULT_OUTBOX_HOLD_MS,
  DEFAULT_RELAY_GRACE_MS,
  DEFAULT_DEDUP_WINDOW_SECS,
  DEFAULT_PUBLISH_RETRY_MS,
  type EventBusOptions,
  type IntakeEntry,
} from './events';
export {
  ZULIP_EVENT_TYPES,
  type EventFieldsOf,
  type OpsOf,
  type ZulipEvent,
  type ZulipEventByType,
  type ZulipEventOf,
  type ZulipEventType,
  type ZulipEventWithSql,
} from './event-types';
export { EVENT_SCHEMAS, eventProblems, type EventSchemas, type EventSettingValue } from './event-schema';
export { committedSince, outboxMark } from './inspect';
export {
  OUTBOX_DELETE_INTERVAL_MS,
  type LocalEcho,
  type OutboxPayload,
  type OutboxRow,
  type Recipient,
} from './outbox';
export { JobClient, type JobQueue } from './jobs';
export {
  JOB_QUEUES,
  type DeleteTopicJobData,
  type JobData,
  type JobQueueName,
  type MarkAllReadJobData,
  type ThumbnailJobData,
  type UploadsCleanupJobData,
} from './job-data';
export {
  SessionStore,
  SESSION_COOKIE_NAME,
  DEFAULT_SESSION_COOKIE_AGE_SECONDS,
  csrfTokenMatches,
  SESSION_ID_FORMAT,
  sessionCacheKey,
  sessionHash,
  sessionIdFromCookies,
  type Session,
} from './sessions';
export {
  readAuthCache,
  writeAuthCache,
  invalidateAuthCache,
  announceAuthInvalidation,
  userAuthCacheKey,
  DEFAULT_AUTH_CACHE_TTL_SECONDS,
  type AuthCacheEnv,
  type CachedAuth,
} from './auth-cache';
