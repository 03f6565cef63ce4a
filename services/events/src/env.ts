// The event tier's own settings (the common ones come from @teamchat/runtime's baseEnvSpec).
import crypto from 'node:crypto';
import os from 'node:os';
import { env, loadEnv, type EnvOf } from '@teamchat/core';
import { rateLimitEnvSpec } from '@teamchat/runtime';

export const eventsEnvSpec = {
  PORT: env.int('port the event tier listens on', 9105),
  EVENTS_REPLICA_ID: env.string(
    'name of this replica: its intake consumer name and partition lease owner (unique per process)',
    `${os.hostname()}-${process.pid}-${crypto.randomBytes(3).toString('hex')}`,
  ),
  EVENTS_HEARTBEAT_MIN_MS: env.int('shortest time a poll stays parked before a heartbeat answers it', 45_000),
  EVENTS_HEARTBEAT_JITTER_MS: env.int('random extra time added to each heartbeat delay', 10_000),
  EVENTS_QUEUE_LIFESPAN_SECS: env.int(
    'how long a queue lives without a poll, unless queue_lifespan_secs asks for more',
    600,
  ),
  EVENTS_QUEUE_MAX_LIFESPAN_SECS: env.int('the longest queue_lifespan_secs a client may ask for', 7 * 24 * 3600),
  EVENTS_QUEUE_MAX_EVENTS: env.int('queued (unacknowledged) events beyond which a queue is dropped', 10_000),
  EVENTS_MAX_QUEUES_PER_USER: env.int(
    'live event queues a user may hold; registering one more collects the least recently polled',
    100,
  ),
  EVENTS_INDEX_MARGIN_MS: env.int(
    'how much longer than the longest-lived queue it lists a user (or realm) queue index is kept',
    60_000,
  ),
  EVENTS_LEASE_MS: env.int('how long an intake partition stays owned by a replica that stopped renewing it', 3000),
  EVENTS_FANOUT_BATCH: env.int('intake entries fanned out per batch', 200),
  EVENTS_RELAY_INTERVAL_MS: env.int('how often the outbox relay runs (0: never)', 1000),
  EVENTS_TRIM_INTERVAL_MS: env.int('how often acknowledged intake entries are trimmed', 5000),
  EVENTS_ROLLBACK_CHECK_MS: env.int(
    'how often a replica checks that Redis kept every write it acknowledged (0: never); keep it below EVENT_OUTBOX_HOLD_MS',
    500,
  ),
  EVENTS_SUBSCRIPTION_LINGER_MS: env.int('how long a wake-up subscription outlives the poll that made it', 30_000),
  EVENTS_REALM_STATE_CACHE_MB: env.int(
    "memory for register's realm-wide parts (user list, groups...), built once per realm state version",
    64,
  ),
  // The API rate limits of the requests clients send here directly (docs/adr/0006): the gateway's settings.
  ...rateLimitEnvSpec,
};

export type EventsEnv = EnvOf<typeof eventsEnvSpec>;

export function loadEventsEnv(source: NodeJS.ProcessEnv): EventsEnv {
  return loadEnv(eventsEnvSpec, source);
}
