// Messages benchmark (issue "Messaging service"), each figure beside a raw-SQL baseline
// measured in the same run on the same tables:
//   1. mark-all-read of 50,000 unread messages end to end (POST /mark_all_as_read through the
//      gateway, the messages service, the BullMQ job in the worker: batches of 2000, newest
//      first, each with its update_message_flags event in the outbox) against a raw loop of the
//      same batched UPDATEs (one connection, one transaction per batch). Goal >= 0.8x.
//   2. flags over a 5,000-message narrow (POST /messages/flags/narrow: the narrow's range query,
//      the locked UPDATE, the event with 5,000 ids) against one SQL UPDATE of the same rows.
//      Goal >= 0.5x.
//   3. POST /messages to a channel with 1,000 subscribers (rendering, permission checks, the
//      message, 1,000 user_message rows, the message event with 1,000 recipients): messages/s
//      and p99 latency, beside the raw cost of inserting the message and its 1,000 rows.
//   4. The same send with one sender on an otherwise idle stack, one message at a time: p50/p99
//      latency beside the raw INSERTs of the same rows, one at a time. Goal p50 <= 40 ms.
// Rounds alternate which side goes first; the table reports medians.
// BENCH_MESSAGES_PHASES=send,idle (any of markread, narrow, send, idle; default all) runs only
// those. BENCH_PROFILE_DIR=<dir>: a V8 CPU profile of this process (the gateway and the
// messages service run in it) while the sending phases run.
// Run: npm run bench -- messages   (see bench/README.md).

import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startStack, type Stack } from '@teamchat/stack';
import { cpuMs } from '../lib/procs';
import { median, percentile, report, type Row } from '../lib/report';

const UNREAD = Number(process.env.BENCH_MESSAGES_UNREAD ?? 50_000);
const MARK_BATCH = 2000;
const NARROW_SIZE = 5000;
const SUBSCRIBERS = 1000;
const SENDS = Number(process.env.BENCH_MESSAGES_SENDS ?? 400);
const SEND_CONCURRENCY = 4;
const IDLE_SENDS = Number(process.env.BENCH_MESSAGES_IDLE_SENDS ?? 200);
const ROUNDS = Number(process.env.BENCH_MESSAGES_ROUNDS ?? 3);
const PHASES = new Set(
  (process.env.BENCH_MESSAGES_PHASES ?? 'markread,narrow,send,idle').split(',').map((phase) => phase.trim()),
);
for (const phase of PHASES)
  if (!['markread', 'narrow', 'send', 'idle'].includes(phase)) throw new Error(`unknown phase '${phase}'`);
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;

const seconds = (started: bigint) => Number(process.hrtime.bigint() - started) / 1e9;

async function bulkMembers(stack: Stack, count: number, prefix: string): Promise<number[]> {
  const rows = await stack.db.$queryRaw<{ id: number }[]>`
    INSERT INTO user_profile (realm_id, email, delivery_email, full_name)
    SELECT ${stack.realm.id}, ${prefix} || n || '@example.com', ${prefix} || n || '@example.com', 'Member ' || n
    FROM generate_series(1, ${count}) AS n RETURNING id`;
  return rows.map((row) => row.id);
}

/** `count` channel messages, each with an unread row for every reader. */
async function writeMessages(
  stack: Stack,
  streamId: number,
  senderId: number,
  readers: number[],
  count: number,
  topic: string,
): Promise<void> {
  await stack.db.$executeRaw`
    WITH inserted AS (
      INSERT INTO message (realm_id, sender_id, stream_id, topic, content, rendered_content)
      SELECT ${stack.realm.id}, ${senderId}, ${streamId}, ${topic}, 'message ' || n, '<p>message ' || n || '</p>'
      FROM generate_series(1, ${count}) AS n
      RETURNING id
    )
    INSERT INTO user_message (user_profile_id, message_id, flags)
    SELECT u, inserted.id, 0 FROM inserted CROSS JOIN unnest(${readers}::int[]) AS u`;
}

