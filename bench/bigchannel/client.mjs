// A client process of the big-channel benchmark: registers its share of the queues and holds
// their long-polls, with raw node:http over keep-alive sockets, so that the driver itself is not
// what limits 10,000 parked polls on 2 cores. Delivery times are taken here, when a poll's answer
// has been read whole, on the machine's monotonic clock (process.hrtime, the same clock in every
// process), before anything else is done with it. Driven by its parent over IPC:
//   {op:'register', kind, url, users, concurrency} -> {queues: [{queueId}], ms}
//   {op:'park', kind}           -> polls every queue that has none in flight
//   {op:'arm', kind, marker}    -> from now on, the first answer of each queue containing marker
//                                  is a delivery; that queue is not polled again until 'park'
//   {op:'collect', kind, timeoutMs} -> {times, latest, missing, errors, heartbeats} once every queue
//                                  has its delivery (or on timeout)
//   {op:'stats', kind}          -> {errors, lastError, inFlight, statuses} (why polls do not park)
import http from 'node:http';

// Each poll keeps its connection between rounds, as every real client keeps its own (node's default
// keeps 256 idle sockets and closes the rest: 10,000 new connections at every re-park).
const agent = new http.Agent({
  keepAlive: true,
  maxSockets: Infinity,
  maxFreeSockets: Infinity,
  keepAliveMsecs: 30_000,
});
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
/**
 * kind ('teamchat', or a bare server: 'baseline', 'baseline-redis') -> { kind, url, queues, marker,
 * times, errors, heartbeats, lastError, onAll }
 */
const sets = new Map();

function request(method, url, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: body ? { ...headers, 'content-length': String(Buffer.byteLength(body)) } : headers,
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          const at = nowMs();
          resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString(), at });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The bare servers (bench/events/baseline-server.mjs, baseline-redis-server.mjs) share one protocol. */
const isBare = (kind) => kind !== 'teamchat';

async function registerOne(kind, url, user) {
  if (isBare(kind)) {
    const reply = await request(
      'POST',
      `${url}/register`,
      { 'content-type': 'application/json' },
      JSON.stringify({ user_id: user.id }),
    );
    const body = JSON.parse(reply.text);
    return { queueId: body.queue_id, lastEventId: body.last_event_id, headers: {} };
  }
  const headers = {
    authorization: `Basic ${Buffer.from(`${user.email}:${user.apiKey}`).toString('base64')}`,
    host: user.host,
  };
  const body = new URLSearchParams({ event_types: JSON.stringify(['message']), fetch_event_types: '[]' }).toString();
  for (let attempt = 1; ; attempt++) {
    try {
      const reply = await request(
        'POST',
        `${user.gateway}/api/v1/register`,
        { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
        body,
      );
      if (reply.status !== 200) throw new Error(`register: ${reply.status} ${reply.text.slice(0, 300)}`);
      const parsed = JSON.parse(reply.text);
      // The polls go where user.poll says: the event tier (as the Ingress routes them) or the gateway.
      return { queueId: parsed.queue_id, lastEventId: parsed.last_event_id, headers, url: user.poll ?? user.gateway };
    } catch (error) {
      if (attempt >= 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}

async function register({ kind, url, users, concurrency }) {
  const started = nowMs();
  const queues = new Array(users.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < users.length) {
        const i = next++;
        queues[i] = { ...(await registerOne(kind, url, users[i])), inFlight: false, got: false };
      }
    }),
  );
  sets.set(kind, {
    kind,
    url,
    queues,
    marker: null,
    times: [],
    answers: [],
    errors: 0,
    heartbeats: 0,
    /** Answers by HTTP status since registering. */
    statuses: {},
    lastError: '',
    onAll: null,
  });
  return { queues: queues.map((q) => ({ queueId: q.queueId })), ms: nowMs() - started };
}

function poll(set, q) {
  q.inFlight = true;
  q.sentAt = nowMs();
  const url = isBare(set.kind)
    ? `${set.url}/events?queue_id=${q.queueId}&last_event_id=${q.lastEventId}`
    : `${q.url}/api/v1/events?queue_id=${encodeURIComponent(q.queueId)}&last_event_id=${q.lastEventId}`;
  request('GET', url, q.headers).then(
    ({ status, text, at }) => {
      q.inFlight = false;
      set.statuses[status] = (set.statuses[status] ?? 0) + 1;
      if (status !== 200) {
        set.errors++;
        q.errors = (q.errors ?? 0) + 1;
        set.lastError = `${status} ${text.slice(0, 200)}`;
        setTimeout(() => poll(set, q), 500);
        return;
      }
      const hit = set.marker !== null && !q.got && text.includes(set.marker);
      const body = JSON.parse(text);
      for (const event of body.events) {
        q.lastEventId = Math.max(q.lastEventId, event.id);
        if (event.type === 'heartbeat') set.heartbeats++;
      }
      if (hit) {
        q.got = true;
        set.times.push(at);
        set.answers.push({
          at,
          queueId: q.queueId,
          types: body.events.map((event) => event.type).join(','),
          // When the answering poll was sent, and how many of this queue's polls failed since it
          // registered: a late answer to a poll sent late is the client's, not a missed wake-up.
          sentAt: q.sentAt,
          queueErrors: q.errors ?? 0,
        });
        if (set.times.length === set.queues.length) set.onAll?.();
        return; // stays unparked until the next 'park'
      }
      poll(set, q);
    },
    (error) => {
      q.inFlight = false;
      set.errors++;
      q.errors = (q.errors ?? 0) + 1;
      set.lastError = String(error);
      setTimeout(() => poll(set, q), 500);
    },
  );
}

function collect(set, timeoutMs) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      set.onAll = null;
      resolve({
        times: set.times,
        // What each delivering answer held, for the latest few (the parent shows the late ones).
        latest: [...set.answers].sort((a, b) => b.at - a.at).slice(0, 5),
        missing: set.queues.length - set.times.length,
        errors: set.errors,
        heartbeats: set.heartbeats,
        lastError: set.lastError,
      });
    };
    const timer = setTimeout(done, timeoutMs);
    if (set.times.length === set.queues.length) done();
    else set.onAll = done;
  });
}

process.on('message', async (message) => {
  const { id, op, kind } = message;
  try {
    let result = {};
    if (op === 'register') result = await register(message);
    else if (op === 'park') {
      const set = sets.get(kind);
      for (const q of set.queues) if (!q.inFlight) poll(set, q);
    } else if (op === 'arm') {
      const set = sets.get(kind);
      set.marker = message.marker;
      set.times = [];
      set.answers = [];
      set.errors = 0;
      set.heartbeats = 0;
      for (const q of set.queues) q.got = false;
    } else if (op === 'collect') result = await collect(sets.get(kind), message.timeoutMs);
    else if (op === 'stats') {
      const set = sets.get(kind);
      const inFlight = set.queues.filter((q) => q.inFlight).length;
      result = { errors: set.errors, lastError: set.lastError, inFlight, statuses: set.statuses };
    }
    process.send({ id, ok: true, ...result });
  } catch (error) {
    process.send({ id, ok: false, error: String(error?.stack ?? error) });
  }
});
process.on('disconnect', () => process.exit(0));
