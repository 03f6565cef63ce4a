// A scripted workload for fault tests, and the checks that nothing it committed was lost:
// - event clients long-poll their queues the way Zulip clients do (acknowledging by
//   last_event_id, polling again after any failure, re-registering only on BAD_EVENT_QUEUE_ID);
// - senders post channel and direct messages; a flagger stars received messages; users ask
//   to mark everything read (the mark-all-read BullMQ job); an uploader uploads files.
// Afterwards every answered (200) write must be present, every client's event stream must hold
// exactly the events the database implies (each once), and every mark-all-read job must have
// completed exactly once.

import { setTimeout as sleep } from 'node:timers/promises';
import type { JobQueueName } from '@teamchat/bus';
import { MessageFlag } from '@teamchat/domain';
import { createTestDatabase, testRedisClusterNodes, testRedisUrl, type ApiClient } from '@teamchat/testing';
import { ProcessCluster, type ClusterUser } from './cluster';

export const EVENT_TYPES = ['message', 'update_message_flags', 'attachment'];

/** One event queue of one user, polled in a loop. */
export class EventClient {
  queueId = '';
  lastEventId = -1;
  /** Every non-heartbeat event, in the order received. */
  readonly events: Record<string, any>[] = [];
  /** Queue ids this client had (more than one only after BAD_EVENT_QUEUE_ID). */
  readonly queueIds: string[] = [];
  readonly failures = new Map<string, number>();
  /** Events refused because their id was not above last_event_id (a repeated answer). */
  repeatedIds = 0;
  private running = false;
  private done: Promise<void> = Promise.resolve();

  constructor(
    readonly user: ClusterUser,
    readonly label: string,
  ) {}

  get reRegistrations(): number {
    return Math.max(0, this.queueIds.length - 1);
  }

  private fail(kind: string): void {
    this.failures.set(kind, (this.failures.get(kind) ?? 0) + 1);
  }