async function vacuum(stack: Stack): Promise<void> {
  await stack.db.$executeRawUnsafe('VACUUM ANALYZE user_message');
  await stack.db.$executeRawUnsafe('ANALYZE message');
}

/** Baseline 1: the worker's batches as plain SQL on one connection. */
async function rawMarkAllRead(client: pg.Client, userId: number): Promise<number> {
  let marked = 0;
  for (;;) {
    await client.query('BEGIN');
    const { rowCount } = await client.query(
      `UPDATE user_message um SET flags = um.flags | 1
       FROM (SELECT id FROM user_message WHERE user_profile_id = $1 AND (flags & 1) = 0 ORDER BY message_id DESC LIMIT $2 FOR UPDATE) batch
       WHERE um.id = batch.id`,
      [userId, MARK_BATCH],
    );
    await client.query('COMMIT');
    if (!rowCount) return marked;
    marked += rowCount;
  }
}

async function markAllReadBench(stack: Stack, raw: pg.Client): Promise<Row[]> {
  const sender = await stack.createUser({ fullName: 'Bench sender' });
  const teamchatReader = await stack.createUser({ fullName: 'Teamchat reader' });
  const baselineReader = await stack.createUser({ fullName: 'Baseline reader' });
  const stream = await stack.createStream({
    name: 'mark all read',
    creatorId: sender.id,
    subscribers: [sender.id, teamchatReader.id, baselineReader.id],
  });
  await writeMessages(stack, stream.id, sender.id, [teamchatReader.id, baselineReader.id], UNREAD, 'unread');
  const teamchatSeconds: number[] = [];
  const baselineSeconds: number[] = [];
  const unread = async (userId: number) =>
    Number(
      (
        await stack.db.$queryRaw<
          { n: bigint }[]
        >`SELECT count(*) AS n FROM user_message WHERE user_profile_id = ${userId} AND (flags & 1) = 0`
      )[0].n,
    );

  const teamchat = async () => {
    const started = process.hrtime.bigint();
    for (let complete = false; !complete;) {
      const response = await teamchatReader.client.post('/api/v1/mark_all_as_read');
      if (response.body.result !== 'success') throw new Error(JSON.stringify(response.body));
      complete = response.body.complete;
    }
    teamchatSeconds.push(seconds(started));
    if ((await unread(teamchatReader.id)) !== 0) throw new Error('teamchat left messages unread');
  };
  const baseline = async () => {
    const started = process.hrtime.bigint();
    const marked = await rawMarkAllRead(raw, baselineReader.id);
    baselineSeconds.push(seconds(started));
    if (marked !== UNREAD) throw new Error(`baseline marked ${marked}`);
  };
  // Warm both paths up (query plans, the job queue's connections) on a small backlog.
  const warm = await stack.createUser({ fullName: 'Warm-up reader' });
  await stack.subscribe(stream.id, [warm.id]);
  await writeMessages(stack, stream.id, sender.id, [warm.id], 3 * MARK_BATCH, 'warm');
  await warm.client.post('/api/v1/mark_all_as_read');
  await stack.db.$executeRaw`UPDATE user_message SET flags = 0 WHERE user_profile_id = ${warm.id}`;
  await rawMarkAllRead(raw, warm.id);
  for (let round = 1; round <= ROUNDS; round++) {
    await stack.db
      .$executeRaw`UPDATE user_message SET flags = 0 WHERE user_profile_id IN (${teamchatReader.id}, ${baselineReader.id})`;
    await vacuum(stack);
    if (round % 2) {
      await baseline();
      await teamchat();
    } else {
      await teamchat();
      await baseline();
    }
    console.log(
      `  mark-all-read round ${round}: teamchat ${teamchatSeconds.at(-1)!.toFixed(2)} s, raw SQL ${baselineSeconds.at(-1)!.toFixed(2)} s`,
    );
  }
  return [
    {
      metric: `mark all read, ${UNREAD} unread`,
      value: UNREAD / median(teamchatSeconds),
      baseline: UNREAD / median(baselineSeconds),
      unit: 'messages/s',
      better: 'higher',
      goal: '>= 0.8',
    },
    {
      metric: '  time (median)',
      value: median(teamchatSeconds),
      baseline: median(baselineSeconds),
      unit: 's',
      better: 'lower',
    },
  ];
}

