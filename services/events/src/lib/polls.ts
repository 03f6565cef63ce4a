// Long-polls. A poll that finds its queue empty parks here until the fan-out (on any replica)
// publishes a wake-up on the queue's channel, a heartbeat is due, or a newer poll of the same
// queue (on any replica) supersedes it. Each replica has ONE subscriber connection; a queue's
// channel stays subscribed a little after its poll ends, so the client's next poll parks in a
// single round trip. The first append to an empty queue carries its events in the wake-up, so
// the poll is answered without reading the queue; the queue in Redis stays the truth (events
// leave it only when acknowledged), so a lost wake-up only delays an answer.

import type http from 'node:http';
import { sameSlotGroups, type Redis } from '@teamchat/bus';
import { BadEventQueueIdError, JsonableError, sendError, sendJson, type Logger } from '@teamchat/core';
import { eventDeliveryCounts, eventTierMetrics } from '@teamchat/telemetry';
import type { PollMode, PollResult, QueueStore } from './queue-store';

export interface PollOptions {
  heartbeatMinMs: number;
  heartbeatJitterMs: number;
  subscriptionLingerMs: number;
}

export interface PollRequest {
  queueId: string;
  userId: number;
  lastEventId: number;
  dontBlock: boolean;
  /** Sent parameters nobody read, for ignored_parameters_unsupported. */
  ignored: string[];
  res: http.ServerResponse;
}

interface ParkedPoll {
  request: PollRequest;
  /** The queue's poll sequence number of this poll; unknown until the parking script answered. */
  seq?: number;
  finished: boolean;
  checking: boolean;
  /** A check to run once the one in progress ends (the strongest asked for: see `stronger`). */
  queued?: CheckMode;
  heartbeat?: NodeJS.Timeout;
}

type CheckMode = Exclude<PollMode, 'read' | 'readpark'>;

/**
 * Of two checks wanted for one poll, the one that does both's work: a heartbeat always answers
 * (with the queued events, or a heartbeat); a park answers with queued events or parks again
 * and arms the next heartbeat; a wake only answers when events are queued.
 */
const CHECK_STRENGTH: Record<CheckMode, number> = { wake: 0, park: 1, heartbeat: 2 };

function stronger(a: CheckMode | undefined, b: CheckMode): CheckMode {
  return a !== undefined && CHECK_STRENGTH[a] > CHECK_STRENGTH[b] ? a : b;
}

/** What a poll answer's events are (the heartbeat is the only event of its answer). */
function answerKind(events: string): 'events' | 'heartbeat' | 'empty' {
  if (events === '[]') return 'empty';
  return events.startsWith('[{"type":"heartbeat"') ? 'heartbeat' : 'events';
}

/** The success body, built around the events JSON array the queue script returned as text. */
export function eventsBody(queueId: string, events: string, ignored: string[]): string {
  const extra = ignored.length ? `,"ignored_parameters_unsupported":${JSON.stringify(ignored)}` : '';
  return `{"result":"success","msg":"","events":${events},"queue_id":${JSON.stringify(queueId)}${extra}}`;
}

function prunedError(lastEventId: number): JsonableError {
  return new JsonableError(`An event newer than ${lastEventId} has already been pruned!`);
}

export class PollHub {
  /**
   * The polls parked here, by queue. Almost always one per queue: a one-element array costs a
   * third of a Set (bench/README.md, the events bench's figure 3: 10,000 of them on a replica).
   */
  private readonly parked = new Map<string, ParkedPoll[]>();
  /** Events that woke a poll whose parking script has not answered yet, by queue. */
  private readonly earlyWakes = new Map<string, { seq: number; events: string }>();
  private readonly subscribed = new Set<string>();
  private readonly lastUsed = new Map<string, number>();
  private readonly subscribing = new Map<string, Promise<void>>();
  private pendingSubscriptions: {
    queueIds: string[];
    done: Promise<void>;
    resolve: () => void;
    reject: (error: unknown) => void;
  } | null = null;
  private sweepTimer: NodeJS.Timeout | undefined;
  private draining = false;
  /** What the event tier's autoscaler scales on (k8s/base/events/hpa.yaml). */
  private readonly parkedGauge = eventTierMetrics().parkedPolls;
  /** Answers by what they carried: per replica, what the dashboard shows beside the parked polls. */
  private readonly deliveries = eventDeliveryCounts();

