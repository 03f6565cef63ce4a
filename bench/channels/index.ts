// Channels benchmark: deleting a 50,000-message topic end to end (POST delete_topic through the
// gateway, the channels service, the BullMQ job in the worker: batches of 100 with their
// delete_message events, first_message_id, orphaned uploads, user_topic clean-up) against a
// raw SQL loop of the same batched DELETEs on the same tables (SELECT ... LIMIT 100 FOR
// UPDATE; DELETE; COMMIT). Goal: end-to-end throughput >= 0.8x the raw loop.
//
// Each round deletes one freshly written topic each way, alternating which goes first; the
// table reports medians over the rounds.

import pg from 'pg';
import { startStack, type Stack } from '@teamchat/stack';
import { Role } from '@teamchat/domain';
import { median, report } from '../lib/report';

const TOPIC_SIZE = Number(process.env.BENCH_CHANNELS_TOPIC_SIZE ?? 50_000);
const RECIPIENTS = 3;
const ROUNDS = Number(process.env.BENCH_CHANNELS_ROUNDS ?? 5);
const BATCH = 100;

/** A topic of TOPIC_SIZE messages, each received by every recipient, beside a topic that stays. */
async function writeTopic(
  stack: Stack,
  streamId: number,
  senderId: number,
  recipients: number[],
  topic: string,
): Promise<void> {
  await writeTopicOfSize(stack, streamId, senderId, recipients, topic, TOPIC_SIZE);
}

async function writeTopicOfSize(
  stack: Stack,
  streamId: number,
  senderId: number,
  recipients: number[],
  topic: string,
  size: number,
): Promise<void> {
  await stack.db.$executeRaw`
    WITH inserted AS (
      INSERT INTO message (realm_id, sender_id, stream_id, topic, content, rendered_content)
      SELECT ${stack.realm.id}, ${senderId}, ${streamId}, ${topic}, 'message ' || n, '<p>message ' || n || '</p>'
      FROM generate_series(1, ${size}) AS n
      RETURNING id
    )
    INSERT INTO user_message (user_profile_id, message_id, flags)
    SELECT u, inserted.id, 0 FROM inserted CROSS JOIN unnest(${recipients}::int[]) AS u`;
  await stack.db
    .$executeRaw`UPDATE stream SET first_message_id = (SELECT min(id) FROM message WHERE stream_id = ${streamId}) WHERE id = ${streamId}`;
  await stack.db.$executeRaw`ANALYZE message`;
  await stack.db.$executeRaw`ANALYZE user_message`;
}

/** The baseline: the same batches as plain SQL on one connection. */
async function rawDelete(client: pg.Client, streamId: number, topic: string): Promise<number> {
  let deleted = 0;
  for (;;) {
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: number }>(
      'SELECT id FROM message WHERE stream_id = $1 AND lower(topic) = lower($2) ORDER BY id DESC LIMIT $3 FOR UPDATE',
      [streamId, topic, BATCH],
    );
    if (rows.length === 0) {
      await client.query('COMMIT');
      return deleted;
    }
    await client.query('DELETE FROM message WHERE id = ANY($1::int[])', [rows.map((row) => row.id)]);
    await client.query('COMMIT');
    deleted += rows.length;
  }
}

async function main() {
  const stack = await startStack({ services: ['channels', 'worker'] });
  const raw = new pg.Client({ connectionString: stack.database.url });
  await raw.connect();
  try {
    const admin = await stack.createUser({ role: Role.ADMINISTRATOR, fullName: 'Bench admin' });
    const readers = [
      admin.id,
      (await stack.createUser({ fullName: 'Reader 1' })).id,
      (await stack.createUser({ fullName: 'Reader 2' })).id,
    ].slice(0, RECIPIENTS);
    await admin.client.post('/api/v1/users/me/subscriptions', {
      subscriptions: [{ name: 'bench' }],
      principals: readers,
    });
    const streamId = (await stack.db.stream.findFirstOrThrow({ where: { name: 'bench' } })).id;
    await stack.db.$executeRaw`
      INSERT INTO message (realm_id, sender_id, stream_id, topic, content) SELECT ${stack.realm.id}, ${admin.id}, ${streamId}, 'stays', 'x' FROM generate_series(1, 5000)`;

    // A warm service: the first request of a process sets up its job-completion listener.
    await writeTopicOfSize(stack, streamId, admin.id, readers, 'warm-up', 100);
    await admin.client.post(`/api/v1/streams/${streamId}/delete_topic`, { topic_name: 'warm-up' });

    const teamchatSeconds: number[] = [];
    const baselineSeconds: number[] = [];
    const measureTeamchat = async (round: number) => {
      const topic = `teamchat ${round}`;
      await writeTopic(stack, streamId, admin.id, readers, topic);
      const started = process.hrtime.bigint();
      let requests = 0;
      for (let complete = false; !complete; requests++) {
        const res = await admin.client.post(`/api/v1/streams/${streamId}/delete_topic`, { topic_name: topic });
        if (res.body.result !== 'success') throw new Error(JSON.stringify(res.body));
        complete = res.body.complete;
      }
      teamchatSeconds.push(Number(process.hrtime.bigint() - started) / 1e9);
      const left = await stack.db.message.count({ where: { stream_id: streamId, topic } });
      if (left !== 0) throw new Error(`teamchat left ${left} messages`);
      console.log(`  round ${round}: teamchat ${teamchatSeconds.at(-1)!.toFixed(2)} s (${requests} request(s))`);
    };
    const measureBaseline = async (round: number) => {
      const topic = `baseline ${round}`;
      await writeTopic(stack, streamId, admin.id, readers, topic);
      const started = process.hrtime.bigint();
      const deleted = await rawDelete(raw, streamId, topic);
      baselineSeconds.push(Number(process.hrtime.bigint() - started) / 1e9);
      if (deleted !== TOPIC_SIZE) throw new Error(`baseline deleted ${deleted}`);
      console.log(`  round ${round}: raw SQL ${baselineSeconds.at(-1)!.toFixed(2)} s`);
    };
    for (let round = 1; round <= ROUNDS; round++) {
      if (round % 2) {
        await measureBaseline(round);
        await measureTeamchat(round);
      } else {
        await measureTeamchat(round);
        await measureBaseline(round);
      }
    }
    const teamchat = TOPIC_SIZE / median(teamchatSeconds);
    const baseline = TOPIC_SIZE / median(baselineSeconds);
    report(
      'channels',
      [
        {
          metric: `delete a ${TOPIC_SIZE}-message topic`,
          value: teamchat,
          baseline,
          unit: 'messages/s',
          better: 'higher',
          goal: '>= 0.8',
        },
        {
          metric: 'time to delete it (median)',
          value: median(teamchatSeconds),
          baseline: median(baselineSeconds),
          unit: 's',
          better: 'lower',
        },
      ],
      {
        topicSize: TOPIC_SIZE,
        recipientsPerMessage: RECIPIENTS,
        batchSize: BATCH,
        rounds: ROUNDS,
        teamchatSeconds,
        baselineSeconds,
      },
    );
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