async function narrowFlagsBench(stack: Stack, raw: pg.Client): Promise<Row[]> {
  const sender = await stack.createUser({ fullName: 'Narrow sender' });
  const teamchatReader = await stack.createUser({ fullName: 'Narrow reader' });
  const baselineReader = await stack.createUser({ fullName: 'Narrow baseline' });
  const stream = await stack.createStream({
    name: 'narrow flags',
    creatorId: sender.id,
    subscribers: [sender.id, teamchatReader.id, baselineReader.id],
  });
  const other = await stack.createStream({
    name: 'elsewhere',
    creatorId: sender.id,
    subscribers: [sender.id, teamchatReader.id, baselineReader.id],
  });
  // Messages outside the narrow around it, so the range query has to select.
  await writeMessages(stack, other.id, sender.id, [teamchatReader.id, baselineReader.id], NARROW_SIZE, 'other');
  await writeMessages(stack, stream.id, sender.id, [teamchatReader.id, baselineReader.id], NARROW_SIZE, 'in narrow');
  await writeMessages(stack, other.id, sender.id, [teamchatReader.id, baselineReader.id], NARROW_SIZE, 'other');
  await vacuum(stack);
  const teamchatSeconds: number[] = [];
  const baselineSeconds: number[] = [];
  // Warm-up: the same request once, unmeasured.
  await teamchatReader.client.post('/api/v1/messages/flags/narrow', {
    anchor: 'newest',
    num_before: 10,
    num_after: 0,
    narrow: [{ operator: 'channel', operand: stream.id }],
    op: 'add',
    flag: 'starred',
  });
  const rounds = ROUNDS * 2;
  for (let round = 1; round <= rounds; round++) {
    await stack.db
      .$executeRaw`UPDATE user_message SET flags = 0 WHERE user_profile_id IN (${teamchatReader.id}, ${baselineReader.id}) AND flags <> 0`;
    const teamchat = async () => {
      const started = process.hrtime.bigint();
      const response = await teamchatReader.client.post('/api/v1/messages/flags/narrow', {
        anchor: 'newest',
        num_before: NARROW_SIZE,
        num_after: 0,
        narrow: [{ operator: 'channel', operand: stream.id }],
        op: 'add',
        flag: 'starred',
      });
      teamchatSeconds.push(seconds(started));
      if (response.body.updated_count !== NARROW_SIZE) throw new Error(JSON.stringify(response.body));
    };
    const baseline = async () => {
      const started = process.hrtime.bigint();
      const { rowCount } = await raw.query(
        `UPDATE user_message um SET flags = um.flags | 2 FROM message m
         WHERE m.id = um.message_id AND um.user_profile_id = $1 AND m.stream_id = $2 AND (um.flags & 2) = 0`,
        [baselineReader.id, stream.id],
      );
      baselineSeconds.push(seconds(started));
      if (rowCount !== NARROW_SIZE) throw new Error(`baseline updated ${rowCount}`);
    };
    if (round % 2) {
      await baseline();
      await teamchat();
    } else {
      await teamchat();
      await baseline();
    }
  }
  console.log(
    `  flags over a narrow: teamchat ${teamchatSeconds.map((s) => (s * 1000).toFixed(0)).join(' ')} ms; raw ${baselineSeconds.map((s) => (s * 1000).toFixed(0)).join(' ')} ms`,
  );
  return [
    {
      metric: `flags over a ${NARROW_SIZE}-message narrow`,
      value: NARROW_SIZE / median(teamchatSeconds),
      baseline: NARROW_SIZE / median(baselineSeconds),
      unit: 'messages/s',
      better: 'higher',
      goal: '>= 0.5',
    },
    {
      metric: '  time (median)',
      value: median(teamchatSeconds) * 1000,
      baseline: median(baselineSeconds) * 1000,
      unit: 'ms',
      better: 'lower',
    },
  ];
}

