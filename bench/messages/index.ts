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
// Rounds alternate which side goes first; the table reports medians.
// Run: npm run bench -- messages   (see bench/README.md).

import pg from 'pg';
import { startStack, type Stack } from '@teamchat/stack';
import { median, percentile, report, type Row } from '../lib/report';

const UNREAD = Number(process.env.BENCH_MESSAGES_UNREAD ?? 50_000);
const MARK_BATCH = 2000;
const NARROW_SIZE = 5000;
const SUBSCRIBERS = 1000;
const SENDS = Number(process.env.BENCH_MESSAGES_SENDS ?? 400);
const SEND_CONCURRENCY = 4;
const ROUNDS = Number(process.env.BENCH_MESSAGES_ROUNDS ?? 3);

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

async function sendBench(stack: Stack): Promise<Row[]> {
  const sender = await stack.createUser({ fullName: 'Loud sender' });
  const members = await bulkMembers(stack, SUBSCRIBERS - 1, 'subscriber');
  const stream = await stack.createStream({
    name: 'a thousand',
    creatorId: sender.id,
    subscribers: [sender.id, ...members],
  });
  const recipients = [sender.id, ...members];
  const pool = new pg.Pool({ connectionString: stack.database.url, max: SEND_CONCURRENCY });

  const run = async (one: (n: number) => Promise<void>) => {
    const latencies: number[] = [];
    let next = 0;
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: SEND_CONCURRENCY }, async () => {
        for (let n = next++; n < SENDS; n = next++) {
          const t = process.hrtime.bigint();
          await one(n);
          latencies.push(seconds(t) * 1000);
        }
      }),
    );
    return { perSecond: SENDS / seconds(started), p99: percentile(latencies, 99), p50: percentile(latencies, 50) };
  };
  const teamchat = () =>
    run(async (n) => {
      const response = await sender.client.post('/api/v1/messages', {
        type: 'stream',
        to: stream.id,
        topic: `round ${n % 10}`,
        content: `Message number **${n}** for everyone`,
      });
      if (response.status !== 200) throw new Error(JSON.stringify(response.body));
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
  const results: { teamchat: Awaited<ReturnType<typeof run>>; baseline: Awaited<ReturnType<typeof run>> }[] = [];
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
    console.log(
      `  send round ${round}: teamchat ${teamchatResult.perSecond.toFixed(0)} msg/s (p99 ${teamchatResult.p99.toFixed(1)} ms), raw INSERT ${baselineResult.perSecond.toFixed(0)} msg/s (p99 ${baselineResult.p99.toFixed(1)} ms)`,
    );
  }
  await pool.end();
  const pick = (side: 'teamchat' | 'baseline', field: 'perSecond' | 'p99' | 'p50') =>
    median(results.map((result) => result[side][field]));
  return [
    {
      metric: `POST /messages, ${SUBSCRIBERS} subscribers (${SEND_CONCURRENCY} senders)`,
      value: pick('teamchat', 'perSecond'),
      baseline: pick('baseline', 'perSecond'),
      unit: 'messages/s',
      better: 'higher',
    },
    {
      metric: '  p99 latency',
      value: pick('teamchat', 'p99'),
      baseline: pick('baseline', 'p99'),
      unit: 'ms',
      better: 'lower',
    },
    {
      metric: '  p50 latency',
      value: pick('teamchat', 'p50'),
      baseline: pick('baseline', 'p50'),
      unit: 'ms',
      better: 'lower',
    },
  ];
}

async function main() {
  const stack = await startStack({
    services: ['messages', 'worker'],
    env: { MARK_ALL_READ_BUDGET_MS: '600000', LOG_LEVEL: 'silent' },
  });
  const raw = new pg.Client({ connectionString: stack.database.url });
  await raw.connect();
  try {
    const rows = [
      ...(await markAllReadBench(stack, raw)),
      ...(await narrowFlagsBench(stack, raw)),
      ...(await sendBench(stack)),
    ];
    report('messages', rows, {
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
