// The events benchmark's second baseline: baseline-server.mjs with its queues kept in Redis, as
// the event tier must keep them (a queue outlives the process that parked its poll, any replica
// answers any queue). The least that takes, and nothing else: no authentication, no metrics,
// no fencing, no indexes in Redis (each user's queues are known in memory), one wake-up channel
// per process instead of one per queue (so no Redis Cluster). Per delivery: one script appends
// the event and, when a poll is parked on the empty queue, publishes the events to the process
// holding it; the client's next poll runs one script that acknowledges, keeps the queue alive
// (it expires 10 minutes after its last poll, as a queue must once its client is gone), and
// reads or parks.
//   node baseline-redis-server.mjs <redis url> <key prefix>
// Same HTTP protocol as baseline-server.mjs (the benchmark drives both with the same client).
import crypto from 'node:crypto';
import http from 'node:http';
import Redis from 'ioredis';
import { readJsonBody as readBody, sendJsonText as json } from './bare-http.mjs';

const [redisUrl, prefix] = process.argv.slice(2);
const HEARTBEAT_MS = 45_000;
/** A queue outlives its last poll by this much, as an event queue does (its lifespan). */
const QUEUE_TTL_MS = 600_000;
const tag = crypto.randomBytes(8).toString('hex');
const wakeChannel = `${prefix}wake:`;

// KEYS meta, events. ARGV last event id, this process's tag, queue ttl ms. Acknowledges the
// events up to the last id, keeps the queue alive, and answers the rest ('' when there are
// none: the poll is then parked here). false: no such queue.
const POLL = `
local p = redis.call('HGET', KEYS[1], 'n')
if not p then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
local last = tonumber(ARGV[1])
local items = redis.call('LRANGE', KEYS[2], 0, -1)
local drop = 0
for i, item in ipairs(items) do
  if tonumber(string.match(item, '^{"id":(%d+)')) <= last then drop = i else break end
end
if drop > 0 then redis.call('LTRIM', KEYS[2], drop, -1) end
if #items > drop then return table.concat(items, ',', drop + 1) end
redis.call('HSET', KEYS[1], 'k', ARGV[2])
return ''
`;

// KEYS meta, events. ARGV event JSON (no id), wake channel prefix, queue id. Appends the event
// with the queue's next id; a poll parked on the queue gets the queued events over pub/sub.
const APPEND = `
local id = redis.call('HINCRBY', KEYS[1], 'n', 1) - 1
if redis.call('RPUSH', KEYS[2], '{"id":' .. id .. ',' .. string.sub(ARGV[1], 2)) == 1 then
  redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
end
local k = redis.call('HGET', KEYS[1], 'k')
if k then
  redis.call('HDEL', KEYS[1], 'k')
  redis.call('PUBLISH', ARGV[2] .. k, ARGV[3] .. '\\n' .. table.concat(redis.call('LRANGE', KEYS[2], 0, -1), ','))
end
return id
`;

// KEYS meta. A heartbeat: the parked poll leaves, the heartbeat takes the next id.
const HEARTBEAT = `
redis.call('HDEL', KEYS[1], 'k')
return redis.call('HINCRBY', KEYS[1], 'n', 1) - 1
`;

const redis = new Redis(redisUrl, { enableAutoPipelining: true });
redis.defineCommand('floorPoll', { numberOfKeys: 2, lua: POLL });
redis.defineCommand('floorAppend', { numberOfKeys: 2, lua: APPEND });
redis.defineCommand('floorHeartbeat', { numberOfKeys: 1, lua: HEARTBEAT });
const subscriber = new Redis(redisUrl);

/** The polls parked here, by queue id; wake-ups that came before their poll's script answered. */
const parked = new Map();
const early = new Map();
const queuesOfUser = new Map();
const keys = (queueId) => [`${prefix}{q:${queueId}}:m`, `${prefix}{q:${queueId}}:e`];