interface SendRun {
  perSecond: number;
  p99: number;
  p50: number;
  /** CPU ms per message: this process (client, gateway, services, worker) and the database's backends. */
  nodeCpu: number;
  postgresCpu: number;
}

/**
 * Waits until the worker has no message-notifications job left (each send queues one), so a
 * run does not pay for the previous run's backlog.
 */
async function settle(stack: Stack): Promise<void> {
  const queue = stack.deps.jobs.queue('message-notifications');
  const deadline = Date.now() + 300_000;
  for (;;) {
    const counts = await queue.getJobCounts('waiting', 'active', 'prioritized');
    if (Object.values(counts).every((n) => n === 0)) break;
    if (Date.now() > deadline) throw new Error(`the worker's backlog did not drain: ${JSON.stringify(counts)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The vacuum the previous run's rows call for, now rather than by autovacuum during the next
  // run (turned off for these tables in main): whichever side it fell on would pay for both.
  await stack.db.$executeRawUnsafe('VACUUM ANALYZE user_message');
  await stack.db.$executeRawUnsafe('VACUUM ANALYZE message');
  await stack.db.$executeRawUnsafe('VACUUM event_outbox');
}

/**
 * CPU ms so far of the PostgreSQL client backends connected to `database` (the server is shared:
 * other databases' backends are left out). A backend that ends meanwhile is not counted.
 */
async function backendCpu(raw: pg.Client, database: string): Promise<Map<number, number>> {
  const { rows } = await raw.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'",
    [database],
  );
  return new Map(rows.map(({ pid }) => [pid, cpuMs(pid)]));
}

/** The 1,000-subscriber channel both sending phases send to. */
async function loudChannel(stack: Stack) {
  const sender = await stack.createUser({ fullName: 'Loud sender' });
  const members = await bulkMembers(stack, SUBSCRIBERS - 1, 'subscriber');
  const stream = await stack.createStream({
    name: 'a thousand',
    creatorId: sender.id,
    subscribers: [sender.id, ...members],
  });
  return { sender, stream, recipients: [sender.id, ...members] };
}

type LoudChannel = Awaited<ReturnType<typeof loudChannel>>;

/**
 * Sends through the API against raw INSERTs of the same rows, `sends` messages per side and
 * round, `concurrency` at a time.
 */
async function sendBench(
  stack: Stack,
  raw: pg.Client,
  channel: LoudChannel,
  settings: { label: string; sends: number; concurrency: number },
): Promise<{ teamchat: SendRun; baseline: SendRun }> {
  const { sender, stream, recipients } = channel;
  const { sends, concurrency } = settings;
  const pool = new pg.Pool({ connectionString: stack.database.url, max: concurrency });

  const run = async (one: (n: number) => Promise<void>): Promise<SendRun> => {
    await settle(stack);
    const latencies: number[] = [];
    let next = 0;
    const backendsBefore = await backendCpu(raw, stack.database.name);
    const nodeBefore = cpuMs(process.pid);
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let n = next++; n < sends; n = next++) {
          const t = process.hrtime.bigint();
          await one(n);
          latencies.push(seconds(t) * 1000);
        }
      }),
    );
    const elapsed = seconds(started);
    const nodeCpu = (cpuMs(process.pid) - nodeBefore) / sends;
    let postgres = 0;
    for (const [pid, ms] of await backendCpu(raw, stack.database.name)) postgres += ms - (backendsBefore.get(pid) ?? 0);
    return {
      perSecond: sends / elapsed,
      p99: percentile(latencies, 99),
      p50: percentile(latencies, 50),
      nodeCpu,
      postgresCpu: postgres / sends,
    };
  };
  const teamchat = () =>
    run(async (n) => {
      // Unvalidated: checking every answer against the OpenAPI document is the tests' job, and
      // here it would be CPU the client takes from the server (the raw side's client is bare pg).
      const response = await sender.client.post(
        '/api/v1/messages',
        { type: 'stream', to: stream.id, topic: `round ${n % 10}`, content: `Message number **${n}** for everyone` },
        { validate: false },
      );
      if (response.status !== 200 || typeof response.body.id !== 'number')
        throw new Error(JSON.stringify(response.body));
    });
  // The raw cost: the message row and its 1,000 user_message rows, one transaction each.
  const baseline = () =>
    run(async (n) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const { rows } = await client.query<{ id: number }>(
          `INSERT INTO message (realm_id, sender_id, stream_id, topic, content, rendered_content) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
          [
            stack.realm.id,
            sender.id,
            stream.id,
            `raw ${n % 10}`,
            `Message number **${n}**`,
            `<p>Message number <strong>${n}</strong></p>`,
          ],
        );
        await client.query(
          `INSERT INTO user_message (user_profile_id, message_id, flags) SELECT u, $1, 0 FROM unnest($2::int[]) AS u`,
          [rows[0].id, recipients],
        );
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    });
  // Warm both paths up (connections, plans, JIT) before measuring.
  for (let n = 0; n < 5; n++)
    await sender.client.post('/api/v1/messages', { type: 'stream', to: stream.id, topic: 'warm', content: 'warm up' });
  const results: { teamchat: SendRun; baseline: SendRun }[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    let teamchatResult;
    let baselineResult;
    if (round % 2) {
      baselineResult = await baseline();
      teamchatResult = await teamchat();
    } else {
      teamchatResult = await teamchat();
      baselineResult = await baseline();
    }
    results.push({ teamchat: teamchatResult, baseline: baselineResult });
    const line = (result: SendRun) =>
      `${result.perSecond.toFixed(1)} msg/s (p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms; CPU ms/message: node ${result.nodeCpu.toFixed(1)}, postgres ${result.postgresCpu.toFixed(1)})`;
    console.log(
      `  ${settings.label} round ${round}: teamchat ${line(teamchatResult)}, raw INSERT ${line(baselineResult)} [load ${os.loadavg()[0].toFixed(2)}]`,
    );
  }
  await pool.end();
  const pick = (side: 'teamchat' | 'baseline'): SendRun => {
    const field = (name: keyof SendRun) => median(results.map((result) => result[side][name]));
    return {
      perSecond: field('perSecond'),
      p99: field('p99'),
      p50: field('p50'),
      nodeCpu: field('nodeCpu'),
      postgresCpu: field('postgresCpu'),
    };
  };
  return { teamchat: pick('teamchat'), baseline: pick('baseline') };
}

