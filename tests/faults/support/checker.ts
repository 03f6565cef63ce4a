// The event tier's checker: the whole stack as processes on a PRIVATE Redis (every event replica
// reaching it through its own TCP proxy), clients on many queues (sticky ones on one queue for
// the whole run, session ones coming and going), the workload writing, and a scripted schedule
// of faults; at the end every queue's stream is judged against the database. Used by
// tests/faults/soak.ts (`npm run soak`, long) and events-checker.test.ts (`npm test`, short).
//
// The verdict, per queue (what the user could see, from user_message, committed while the queue
// existed; "committed before" = the send was answered 200 before):
// - a queue open at the end must have every message newer than its register's max_message_id;
// - a session that left must have every such message answered before it left (it waited for
//   them before leaving, so a queue that silently stopped receiving cannot pass as short);
// - a queue that died with BAD_EVENT_QUEUE_ID must hold a gap-free prefix: no message missing
//   that was answered before a message it did receive was sent; the client must then have
//   re-registered and polled its new queue successfully (recovered);
// - each message once (duplicates: extra copies), none of another user's, and in order: a message
//   must not arrive after one whose send started after its own was answered (causal order).
// Each loss and BAD_EVENT_QUEUE_ID is attributed to the fault that preceded it.

import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, residentBytes, TcpProxy, type ServiceProcess } from '@teamchat/testing';
import { ProcessCluster, type TerminateResult } from './cluster';
import { OwnRedis } from './instances';
import { type QueueRecord, SessionClient } from './sessions';
import { baseline, committedProblems, createParticipants, jobProblems, Workload } from './workload';

