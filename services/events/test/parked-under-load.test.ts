// Thousands of long-polls parked on one event replica whose CPU is scarce: the replica (the built
// bundle) and a busy-looping process share one core (taskset), as on a machine busy with other
// work. Every poll must park within a liveness bound, and once they are parked and nothing is
// published, the replica's Redis traffic must be what their heartbeats need, no more: an idle
// parked poll costs nothing until its heartbeat. The replica has a Redis server of its own, so
// INFO commandstats counts its commands alone.
//
// Settings (environment): PARKED_LOAD_POLLS (3,000), PARKED_LOAD_HEARTBEAT_MS (heartbeat min,
// 20,000; jitter a quarter of it), PARKED_LOAD_PARK_BOUND_MS (how long every poll may take to park
// once registered, 300,000: a liveness bound, not a timing claim), PARKED_LOAD_IDLE_MS (the idle
// window measured, 2 x heartbeat max), PARKED_LOAD_SPINNERS (busy-looping
// processes on the replica's core, 2; 0 for none).
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startStack, type Stack, type TestUser } from '@teamchat/stack';
import { buildServices, freePort, repoRoot, sleep, until } from '@teamchat/testing';
import IORedis from 'ioredis';

const POLLS = Number(process.env.PARKED_LOAD_POLLS ?? 3000);
const QUEUES_PER_USER = 100; // the per-user cap: every user at its limit, as in the events bench
const HEARTBEAT_MS = Number(process.env.PARKED_LOAD_HEARTBEAT_MS ?? 20_000);
const JITTER_MS = Math.floor(HEARTBEAT_MS / 4);
const PARK_BOUND_MS = Number(process.env.PARKED_LOAD_PARK_BOUND_MS ?? 300_000);
const IDLE_MS = Number(process.env.PARKED_LOAD_IDLE_MS ?? 2 * (HEARTBEAT_MS + JITTER_MS));
/** Busy-looping processes on the replica's core (0: none). */
const SPINNERS = Number(process.env.PARKED_LOAD_SPINNERS ?? 2);
/** The core the replica and the spinner share. */
const CORE = String(os.cpus().length - 1);

jest.setTimeout(PARK_BOUND_MS + IDLE_MS + 600_000);

let stack: Stack;
let redisServer: ChildProcess | undefined;
let redisDir: string | undefined;
let redis: IORedis;
let replica: ChildProcess | undefined;
let replicaUrl = '';
let replicaErrors = '';
const BUNDLE = path.join(repoRoot, 'services/events/dist/main.js');
const spinners: ChildProcess[] = [];
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

async function startRedis(): Promise<number> {
  const port = await freePort();
  redisDir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-parked-load-'));
  redisServer = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', redisDir],
    { stdio: 'ignore' },
  );
  redis = new IORedis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 50 });
  for (let tries = 0; ; tries++) {
    try {
      await redis.connect();
      await redis.ping();
      return port;
    } catch (error) {
      if (tries > 100) throw error;
      redis.disconnect();
      await sleep(100);
    }
  }
}

beforeAll(async () => {
  buildServices(['events']);
  stack = await startStack();
  const redisPort = await startRedis();
  const port = await freePort();
  replicaUrl = `http://127.0.0.1:${port}`;
  // The built bundle, pinned to CORE (taskset execs it: the pid is the replica's).
  replica = spawn('taskset', ['-c', CORE, process.execPath, '--enable-source-maps', BUNDLE], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: stack.database.url,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      REDIS_PREFIX: stack.deps.env.REDIS_PREFIX,
      INTERNAL_JWT_SECRET: stack.deps.env.INTERNAL_JWT_SECRET,
      EVENT_PARTITIONS: String(stack.deps.env.EVENT_PARTITIONS),
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      LOG_LEVEL: 'error',
      DB_POOL_SIZE: '10',
      EVENTS_REPLICA_ID: `parked-load-${crypto.randomBytes(3).toString('hex')}`,
      EVENTS_HEARTBEAT_MIN_MS: String(HEARTBEAT_MS),
      EVENTS_HEARTBEAT_JITTER_MS: String(JITTER_MS),
      EVENTS_QUEUE_LIFESPAN_SECS: '3600',
      EVENTS_MAX_QUEUES_PER_USER: String(QUEUES_PER_USER),
      RATE_LIMIT_ENABLED: 'false',
    },
  });
  replica.stderr!.on(
    'data',
    (chunk: Buffer) =>
      (replicaErrors += chunk.toString()).length > 20_000 && (replicaErrors = replicaErrors.slice(-10_000)),
  );
  if (!(await until(async () => (await health(replicaUrl)) === 200, 120_000)))
    throw new Error(`the replica did not become ready:\n${replicaErrors}`);
  for (let i = 0; i < SPINNERS; i++)
    spinners.push(spawn('taskset', ['-c', CORE, process.execPath, '-e', 'for (;;) {}'], { stdio: 'ignore' }));
});