/** CPU per message, each side's (the raw side's node CPU is the bench's pg client alone). */
function cpuRows(teamchat: SendRun, baseline: SendRun): Row[] {
  return [
    {
      metric: '  CPU ms/message, postgres backends',
      value: teamchat.postgresCpu,
      baseline: baseline.postgresCpu,
      unit: 'ms',
      better: 'lower',
    },
    {
      metric: '  CPU ms/message, this process',
      value: teamchat.nodeCpu,
      baseline: baseline.nodeCpu,
      unit: 'ms',
      better: 'lower',
    },
  ];
}

async function concurrentSendBench(stack: Stack, raw: pg.Client, channel: LoudChannel): Promise<Row[]> {
  const { teamchat, baseline } = await sendBench(stack, raw, channel, {
    label: 'send',
    sends: SENDS,
    concurrency: SEND_CONCURRENCY,
  });
  return [
    {
      metric: `POST /messages, ${SUBSCRIBERS} subscribers (${SEND_CONCURRENCY} senders)`,
      value: teamchat.perSecond,
      baseline: baseline.perSecond,
      unit: 'messages/s',
      better: 'higher',
      goal: '>= 0.7',
    },
    { metric: '  p99 latency', value: teamchat.p99, baseline: baseline.p99, unit: 'ms', better: 'lower' },
    {
      metric: '  p50 latency',
      value: teamchat.p50,
      baseline: baseline.p50,
      unit: 'ms',
      better: 'lower',
      goal: '<= 1.3',
    },
    ...cpuRows(teamchat, baseline),
  ];
}