export const FAULT_KINDS = [
  'replica-kill',
  'replica-stop',
  'redis-stall',
  'redis-kill-always',
  'redis-kill-everysec',
  'proxy-hold',
  'proxy-cut',
  'proxy-reorder',
  'scale-out',
  'scale-in',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/** A built-in kind, or one a given stack injects (CheckerStack.faults). */
export type AnyFaultKind = FaultKind | (string & {});

/**
 * A stack the caller started and stops (e.g. on several hosts, tests/multihost), with its event
 * replicas started with the settings' lease and heartbeats: the checker runs on it instead of
 * on its own private Redis and database. The built-in Redis and proxy faults need the checker's
 * own Redis; a given stack brings faults of its own.
 */
export interface CheckerStack {
  cluster: ProcessCluster;
  usedMemory(): Promise<number | undefined>;
  /** Faults by kind: each injects one (and ends it) and names its target. */
  faults: Record<string, () => Promise<{ target: string; detail?: string }>>;
}

export interface CheckerSettings {
  /** Length of the faulty part of the run (workload and faults), in seconds. */
  runSecs: number;
  /** Each fault kind this many times, spread evenly over the run in a shuffled order. */
  rounds: number;
  kinds: readonly AnyFaultKind[];
  replicas: number;
  users: number;
  /** Clients on ONE queue for the whole run (per user, round robin), and session clients. */
  stickyClients: number;
  sessionClients: number;
  /** queue_lifespan_secs of sticky and session queues: picked from these. */
  stickyLifespansSecs: number[];
  /**
   * One sticky client each on a user of its own (with these lifespans): no other queue of the
   * user refreshes the user's queue index, as for a user with one client open all day.
   */
  loneLifespansSecs: number[];
  sessionLifespanSecs: [number, number];
  /** How long a session polls before leaving. */
  sessionSecs: [number, number];
  leaseMs: number;
  heartbeatMinMs: number;
  heartbeatJitterMs: number;
  /** How long a fault lasts (stop, stall, hold, cut): longer than the lease. */
  faultMs: number;
  /** How long a killed replica or Redis stays down. */
  downMs: number;
  /** SIGTERM grace: a replica not gone by then ignored it (a failure) and is killed -9. */
  termGraceMs: number;
  /** Pause between sends of each of the workload's two senders. */
  sendPauseMs: number;
  /** Redis memory sample period. */
  sampleEveryMs: number;
  /** The longest wait at the end for streams to catch up. */
  settleMs: number;
  seed: number;
  log: (message: string) => void;
  stack?: CheckerStack;
  /** Given the clients once they exist (a test may look at what they received when). */
  observe?: (clients: readonly SessionClient[]) => void;
}

export interface FaultRecord {
  kind: AnyFaultKind;
  /** Seconds since the run started. */
  t: number;
  at: number;
  target: string;
  ms: number;
  detail?: string;
}

export interface QueueVerdict {
  client: string;
  queueId: string;
  lifespanSecs: number;
  end: string;
  livedSecs: number;
  received: number;
  expected: number;
  lost: number[];
  /** Age of the queue (s) when the first lost message was answered: a loss at a fixed age points at an expiry. */
  firstLostAtAgeSecs?: number;
  duplicated: number[];
  outOfOrder: number[];
  foreign: number[];
}

export interface CheckerReport {
  settings: Omit<CheckerSettings, 'log'>;
  faults: Record<string, number>;
  faultLog: FaultRecord[];
  totals: {
    queues: number;
    lost: number;
    duplicated: number;
    out_of_order: number;
    foreign: number;
    messages_sent: number;
    message_events: number;
  };
  /** Queues with any problem (every queue is in queue_summaries). */
  problemQueues: QueueVerdict[];
  /** Losses and BAD_EVENT_QUEUE_ID answers by the fault that preceded them. */
  attribution: Record<string, { lost: number; bad_queue: number }>;
  badQueue: {
    told: number;
    clients_told: number;
    recovered: number;
    unrecovered: string[];
    restart_before_max: string[];
  };
  sessions: { bucket: string; queues: number; message_events: number; by_end: Record<string, number> }[];
  /** The longest-lived queues (registered once, polled throughout): what "stays connected for hours" rests on. */
  longest: {
    client: string;
    queue: string;
    lifespan_secs: number;
    lived_secs: number;
    received: number;
    expected: number;
    lost: number;
    end: string;
  }[];
  redisMemory: { t: number; used_mib: number }[];
  processMemory: { process: string; start_mib: number; end_mib: number; max_mib: number; samples: number }[];
  sigterm: (TerminateResult & { t: number })[];
  internalErrors: string[];
  committedProblems: string[];
  jobs: { problems: string[]; added: number; completed: number; stalled: number };
  unexpectedExits: string[];
  clientFailures: Record<string, number>;
  workload: Record<string, unknown>;
  loggedProblems: Record<string, unknown[]>;
  failures: string[];
  ok: boolean;
}

/** A small seeded generator (mulberry32): a schedule can be replayed with its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The schedule: every kind `rounds` times, each round shuffled, a scale-out always before its round's scale-in. */
export function schedule(settings: Pick<CheckerSettings, 'kinds' | 'rounds' | 'seed'>): AnyFaultKind[] {
  const rand = random(settings.seed);
  const out: AnyFaultKind[] = [];
  for (let round = 0; round < settings.rounds; round++) {
    const kinds = [...settings.kinds];
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [kinds[i], kinds[j]] = [kinds[j], kinds[i]];
    }
    const outAt = kinds.indexOf('scale-out');
    const inAt = kinds.indexOf('scale-in');
    if (outAt > inAt && inAt >= 0) [kinds[outAt], kinds[inAt]] = [kinds[inAt], kinds[outAt]];
    out.push(...kinds);
  }
  return out;
}

const BUCKETS: [string, number][] = [
  ['< 30 s', 30],
  ['30 s – 1 min', 60],
  ['1 – 2 min', 120],
  ['2 – 5 min', 300],
  ['5 – 15 min', 900],
  ['15 – 30 min', 1800],
  ['30 – 60 min', 3600],
  ['> 60 min', Infinity],
];

const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 100) / 100;
const pick = (rand: () => number, [min, max]: [number, number]) => min + rand() * (max - min);