  async register(): Promise<void> {
    for (;;) {
      try {
        const response = await this.user.client.post('/api/v1/register', {
          event_types: EVENT_TYPES,
          fetch_event_types: ['message'],
        });
        if (response.status === 200) {
          this.queueId = response.body.queue_id;
          this.lastEventId = response.body.last_event_id;
          this.queueIds.push(this.queueId);
          return;
        }
        this.fail(`register ${response.status}`);
      } catch (error) {
        this.fail(`register ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      }
      await sleep(200);
    }
  }

  start(): this {
    this.running = true;
    this.done = this.loop();
    return this;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        const response = await this.user.client.get('/api/v1/events', {
          queue_id: this.queueId,
          last_event_id: this.lastEventId,
        });
        if (response.status === 200) {
          for (const event of response.body.events) {
            if (event.id <= this.lastEventId) {
              this.repeatedIds++;
              continue;
            }
            this.lastEventId = event.id;
            if (event.type !== 'heartbeat') this.events.push(event);
          }
          continue;
        }
        this.fail(`poll ${response.status} ${response.body?.code ?? ''}`.trim());
        // The one case where the protocol asks for a new queue.
        if (response.body?.code === 'BAD_EVENT_QUEUE_ID') {
          await this.register();
          continue;
        }
      } catch (error) {
        this.fail(`poll ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      }
      await sleep(100);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  /** Message ids of `message` events, in order. */
  messageIds(): number[] {
    return this.events.filter((event) => event.type === 'message').map((event) => event.message.id);
  }

  /** Message ids of update_message_flags events adding `flag`, in order (with repeats). */
  flaggedIds(flag: string): number[] {
    return this.events
      .filter((event) => event.type === 'update_message_flags' && event.op === 'add' && event.flag === flag)
      .flatMap((event) => event.messages as number[]);
  }

  attachmentIds(): number[] {
    return this.events
      .filter((event) => event.type === 'attachment' && event.op === 'add')
      .map((event) => event.attachment.id);
  }
}

export interface SentMessage {
  id: number;
  senderId: number;
  content: string;
  /** Who gets it (the channel's subscribers are every workload user). */
  recipients: number[];
  /** When the request went out and when its 200 came back (Date.now()): the commit lies between. */
  startedAt: number;
  answeredAt: number;
}

/** What the star loop needs of a client: its user and the messages it received. */
export interface MessageSource {
  user: ClusterUser;
  messageIds(): number[];
}

export interface WorkloadStats {
  requests: Record<string, number>;
  errors: Record<string, number>;
}

/** The writers: each loop records what the server answered 200 to. */
export class Workload {
  readonly sent: SentMessage[] = [];
  readonly stars: { userId: number; messageId: number }[] = [];
  readonly uploads: { userId: number; uri: string; bytes: Buffer }[] = [];
  readonly markAllRequests: { userId: number; complete: boolean }[] = [];
  readonly stats: WorkloadStats = { requests: {}, errors: {} };
  /**
   * The first 500s answered, with their request ids (to find them in the logs). An outage must
   * answer 502/503 (the gateway or a service: a process or store unreachable); a 500 is a bug.
   */
  readonly internalErrors: string[] = [];
  private running = false;
  private loops: Promise<void>[] = [];
  private counter = 0;
  private readonly starredBy = new Map<number, Set<number>>();

  constructor(
    readonly users: ClusterUser[],
    readonly clients: MessageSource[],
    readonly channelName: string,
    private readonly pace: { pauseMs: number } = { pauseMs: 60 },
  ) {}

  private count(op: string, status: number | string): void {
    this.stats.requests[op] = (this.stats.requests[op] ?? 0) + 1;
    if (status !== 200) this.stats.errors[`${op} ${status}`] = (this.stats.errors[`${op} ${status}`] ?? 0) + 1;
  }

  private async attempt(op: string, request: () => Promise<{ status: number; body: any }>): Promise<any | undefined> {
    try {
      const response = await request();
      this.count(op, response.status);
      if (response.status === 500 && this.internalErrors.length < 20) {
        this.internalErrors.push(
          `${op} ${response.status} ${JSON.stringify(response.body)} request ${(response as { headers?: Record<string, unknown> }).headers?.['x-request-id'] ?? '?'}`,
        );
      }
      return response.status === 200 ? response.body : undefined;
    } catch (error) {
      this.count(op, (error as NodeJS.ErrnoException).code ?? 'error');
      return undefined;
    }
  }

  start(): void {
    this.running = true;
    const loop = async (body: () => Promise<void>, pauseMs: number) => {
      while (this.running) {
        await body();
        await sleep(pauseMs);
      }
    };
    this.loops = [
      loop(() => this.sendOne(), this.pace.pauseMs),
      loop(() => this.sendOne(), this.pace.pauseMs),
      loop(() => this.starOne(), this.pace.pauseMs * 2),
      loop(async () => void (await this.markAllRead()), this.pace.pauseMs * 10),
      loop(() => this.uploadOne(), this.pace.pauseMs * 4),
    ];
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Waits until `count` more messages, and at least one more upload, star and mark-all-read, were answered 200. */
  async progressed(count: number, timeoutMs = 60_000): Promise<void> {
    const before = [this.sent.length, this.uploads.length, this.stars.length, this.markAllRequests.length];
    const deadline = Date.now() + timeoutMs;
    while (
      this.sent.length < before[0] + count ||
      this.uploads.length <= before[1] ||
      this.stars.length <= before[2] ||
      this.markAllRequests.length <= before[3]
    ) {
      if (Date.now() > deadline) throw new Error(`the workload made no progress: ${JSON.stringify(this.stats)}`);
      await sleep(50);
    }
  }

  /** Waits until a mark-all-read job is being processed (asking for one when none is). */
  async jobRunning(cluster: ProcessCluster, timeoutMs = 30_000): Promise<void> {
    const queue = cluster.deps.jobs.queue('mark-all-read');
    const deadline = Date.now() + timeoutMs;
    while ((await queue.getActiveCount()) === 0) {
      if (Date.now() > deadline) throw new Error('no mark-all-read job ran');
      void this.markAllRead();
      await sleep(20);
    }
  }

  private pick<T>(items: T[]): T {
    return items[Math.floor(Math.random() * items.length)];
  }

  async sendOne(): Promise<void> {
    const n = ++this.counter;
    const sender = this.users[n % this.users.length];
    const content = `fault workload message ${n} ${Date.now()}`;
    const direct = n % 3 === 0;
    const others = this.users.filter((user) => user.id !== sender.id);
    const to = others.slice(0, 1 + (n % others.length)).map((user) => user.id);
    const params = direct
      ? { type: 'direct', to: JSON.stringify(to), content, read_by_sender: false }
      : { type: 'stream', to: this.channelName, topic: `topic ${n % 4}`, content, read_by_sender: false };
    const recipients = direct ? [sender.id, ...to] : this.users.map((user) => user.id);
    const startedAt = Date.now();
    const body = await this.attempt('send', () => sender.client.post('/api/v1/messages', params));
    if (body)
      this.sent.push({ id: body.id, senderId: sender.id, content, recipients, startedAt, answeredAt: Date.now() });
  }

  async starOne(): Promise<void> {
    const client = this.pick(this.clients);
    const starred = this.starredBy.get(client.user.id) ?? new Set<number>();
    this.starredBy.set(client.user.id, starred);
    const candidates = client.messageIds().filter((id) => !starred.has(id));
    if (candidates.length === 0) return;
    const messageId = candidates[candidates.length - 1 - Math.floor(Math.random() * Math.min(5, candidates.length))];
    starred.add(messageId);
    const body = await this.attempt('star', () =>
      client.user.client.post('/api/v1/messages/flags', {
        messages: JSON.stringify([messageId]),
        op: 'add',
        flag: 'starred',
      }),
    );
    if (body) this.stars.push({ userId: client.user.id, messageId });
  }

  async markAllRead(user: ClusterUser = this.pick(this.users)): Promise<boolean | undefined> {
    const body = await this.attempt('mark_all_as_read', () => user.client.post('/api/v1/mark_all_as_read'));
    if (body) this.markAllRequests.push({ userId: user.id, complete: body.complete });
    return body?.complete;
  }

  async uploadOne(): Promise<void> {
    const user = this.pick(this.users);
    const bytes = Buffer.from(`upload ${++this.counter} ${Math.random()}\n`.repeat(20));
    const body = await this.attempt('upload', () => uploadFile(user.client, `file-${this.counter}.txt`, bytes));
    if (body) this.uploads.push({ userId: user.id, uri: body.url ?? body.uri, bytes });
  }
}

export async function uploadFile(client: ApiClient, name: string, bytes: Buffer) {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: 'text/plain' }), name);
  const encoded = new Request('http://multipart.invalid', { method: 'POST', body: form });
  const body = Buffer.from(await encoded.arrayBuffer());
  return client.post(
    '/api/v1/user_uploads',
    {},
    { body, headers: { 'content-type': encoded.headers.get('content-type')! } },
  );
}

function duplicates(ids: number[]): number[] {
  const seen = new Set<number>();
  const out = new Set<number>();
  for (const id of ids) (seen.has(id) ? out : seen).add(id);
  return [...out];
}

function difference(a: Iterable<number>, b: Set<number>): number[] {
  return [...a].filter((id) => !b.has(id));
}

function sample(ids: number[]): string {
  return ids.length > 10 ? `${ids.slice(0, 10).join(',')},… (${ids.length})` : ids.join(',');
}

/**
 * What each client's stream must hold, from the database: a `message` event for every message
 * the user received after `firstMessageId`, a starred flag event for each starred message, a
 * read flag event for each message now read, an attachment event for each
 * upload — each exactly once.
 */
export async function streamProblems(
  cluster: ProcessCluster,
  clients: EventClient[],
  baseline: Baseline,
): Promise<string[]> {
  const firstMessageId = baseline.messageId;
  const problems: string[] = [];
  const db = cluster.deps.db;
  for (const client of clients) {
    const userId = client.user.id;
    const rows = await db.$queryRaw<{ message_id: number; flags: bigint | number; sender_id: number }[]>`
      SELECT um.message_id, um.flags, m.sender_id FROM user_message um JOIN message m ON m.id = um.message_id
      WHERE um.user_profile_id = ${userId} AND um.message_id > ${firstMessageId}`;
    const received = new Set(rows.map((row) => row.message_id));
    const starred = new Set(
      rows.filter((row) => (Number(row.flags) & MessageFlag.starred) !== 0).map((row) => row.message_id),
    );
    // Messages are sent with read_by_sender false: every read flag is the jobs' doing.
    const readByJob = new Set(
      rows.filter((row) => (Number(row.flags) & MessageFlag.read) !== 0).map((row) => row.message_id),
    );
    const attachments = new Set(
      (
        await db.attachment.findMany({
          where: { owner_id: userId, id: { gt: baseline.attachmentId } },
          select: { id: true },
        })
      ).map((row) => row.id),
    );

    const check = (what: string, expected: Set<number>, got: number[]) => {
      const gotSet = new Set(got);
      const missing = difference(expected, gotSet);
      const extra = difference(gotSet, expected);
      const repeated = duplicates(got);
      if (missing.length) problems.push(`${client.label}: ${what} missing ${sample(missing)}`);
      if (extra.length) problems.push(`${client.label}: ${what} not in the database ${sample(extra)}`);
      if (repeated.length) problems.push(`${client.label}: ${what} duplicated ${sample(repeated)}`);
    };
    check('message events', received, client.messageIds());
    check('starred flag events', starred, client.flaggedIds('starred'));
    // Messages from before the scenario (e.g. the channel's creation notices) may be marked read by its jobs too.
    check(
      'read flag events',
      readByJob,
      client.flaggedIds('read').filter((id) => id > firstMessageId),
    );
    check('attachment events', attachments, client.attachmentIds());
  }
  return problems;
}

/** Every write the server answered 200 to is stored. */
export async function committedProblems(cluster: ProcessCluster, workload: Workload): Promise<string[]> {
  const problems: string[] = [];
  const db = cluster.deps.db;
  const messages = new Map(
    (await db.message.findMany({ select: { id: true, content: true, sender_id: true } })).map((row) => [row.id, row]),
  );
  for (const sent of workload.sent) {
    const row = messages.get(sent.id);
    if (!row) problems.push(`answered message ${sent.id} is missing`);
    else if (row.content !== sent.content || row.sender_id !== sent.senderId)
      problems.push(`answered message ${sent.id} differs`);
  }
  for (const star of workload.stars) {
    const row = await db.userMessage.findFirst({ where: { user_profile_id: star.userId, message_id: star.messageId } });
    if (!row || (Number(row.flags) & MessageFlag.starred) === 0)
      problems.push(`answered star of ${star.messageId} by ${star.userId} is missing`);
  }
  const byUser = new Map(workload.users.map((user) => [user.id, user]));
  for (const upload of workload.uploads) {
    const pathId = upload.uri.replace(/^\/user_uploads\//, '');
    const attachment = await db.attachment.findFirst({ where: { path_id: pathId } });
    if (!attachment) problems.push(`answered upload ${upload.uri} has no attachment`);
    const response = await byUser.get(upload.userId)!.client.get(upload.uri, {}, { validate: false });
    if (response.status !== 200 || !response.raw.equals(upload.bytes))
      problems.push(`answered upload ${upload.uri} is not served (${response.status})`);
  }
  return problems;
}

/**
 * Every mark-all-read job BullMQ added completed exactly once (from BullMQ's own event stream:
 * each `added` is followed by one `completed` before the job id is added again), none failed
 * for good, and none is left waiting or running.
 */
export async function jobProblems(
  cluster: ProcessCluster,
  queue = 'mark-all-read',
): Promise<{ problems: string[]; added: number; completed: number; stalled: number }> {
  const problems: string[] = [];
  const key = `${cluster.deps.bus.keys.bullmq(queue as JobQueueName)}:${queue}:events`;
  const entries = (await cluster.deps.redis.xrange(key, '-', '+')) as [string, string[]][];
  const open = new Map<string, boolean>();
  let added = 0;
  let completed = 0;
  let stalled = 0;
  for (const [, fields] of entries) {
    const event: Record<string, string> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) event[fields[i]] = fields[i + 1];
    const jobId = event.jobId;
    if (event.event === 'added') {
      if (open.get(jobId)) problems.push(`job ${jobId} added again while running`);
      open.set(jobId, true);
      added++;
    } else if (event.event === 'completed') {
      if (!open.get(jobId)) problems.push(`job ${jobId} completed twice`);
      open.set(jobId, false);
      completed++;
    } else if (event.event === 'stalled') {
      stalled++;
    }
    // A failed attempt that BullMQ retries is fine; a job that gave up stays failed (counted below).
  }
  for (const [jobId, running] of open) if (running) problems.push(`job ${jobId} never completed`);
  const counts = await cluster.deps.jobs
    .queue(queue as 'mark-all-read')
    .getJobCounts('waiting', 'active', 'delayed', 'failed', 'paused', 'prioritized');
  for (const [state, count] of Object.entries(counts)) if (count) problems.push(`${count} ${queue} job(s) ${state}`);
  return { problems, added, completed, stalled };
}

/** The newest message and attachment before a scenario: its checks look at what came after. */
export interface Baseline {
  messageId: number;
  attachmentId: number;
}

export async function baseline(cluster: ProcessCluster): Promise<Baseline> {
  const [message, attachment] = await Promise.all([
    cluster.deps.db.message.aggregate({ _max: { id: true } }),
    cluster.deps.db.attachment.aggregate({ _max: { id: true } }),
  ]);
  return { messageId: message._max.id ?? 0, attachmentId: attachment._max.id ?? 0 };
}

/** Polls `probe` (returns problems) until it returns none or `timeoutMs` passes; returns the last problems. */
export async function settle(probe: () => Promise<string[]>, timeoutMs = 30_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const problems = await probe();
    if (problems.length === 0 || Date.now() > deadline) return problems;
    await sleep(250);
  }
}

