// The baseline of the events benchmark: a bare Node `http` long-poll server holding its queues
// in memory — Zulip's protocol shape (register, long-poll GET /events with last_event_id,
// heartbeats) with nothing else: no authentication, no persistence, one process.
//   POST /register {user_id}            -> {queue_id, last_event_id: -1}
//   GET  /events?queue_id&last_event_id -> {events, queue_id}, parks while there are none
//   POST /publish {users, event}        -> appends to every queue of those users, wakes polls
//   GET  /parked                        -> {parked: N}, the polls parked now (bench/bigchannel waits on it)
import crypto from 'node:crypto';
import http from 'node:http';
import { readJsonBody as readBody, sendJsonText } from './bare-http.mjs';

const HEARTBEAT_MS = 45_000;
const queues = new Map();
const queuesOfUser = new Map();

function json(res, status, body) {
  sendJsonText(res, status, JSON.stringify(body));
}

function answer(queue, events) {
  const parked = queue.parked;
  queue.parked = null;
  clearTimeout(queue.heartbeat);
  json(parked, 200, { result: 'success', msg: '', events, queue_id: queue.id });
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://baseline');
  if (req.method === 'POST' && url.pathname === '/register') {
    const { user_id: userId } = await readBody(req);
    const queue = { id: crypto.randomUUID(), userId, events: [], nextId: 0, parked: null, heartbeat: null };
    queues.set(queue.id, queue);
    if (!queuesOfUser.has(userId)) queuesOfUser.set(userId, new Set());
    queuesOfUser.get(userId).add(queue);
    return json(res, 200, { result: 'success', msg: '', queue_id: queue.id, last_event_id: -1 });
  }
  if (req.method === 'GET' && url.pathname === '/events') {
    const queue = queues.get(url.searchParams.get('queue_id'));
    if (!queue) return json(res, 400, { result: 'error', msg: 'Bad event queue ID', code: 'BAD_EVENT_QUEUE_ID' });
    const last = Number(url.searchParams.get('last_event_id') ?? -1);
    while (queue.events.length && queue.events[0].id <= last) queue.events.shift();
    if (queue.parked) answer(queue, []);
    if (queue.events.length || url.searchParams.get('dont_block') === 'true') {
      return json(res, 200, { result: 'success', msg: '', events: queue.events, queue_id: queue.id });
    }
    queue.parked = res;
    queue.heartbeat = setTimeout(
      () => answer(queue, [{ type: 'heartbeat', id: queue.nextId++ }]),
      HEARTBEAT_MS + Math.random() * 10_000,
    );
    res.on('close', () => {
      if (queue.parked === res) {
        queue.parked = null;
        clearTimeout(queue.heartbeat);
      }
    });
    return undefined;
  }
  if (req.method === 'POST' && url.pathname === '/publish') {
    const { users, event } = await readBody(req);
    for (const userId of users) {
      for (const queue of queuesOfUser.get(userId) ?? []) {
        queue.events.push({ ...event, id: queue.nextId++ });
        if (queue.parked) answer(queue, queue.events);
      }
    }
    return json(res, 200, { result: 'success', msg: '' });
  }
  if (req.method === 'GET' && url.pathname === '/parked') {
    let parked = 0;
    for (const queue of queues.values()) if (queue.parked) parked++;
    return json(res, 200, { parked });
  }
  return json(res, 404, { result: 'error', msg: 'Not found' });
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;
server.requestTimeout = 0;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