export async function runChecker(settings: CheckerSettings): Promise<CheckerReport> {
  const { log } = settings;
  const rand = random(settings.seed + 1);
  const given = settings.stack;
  const database = given ? undefined : await createTestDatabase();
  const redis = given ? undefined : await OwnRedis.start({ fsync: 'always' });
  const ownRedis = (): OwnRedis => {
    if (!redis) throw new Error("this fault kind needs the checker's own Redis, not a given stack");
    return redis;
  };
  const proxies = new Map<string, TcpProxy>();
  const proxyOf = async (slotId: string) => {
    let proxy = proxies.get(slotId);
    if (!proxy) proxies.set(slotId, (proxy = await new TcpProxy(() => ownRedis().port).listen()));
    return proxy;
  };
  let cluster: ProcessCluster | undefined;
  const clients: SessionClient[] = [];
  try {
    // Proxies first: a proxy listening on a port the OS picks must not take one freePort() handed a slot.
    if (!given) for (let i = 0; i < settings.replicas; i++) await proxyOf(`events-${i}`);
    cluster = given?.cluster;
    cluster ??= await ProcessCluster.start({
      databaseUrl: database!.url,
      redisUrl: ownRedis().url,
      eventReplicas: settings.replicas,
      maxLogLines: 2000,
      env: {
        EVENTS_LEASE_MS: String(settings.leaseMs),
        EVENTS_HEARTBEAT_MIN_MS: String(settings.heartbeatMinMs),
        EVENTS_HEARTBEAT_JITTER_MS: String(settings.heartbeatJitterMs),
      },
      // Each event replica reaches Redis through its own proxy, so one replica can be cut off alone.
      slotEnv: async (slot) => (slot.kind === 'events' ? { REDIS_URL: (await proxyOf(slot.id)).url } : {}),
    });
    const theCluster = cluster;
    const { users: everyone, channelName } = await createParticipants(
      cluster,
      'checker',
      settings.users + settings.loneLifespansSecs.length,
    );
    const users = everyone.slice(0, settings.users);
    const loneUsers = everyone.slice(settings.users);
    const start = await baseline(cluster);
    const internalErrors: string[] = [];
    const faultLog: FaultRecord[] = [];
    let runStarted = Date.now();
    const since = (at: number) => Math.round((at - runStarted) / 100) / 10;
    /** The latest fault that began before `at` (to attribute losses, BAD_EVENT_QUEUE_ID and 500s). */
    const faultBefore = (at: number) => {
      const fault = [...faultLog].reverse().find((record) => record.at <= at);
      return fault ? `${fault.kind}@${fault.t}s on ${fault.target}` : 'no fault before';
    };
    const onInternalError = (what: string) => {
      if (internalErrors.length < 50)
        internalErrors.push(`${what} at ${since(Date.now())} s, after ${faultBefore(Date.now())}`);
    };
    const workload = new Workload(everyone, clients, channelName, { pauseMs: settings.sendPauseMs });
    const common = {
      pollTimeoutMs: settings.heartbeatMinMs + settings.heartbeatJitterMs + 30_000,
      leaveDrainMs: 30_000,
      sent: () => workload.sent,
      onInternalError,
    };
    for (let i = 0; i < settings.stickyClients; i++) {
      const lifespan = settings.stickyLifespansSecs[i % settings.stickyLifespansSecs.length];
      clients.push(
        new SessionClient(users[i % users.length], `sticky${i}/u${users[i % users.length].id}/${lifespan}s`, {
          ...common,
          mode: 'sticky',
          lifespanSecs: () => lifespan,
          sessionMs: () => Infinity,
          deleteOnLeave: () => false,
        }),
      );
    }
    for (const [i, lifespan] of settings.loneLifespansSecs.entries()) {
      clients.push(
        new SessionClient(loneUsers[i], `lone${i}/u${loneUsers[i].id}/${lifespan}s`, {
          ...common,
          mode: 'sticky',
          lifespanSecs: () => lifespan,
          sessionMs: () => Infinity,
          deleteOnLeave: () => false,
        }),
      );
    }
    for (let i = 0; i < settings.sessionClients; i++) {
      const user = users[(i + 1) % users.length];
      clients.push(
        new SessionClient(user, `session${i}/u${user.id}`, {
          ...common,
          mode: 'sessions',
          lifespanSecs: () => Math.round(pick(rand, settings.sessionLifespanSecs)),
          sessionMs: () => pick(rand, settings.sessionSecs) * 1000,
          deleteOnLeave: () => rand() < 0.5,
        }),
      );
    }
    for (const client of clients) client.start();
    settings.observe?.(clients);
    runStarted = Date.now();
    workload.start();

    // Redis memory over the run, and every process's resident memory (by pid: a restart is a new process).
    const redisMemory: { t: number; used_mib: number }[] = [];
    const processMemory = new Map<number, { process: string; samples: [number, number][] }>();
    const sampler = setInterval(() => {
      const t = since(Date.now());
      void (given ? given.usedMemory() : ownRedis().usedMemory()).then((bytes) => {
        if (bytes !== undefined) redisMemory.push({ t, used_mib: mib(bytes) });
      });
      for (const slot of theCluster.slots.values()) {
        const process = slot.process;
        const rss = process?.running ? residentBytes(process.pid) : undefined;
        if (!process || rss === undefined) continue;
        let entry = processMemory.get(process.pid);
        if (!entry)
          processMemory.set(process.pid, (entry = { process: `${slot.id}#${slot.history.length}`, samples: [] }));
        entry.samples.push([t, mib(rss)]);
      }
    }, settings.sampleEveryMs);

    // The faults.
    const plan = schedule(settings);
    const sigterm: (TerminateResult & { t: number })[] = [];
    const killedByUs = new Set<ServiceProcess>();
    const tailMs = Math.min(20_000, settings.runSecs * 100);
    const gapMs = plan.length ? (settings.runSecs * 1000 - tailMs) / plan.length : 0;
    let rotation = 0;
    const liveReplicas = () => theCluster.slotIds('events').filter((id) => theCluster.slots.get(id)!.process?.running);
    /** A live replica holding partition leases if one can be told (the fault then hits the fan-out), else the next in turn. */
    const target = async (): Promise<string> => {
      const live = liveReplicas();
      const owners = new Set<string>();
      try {
        const keys = await Promise.race([
          theCluster.deps.redis
            .keys(`${theCluster.redisPrefix}events:lease:*`)
            .then((found) => (found.length ? theCluster.deps.redis.mget(...found) : [])),
          sleep(1000).then(() => [] as (string | null)[]),
        ]);
        for (const owner of keys) if (owner) owners.add(owner);
      } catch {
        // Redis unreachable: any replica will do.
      }
      const holders = live.filter((id) => owners.has(theCluster.replicaId(id) ?? ''));
      const from = holders.length ? holders : live;
      return from[rotation++ % from.length];
    };
    const inject = async (kind: AnyFaultKind): Promise<FaultRecord> => {
      const at = Date.now();
      let targetId = 'redis';
      let detail: string | undefined;
      switch (kind) {
        case 'replica-kill': {
          targetId = await target();
          const process = theCluster.slots.get(targetId)!.process!;
          killedByUs.add(process);
          await theCluster.kill(targetId);
          await sleep(settings.downMs);
          await theCluster.startSlot(targetId);
          break;
        }
        case 'replica-stop': {
          targetId = await target();
          theCluster.signal(targetId, 'SIGSTOP');
          await sleep(settings.faultMs);
          theCluster.signal(targetId, 'SIGCONT');
          break;
        }
        case 'redis-stall':
          await ownRedis().stall(settings.faultMs);
          break;
        case 'redis-kill-always':
        case 'redis-kill-everysec': {
          const fsync = kind === 'redis-kill-always' ? 'always' : 'everysec';
          ownRedis().setFsync(fsync);
          // A little traffic under this policy before the crash.
          await sleep(2000);
          await ownRedis().kill();
          await sleep(settings.downMs);
          await ownRedis().startServer();
          ownRedis().setFsync('always');
          detail = `appendfsync ${fsync}`;
          break;
        }
        case 'proxy-hold':
          targetId = await target();
          await (await proxyOf(targetId)).hold(settings.faultMs);
          break;
        case 'proxy-cut':
          targetId = await target();
          await (await proxyOf(targetId)).cut(settings.faultMs);
          break;
        case 'proxy-reorder': {
          targetId = await target();
          // Alternately: the commands connection comes back last (the known loss), or whichever reconnects first.
          const byName = faultLog.filter((fault) => fault.kind === 'proxy-reorder').length % 2 === 0;
          const delay = byName ? { nameMatches: /:commands$/, ms: 1500 } : { firstN: 2, ms: 1500 };
          await (await proxyOf(targetId)).cut(settings.faultMs, delay);
          detail = byName ? 'commands connection back 1.5 s after the others' : 'first 2 reconnects held 1.5 s';
          break;
        }
        case 'scale-out':
          await proxyOf(`events-${theCluster.slotIds('events').length}`);
          targetId = await theCluster.addEventSlot();
          break;
        case 'scale-in': {
          // The oldest live replica: it holds leases and parked polls that must be handed over.
          targetId = liveReplicas()[0];
          const process = theCluster.slots.get(targetId)!.process!;
          killedByUs.add(process);
          const result = await theCluster.terminate(targetId, settings.termGraceMs);
          if (result) {
            sigterm.push({ ...result, t: since(at) });
            detail = `exited after ${result.ms} ms (${result.signal ?? `code ${result.code}`})${result.ignored ? ': IGNORED SIGTERM, killed -9' : ''}`;
          }
          break;
        }
        default: {
          const fault = given?.faults[kind];
          if (!fault) throw new Error(`no fault of kind ${kind}`);
          ({ target: targetId, detail } = await fault());
        }
      }
      return { kind, t: since(at), at, target: targetId, ms: Date.now() - at, detail };
    };

    const runEndsAt = runStarted + settings.runSecs * 1000;
    log(
      `run: ${settings.runSecs} s, ${clients.length} clients (${settings.stickyClients} sticky, ${loneUsers.length} alone on their user), ${plan.length} faults, one every ${Math.round(gapMs / 100) / 10} s`,
    );
    for (let i = 0; i < plan.length; i++) {
      const due = runStarted + (i + 0.5) * gapMs;
      if (due > Date.now()) await sleep(due - Date.now());
      const record = await inject(plan[i]);
      faultLog.push(record);
      const received = clients.reduce(
        (sum, client) => sum + client.queues.reduce((n, queue) => n + queue.messageIds.length, 0),
        0,
      );
      log(
        `fault ${i + 1}/${plan.length} ${record.kind} on ${record.target} (${record.ms} ms)${record.detail ? ` ${record.detail}` : ''}; sent ${workload.sent.length}, message events ${received}`,
      );
    }
    if (runEndsAt > Date.now()) await sleep(runEndsAt - Date.now());
    clearInterval(sampler);

    // The end: stop writing; open queues stay open; wait until they caught up (or settleMs passed).
    log('workload stopping; waiting for the streams to settle');
    await workload.stop();
    for (const client of clients) client.stay();
    const db = cluster.deps.db;
    const rowsOf = async () => {
      const rows = await db.$queryRaw<{ user_profile_id: number; message_id: number; date_sent: Date }[]>`
        SELECT um.user_profile_id, um.message_id, m.date_sent FROM user_message um JOIN message m ON m.id = um.message_id
        WHERE um.message_id > ${start.messageId}`;
      const byUser = new Map<number, Map<number, Date>>();
      for (const row of rows) {
        let messages = byUser.get(row.user_profile_id);
        if (!messages) byUser.set(row.user_profile_id, (messages = new Map()));
        messages.set(row.message_id, row.date_sent);
      }
      return byUser;
    };
    const settleDeadline = Date.now() + settings.settleMs;
    for (;;) {
      const byUser = await rowsOf();
      const behind = clients.filter((client) => {
        const queue = client.open;
        if (!queue) return true; // between queues (re-registering)
        const got = new Set(queue.messageIds);
        return [...(byUser.get(client.user.id)?.keys() ?? [])].some((id) => id > queue.maxMessageId && !got.has(id));
      });
      if (behind.length === 0 || Date.now() > settleDeadline) {
        if (behind.length)
          log(
            `${behind.length} clients still behind after ${settings.settleMs} ms: ${behind.map((client) => client.label).join(', ')}`,
          );
        break;
      }
      await sleep(500);
    }
    await Promise.all(clients.map((client) => client.stop()));
    log('judging');

    const byUser = await rowsOf();
    const sentById = new Map(workload.sent.map((message) => [message.id, message]));
    const queues = clients.flatMap((client) => client.queues);
    const verdicts = queues.map((queue) => judgeQueue(queue, byUser.get(queue.userId) ?? new Map(), sentById));

    // Attribution: the latest fault that began before the message was committed (or the queue told BAD_EVENT_QUEUE_ID).
    const attribution: Record<string, { lost: number; bad_queue: number }> = {};
    const attribute = (key: string, field: 'lost' | 'bad_queue') =>
      ((attribution[key] ??= { lost: 0, bad_queue: 0 })[field] += 1);
    for (const [i, verdict] of verdicts.entries()) {
      for (const id of verdict.lost)
        attribute(
          faultBefore(sentById.get(id)?.answeredAt ?? byUser.get(queues[i].userId)?.get(id)?.getTime() ?? 0),
          'lost',
        );
      if (queues[i].end?.reason === 'bad_queue') attribute(faultBefore(queues[i].end!.at), 'bad_queue');
    }

    // BAD_EVENT_QUEUE_ID: who was told, whether each recovered, and whether the next queue starts after what the dead one had.
    const unrecovered: string[] = [];
    const restartBeforeMax: string[] = [];
    for (const client of clients) {
      for (const bad of client.badQueue)
        if (bad.recoveredAt === undefined)
          unrecovered.push(`${client.label} (queue ${bad.queueId}, told at ${since(bad.at)} s)`);
      for (let i = 0; i + 1 < client.queues.length; i++) {
        const dead = client.queues[i];
        if (dead.end?.reason !== 'bad_queue') continue;
        const next = client.queues[i + 1];
        const newest = Math.max(-1, ...dead.messageIds);
        if (next.maxMessageId < newest || next.registerStartedAt < dead.end.at)
          restartBeforeMax.push(
            `${client.label}: queue ${next.queueId} max_message_id ${next.maxMessageId} < ${newest} received by ${dead.queueId}`,
          );
      }
    }

    const sessions = BUCKETS.map(([bucket, upTo], i) => {
      const inBucket = verdicts.filter(
        (verdict) => verdict.livedSecs < upTo && (i === 0 || verdict.livedSecs >= BUCKETS[i - 1][1]),
      );
      const byEnd: Record<string, number> = {};
      for (const verdict of inBucket) byEnd[verdict.end] = (byEnd[verdict.end] ?? 0) + 1;
      return {
        bucket,
        queues: inBucket.length,
        message_events: inBucket.reduce((sum, verdict) => sum + verdict.received, 0),
        by_end: byEnd,
      };
    });

    const committed = await committedProblems(cluster, workload);
    const jobs = await jobProblems(cluster);
    const unexpectedExits = cluster.unexpectedExits(killedByUs);
    const clientFailures: Record<string, number> = {};
    for (const client of clients)
      for (const [kind, count] of client.failures) clientFailures[kind] = (clientFailures[kind] ?? 0) + count;
    const workloadErrors = workload.internalErrors;

    const totals = {
      queues: verdicts.length,
      lost: verdicts.reduce((sum, verdict) => sum + verdict.lost.length, 0),
      duplicated: verdicts.reduce((sum, verdict) => sum + verdict.duplicated.length, 0),
      out_of_order: verdicts.reduce((sum, verdict) => sum + verdict.outOfOrder.length, 0),
      foreign: verdicts.reduce((sum, verdict) => sum + verdict.foreign.length, 0),
      messages_sent: workload.sent.length,
      message_events: verdicts.reduce((sum, verdict) => sum + verdict.received, 0),
    };
    const faults: Record<string, number> = Object.fromEntries(settings.kinds.map((kind) => [kind, 0]));
    for (const record of faultLog) faults[record.kind]++;
    const badQueue = {
      told: clients.reduce((sum, client) => sum + client.badQueue.length, 0),
      clients_told: clients.filter((client) => client.badQueue.length > 0).length,
      recovered: clients.reduce(
        (sum, client) => sum + client.badQueue.filter((bad) => bad.recoveredAt !== undefined).length,
        0,
      ),
      unrecovered,
      restart_before_max: restartBeforeMax,
    };

    // What makes the run fail (the exit code of the soak, the assertion of the test).
    const failures: string[] = [];
    if (totals.lost) failures.push(`${totals.lost} message events lost`);
    if (totals.duplicated) failures.push(`${totals.duplicated} message events duplicated`);
    if (totals.out_of_order) failures.push(`${totals.out_of_order} message events out of order`);
    if (totals.foreign) failures.push(`${totals.foreign} message events of messages the user cannot see`);
    if (unrecovered.length) failures.push(`${unrecovered.length} clients told BAD_EVENT_QUEUE_ID did not recover`);
    if (restartBeforeMax.length)
      failures.push(`${restartBeforeMax.length} re-registered queues start before what the dead queue had`);
    const allInternal = [...internalErrors, ...workloadErrors];
    if (allInternal.length) failures.push(`${allInternal.length} answers 500`);
    const ignored = sigterm.filter((result) => result.ignored);
    if (ignored.length)
      failures.push(`${ignored.length} replicas did not exit within ${settings.termGraceMs} ms of SIGTERM`);
    const badExits = sigterm.filter((result) => !result.ignored && result.code !== 0);
    if (badExits.length) failures.push(`${badExits.length} replicas exited non-zero on SIGTERM`);
    if (committed.length) failures.push(`${committed.length} answered writes not stored`);
    if (unexpectedExits.length) failures.push(`${unexpectedExits.length} processes died unasked`);
    const missingKinds = settings.kinds.filter((kind) => faults[kind] < settings.rounds);
    if (missingKinds.length) failures.push(`faults not injected as planned: ${missingKinds.join(', ')}`);

    const { log: _log, ...reportSettings } = settings;
    return {
      settings: reportSettings,
      faults,
      faultLog,
      totals,
      problemQueues: verdicts.filter(
        (verdict) =>
          verdict.lost.length + verdict.duplicated.length + verdict.outOfOrder.length + verdict.foreign.length > 0,
      ),
      attribution,
      badQueue,
      sessions,
      longest: [...verdicts]
        .sort((a, b) => b.livedSecs - a.livedSecs)
        .slice(0, 10)
        .map((verdict) => ({
          client: verdict.client,
          queue: verdict.queueId,
          lifespan_secs: verdict.lifespanSecs,
          lived_secs: verdict.livedSecs,
          received: verdict.received,
          expected: verdict.expected,
          lost: verdict.lost.length,
          end: verdict.end,
        })),
      redisMemory,
      processMemory: [...processMemory.values()].map(({ process, samples }) => ({
        process,
        start_mib: samples[0][1],
        end_mib: samples[samples.length - 1][1],
        max_mib: Math.max(...samples.map(([, value]) => value)),
        samples: samples.length,
      })),
      sigterm,
      internalErrors: allInternal,
      committedProblems: committed,
      jobs,
      unexpectedExits,
      clientFailures,
      workload: {
        ...workload.stats,
        answered: {
          messages: workload.sent.length,
          stars: workload.stars.length,
          uploads: workload.uploads.length,
          mark_all_as_read: workload.markAllRequests.length,
        },
      },
      loggedProblems: Object.fromEntries(
        [...cluster.slots.values()]
          .flatMap((slot) =>
            slot.history.map((process, i) => [`${slot.id}#${i + 1}`, process.problems.slice(0, 10)] as const),
          )
          .filter(([, lines]) => lines.length),
      ),
      failures,
      ok: failures.length === 0,
    };
  } finally {
    await Promise.all(clients.map((client) => client.stop()));
    if (!given) await cluster?.stop();
    for (const proxy of proxies.values()) await proxy.close();
    await redis?.stop();
    await database?.drop();
  }
}

