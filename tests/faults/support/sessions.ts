// Event clients as real Zulip clients behave, one queue after another: register (with
// queue_lifespan_secs), long-poll acknowledging with last_event_id, re-register on
// BAD_EVENT_QUEUE_ID (and only then), and for session clients leave after a while (DELETE the
// queue, or just stop polling and let it expire) and come back with a new queue. Every queue's
// history is kept for the verdict: when it was registered, its max_message_id (register's state),
// every event in arrival order, and how and when it ended.

import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterUser } from './cluster';
import type { SentMessage } from './workload';

export const SESSION_EVENT_TYPES = ['message', 'update_message_flags', 'attachment'];

export type QueueEnd = 'bad_queue' | 'deleted' | 'abandoned' | 'run_end';

export interface QueueRecord {
  client: string;
  userId: number;
  queueId: string;
  lifespanSecs: number;
  registerStartedAt: number;
  registeredAt: number;
  /** Register state: the newest message the user had; newer ones must come as events. */
  maxMessageId: number;
  /** Message ids of `message` events, in arrival order (repeats included). */
  messageIds: number[];
  /** Arrival time of each entry of messageIds. */
  messageAt: number[];
  otherEvents: number;
  heartbeats: number;
  /** Events whose id was not above last_event_id (an answer repeated): ignored, as clients do. */
  repeatedIds: number;
  lastPollAnsweredAt: number;
  end?: { at: number; reason: QueueEnd };
  /** For a session that left: the messages answered before it left that it had to receive first. */
  leftWaitingFor?: number[];
}

export interface SessionClientOptions {
  /** 'sticky': one queue for the whole run; 'sessions': queues of random length one after another. */
  mode: 'sticky' | 'sessions';
  lifespanSecs: () => number;
  /** How long a session polls before leaving (sessions mode). */
  sessionMs: () => number;
  /** A poll answer not back after this long is given up (and polled again), as clients time out. */
  pollTimeoutMs: number;
  /** The longest wait, when leaving, for messages answered before the leave. */
  leaveDrainMs: number;
  /** Messages the workload has been answered 200 for (to know what a leaving session must have). */
  sent: () => SentMessage[];
  /** Whether a leaving session deletes its queue (else abandons it to expire). */
  deleteOnLeave: () => boolean;
  /** Called with each 500 answer (a bug, whatever the fault). */
  onInternalError: (what: string) => void;
}

export class SessionClient {
  readonly queues: QueueRecord[] = [];
  readonly failures = new Map<string, number>();
  /** BAD_EVENT_QUEUE_ID answers this client got, and whether a working queue followed each. */
  readonly badQueue: { at: number; queueId: string; recoveredAt?: number }[] = [];
  private running = false;
  /** Set near the end of a run: sessions stop leaving, so every open queue can be checked whole. */
  private staying = false;
  private done: Promise<void> = Promise.resolve();
  private current: QueueRecord | undefined;
  private lastEventId = -1;

  constructor(
    readonly user: ClusterUser,
    readonly label: string,
    private readonly options: SessionClientOptions,
  ) {}

  private fail(kind: string): void {
    this.failures.set(kind, (this.failures.get(kind) ?? 0) + 1);
  }

  /** Message ids of every queue (for the star loop of the workload). */
  messageIds(): number[] {
    return this.queues.flatMap((queue) => queue.messageIds);
  }

