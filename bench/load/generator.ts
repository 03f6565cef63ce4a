// The load generator: simulated users, all in this one process, multiplexed over one keep-alive
// HTTP agent. Each simulated user has its own account, a registered event queue with a parked
// long-poll (re-polled as soon as it is answered, as a client does), and acts on Mattermost's
// pacing — an action every ~20 s on average (1 s + an exponential wait of mean 19 s) — picked
// with Zulip's production request mix (MIX). See bench/README.md, "load".

import http from 'node:http';

export interface Account {
  id: number;
  email: string;
  apiKey: string;
  /** The realm's host (sent as the Host header). */
  host: string;
  /** The user's team channel (every user is subscribed to one). */
  streamId: number;
}

export type Kind = 'events' | 'presence' | 'upload' | 'get_messages' | 'flags' | 'typing' | 'send' | 'other';

/**
 * Zulip's production request mix (share of requests, %). GET /events 44, presence 36, uploads
 * 5, GET /messages 3, flags 1.5, POST /messages 0.5, typing slightly above sends (0.6); the
 * remaining 9.4 % (Zulip's long tail of other endpoints) is GET /users/me, a cheap authenticated read.
 */
export const MIX: Array<[Kind, number]> = [
  ['events', 44],
  ['presence', 36],
  ['upload', 5],
  ['get_messages', 3],
  ['flags', 1.5],
  ['typing', 0.6],
  ['send', 0.5],
  ['other', 9.4],
];
const MIX_TOTAL = MIX.reduce((sum, [, weight]) => sum + weight, 0);

export const LABELS: Record<Kind, string> = {
  events: 'GET /events',
  presence: 'POST /users/me/presence',
  upload: 'POST /user_uploads',
  get_messages: 'GET /messages',
  flags: 'POST /messages/flags',
  typing: 'POST /typing',
  send: 'POST /messages',
  other: 'GET /users/me',
};

/** Mean wait between two actions of one user, and the least. */
export const ACTION_MEAN_MS = 20_000;
export const ACTION_MIN_MS = 1_000;
const API_TIMEOUT_MS = 10_000;
const POLL_TIMEOUT_MS = 120_000;

interface SimUser extends Account {
  authorization: string;
  gateway: URL;
  queueId?: string;
  lastEventId: number;
  /** Which poll is the current one; an older one answered (superseded) is dropped. */
  pollGeneration: number;
  /** Polls the user re-issued on its own (after events or a heartbeat) since its last "events" action. */
  naturalPolls: number;
  presenceLastUpdateId: number;
  timer?: NodeJS.Timeout;
  active: boolean;
}

interface Reply {
  status: number;
  body: any;
}

/** What one measurement window saw. */
export interface WindowStats {
  users: number;
  seconds: number;
  /** Requests in the window, by kind: answered ones, and GET /events (every poll, natural or forced) as sent. */
  requests: Record<Kind, number>;
  errors: Record<Kind, number>;
  errorSamples: string[];
  /** Answered non-poll API requests: latency at the client. */
  api: { count: number; avgMs: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** The same, by kind of request (average and p99 ms). */
  apiByKind: Partial<Record<Kind, { count: number; avgMs: number; p99Ms: number }>>;
  /** GET /events actions already covered by a poll the client re-issued itself vs polls it re-issued for the action. */
  eventsActions: { coveredByNaturalPolls: number; forcedPolls: number };
  eventsReceived: number;
  errorRate: number;
  requestsPerSecond: number;
}

class Window {
  readonly started = performance.now();
  readonly requests = Object.fromEntries(MIX.map(([kind]) => [kind, 0])) as Record<Kind, number>;
  readonly errors = Object.fromEntries(MIX.map(([kind]) => [kind, 0])) as Record<Kind, number>;
  readonly errorSamples: string[] = [];
  readonly latencies: number[] = [];
  readonly latencyByKind = new Map<Kind, number[]>();
  covered = 0;
  forced = 0;
  eventsReceived = 0;
}

function exponential(mean: number): number {
  return -Math.log(1 - Math.random()) * mean;
}

function pickKind(): Kind {
  let r = Math.random() * MIX_TOTAL;
  for (const [kind, weight] of MIX) {
    r -= weight;
    if (r < 0) return kind;
  }
  return 'other';
}

function form(fields: Record<string, string | number | boolean>): string {
  return new URLSearchParams(
    Object.entries(fields).map(([key, value]): [string, string] => [key, String(value)]),
  ).toString();
}

export class LoadGenerator {
  private agent = LoadGenerator.newAgent();
  private readonly users: SimUser[] = [];
  private window: Window | null = null;
  /** Recent message ids of each channel (seeded, sent, fetched), for flags. */
  private readonly recentMessages = new Map<number, number[]>();
  private readonly uploadBody: Buffer;
  private readonly uploadBoundary = 'teamchatbenchboundary7MA4YWxkTrZu0gW';