/**
 * One queue against the database (`visible`: the user's messages since the baseline, with
 * their commit time): see the header for the rules.
 */
export function judgeQueue(
  queue: QueueRecord,
  visible: Map<number, Date>,
  sent: Map<number, { startedAt: number; answeredAt: number }>,
): QueueVerdict {
  const end = queue.end ?? { at: Date.now(), reason: 'run_end' as const };
  const received = new Set(queue.messageIds);
  const candidates = [...visible.keys()].filter((id) => id > queue.maxMessageId).sort((a, b) => a - b);
  let required: number[];
  if (end.reason === 'run_end') required = candidates;
  else if (end.reason === 'bad_queue') {
    // A gap-free prefix: what was answered before the latest send start among the received is due.
    const latestStart = Math.max(-Infinity, ...queue.messageIds.map((id) => sent.get(id)?.startedAt ?? -Infinity));
    required = candidates.filter((id) => (sent.get(id)?.answeredAt ?? Infinity) < latestStart);
  } else {
    // A session that left: what it waited for before leaving, and anything causally before what it got.
    const waited = new Set(queue.leftWaitingFor ?? []);
    const latestStart = Math.max(-Infinity, ...queue.messageIds.map((id) => sent.get(id)?.startedAt ?? -Infinity));
    required = candidates.filter((id) => waited.has(id) || (sent.get(id)?.answeredAt ?? Infinity) < latestStart);
  }
  const lost = required.filter((id) => !received.has(id));
  const seen = new Set<number>();
  const duplicated: number[] = [];
  const outOfOrder: number[] = [];
  const foreign: number[] = [];
  let latestStart = -Infinity;
  for (const id of queue.messageIds) {
    if (seen.has(id)) {
      duplicated.push(id);
      continue;
    }
    seen.add(id);
    if (!visible.has(id)) foreign.push(id);
    const message = sent.get(id);
    if (!message) continue;
    if (message.answeredAt < latestStart) outOfOrder.push(id);
    latestStart = Math.max(latestStart, message.startedAt);
  }
  return {
    client: queue.client,
    queueId: queue.queueId,
    lifespanSecs: queue.lifespanSecs,
    end: end.reason,
    livedSecs: Math.round((end.at - queue.registeredAt) / 1000),
    received: queue.messageIds.length,
    expected: required.length,
    lost,
    firstLostAtAgeSecs:
      lost.length && sent.get(lost[0])
        ? Math.round((sent.get(lost[0])!.answeredAt - queue.registeredAt) / 1000)
        : undefined,
    duplicated,
    outOfOrder,
    foreign,
  };
}