afterAll(async () => {
  agent.destroy();
  for (const spinner of spinners) if (spinner.pid) process.kill(spinner.pid, 'SIGKILL');
  if (replica?.pid) process.kill(replica.pid, 'SIGKILL');
  await redis?.quit().catch(() => undefined);
  if (redisServer?.pid) process.kill(redisServer.pid, 'SIGKILL');
  if (redisDir) fs.rmSync(redisDir, { recursive: true, force: true });
  await stack?.close();
});

function health(url: string): Promise<number> {
  return new Promise((resolve) =>
    http
      .get(`${url}/health/ready`, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', () => resolve(0)),
  );
}

interface Reply {
  status: number;
  body: any;
}

function request(method: string, url: string, user: TestUser, body?: string): Promise<Reply> {
  const headers: Record<string, string> = {
    host: stack.realm.host,
    authorization: `Basic ${Buffer.from(`${user.deliveryEmail}:${user.apiKey}`).toString('base64')}`,
  };
  if (body !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  return new Promise((resolve, reject) => {
    const req = http.request(`${replicaUrl}${url}`, { method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: text });
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A client long-polling one queue for the whole test, tallying what its polls were answered. */
class Poller {
  readonly answers = new Map<string, number>();
  lastEventId = -1;
  inFlight = false;
  private running = true;
  done: Promise<void> = Promise.resolve();

  constructor(
    readonly user: TestUser,
    readonly queueId: string,
  ) {}

  start(): this {
    this.done = this.loop();
    return this;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let reply: Reply;
      this.inFlight = true;
      try {
        reply = await request(
          'GET',
          `/api/v1/events?queue_id=${this.queueId}&last_event_id=${this.lastEventId}`,
          this.user,
        );
      } catch (error) {
        this.inFlight = false;
        if (this.running) this.count(`error ${(error as Error).message}`);
        await sleep(100);
        continue;
      } finally {
        this.inFlight = false;
      }
      if (!this.running) return;
      if (reply.status !== 200) {
        this.count(`${reply.status} ${reply.body?.code ?? ''}`);
        await sleep(100);
        continue;
      }
      const events = reply.body.events as { type: string; id: number }[];
      this.count(events.length === 0 ? 'empty' : events.every((e) => e.type === 'heartbeat') ? 'heartbeat' : 'events');
      for (const event of events) this.lastEventId = Math.max(this.lastEventId, event.id);
    }
  }

  count(kind: string): void {
    this.answers.set(kind, (this.answers.get(kind) ?? 0) + 1);
  }

  total(): number {
    let n = 0;
    for (const count of this.answers.values()) n += count;
    return n;
  }

  stop(): void {
    this.running = false;
  }
}

/** Calls per command (INFO commandstats), scripts included; the INFO calls themselves left out. */
async function commandCounts(): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const counts = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    if (match[1] !== 'info') counts.set(match[1], Number(match[2]));
  return counts;
}

function delta(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, calls] of after)
    if (calls - (before.get(name) ?? 0) > 0) out.set(name, calls - (before.get(name) ?? 0));
  return out;
}

const sum = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);
const describe = (counts: Map<string, number>) =>
  [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');

function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

test(`${POLLS} polls on a replica sharing its core with a busy process all park, and idle they cost only their heartbeats`, async () => {
  const users: TestUser[] = [];
  for (let i = 0; i < Math.ceil(POLLS / QUEUES_PER_USER); i++) users.push(await stack.createUser());
  // What the replica does with nothing to serve (leases, rollback checks, intake reads).
  const quietBefore = await commandCounts();
  await sleep(5000);
  const quiet = delta(await commandCounts(), quietBefore);
  const quietPerSecond = sum(quiet) / 5;

  const registrations: { user: TestUser; queueId: string }[] = [];
  const pairs = Array.from({ length: POLLS }, (_, i) => users[Math.floor(i / QUEUES_PER_USER)]);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < pairs.length) {
        const user = pairs[next++];
        const body = new URLSearchParams({ event_types: '["alert_words"]', fetch_event_types: '[]' }).toString();
        const reply = await request('POST', '/api/v1/register', user, body);
        expect(reply.status).toBe(200);
        registrations.push({ user, queueId: reply.body.queue_id });
      }
    }),
  );
  const pollers = registrations.map(({ user, queueId }) => new Poller(user, queueId).start());
  try {
    // Every queue seen with its poll parked (its mark, field k) at least once, within the bound.
    const started = Date.now();
    const waiting = new Set(pollers);
    while (waiting.size > 0 && Date.now() - started < PARK_BOUND_MS) {
      const pending = [...waiting];
      const pipeline = redis.pipeline();
      for (const poller of pending) pipeline.hexists(`${stack.deps.env.REDIS_PREFIX}{q:${poller.queueId}}:m`, 'k');
      (await pipeline.exec())!.forEach(([, parked], i) => parked === 1 && waiting.delete(pending[i]));
      if (waiting.size > 0) await sleep(1000);
    }
    const parkSeconds = (Date.now() - started) / 1000;
    const unparked = [...waiting]
      .slice(0, 10)
      .map(
        (p) =>
          `${p.queueId}: in flight ${p.inFlight}, ${[...p.answers].map(([k, n]) => `${k} x${n}`).join(', ') || 'no answer'}`,
      );
    console.log(
      `${POLLS - waiting.size} of ${POLLS} polls parked within ${parkSeconds.toFixed(1)} s${unparked.length ? `; not parked:\n${unparked.join('\n')}` : ''}`,
    );
    expect(unparked).toEqual([]);

    // Idle: nothing is published. Each parked poll costs one heartbeat cycle per heartbeat delay
    // (the heartbeat script, the next poll's script): 2 scripts per poll per heartbeat, plus
    // what the replica does with nothing to serve.
    const answersBefore = pollers.map((p) => p.total());
    const kindsBefore = new Map<string, number>();
    for (const p of pollers) for (const [kind, n] of p.answers) kindsBefore.set(kind, (kindsBefore.get(kind) ?? 0) + n);
    const before = await commandCounts();
    const cpuBefore = cpuMs(replica!.pid!);
    const idleStarted = Date.now();
    await sleep(IDLE_MS);
    const idleSeconds = (Date.now() - idleStarted) / 1000;
    const idle = delta(await commandCounts(), before);
    const replicaCpu = (cpuMs(replica!.pid!) - cpuBefore) / 10 / idleSeconds;
    const answers = pollers.map((p, i) => p.total() - answersBefore[i]);
    const answered = answers.reduce((a, b) => a + b, 0);
    const scripts = (idle.get('evalsha') ?? 0) + (idle.get('eval') ?? 0);
    const heartbeatsNeeded = (POLLS * idleSeconds * 1000) / (HEARTBEAT_MS + JITTER_MS / 2);
    const kinds = new Map<string, number>();
    for (const p of pollers) for (const [kind, n] of p.answers) kinds.set(kind, (kinds.get(kind) ?? 0) + n);
    const idleKinds = delta(kinds, kindsBefore);
    console.log(
      [
        `idle ${idleSeconds.toFixed(1)} s with ${POLLS} parked polls (heartbeat ${HEARTBEAT_MS}+${JITTER_MS} ms, ${SPINNERS} spinner(s) on its core):`,
        `  replica CPU ${replicaCpu.toFixed(1)} % of a core; answers ${answered} (heartbeats needed ~${heartbeatsNeeded.toFixed(0)}); idle answers: ${describe(idleKinds)}; all answers: ${describe(kinds)}`,
        `  Redis commands ${(sum(idle) / idleSeconds).toFixed(1)}/s (quiet replica ${quietPerSecond.toFixed(1)}/s), scripts ${(scripts / idleSeconds).toFixed(1)}/s, heartbeats alone need ~${((2 * heartbeatsNeeded) / idleSeconds).toFixed(1)} scripts/s`,
        `  by command: ${describe(idle)}`,
      ].join('\n'),
    );
    // No poll answered more often than its heartbeats allow (min delay; +1 for one in progress).
    const maxAnswers = Math.floor(idleSeconds / (HEARTBEAT_MS / 1000)) + 1;
    expect(answers.filter((n) => n > maxAnswers).length).toBe(0);
    // Every answer while idle was a heartbeat.
    expect([...idleKinds.keys()].filter((kind) => kind !== 'heartbeat')).toEqual([]);
    // Scripts: at most the two per heartbeat (with slack for the jitter and the window's edges),
    // plus the quiet replica's own.
    const quietScripts = ((quiet.get('evalsha') ?? 0) + (quiet.get('eval') ?? 0)) / 5;
    expect(scripts / idleSeconds).toBeLessThanOrEqual(
      (1.5 * 2 * heartbeatsNeeded) / idleSeconds + 2 * quietScripts + 5,
    );
  } finally {
    for (const poller of pollers) poller.stop();
    agent.destroy();
    await Promise.all(pollers.map((p) => p.done));
  }
});