  constructor(
    private readonly gateways: string[],
    options: { uploadBytes: number },
  ) {
    const file = Buffer.alloc(options.uploadBytes, 'teamchat load benchmark upload\n');
    this.uploadBody = Buffer.concat([
      Buffer.from(
        `--${this.uploadBoundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.txt"\r\nContent-Type: text/plain\r\n\r\n`,
      ),
      file,
      Buffer.from(`\r\n--${this.uploadBoundary}--\r\n`),
    ]);
  }

  private static newAgent(): http.Agent {
    return new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 100_000, scheduling: 'lifo' });
  }

  get activeUsers(): number {
    return this.users.length;
  }

  noteMessages(streamId: number, ids: number[]): void {
    const list = this.recentMessages.get(streamId) ?? [];
    list.push(...ids);
    if (list.length > 50) list.splice(0, list.length - 50);
    this.recentMessages.set(streamId, list);
  }

  // ---------------------------------------------------------------- HTTP

  private request(
    user: SimUser,
    method: string,
    path: string,
    body?: { type: string; data: string | Buffer },
    timeoutMs = API_TIMEOUT_MS,
  ): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const headers: http.OutgoingHttpHeaders = { authorization: user.authorization, host: user.host };
      if (body) {
        headers['content-type'] = body.type;
        headers['content-length'] = Buffer.byteLength(body.data);
      }
      const req = http.request(
        {
          host: user.gateway.hostname,
          port: user.gateway.port,
          method,
          path,
          headers,
          agent: this.agent,
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              // kept as text
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body?.data);
    });
  }

  /** One API request (not a poll), timed and counted in the open window. */
  private async api(
    user: SimUser,
    kind: Kind,
    method: string,
    path: string,
    body?: { type: string; data: string | Buffer },
  ): Promise<Reply | null> {
    const started = performance.now();
    let reply: Reply | null = null;
    let failure: string | null = null;
    try {
      reply = await this.request(user, method, path, body);
      if (reply.status !== 200 || reply.body?.result !== 'success')
        failure = `${reply.status} ${JSON.stringify(reply.body).slice(0, 200)}`;
    } catch (error) {
      failure = (error as Error).message;
    }
    const window = this.window;
    if (window && user.active) {
      window.requests[kind]++;
      const ms = performance.now() - started;
      window.latencies.push(ms);
      let list = window.latencyByKind.get(kind);
      if (!list) window.latencyByKind.set(kind, (list = []));
      list.push(ms);
      if (failure) this.recordError(window, kind, `${method} ${path.split('?')[0]}: ${failure}`);
    }
    return failure ? null : reply;
  }

  private recordError(window: Window, kind: Kind, text: string): void {
    window.errors[kind]++;
    if (window.errorSamples.length < 10) window.errorSamples.push(text);
  }

  // ---------------------------------------------------------------- users

  /**
   * Logs the accounts in (register, first presence, a parked poll) and starts their actions.
   * Throws when `deadline` (epoch ms) passes first: a stack that slow at logins has broken.
   */
  async addUsers(accounts: Account[], deadline = Infinity, concurrency = 8): Promise<void> {
    const fresh: SimUser[] = accounts.map((account, i) => ({
      ...account,
      authorization: `Basic ${Buffer.from(`${account.email}:${account.apiKey}`).toString('base64')}`,
      gateway: new URL(this.gateways[(this.users.length + i) % this.gateways.length]),
      lastEventId: -1,
      pollGeneration: 0,
      naturalPolls: 0,
      presenceLastUpdateId: -1,
      active: true,
    }));
    let next = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < fresh.length) {
          if (Date.now() > deadline)
            throw new Error(
              `logins too slow: ${next} of ${fresh.length} in ${Math.round((Date.now() - started) / 1000)} s`,
            );
          const user = fresh[next++];
          await this.register(user);
          await this.presence(user);
          this.poll(user);
          this.users.push(user);
          // The first action at a random point of a mean wait, so arrivals are steady at once.
          this.schedule(user, Math.random() * ACTION_MEAN_MS);
        }
      }),
    );
  }

  private async register(user: SimUser): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        const reply = await this.request(user, 'POST', '/api/v1/register', {
          type: 'application/x-www-form-urlencoded',
          data: form({
            fetch_event_types: JSON.stringify(['message']),
            client_capabilities: JSON.stringify({ notification_settings_null: true }),
          }),
        });
        if (reply.status === 200 && reply.body.result === 'success') {
          user.queueId = reply.body.queue_id;
          user.lastEventId = reply.body.last_event_id;
          return;
        }
        if (attempt >= 3) throw new Error(`register failed: ${reply.status} ${JSON.stringify(reply.body)}`);
      } catch (error) {
        if (attempt >= 3) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /** Every simulated user stops (their polls are dropped with the agent's connections). */
  stopAll(): void {
    for (const user of this.users) {
      user.active = false;
      clearTimeout(user.timer);
    }
    this.users.length = 0;
    this.agent.destroy();
    this.agent = LoadGenerator.newAgent();
  }

  // ---------------------------------------------------------------- the long-poll

  /** Issues the user's next GET /events; a poll already parked on the queue is superseded. */
  private poll(user: SimUser): void {
    const generation = ++user.pollGeneration;
    const path = `/api/v1/events?queue_id=${encodeURIComponent(user.queueId!)}&last_event_id=${user.lastEventId}`;
    if (this.window) this.window.requests.events++; // counted when sent: a poll is answered whenever events come
    this.request(user, 'GET', path, undefined, POLL_TIMEOUT_MS).then(
      (reply) => this.polled(user, generation, reply, null),
      (error: Error) => this.polled(user, generation, null, error.message),
    );
  }

  private polled(user: SimUser, generation: number, reply: Reply | null, failure: string | null): void {
    if (!user.active) return;
    const window = this.window;
    if (reply && reply.status === 200 && reply.body?.result === 'success') {
      for (const event of reply.body.events as Array<{
        id: number;
        type: string;
        message?: { id: number; stream_id?: number };
      }>) {
        user.lastEventId = Math.max(user.lastEventId, event.id);
        if (event.type !== 'heartbeat' && window) window.eventsReceived++;
        if (event.type === 'message' && event.message?.stream_id !== undefined)
          this.noteMessages(event.message.stream_id, [event.message.id]);
      }
    } else {
      failure ??= `${reply?.status} ${JSON.stringify(reply?.body).slice(0, 200)}`;
    }
    if (window && failure) this.recordError(window, 'events', `GET /events: ${failure}`);
    if (generation !== user.pollGeneration) return; // superseded by a newer poll: that one is parked
    if (failure) {
      const badQueue = reply?.body?.code === 'BAD_EVENT_QUEUE_ID';
      setTimeout(() => {
        if (!user.active) return;
        if (badQueue)
          void this.register(user).then(
            () => this.poll(user),
            () => undefined,
          );
        else this.poll(user);
      }, 1000);
      return;
    }
    user.naturalPolls++;
    this.poll(user);
  }

  // ---------------------------------------------------------------- actions

  private schedule(user: SimUser, delay = ACTION_MIN_MS + exponential(ACTION_MEAN_MS - ACTION_MIN_MS)): void {
    user.timer = setTimeout(() => {
      if (!user.active) return;
      this.schedule(user);
      void this.act(user, pickKind());
    }, delay);
  }

  private async act(user: SimUser, kind: Kind): Promise<void> {
    switch (kind) {
      case 'events': {
        // A client's GET /events is its long-poll coming back: if the user's poll came back on
        // its own since its last "events" action, that poll was this action; otherwise the
        // client re-polls now (the parked poll is answered empty, superseded).
        const window = this.window;
        if (user.naturalPolls > 0) {
          user.naturalPolls--;
          if (window) window.covered++;
        } else {
          if (window) window.forced++;
          this.poll(user);
        }
        return;
      }
      case 'presence':
        return this.presence(user);
      case 'upload':
        await this.api(user, kind, 'POST', '/api/v1/user_uploads', {
          type: `multipart/form-data; boundary=${this.uploadBoundary}`,
          data: this.uploadBody,
        });
        return;
      case 'get_messages': {
        const narrow = JSON.stringify([{ operator: 'channel', operand: user.streamId }]);
        const reply = await this.api(
          user,
          kind,
          'GET',
          `/api/v1/messages?${form({ anchor: 'newest', num_before: 20, num_after: 0, narrow, apply_markdown: true })}`,
        );
        if (reply)
          this.noteMessages(
            user.streamId,
            (reply.body.messages as Array<{ id: number }>).map((message) => message.id),
          );
        return;
      }
      case 'flags': {
        const ids = (this.recentMessages.get(user.streamId) ?? []).slice(-5);
        await this.api(user, kind, 'POST', '/api/v1/messages/flags', {
          type: 'application/x-www-form-urlencoded',
          data: form({ messages: JSON.stringify(ids), op: 'add', flag: 'read' }),
        });
        return;
      }
      case 'typing':
        await this.api(user, kind, 'POST', '/api/v1/typing', {
          type: 'application/x-www-form-urlencoded',
          data: form({ type: 'channel', op: 'start', stream_id: user.streamId, topic: 'load' }),
        });
        return;
      case 'send': {
        const reply = await this.api(user, kind, 'POST', '/api/v1/messages', {
          type: 'application/x-www-form-urlencoded',
          data: form({
            type: 'channel',
            to: user.streamId,
            topic: 'load',
            content: `A load-test message from user ${user.id} at ${Date.now()}.`,
          }),
        });
        if (reply) this.noteMessages(user.streamId, [reply.body.id]);
        return;
      }
      case 'other':
        await this.api(user, kind, 'GET', '/api/v1/users/me');
        return;
    }
  }

  private async presence(user: SimUser): Promise<void> {
    const reply = await this.api(user, 'presence', 'POST', '/api/v1/users/me/presence', {
      type: 'application/x-www-form-urlencoded',
      data: form({
        status: 'active',
        slim_presence: true,
        last_update_id: user.presenceLastUpdateId,
        new_user_input: true,
      }),
    });
    if (reply && typeof reply.body.presence_last_update_id === 'number')
      user.presenceLastUpdateId = reply.body.presence_last_update_id;
  }

  // ---------------------------------------------------------------- measuring

  openWindow(): void {
    this.window = new Window();
  }

  closeWindow(): WindowStats {
    const window = this.window!;
    this.window = null;
    const seconds = (performance.now() - window.started) / 1000;
    const latencies = window.latencies.sort((a, b) => a - b);
    const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
    const total = Object.values(window.requests).reduce((sum, n) => sum + n, 0);
    const errors = Object.values(window.errors).reduce((sum, n) => sum + n, 0);
    return {
      users: this.users.length,
      seconds,
      requests: window.requests,
      errors: window.errors,
      errorSamples: window.errorSamples,
      api: {
        count: latencies.length,
        avgMs: latencies.reduce((sum, ms) => sum + ms, 0) / latencies.length,
        p50Ms: at(0.5),
        p99Ms: at(0.99),
        maxMs: latencies[latencies.length - 1] ?? NaN,
      },
      apiByKind: Object.fromEntries(
        [...window.latencyByKind].map(([kind, list]) => {
          list.sort((a, b) => a - b);
          return [
            kind,
            {
              count: list.length,
              avgMs: list.reduce((sum, ms) => sum + ms, 0) / list.length,
              p99Ms: list[Math.min(list.length - 1, Math.floor(0.99 * list.length))],
            },
          ];
        }),
      ),
      eventsActions: { coveredByNaturalPolls: window.covered, forcedPolls: window.forced },
      eventsReceived: window.eventsReceived,
      errorRate: total ? errors / total : 0,
      requestsPerSecond: total / seconds,
    };
  }
}