/** Rows as a plain text table (through `print`, so a test can gather it with the rest). */
function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '  (none)';
  const columns = Object.keys(rows[0]);
  const cells = rows.map((row) => columns.map((column) => String(row[column] ?? '')));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((row) => row[i].length)));
  const line = (values: string[]) => `  ${values.map((value, i) => value.padEnd(widths[i])).join('  ')}`;
  return [line(columns), ...cells.map(line)].join('\n');
}

/** The report as text tables. */
export function printReport(report: CheckerReport, print: (text: string) => void = console.log): void {
  const { totals, badQueue } = report;
  print(
    `\nEvent-tier checker: ${report.settings.runSecs} s, ${report.totals.queues} queues, ${totals.messages_sent} messages sent, ${totals.message_events} message events received`,
  );
  print(
    `lost ${totals.lost}, duplicated ${totals.duplicated}, out of order ${totals.out_of_order}, not the user's ${totals.foreign}`,
  );
  print(
    `BAD_EVENT_QUEUE_ID: told ${badQueue.told} times (${badQueue.clients_told} clients), recovered ${badQueue.recovered}, unrecovered ${badQueue.unrecovered.length}`,
  );
  print('faults injected:');
  print(table(Object.entries(report.faults).map(([kind, count]) => ({ kind, count }))));
  if (Object.keys(report.attribution).length) {
    print('losses and BAD_EVENT_QUEUE_ID by the fault before them:');
    print(table(Object.entries(report.attribution).map(([fault, counts]) => ({ fault, ...counts }))));
  }
  for (const queue of report.problemQueues.slice(0, 20)) {
    const ids = (label: string, list: number[]) =>
      list.length ? ` ${label} ${list.length} [${list.slice(0, 8).join(',')}${list.length > 8 ? ',…' : ''}]` : '';
    const age = queue.firstLostAtAgeSecs !== undefined ? ` (the first at queue age ${queue.firstLostAtAgeSecs} s)` : '';
    print(
      `  ${queue.client} ${queue.queueId} (${queue.end}, lived ${queue.livedSecs} s, lifespan ${queue.lifespanSecs} s, ${queue.received}/${queue.expected}):${ids('lost', queue.lost)}${age}${ids('dup', queue.duplicated)}${ids('order', queue.outOfOrder)}${ids('foreign', queue.foreign)}`,
    );
  }
  print('sessions by length:');
  print(
    table(
      report.sessions
        .filter((row) => row.queues)
        .map(({ by_end, ...row }) => ({ ...row, ends: JSON.stringify(by_end) })),
    ),
  );
  print('longest-lived queues:');
  print(table(report.longest));
  if (report.sigterm.length) {
    print('SIGTERM (scale-in):');
    print(
      table(
        report.sigterm.map(({ slot, pid, ms, code, signal, ignored, t }) => ({
          t,
          slot,
          pid,
          ms,
          exit: signal ?? code,
          ignored,
        })),
      ),
    );
  }
  const memory = report.redisMemory.map((sample) => sample.used_mib);
  if (memory.length)
    print(
      `Redis used_memory: start ${memory[0]} MiB, max ${Math.max(...memory)} MiB, end ${memory[memory.length - 1]} MiB (${memory.length} samples)`,
    );
  print(`client failures (retried): ${JSON.stringify(report.clientFailures)}`);
  print(`workload: ${JSON.stringify(report.workload)}`);
  print(
    `jobs: added ${report.jobs.added}, completed ${report.jobs.completed}, stalled ${report.jobs.stalled}${report.jobs.problems.length ? `; ${report.jobs.problems.slice(0, 5).join('; ')}` : ''}`,
  );
  if (report.internalErrors.length) print(`500 answers:\n  ${report.internalErrors.slice(0, 10).join('\n  ')}`);
  if (report.unexpectedExits.length) print(`processes died unasked:\n${report.unexpectedExits.join('\n')}`);
  print(report.ok ? 'VERDICT: clean' : `VERDICT: FAILED\n  ${report.failures.join('\n  ')}`);
}
