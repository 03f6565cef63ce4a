export { createRedis, RedisKeys, type Redis, type RedisClientOptions } from './redis';
export {
  EventBus,
  relayOutbox,
  DEFAULT_EVENT_PARTITIONS,
  type IntakeEntry,
  type OutboxRow,
  type Recipient,
  type ZulipEvent,
} from './events';
export { JobClient, JOB_QUEUES, type JobQueueName } from './jobs';
export { readAuthCache, writeAuthCache, invalidateAuthCache, AUTH_CACHE_TTL_SECONDS, type CachedAuth } from './auth-cache';