function answer(queueId, events) {
  const poll = parked.get(queueId);
  if (!poll) return;
  parked.delete(queueId);
  clearTimeout(poll.heartbeat);
  json(poll.res, 200, `{"result":"success","msg":"","events":[${events}],"queue_id":"${queueId}"}`);
}

subscriber.on('message', (_channel, message) => {
  const newline = message.indexOf('\n');
  const queueId = message.slice(0, newline);
  const events = message.slice(newline + 1);
  if (parked.get(queueId)?.waiting === false) answer(queueId, events);
  else early.set(queueId, events);
});

async function poll(req, res, url) {
  const queueId = url.searchParams.get('queue_id');
  const last = Number(url.searchParams.get('last_event_id') ?? -1);
  const dontBlock = url.searchParams.get('dont_block') === 'true';
  answer(queueId, ''); // a newer poll of the queue finishes the one parked here
  early.delete(queueId);
  const poll = { res, waiting: true, heartbeat: null };
  if (!dontBlock) parked.set(queueId, poll);
  const events = await redis.floorPoll(...keys(queueId), last, dontBlock ? '' : tag, QUEUE_TTL_MS);
  // A newer poll of the queue answered this one meanwhile.
  if (!dontBlock && parked.get(queueId) !== poll) return undefined;
  if (!dontBlock && events !== '') parked.delete(queueId);
  if (events === null)
    return json(res, 400, '{"result":"error","msg":"Bad event queue ID","code":"BAD_EVENT_QUEUE_ID"}');
  if (events !== '' || dontBlock)
    return json(res, 200, `{"result":"success","msg":"","events":[${events}],"queue_id":"${queueId}"}`);
  poll.waiting = false;
  if (early.has(queueId)) {
    const woken = early.get(queueId);
    early.delete(queueId);
    return answer(queueId, woken);
  }
  poll.heartbeat = setTimeout(
    async () => {
      const id = await redis.floorHeartbeat(keys(queueId)[0]);
      if (parked.get(queueId) === poll) answer(queueId, `{"type":"heartbeat","id":${id}}`);
    },
    HEARTBEAT_MS + Math.random() * 10_000,
  );
  res.on('close', () => {
    if (parked.get(queueId) === poll) {
      parked.delete(queueId);
      clearTimeout(poll.heartbeat);
    }
  });
  return undefined;
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://baseline');
  if (req.method === 'POST' && url.pathname === '/register') {
    const { user_id: userId } = await readBody(req);
    const queueId = crypto.randomUUID();
    await redis.hset(keys(queueId)[0], 'n', 0);
    await redis.pexpire(keys(queueId)[0], QUEUE_TTL_MS);
    if (!queuesOfUser.has(userId)) queuesOfUser.set(userId, []);
    queuesOfUser.get(userId).push(queueId);
    return json(res, 200, JSON.stringify({ result: 'success', msg: '', queue_id: queueId, last_event_id: -1 }));
  }
  if (req.method === 'GET' && url.pathname === '/events') return poll(req, res, url);
  if (req.method === 'POST' && url.pathname === '/publish') {
    const { users, event } = await readBody(req);
    const text = JSON.stringify(event);
    const appends = [];
    for (const userId of users)
      for (const queueId of queuesOfUser.get(userId) ?? [])
        appends.push(redis.floorAppend(...keys(queueId), text, wakeChannel, queueId));
    await Promise.all(appends);
    return json(res, 200, '{"result":"success","msg":""}');
  }
  if (req.method === 'GET' && url.pathname === '/parked') {
    let count = 0;
    for (const poll of parked.values()) if (!poll.waiting) count++;
    return json(res, 200, JSON.stringify({ parked: count }));
  }
  return json(res, 404, '{"result":"error","msg":"Not found"}');
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;
server.requestTimeout = 0;
await subscriber.subscribe(`${wakeChannel}${tag}`);
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