  constructor(
    private readonly store: QueueStore,
    private readonly subscriber: Redis,
    private readonly options: PollOptions,
    private readonly logger: Logger,
  ) {}

  start(): void {
    // Wake-ups are shard channels (SPUBLISH from the queue's scripts, in the queue's slot).
    this.subscriber.on('smessage', (channel: string, message: string) =>
      this.onWake(this.store.queueIdOfChannel(channel), message),
    );
    // Wake-ups published while the subscriber was reconnecting are lost: look at every parked queue
    // again. A Cluster has one subscriber per master, each reconnecting on its own (+subscriber).
    for (const reconnected of ['ready', '+subscriber', 'subscribersReady'])
      this.subscriber.on(reconnected, () => setTimeout(() => this.wakeAll(), 50));
    this.sweepTimer = setInterval(() => this.unsubscribeIdle(), Math.max(1000, this.options.subscriptionLingerMs / 2));
  }

  /** Answers GET /events for an existing queue: at once when events are queued, else when they come. */
  async poll(request: PollRequest): Promise<void> {
    const { queueId } = request;
    if (request.dontBlock || this.draining) {
      const result = await this.store.poll(queueId, 'read', request.userId, request.lastEventId);
      if (result.status === 'pruned') throw prunedError(request.lastEventId);
      if (result.status !== 'ok') throw new BadEventQueueIdError(queueId);
      this.respond(request, result.events);
      return;
    }
    // Listed before the script runs: a wake-up may arrive before the script's reply does.
    const poll = this.track(request);
    // Not subscribed here yet (the queue's previous poll was elsewhere, or long ago): the poll
    // parks in Redis at once all the same, and looks at its queue again once the subscription is
    // confirmed (a wake-up published before then is lost; the queue holds what it carried). It
    // once waited for the subscription before parking: a replica short of CPU confirmed
    // subscriptions late, and its polls stayed unparked (and unanswered) meanwhile.
    const subscribing = this.subscribed.has(queueId) ? null : this.subscribe(queueId);
    subscribing?.catch(() => undefined);
    let result: PollResult;
    try {
      result = await this.store.poll(queueId, 'readpark', request.userId, request.lastEventId);
    } catch (error) {
      this.untrack(poll);
      throw error;
    }
    if (result.status === 'pruned') throw this.failed(poll, prunedError(request.lastEventId));
    if (result.status !== 'ok') throw this.failed(poll, new BadEventQueueIdError(queueId));
    if (result.events !== '[]') {
      this.untrack(poll);
      this.respond(request, result.events);
      return;
    }
    this.parkedAt(poll, result.seq);
    if (!subscribing || poll.finished) return;
    subscribing.then(
      () => void this.check(poll, 'wake'),
      (error) => {
        // The subscriber connection was reconnecting (ioredis then refuses SUBSCRIBE for a
        // moment): answered with no events, as a heartbeat would; the next poll subscribes anew.
        this.logger.warn({ err: error, queue_id: queueId }, 'wake-up subscription failed; answering the poll empty');
        if (!poll.finished) this.finish(poll, '[]');
      },
    );
  }

  private failed(poll: ParkedPoll, error: JsonableError): JsonableError {
    this.untrack(poll);
    return error;
  }