/**
 * The end of a run: stop writing, mark everything read for everyone (and wait for the jobs),
 * wait until the streams settle, stop polling, and list every problem found.
 */
export async function finishAndCheck(
  cluster: ProcessCluster,
  workload: Workload,
  clients: EventClient[],
  start: Baseline,
  options: { allowReRegister?: boolean } = {},
): Promise<string[]> {
  const firstMessageId = start.messageId;
  await workload.stop();
  for (const user of workload.users) {
    const deadline = Date.now() + 30_000;
    while ((await workload.markAllRead(user)) === undefined && Date.now() < deadline) await sleep(200);
  }
  const unread = await settle(async () => {
    const rows = await cluster.deps.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM user_message WHERE (flags & ${MessageFlag.read}) = 0 AND message_id > ${firstMessageId}`;
    return rows[0].n ? [`${rows[0].n} messages still unread after mark_all_as_read`] : [];
  });
  const streams = await settle(() => streamProblems(cluster, clients, start));
  await Promise.all(clients.map((client) => client.stop()));
  const jobs = await settle(async () => (await jobProblems(cluster)).problems, 15_000);
  const committed = await committedProblems(cluster, workload);
  const reRegistered = clients
    .filter((client) => !options.allowReRegister && client.reRegistrations > 0)
    .map((client) => `${client.label}: re-registered ${client.reRegistrations}x`);
  return [...unread, ...streams, ...jobs, ...committed, ...reRegistered];
}

/** `count` (3) users subscribed to one channel. */
export async function createParticipants(
  cluster: ProcessCluster,
  channelName = 'faults',
  count = 3,
): Promise<{ users: ClusterUser[]; channelName: string }> {
  const users: ClusterUser[] = [];
  for (let i = 0; i < count; i++) users.push(await cluster.createUser());
  const created = await users[0].client.post('/api/v1/users/me/subscriptions', {
    subscriptions: JSON.stringify([{ name: channelName }]),
    principals: JSON.stringify(users.map((user) => user.id)),
  });
  if (created.status !== 200)
    throw new Error(`creating the channel failed: ${created.status} ${JSON.stringify(created.body)}`);
  return { users, channelName };
}

/** A polling event queue per user, two for the first. */
export async function startClients(users: ClusterUser[]): Promise<EventClient[]> {
  const clients = [
    new EventClient(users[0], 'user0/a'),
    new EventClient(users[0], 'user0/b'),
    ...users.slice(1).map((user, i) => new EventClient(user, `user${i + 1}`)),
  ];
  for (const client of clients) await client.register();
  return clients.map((client) => client.start());
}

/**
 * The setting of a fault test file on the shared PostgreSQL and Redis: a test database, the
 * stack as processes (`eventReplicas` event-tier replicas) and the workload's participants,
 * made before the file's tests and removed after them.
 */
export function useProcessCluster(eventReplicas: number): {
  cluster: ProcessCluster;
  users: ClusterUser[];
  channelName: string;
} {
  const context = {} as { cluster: ProcessCluster; users: ClusterUser[]; channelName: string };
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    context.cluster = await ProcessCluster.start({
      databaseUrl: database.url,
      redisUrl: testRedisUrl(),
      redisClusterNodes: testRedisClusterNodes(),
      eventReplicas,
    });
    Object.assign(context, await createParticipants(context.cluster));
  }, 300_000);
  afterAll(async () => {
    await context.cluster?.stop();
    await database?.drop();
  });
  return context;
}
