// Redis going back in time. A Redis restored from an older copy (or restarted without writes it
// had acknowledged) holds queues that silently miss what was appended after the copy: a client
// whose last acknowledged event is still in the old queue would poll on and never see those
// events. Only a record outside Redis can tell, so PostgreSQL keeps one:
//
//   each round, a replica reads `confirmed` and takes the next epoch from `issued` (the row of its
//   Redis key prefix in event_tier_epoch); one script in Redis checks that the Redis epoch is not
//   below `confirmed` and raises it to the next one (never lowers it); once Redis acknowledged
//   that, `confirmed` is raised to it.
//
// Redis's epoch only rises while it keeps its writes, so a Redis epoch below a `confirmed` read
// before means Redis lost an acknowledged write — also for a script re-sent after a restore. Then
// every queue is dropped (clients get BAD_EVENT_QUEUE_ID and re-register with the current state)
// before the epoch is raised again. A loss younger than one round goes unseen here; the outbox
// hold (EVENT_OUTBOX_HOLD_MS, longer than a round) republishes those events instead.

import type { Redis } from '@teamchat/bus';
import { repeat, type Logger, type Repeating } from '@teamchat/core';
import type { Db } from '@teamchat/db';
import { eventTierMetrics } from '@teamchat/telemetry';
import type { QueueStore } from './queue-store';

// KEYS epoch, claim. ARGV confirmed, next, claim lifetime (ms), replica. Raises the epoch to
// `next` (never lowers it) unless it is below `confirmed` (Redis lost an acknowledged write):
// then changes nothing but the claim. Returns 1 when raised or already there; when behind, 0 to
// the one replica that claims this rollback (the claim names the epoch Redis was found at) and
// -1 to every other: one replica drops the queues, not each of them. One script, so a call
// re-sent after a restore still checks.
const ADVANCE = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then
  if redis.call('GET', KEYS[2]) == tostring(current) then return -1 end
  redis.call('SET', KEYS[2], tostring(current), 'PX', ARGV[3])
  return 0
end
if current < tonumber(ARGV[2]) then redis.call('SET', KEYS[1], ARGV[2]) end
return 1
`;

/**
 * How long a rollback's claim keeps other replicas from acting on it: longer than dropping every
 * queue takes; a claimer that dies meanwhile leaves it to the others after this.
 */
const CLAIM_MS = 120_000;

interface AdvanceCommand {
  tcEpochAdvance(
    key: string,
    claim: string,
    confirmed: string,
    next: string,
    claimMs: number,
    replica: string,
  ): Promise<number>;
}

/** 'elsewhere': Redis lost writes, and another replica claimed the rollback (it drops the queues). */
export type RollbackRound = 'ok' | 'rolled-back' | 'elsewhere';

export class RollbackWatch {
  private rounds: Repeating | undefined;
  private readonly metrics = eventTierMetrics();

  /** The row of event_tier_epoch: the deployment's Redis key prefix (one per Redis namespace). */
  private get namespace(): string {
    return this.store.prefix;
  }

  constructor(
    private readonly redis: Redis,
    private readonly db: Db,
    private readonly store: QueueStore,
    private readonly epochKey: string,
    private readonly logger: Logger,
    /** Names the replica in its claim of a rollback. */
    private readonly replicaId = 'events',
  ) {
    if (!('tcEpochAdvance' in redis)) redis.defineCommand('tcEpochAdvance', { numberOfKeys: 2, lua: ADVANCE });
  }

  /** The claim of a rollback, in the epoch key's Cluster slot (the epoch key's name as its hash tag). */
  private get claimKey(): string {
    return this.epochKey.includes('{') ? `${this.epochKey}:rollback` : `{${this.epochKey}}:rollback`;
  }

  /** One check, with the next epoch written and confirmed. */
  async round(): Promise<RollbackRound> {
    // `confirmed` first: whatever it names, Redis had acknowledged before this round began.
    const rows = await this.db.$queryRaw<{ confirmed: bigint }[]>`
      SELECT confirmed FROM event_tier_epoch WHERE namespace = ${this.namespace}`;
    const confirmed = String(rows[0]?.confirmed ?? 0n);
    const [{ issued }] = await this.db.$queryRaw<{ issued: bigint }[]>`
      INSERT INTO event_tier_epoch (namespace, issued) VALUES (${this.namespace}, 1)
      ON CONFLICT (namespace) DO UPDATE SET issued = event_tier_epoch.issued + 1 RETURNING issued`;
    const next = String(issued);
    const redis = this.redis as Redis & AdvanceCommand;
    const advance = (confirmedEpoch: string) =>
      redis.tcEpochAdvance(this.epochKey, this.claimKey, confirmedEpoch, next, CLAIM_MS, this.replicaId);
    let outcome: RollbackRound = 'ok';
    const advanced = await advance(confirmed);
    // Another replica claimed this rollback: it drops the queues and raises the epoch. Recording
    // `confirmed` here could make the next round see the rollback again before it is done.
    if (advanced === -1) return 'elsewhere';
    if (advanced === 0) {
      outcome = 'rolled-back';
      this.metrics.redisRollbacks.inc();
      this.logger.error(
        { confirmed_epoch: confirmed },
        'Redis lost acknowledged writes (restored from an older copy?): dropping every event queue',
      );
      const dropped = await this.store.dropAll();
      this.logger.warn({ queues: dropped }, 'event queues dropped; clients re-register');
      await advance('0');
    }
    await this.db.$executeRaw`
      UPDATE event_tier_epoch SET confirmed = GREATEST(confirmed, ${issued}) WHERE namespace = ${this.namespace}`;
    return outcome;
  }

  /** Rounds every `intervalMs` until stopped; failures (Redis or PostgreSQL away) are logged once per outage. */
  start(intervalMs: number): void {
    let failing = false;
    this.rounds = repeat(() => this.round().then(() => (failing = false)), {
      intervalMs,
      firstDelayMs: 0,
      onError: (error) => {
        if (!failing) this.logger.warn({ err: error }, 'redis rollback check failed');
        failing = true;
      },
    });
  }

  async stop(): Promise<void> {
    await this.rounds?.stop(2000);
  }
}