  private track(request: PollRequest): ParkedPoll {
    const poll: ParkedPoll = { request, finished: false, checking: false };
    const polls = this.parked.get(request.queueId);
    if (polls) polls.push(poll);
    else this.parked.set(request.queueId, [poll]);
    this.parkedGauge.inc();
    this.lastUsed.set(request.queueId, Date.now());
    request.res.on('close', () => {
      // The client went away (or the response was sent): nothing more to do for it.
      if (!poll.finished) this.untrack(poll);
    });
    return poll;
  }

  private untrack(poll: ParkedPoll): void {
    poll.finished = true;
    clearTimeout(poll.heartbeat);
    const polls = this.parked.get(poll.request.queueId);
    const index = polls ? polls.indexOf(poll) : -1;
    if (index !== -1) {
      polls!.splice(index, 1);
      this.parkedGauge.dec();
    }
    if (polls?.length === 0) {
      this.parked.delete(poll.request.queueId);
      this.earlyWakes.delete(poll.request.queueId);
    }
    this.lastUsed.set(poll.request.queueId, Date.now());
  }

  /** The poll is parked in Redis under `seq`: arm its heartbeat, and look again if woken meanwhile. */
  private parkedAt(poll: ParkedPoll, seq: number): void {
    if (poll.finished) return;
    poll.seq = seq;
    const early = this.earlyWakes.get(poll.request.queueId);
    if (early?.seq === seq) {
      this.finish(poll, early.events);
      return;
    }
    clearTimeout(poll.heartbeat);
    poll.heartbeat = setTimeout(() => void this.check(poll, 'heartbeat'), this.heartbeatDelay());
    if (poll.queued) {
      const mode = poll.queued;
      poll.queued = undefined;
      void this.check(poll, mode);
    }
  }

  private heartbeatDelay(): number {
    return this.options.heartbeatMinMs + Math.floor(Math.random() * (this.options.heartbeatJitterMs + 1));
  }

  /**
   * "e<seq>:<events>": events appended to the empty queue a poll (sequence seq) parked on; that
   * poll is answered with them. Anything else ("s" superseded, "x" gone): parked polls look again.
   */
  private onWake(queueId: string, message: string): void {
    if (!message.startsWith('e')) {
      this.wakeQueue(queueId);
      return;
    }
    const colon = message.indexOf(':');
    const seq = Number(message.slice(1, colon));
    const events = `[${message.slice(colon + 1)}]`;
    const polls = this.parked.get(queueId);
    if (!polls) return;
    for (const poll of polls) {
      if (poll.seq === seq) {
        this.finish(poll, events);
        return;
      }
    }
    if (polls.some((poll) => poll.seq === undefined)) this.earlyWakes.set(queueId, { seq, events });
  }

  private wakeQueue(queueId: string): void {
    // A copy: a check may answer (and unlist) its poll before the loop ends.
    for (const poll of [...(this.parked.get(queueId) ?? [])]) void this.check(poll, 'wake');
  }

  private wakeAll(): void {
    for (const queueId of [...this.parked.keys()]) this.wakeQueue(queueId);
  }

  /** Runs one script for a parked poll, one at a time per poll, and answers it if it is done. */
  private async check(poll: ParkedPoll, mode: CheckMode): Promise<void> {
    if (poll.finished) return;
    if (poll.seq === undefined || poll.checking) {
      poll.queued = stronger(poll.queued, mode);
      return;
    }
    poll.checking = true;
    let failed = false;
    const { request } = poll;
    try {
      const result = await this.store.poll(request.queueId, mode, request.userId, poll.seq);
      if (poll.finished) return;
      if (result.status === 'superseded') this.finish(poll, '[]');
      else if (result.status === 'heartbeat') this.finish(poll, `[{"type":"heartbeat","id":${result.heartbeatId}}]`);
      else if (result.status === 'ok' && result.events !== '[]') this.finish(poll, result.events);
      // The queue went while the poll was parked on it (deleted by its client, collected past the
      // per-user cap, dropped after a Redis rollback): answered with no events, as Zulip's cleanup
      // finishes a parked handler; the client's next poll is told BAD_EVENT_QUEUE_ID.
      else if (result.status === 'bad') this.finish(poll, '[]');
      else if (result.status !== 'ok') this.finishWithError(poll, new BadEventQueueIdError(request.queueId));
      else if (mode === 'park') this.parkedAt(poll, poll.seq);
    } catch (error) {
      this.logger.warn({ err: error, queue_id: request.queueId }, 'checking a parked poll failed; retrying');
      failed = true;
    } finally {
      poll.checking = false;
    }
    if (poll.finished) return;
    if (failed) {
      // The same check again, after a pause: a heartbeat that failed must still answer the poll
      // (retried as a mere wake-up, it left the poll with no heartbeat at all).
      const retry = stronger(poll.queued, mode);
      poll.queued = undefined;
      setTimeout(() => void this.check(poll, retry), 500);
      return;
    }
    if (poll.queued) {
      const next = poll.queued;
      poll.queued = undefined;
      await this.check(poll, next);
    }
  }