async function idleSendBench(stack: Stack, raw: pg.Client, channel: LoudChannel): Promise<Row[]> {
  const { teamchat, baseline } = await sendBench(stack, raw, channel, {
    label: 'one sender',
    sends: IDLE_SENDS,
    concurrency: 1,
  });
  return [
    {
      metric: `POST /messages, ${SUBSCRIBERS} subscribers, one sender: p50`,
      value: teamchat.p50,
      baseline: baseline.p50,
      unit: 'ms',
      better: 'lower',
      goal: 'p50 <= 40 ms',
    },
    { metric: '  p99 latency', value: teamchat.p99, baseline: baseline.p99, unit: 'ms', better: 'lower' },
    {
      metric: '  messages/s',
      value: teamchat.perSecond,
      baseline: baseline.perSecond,
      unit: 'messages/s',
      better: 'higher',
    },
    ...cpuRows(teamchat, baseline),
  ];
}

/** BENCH_PROFILE_DIR: a CPU profile of this process while `run` runs (the sending phases). */
async function profiled<T>(name: string, run: () => Promise<T>): Promise<T> {
  if (!PROFILE_DIR) return run();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  try {
    return await run();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    fs.mkdirSync(PROFILE_DIR, { recursive: true });
    const file = path.join(PROFILE_DIR, `${name}-${Date.now()}.cpuprofile`);
    fs.writeFileSync(file, JSON.stringify(profile));
    console.log(`  CPU profile: ${file}`);
    session.disconnect();
  }
}

async function main() {
  const stack = await startStack({
    services: ['messages', 'worker'],
    env: { MARK_ALL_READ_BUDGET_MS: '600000', LOG_LEVEL: 'silent' },
  });
  const raw = new pg.Client({ connectionString: stack.database.url });
  await raw.connect();
  try {
    console.log(
      `  load average at start: ${os
        .loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    );
    const rows: Row[] = [];
    if (PHASES.has('markread')) rows.push(...(await markAllReadBench(stack, raw)));
    if (PHASES.has('narrow')) rows.push(...(await narrowFlagsBench(stack, raw)));
    if (PHASES.has('send') || PHASES.has('idle')) {
      const channel = await loudChannel(stack);
      for (const table of ['user_message', 'message', 'event_outbox'])
        await stack.db.$executeRawUnsafe(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
      await profiled('messages-send', async () => {
        if (PHASES.has('send')) rows.push(...(await concurrentSendBench(stack, raw, channel)));
        if (PHASES.has('idle')) rows.push(...(await idleSendBench(stack, raw, channel)));
      });
    }
    console.log(
      `  load average at end: ${os
        .loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    );
    report('messages', rows, {
      phases: [...PHASES],
      idleSends: IDLE_SENDS,
      unread: UNREAD,
      markBatch: MARK_BATCH,
      narrowSize: NARROW_SIZE,
      subscribers: SUBSCRIBERS,
      sends: SENDS,
      sendConcurrency: SEND_CONCURRENCY,
      rounds: ROUNDS,
    });
  } finally {
    await raw.end();
    await stack.close();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
