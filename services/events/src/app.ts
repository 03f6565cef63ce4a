// The event tier: POST /register, GET /events (long-poll), DELETE /events (the last two also
// straight from clients, with their own credentials: docs/adr/0006), plus the background
// work of every replica: consuming its share of the intake partitions (fan-out), parking and
// waking polls, and relaying outbox rows whose after-commit publish failed.

import { createRedis, durabilityOf, outboxBacklog, relayOutbox, type Redis } from '@teamchat/bus';
import { createServiceApp, repeat, settledWithin } from '@teamchat/core';
import { RealmStateCache } from '@teamchat/state';
import { eventTierMetrics, onScrape } from '@teamchat/telemetry';
import type { BaseDeps, RunningService } from '@teamchat/runtime';
import type { EventsDeps } from './deps';
import { loadEventsEnv } from './env';
import { Fanout } from './lib/fanout';
import { IntakeConsumers } from './lib/intake';
import { PollHub } from './lib/polls';
import { isDirect, isPublicPath, PublicEntry, takeJsonAlias } from './lib/public-entry';
import { QueueStore } from './lib/queue-store';
import { startRedisMemorySampler } from './lib/redis-memory';
import { sampleStandbyLag } from './lib/replica-lag';
import { RollbackWatch } from './lib/rollback-watch';
import { routes } from './routes';
import { isPlainGetEvents, serveDirectViaApp, serveGetEvents } from './views/events';

/**
 * Whether the outbox holds rows the relay would publish (older than its grace: their
 * after-commit publish failed), with the backlog gauges set from the same cheap query, so the
 * relay's transaction runs only when a publish actually failed.
 */
async function relayNeeded(base: BaseDeps): Promise<boolean> {
  const { backlog, oldestSeconds } = await outboxBacklog(base.db, base.env.EVENT_RELAY_GRACE_MS);
  const metrics = eventTierMetrics();
  metrics.outboxBacklog.set(backlog);
  metrics.outboxOldestSeconds.set(oldestSeconds);
  return backlog > 0;
}

/** One relay round: publishes (and deletes) the rows whose after-commit publish failed. */
async function relayRound(base: BaseDeps): Promise<void> {
  if (!(await relayNeeded(base))) return;
  const { published } = await relayOutbox(base.db, base.bus, { graceMs: base.env.EVENT_RELAY_GRACE_MS });
  eventTierMetrics().relayPublished.inc(published);
}