  private finish(poll: ParkedPoll, events: string): void {
    this.untrack(poll);
    this.respond(poll.request, events);
  }

  private finishWithError(poll: ParkedPoll, error: JsonableError): void {
    this.untrack(poll);
    sendError(poll.request.res, error);
  }

  private respond(request: PollRequest, events: string): void {
    const answer = answerKind(events);
    this.deliveries.add(answer, () => ({ answer }));
    sendJson(
      request.res,
      200,
      eventsBody(request.queueId, events, request.ignored),
      this.draining ? { Connection: 'close' } : {},
    );
  }

  private subscribe(queueId: string): Promise<void> {
    if (this.subscribed.has(queueId)) return Promise.resolve();
    const inFlight = this.subscribing.get(queueId);
    if (inFlight) return inFlight;
    // Polls arriving together share one SUBSCRIBE.
    if (!this.pendingSubscriptions) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      const batch = { queueIds: [] as string[], done, resolve, reject };
      this.pendingSubscriptions = batch;
      setImmediate(() => {
        this.pendingSubscriptions = null;
        const channels = batch.queueIds.map((id) => this.store.wakeChannel(id));
        Promise.all(sameSlotGroups(this.subscriber, channels).map((group) => this.subscriber.ssubscribe(...group)))
          .then(() => {
            for (const id of batch.queueIds) this.subscribed.add(id);
            batch.resolve();
          }, batch.reject)
          .finally(() => {
            for (const id of batch.queueIds) this.subscribing.delete(id);
          });
      });
    }
    this.pendingSubscriptions.queueIds.push(queueId);
    this.subscribing.set(queueId, this.pendingSubscriptions.done);
    return this.pendingSubscriptions.done;
  }

  /** Drops the subscriptions of queues nobody polled here for a while. */
  private unsubscribeIdle(): void {
    const cutoff = Date.now() - this.options.subscriptionLingerMs;
    const idle: string[] = [];
    for (const queueId of this.subscribed) {
      if (!this.parked.has(queueId) && (this.lastUsed.get(queueId) ?? 0) < cutoff) idle.push(queueId);
    }
    if (idle.length === 0) return;
    for (const queueId of idle) {
      this.subscribed.delete(queueId);
      this.lastUsed.delete(queueId);
    }
    const channels = idle.map((id) => this.store.wakeChannel(id));
    Promise.all(sameSlotGroups(this.subscriber, channels).map((group) => this.subscriber.sunsubscribe(...group))).catch(
      (error) => this.logger.warn({ err: error }, 'unsubscribing idle queues failed'),
    );
  }

  /** Graceful stop: every parked poll is answered now (no events); new polls no longer park. */
  drain(): void {
    this.draining = true;
    for (const polls of [...this.parked.values()]) for (const poll of [...polls]) this.finish(poll, '[]');
  }

  close(): void {
    clearInterval(this.sweepTimer);
    for (const polls of [...this.parked.values()]) for (const poll of [...polls]) this.untrack(poll);
  }
}