  private async withTimeout<T>(request: Promise<T>, ms: number): Promise<T | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    // A response given up on is harmless: what it carried was not acknowledged, the next poll gets it again.
    request.catch(() => undefined);
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
    try {
      return await Promise.race([request, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async register(): Promise<QueueRecord | undefined> {
    while (this.running) {
      const lifespanSecs = this.options.lifespanSecs();
      const registerStartedAt = Date.now();
      try {
        const response = await this.withTimeout(
          this.user.client.post('/api/v1/register', {
            event_types: SESSION_EVENT_TYPES,
            fetch_event_types: ['message'],
            queue_lifespan_secs: lifespanSecs,
          }),
          this.options.pollTimeoutMs,
        );
        if (response === 'timeout') this.fail('register timeout');
        else if (response.status === 200) {
          const queue: QueueRecord = {
            client: this.label,
            userId: this.user.id,
            queueId: response.body.queue_id,
            lifespanSecs,
            registerStartedAt,
            registeredAt: Date.now(),
            maxMessageId: response.body.max_message_id,
            messageIds: [],
            messageAt: [],
            otherEvents: 0,
            heartbeats: 0,
            repeatedIds: 0,
            lastPollAnsweredAt: Date.now(),
          };
          this.lastEventId = response.body.last_event_id;
          this.queues.push(queue);
          return queue;
        } else {
          this.fail(`register ${response.status}`);
          if (response.status === 500)
            this.options.onInternalError(`register 500 ${JSON.stringify(response.body)} (${this.label})`);
        }
      } catch (error) {
        this.fail(`register ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      }
      await sleep(200 + Math.random() * 300);
    }
    return undefined;
  }

  /** One poll of the current queue: 'ok', 'bad' (BAD_EVENT_QUEUE_ID) or 'failed' (try again). */
  private async poll(queue: QueueRecord): Promise<'ok' | 'bad' | 'failed'> {
    try {
      const response = await this.withTimeout(
        this.user.client.get('/api/v1/events', { queue_id: queue.queueId, last_event_id: this.lastEventId }),
        this.options.pollTimeoutMs,
      );
      if (response === 'timeout') {
        this.fail('poll timeout');
        return 'failed';
      }
      if (response.status === 200) {
        const now = Date.now();
        queue.lastPollAnsweredAt = now;
        const bad = this.badQueue[this.badQueue.length - 1];
        if (bad && bad.recoveredAt === undefined) bad.recoveredAt = now;
        for (const event of response.body.events) {
          if (event.id <= this.lastEventId) {
            queue.repeatedIds++;
            continue;
          }
          this.lastEventId = event.id;
          if (event.type === 'heartbeat') queue.heartbeats++;
          else if (event.type === 'message') {
            queue.messageIds.push(event.message.id);
            queue.messageAt.push(now);
          } else queue.otherEvents++;
        }
        return 'ok';
      }
      this.fail(`poll ${response.status} ${response.body?.code ?? ''}`.trim());
      if (response.status === 500)
        this.options.onInternalError(`poll 500 ${JSON.stringify(response.body)} (${this.label})`);
      if (response.status === 400 && response.body?.code === 'BAD_EVENT_QUEUE_ID') return 'bad';
    } catch (error) {
      this.fail(`poll ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    return 'failed';
  }

  start(): this {
    this.running = true;
    this.done = this.loop();
    return this;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const queue = (this.current = await this.register());
      if (!queue) return;
      const leaveAt = this.options.mode === 'sessions' ? Date.now() + this.options.sessionMs() : Infinity;
      let ended = false;
      while (this.running && !ended) {
        if (Date.now() >= leaveAt && !this.staying) {
          await this.leave(queue);
          break;
        }
        const outcome = await this.poll(queue);
        if (outcome === 'bad') {
          // The one answer on which a Zulip client makes a new queue.
          queue.end = { at: Date.now(), reason: 'bad_queue' };
          this.badQueue.push({ at: queue.end.at, queueId: queue.queueId });
          ended = true;
        } else if (outcome === 'failed') await sleep(100 + Math.random() * 400);
      }
    }
  }

  /**
   * A session ends: first it polls until it has every message answered before now that it must
   * get (so a queue that silently stopped receiving cannot pass as a short session), then it
   * deletes the queue or walks away from it.
   */
  private async leave(queue: QueueRecord): Promise<void> {
    const leftAt = Date.now();
    const due = this.options
      .sent()
      .filter(
        (message) =>
          message.answeredAt < leftAt && message.id > queue.maxMessageId && message.recipients.includes(this.user.id),
      )
      .map((message) => message.id);
    const deadline = leftAt + this.options.leaveDrainMs;
    let missing = due.filter((id) => !queue.messageIds.includes(id));
    while (missing.length && this.running && Date.now() < deadline) {
      const outcome = await this.poll(queue);
      if (outcome === 'bad') {
        queue.end = { at: Date.now(), reason: 'bad_queue' };
        this.badQueue.push({ at: queue.end.at, queueId: queue.queueId });
        return;
      }
      if (outcome === 'failed') await sleep(200);
      const received = new Set(queue.messageIds);
      missing = missing.filter((id) => !received.has(id));
    }
    if (!this.running) return; // the run ended meanwhile: the queue is checked as open at the end
    queue.leftWaitingFor = due;
    const deleting = this.options.deleteOnLeave();
    queue.end = { at: Date.now(), reason: deleting ? 'deleted' : 'abandoned' };
    if (deleting) {
      try {
        const response = await this.user.client.delete('/api/v1/events', { queue_id: queue.queueId });
        if (response.status === 500)
          this.options.onInternalError(`delete 500 ${JSON.stringify(response.body)} (${this.label})`);
      } catch {
        // An abandoned queue after all: it expires.
      }
    }
  }

  /** No more leaving: the queues open now stay open until stop(). */
  stay(): void {
    this.staying = true;
  }

  /** The queue being polled now (undefined between queues). */
  get open(): QueueRecord | undefined {
    return this.current && !this.current.end ? this.current : undefined;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
    const queue = this.current;
    if (queue && !queue.end) queue.end = { at: Date.now(), reason: 'run_end' };
  }
}