export async function createService(base: BaseDeps, source: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const config = loadEventsEnv(source);
  const logger = base.logger;
  const connectionName = (role: string) => `events:${config.EVENTS_REPLICA_ID}:${role}`;
  const connections: Redis[] = [];
  const connect = (role: string, options: { blocking?: boolean; failFast?: boolean }) => {
    const connection = createRedis(base.env, { ...options, name: connectionName(role) });
    connection.on('error', (error) => logger.debug({ err: error, connection: role }, 'redis connection error'));
    return connection;
  };
  // Polls arriving together share one write to Redis (auto-pipelining batches the commands
  // issued within one turn of the event loop): on the long-poll path that write is most of the cost.
  const commands: Redis = createRedis(base.env, { name: connectionName('commands'), autoPipelining: true });
  commands.on('error', (error) => logger.debug({ err: error, connection: 'commands' }, 'redis connection error'));
  const subscriber = connect('wake', { blocking: true });
  // Intake leases (and the registry, the trims) on a connection of their own: with
  // REDIS_WAIT_REPLICAS the durable writes on `commands` are followed by WAIT, which holds every
  // later command of that connection for up to REDIS_WAIT_TIMEOUT_MS, and a lease renewal must
  // not wait behind it. (Auto-pipelined there, the trims also met MOVED errors after failovers.)
  const leases = connect('leases', {});
  connections.push(commands, subscriber, leases);

  const store = new QueueStore(commands, base.env.REDIS_PREFIX, {
    maxEvents: config.EVENTS_QUEUE_MAX_EVENTS,
    // A queue must not expire under a parked poll: after a poll its keys live this much longer than its lifespan.
    parkAllowanceMs: config.EVENTS_HEARTBEAT_MIN_MS + config.EVENTS_HEARTBEAT_JITTER_MS + 5000,
    indexMarginMs: config.EVENTS_INDEX_MARGIN_MS,
    durability: durabilityOf(base.env),
  });
  const polls = new PollHub(
    store,
    subscriber,
    {
      heartbeatMinMs: config.EVENTS_HEARTBEAT_MIN_MS,
      heartbeatJitterMs: config.EVENTS_HEARTBEAT_JITTER_MS,
      subscriptionLingerMs: config.EVENTS_SUBSCRIPTION_LINGER_MS,
    },
    logger,
  );
  polls.start();

  const fanout = new Fanout(store, base.db, logger);
  const intake = new IntakeConsumers(
    leases,
    (role) => connect(role, { failFast: true }),
    fanout,
    {
      replicaId: config.EVENTS_REPLICA_ID,
      partitions: base.env.EVENT_PARTITIONS,
      leaseMs: config.EVENTS_LEASE_MS,
      batchSize: config.EVENTS_FANOUT_BATCH,
      trimIntervalMs: config.EVENTS_TRIM_INTERVAL_MS,
      keys: base.bus.keys,
    },
    logger,
  );
  intake.start();

  // Outbox rows whose after-commit publish failed are published by the relay (safe in every replica).
  const relay =
    config.EVENTS_RELAY_INTERVAL_MS > 0
      ? repeat(() => relayRound(base), {
          intervalMs: config.EVENTS_RELAY_INTERVAL_MS,
          onError: (error) => logger.warn({ err: error }, 'outbox relay failed'),
        })
      : undefined;

  // Redis restored from an older copy: its queues would silently miss events (rollback-watch.ts).
  const rollbackWatch = new RollbackWatch(
    commands,
    base.db,
    store,
    base.bus.keys.custom('events', 'epoch'),
    logger,
    config.EVENTS_REPLICA_ID,
  );
  if (config.EVENTS_ROLLBACK_CHECK_MS > 0) rollbackWatch.start(config.EVENTS_ROLLBACK_CHECK_MS);

  // Headroom of the noeviction Redis (alerted on): sampled by every replica.
  const memorySampler = startRedisMemorySampler(commands, logger);
  // Read at scrape time for the operator's dashboard: which partitions this replica owns, and
  // how far PostgreSQL's standbys are behind (the primary's view, whichever replica is scraped).
  const stopScrapeHooks = [
    onScrape(() => {
      const owned = new Set(intake.ownedPartitions());
      for (let partition = 0; partition < base.env.EVENT_PARTITIONS; partition++)
        eventTierMetrics().partitionOwned.set({ partition: String(partition) }, owned.has(partition) ? 1 : 0);
    }),
    onScrape(() => sampleStandbyLag(base.db)),
  ];

  // GET and DELETE /api/v1/events straight from clients (the Ingress's route), authenticated here.
  const entry = new PublicEntry(base, config);
  const realmStateCache = new RealmStateCache(config.EVENTS_REALM_STATE_CACHE_MB * 1024 * 1024);
  const deps: EventsDeps = { ...base, events: { config, store, polls, entry, realmStateCache } };
  const app = createServiceApp({
    name: 'events',
    routes,
    deps,
    internalSecret: base.env.INTERNAL_JWT_SECRET,
    logger,
    // Ready means Redis answers: polls need nothing else. PostgreSQL is left out so that its
    // failover does not take every replica's long-polls down with it (docs/events.md, "Faults");
    // register answers 503 on its own meanwhile, and the logs and metrics report the failures.
    ready: async () => {
      // A connection that is down fails at once: a ping would wait in the offline queue.
      for (const connection of [commands, subscriber]) {
        if (connection.status !== 'ready') throw new Error(`Redis connection ${connection.status}`);
      }
      // A ping caught by a disconnect is re-sent after the reconnection: bounded, so the
      // probe gets an answer.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error('Redis did not answer PING within 1 s')), 1000);
      });
      try {
        await Promise.race([commands.ping(), late]);
      } finally {
        clearTimeout(timer);
      }
    },
  });

  let stopping: Promise<void> | undefined;
  const stopBackgroundWork = () =>
    (stopping ??= (async () => {
      // A relay round stuck on an unreachable PostgreSQL must not hold the shutdown: its rows stay for the next relay.
      const relayStopped = relay?.stop(2000);
      await intake.stop();
      await rollbackWatch.stop();
      await relayStopped;
    })());

  return {
    handler: (req, res) => {
      takeJsonAlias(req);
      if (isPlainGetEvents(req)) void serveGetEvents(deps, req, res);
      else if (isPublicPath(req) && isDirect(req)) void serveDirectViaApp(deps, req, res, app);
      else app(req, res);
    },
    async drain() {
      // Parked polls are answered at once; their clients poll again, on another replica.
      polls.drain();
      await stopBackgroundWork();
    },
    async close() {
      polls.close();
      entry.close();
      await stopBackgroundWork();
      await memorySampler.stop();
      for (const stop of stopScrapeHooks) stop();
      // QUIT waits for Redis's answer: with Redis unreachable, give up after a second.
      await settledWithin(Promise.all(connections.map((connection) => connection.quit().catch(() => undefined))), 1000);
      for (const connection of connections) connection.disconnect();
    },
  };
}
