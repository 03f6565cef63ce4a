// Benchmark of the event tier (issue "Event tier"), each figure against a bare Node `http`
// long-poll server with in-memory queues (baseline-server.mjs) measured in the same run, with
// the same client driver (this process):
//   1. event deliveries/s to 1,000 parked polls on the production path: clients long-poll the
//      event tier directly with HTTP Basic, as the Ingress routes them (docs/adr/0006); the same
//      through the gateway as an extra row;
//   2. p99 latency from POST /typing accepted to the event received, with 1,000 parked polls;
//   3. memory per idle registered queue with a parked poll, at 10,000 queues
//      (event tier process + its keys in Redis);
//   4. deliveries/s with two event replicas / with one (same machine).
// Run: npm run bench -- events   (see bench/README.md).

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createRedis, EventBus, type Redis, type ZulipEvent, type ZulipEventOf } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import type { Realm } from '@teamchat/db';
import { createBaseDeps } from '@teamchat/runtime';
import { doCreateRealm, doCreateUser } from '@teamchat/service-users';
import { createTestDatabase, deleteTestRedisKeys, freePort } from '@teamchat/testing';
import {
  benchEnv,
  cpuMs,
  onInterrupt,
  redisServerPid,
  ROOT,
  rssBytes,
  sleep,
  startPrintingPort,
  startService,
  stop,
  type Proc,
} from '../lib/procs';
import { call, type Reply } from '../lib/http';
import { percentile, report, type Row } from '../lib/report';

const REALMS = 4;
const USERS_PER_REALM = 25;
const QUEUES_PER_USER = 10; // 4 x 25 x 10 = 1,000 parked polls
const MEMORY_QUEUES_PER_USER = Number(process.env.BENCH_MEMORY_QUEUES_PER_USER ?? 100); // 100 users x 100 = 10,000 queues
/** BENCH_MEMORY_SNAPSHOT=1: the replica writes a V8 heap snapshot (into the repository root) once figure 3 is read. */
const MEMORY_SNAPSHOT = process.env.BENCH_MEMORY_SNAPSHOT === '1';
const MEMORY_SETTLE_MS = Number(process.env.BENCH_MEMORY_SETTLE_MS ?? 15_000);
const THROUGHPUT_EVENTS = Number(process.env.BENCH_EVENTS ?? 160);
const WINDOW = 8;
/** Turns each system takes at the throughput measurement (interleaved with the others). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const LATENCY_SAMPLES = Number(process.env.BENCH_LATENCY_SAMPLES ?? 300);
/** Which parts to run (all by default): baseline, one, two, memory. Skipped figures print NaN. */
const PHASES = new Set((process.env.BENCH_PHASES ?? 'baseline,one,two,memory').split(','));
/** How long the memory figure waits for every poll to park before it gives up and says why. */
const PARK_DEADLINE_MS = Number(process.env.BENCH_PARK_DEADLINE_MS ?? 180_000);
/** How long the idle cost of the 10,000 parked polls is measured (at least one heartbeat cycle, 45-55 s). */
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 60_000);
/** The event tier's default heartbeat (EVENTS_HEARTBEAT_MIN_MS + half its jitter): what an idle parked poll costs, per poll. */
const HEARTBEAT_MEAN_MS = 45_000 + 10_000 / 2;
/** How long a throughput measurement waits without a single delivery before it gives up and says what is missing. */
const DELIVERY_STALL_MS = Number(process.env.BENCH_DELIVERY_STALL_MS ?? 60_000);

const now = () => performance.now();
/** Progress lines, with the seconds since the start. */
const log = (line: string) => console.log(`[${(now() / 1000).toFixed(0).padStart(4)}s] ${line}`);

// ---------------------------------------------------------------- HTTP driver

export interface BenchUser {
  id: number;
  email: string;
  apiKey: string;
  realm: Realm;
  role: number;
}

type EventListener = (queue: Poller, event: Record<string, any>, at: number) => void;

/** What differs between the systems the driver talks to. */
export interface System {
  name: string;
  /** The server-side processes, for the CPU account (pids). */
  pids: () => Record<string, number>;
  register(agent: http.Agent, user: BenchUser): Promise<{ queueId: string; lastEventId: number }>;
  pollUrl(user: BenchUser, queueId: string, lastEventId: number): { url: string; headers: Record<string, string> };
  publish(realmUsers: BenchUser[], event: ZulipEvent): Promise<void>;
  /** Sends a typing notification from `sender` to `recipient`; resolves when accepted. */
  typing(agent: http.Agent, sender: BenchUser, recipient: BenchUser): Promise<void>;
}

/** What a poll was answered: 'events', 'heartbeat', 'empty', '<status> <code>' or 'error <message>'. */
function answerKind(reply: Reply): string {
  if (reply.status !== 200) return `${reply.status} ${reply.body?.code ?? String(reply.body).slice(0, 60)}`;
  const events = reply.body.events as { type: string }[];
  if (events.length === 0) return 'empty';
  return events.every((event) => event.type === 'heartbeat') ? 'heartbeat' : 'events';
}

class Poller {
  lastEventId: number;
  /** How this poller's polls were answered, by kind (answerKind), for the diagnostics of a wait that ran out. */
  readonly answers = new Map<string, number>();
  private running = true;
  done: Promise<void> = Promise.resolve();

  constructor(
    private readonly agent: http.Agent,
    private readonly system: System,
    readonly user: BenchUser,
    readonly queueId: string,
    lastEventId: number,
    private readonly listener: EventListener,
  ) {
    this.lastEventId = lastEventId;
  }

  start(): this {
    this.done = this.loop();
    return this;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const { url, headers } = this.system.pollUrl(this.user, this.queueId, this.lastEventId);
      let reply: Reply;
      try {
        reply = await call(this.agent, 'GET', url, headers);
      } catch (error) {
        if (!this.running) continue;
        this.count(`error ${(error as Error).message}`);
        await sleep(100);
        continue;
      }
      const at = now();
      if (this.running) this.count(answerKind(reply));
      if (reply.status !== 200) {
        if (this.running) await sleep(100);
        continue;
      }
      for (const event of reply.body.events) {
        this.lastEventId = Math.max(this.lastEventId, event.id);
        if (event.type !== 'heartbeat') this.listener(this, event, at);
      }
    }
  }

  stop(): void {
    this.running = false;
  }

  private count(kind: string): void {
    this.answers.set(kind, (this.answers.get(kind) ?? 0) + 1);
  }

  /** Answers so far, of every kind. */
  total(): number {
    let n = 0;
    for (const count of this.answers.values()) n += count;
    return n;
  }

  /** "heartbeat x2, 400 BAD_EVENT_QUEUE_ID x31", or "no answer". */
  describeAnswers(): string {
    return [...this.answers].map(([kind, n]) => `${kind} x${n}`).join(', ') || 'no answer';
  }
}

async function inBatches<T, R>(items: T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

// ---------------------------------------------------------------- measurements

/** Parked polls for every (user, queue) pair; events go to `listener`. */
function startPollers(
  agent: http.Agent,
  system: System,
  queues: { user: BenchUser; queueId: string; lastEventId: number }[],
  listener: EventListener,
): Poller[] {
  return queues.map(({ user, queueId, lastEventId }) =>
    new Poller(agent, system, user, queueId, lastEventId, listener).start(),
  );
}

async function stopPollers(pollers: Poller[], agent: http.Agent): Promise<void> {
  for (const poller of pollers) poller.stop();
  agent.destroy();
  await Promise.all(pollers.map((poller) => poller.done));
}

/**
 * Deliveries/s: events published to one realm's users at a time (round robin over realms),
 * at most WINDOW events not yet received by every queue they target.
 */
async function measureThroughput(
  system: System,
  realms: BenchUser[][],
  queuesPerUser: number,
  events: number,
  hooks: { onEvent: (fn: EventListener) => void },
): Promise<{ perSecond: number; deliveries: number; seconds: number }> {
  const perEvent = USERS_PER_REALM * queuesPerUser;
  const remaining = new Map<string, number>();
  let deliveries = 0;
  let release: (() => void) | null = null;
  let outstanding = 0;
  let finished = 0;
  const run = crypto.randomBytes(3).toString('hex');
  hooks.onEvent((_queue, event) => {
    const tag = event.alert_words?.[0] as string | undefined;
    if (!tag?.startsWith(run)) return;
    deliveries++;
    const left = remaining.get(tag)! - 1;
    remaining.set(tag, left);
    if (left === 0) {
      outstanding--;
      finished++;
      release?.();
    }
  });
  // A delivery that never comes must not hang the run: past DELIVERY_STALL_MS without one, say what is missing.
  const nextFinished = async () => {
    for (;;) {
      const before = deliveries;
      let timer: NodeJS.Timeout | undefined;
      const finishedOne = await Promise.race([
        new Promise<boolean>((resolve) => (release = () => resolve(true))),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), DELIVERY_STALL_MS))),
      ]);
      clearTimeout(timer);
      if (finishedOne) return;
      if (deliveries === before) {
        const missing = [...remaining].filter(([, left]) => left > 0);
        throw new Error(
          `${system.name}: no delivery for ${DELIVERY_STALL_MS / 1000} s; ${missing.length} events not received by every queue: ` +
            missing.map(([tag, left]) => `${tag} (${left} of ${perEvent} queues missing)`).join(', '),
        );
      }
    }
  };
  const started = now();
  for (let n = 0; n < events; n++) {
    while (outstanding >= WINDOW) await nextFinished();
    const tag = `${run}-${n}`;
    remaining.set(tag, perEvent);
    outstanding++;
    await system.publish(realms[n % realms.length], { type: 'alert_words', alert_words: [tag] });
  }
  while (finished < events) await nextFinished();
  const seconds = (now() - started) / 1000;
  return { perSecond: deliveries / seconds, deliveries, seconds };
}

/**
 * One typing-latency sample, two ways: from the request leaving the driver to the recipient's
 * queue receiving the event ("sent"; for the baseline that is its publish-to-receive), and from
 * the request's answer (the notification accepted) to the event received ("accepted"; 0 when
 * the event came first).
 */
async function typingSample(
  system: System,
  agent: http.Agent,
  realms: BenchUser[][],
  hooks: { onEvent: (fn: EventListener) => void },
  i: number,
): Promise<{ fromSent: number; fromAccepted: number }> {
  let waiting: { recipientId: number; senderId: number; resolve: (at: number) => void } | null = null;
  hooks.onEvent((queue, event, at) => {
    if (
      waiting &&
      event.type === 'typing' &&
      queue.user.id === waiting.recipientId &&
      event.sender?.user_id === waiting.senderId
    ) {
      const { resolve } = waiting;
      waiting = null;
      resolve(at);
    }
  });
  const users = realms[i % realms.length];
  const sender = users[i % users.length];
  const recipient = users[(i + 1) % users.length];
  const received = new Promise<number>(
    (resolve) => (waiting = { recipientId: recipient.id, senderId: sender.id, resolve }),
  );
  const sent = now();
  await system.typing(agent, sender, recipient);
  const accepted = now();
  const at = await Promise.race([received, sleep(10_000).then(() => NaN)]);
  if (Number.isNaN(at)) throw new Error(`${system.name}: typing event ${i} never arrived`);
  return { fromSent: at - sent, fromAccepted: Math.max(0, at - accepted) };
}

function summarizeLatency(samples: { fromSent: number; fromAccepted: number }[]): TypingLatency {
  const fromSent = samples.map((sample) => sample.fromSent);
  const fromAccepted = samples.map((sample) => sample.fromAccepted);
  return {
    sentP99: percentile(fromSent, 99),
    sentP50: percentile(fromSent, 50),
    acceptedP99: percentile(fromAccepted, 99),
    acceptedP50: percentile(fromAccepted, 50),
  };
}

interface TypingLatency {
  sentP99: number;
  sentP50: number;
  acceptedP99: number;
  acceptedP50: number;
}

// ---------------------------------------------------------------- the systems

function basicAuth(user: BenchUser): Record<string, string> {
  return {
    authorization: `Basic ${Buffer.from(`${user.email}:${user.apiKey}`).toString('base64')}`,
    host: user.realm.host,
  };
}

/**
 * Teamchat as a client reaches it: register, typing through the gateway; the long-polls through
 * the gateway too, or, given `eventsUrl` (an event replica, or a balancer in front of several:
 * what the Ingress routes /api/v1/events to), straight to the event tier with the same Basic
 * credentials.
 */
export function teamchatThroughGateway(
  gatewayUrl: string,
  bus: EventBus,
  typingThrough: 'api' | 'bus',
  pids: Record<string, number>,
  eventsUrl?: string,
): System {
  const pollBase = eventsUrl ?? gatewayUrl;
  return {
    name: 'teamchat',
    pids: () => pids,
    async register(agent, user) {
      const body = new URLSearchParams({
        event_types: JSON.stringify(['alert_words', 'typing']),
        fetch_event_types: '[]',
      }).toString();
      const reply = await call(
        agent,
        'POST',
        `${gatewayUrl}/api/v1/register`,
        { ...basicAuth(user), 'content-type': 'application/x-www-form-urlencoded' },
        body,
      );
      if (reply.status !== 200) throw new Error(`register failed: ${JSON.stringify(reply.body)}`);
      return { queueId: reply.body.queue_id, lastEventId: reply.body.last_event_id };
    },
    pollUrl(user, queueId, lastEventId) {
      return {
        url: `${pollBase}/api/v1/events?queue_id=${queueId}&last_event_id=${lastEventId}`,
        headers: basicAuth(user),
      };
    },
    async publish(realmUsers, event) {
      await bus.sendTransientEvent(
        realmUsers[0].realm.id,
        event,
        realmUsers.map((user) => user.id),
      );
    },
    async typing(agent, sender, recipient) {
      if (typingThrough === 'bus') {
        const event: ZulipEventOf<'typing'> = {
          type: 'typing',
          op: 'start',
          message_type: 'direct',
          sender: { user_id: sender.id, email: sender.email },
          recipients: [sender, recipient].map((u) => ({ user_id: u.id, email: u.email })),
        };
        await bus.sendTransientEvent(sender.realm.id, event, [sender.id, recipient.id]);
        return;
      }
      const body = new URLSearchParams({ op: 'start', to: JSON.stringify([recipient.id]) }).toString();
      const reply = await call(
        agent,
        'POST',
        `${gatewayUrl}/api/v1/typing`,
        { ...basicAuth(sender), 'content-type': 'application/x-www-form-urlencoded' },
        body,
      );
      if (reply.status !== 200) throw new Error(`POST /typing failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    },
  };
}

function baseline(url: string, pids: Record<string, number>, name = 'baseline'): System {
  const publishAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const publish = async (users: number[], event: ZulipEvent) => {
    await call(
      publishAgent,
      'POST',
      `${url}/publish`,
      { 'content-type': 'application/json' },
      JSON.stringify({ users, event }),
    );
  };
  return {
    name,
    pids: () => pids,
    async register(agent, user) {
      const reply = await call(
        agent,
        'POST',
        `${url}/register`,
        { 'content-type': 'application/json' },
        JSON.stringify({ user_id: user.id }),
      );
      return { queueId: reply.body.queue_id, lastEventId: reply.body.last_event_id };
    },
    pollUrl(_user, queueId, lastEventId) {
      return { url: `${url}/events?queue_id=${queueId}&last_event_id=${lastEventId}`, headers: {} };
    },
    publish: (realmUsers, event) =>
      publish(
        realmUsers.map((user) => user.id),
        event,
      ),
    async typing(_agent, sender, recipient) {
      const event: ZulipEventOf<'typing'> = {
        type: 'typing',
        op: 'start',
        message_type: 'direct',
        sender: { user_id: sender.id, email: sender.email },
        recipients: [sender, recipient].map((u) => ({ user_id: u.id, email: u.email })),
      };
      await publish([sender.id, recipient.id], event);
    },
  };
}

// ---------------------------------------------------------------- the run

export interface QueueRef {
  user: BenchUser;
  queueId: string;
  lastEventId: number;
}

interface Figures {
  throughput: { perSecond: number; deliveries: number; seconds: number };
  latency?: TypingLatency;
}

export async function registerQueues(system: System, users: BenchUser[], perUser: number): Promise<QueueRef[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const started = now();
  const queues = await inBatches(
    users.flatMap((user) => Array.from({ length: perUser }, () => user)),
    16,
    async (user) => ({ user, ...(await system.register(agent, user)) }),
  );
  agent.destroy();
  log(`   ${system.name}: ${queues.length} queues registered in ${((now() - started) / 1000).toFixed(1)} s`);
  return queues;
}

/** A system with a parked poll on every one of its queues, its events going to `hooks`. */
export interface ParkedSystem {
  system: System;
  queues: QueueRef[];
  agent: http.Agent;
  pollers: Poller[];
  hooks: { onEvent: (fn: EventListener) => void };
}

export async function park(system: System, queues: QueueRef[]): Promise<ParkedSystem> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  let listener: EventListener = () => undefined;
  const pollers = startPollers(agent, system, queues, (queue, event, at) => listener(queue, event, at));
  await sleep(2000);
  const hooks = { onEvent: (fn: EventListener) => (listener = fn) };
  return { system, queues, agent, pollers, hooks };
}

/** Stops the polls; the queues' last_event_id is kept, so another deployment can carry on with them. */
export async function unpark(parked: ParkedSystem): Promise<void> {
  await stopPollers(parked.pollers, parked.agent);
  parked.pollers.forEach((poller, i) => (parked.queues[i].lastEventId = poller.lastEventId));
  log(`   ${parked.system.name}: polls stopped`);
}

/**
 * Deliveries/s (and the CPU each process spent per 1,000 deliveries), then, if asked, the typing
 * latency, of every system given, INTERLEAVED: each system's share of the events is sent in
 * ROUNDS turns, and latency samples alternate between the systems, so that all of them meet
 * the same load from whatever else runs on the machine (a shared machine's load changes by
 * the second; measured one after the other, the systems would not be compared fairly).
 */
async function measureInterleaved(
  parkedSystems: ParkedSystem[],
  realms: BenchUser[][],
  withLatency: boolean,
): Promise<Figures[]> {
  for (const { system, hooks } of parkedSystems) await measureThroughput(system, realms, QUEUES_PER_USER, 16, hooks); // warm-up
  const totals = parkedSystems.map(() => ({ deliveries: 0, seconds: 0, cpu: new Map<string, number>() }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [k, { system, hooks }] of parkedSystems.entries()) {
      const pids = { driver: process.pid, ...system.pids() };
      const cpuBefore = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
      const result = await measureThroughput(
        system,
        realms,
        QUEUES_PER_USER,
        Math.ceil(THROUGHPUT_EVENTS / ROUNDS),
        hooks,
      );
      totals[k].deliveries += result.deliveries;
      totals[k].seconds += result.seconds;
      for (const [name, pid] of Object.entries(pids))
        totals[k].cpu.set(name, (totals[k].cpu.get(name) ?? 0) + cpuMs(pid) - cpuBefore[name]);
    }
  }
  const figures: Figures[] = parkedSystems.map(({ system }, k) => {
    const { deliveries, seconds, cpu } = totals[k];
    const throughput = { perSecond: deliveries / seconds, deliveries, seconds };
    const cpuLine = [...cpu].map(([name, ms]) => `${name} ${((ms / deliveries) * 1000).toFixed(0)}`);
    log(
      `   ${system.name}: ${deliveries} deliveries in ${seconds.toFixed(2)} s = ${throughput.perSecond.toFixed(0)}/s; CPU ms per 1,000 deliveries: ${cpuLine.join(', ')}`,
    );
    return { throughput };
  });
  if (withLatency) {
    const samples = parkedSystems.map(() => [] as { fromSent: number; fromAccepted: number }[]);
    for (let i = 0; i < 20 + LATENCY_SAMPLES; i++) {
      for (const [k, parked] of parkedSystems.entries()) {
        const sample = await typingSample(parked.system, parked.agent, realms, parked.hooks, i);
        if (i >= 20) samples[k].push(sample); // the first 20 warm up
        await sleep(5);
      }
    }
    parkedSystems.forEach(({ system }, k) => {
      const latency = summarizeLatency(samples[k]);
      figures[k].latency = latency;
      log(
        `   ${system.name}: typing sent -> received p99 ${latency.sentP99.toFixed(2)} ms, p50 ${latency.sentP50.toFixed(2)} ms; accepted -> received p99 ${latency.acceptedP99.toFixed(2)} ms, p50 ${latency.acceptedP50.toFixed(2)} ms`,
      );
    });
  }
  return figures;
}

/**
 * Waits until every poller's queue was SEEN with a parked poll (its mark, field k) at least once.
 * Not all at once: with thousands of polls some are always between a heartbeat's answer and
 * their next park, so "all parked at one instant" may never hold once heartbeats begin (the
 * memory figure once waited on it for six minutes). Past PARK_DEADLINE_MS it throws, naming the
 * queues that never parked, whether they still exist, and what their polls were answered.
 */
async function waitParked(redis: Redis, prefix: string, pollers: Poller[]): Promise<void> {
  const started = now();
  const waiting = new Set(pollers);
  let reported = started;
  for (;;) {
    const pending = [...waiting];
    const pipeline = redis.pipeline();
    for (const poller of pending) pipeline.hexists(`${prefix}{q:${poller.queueId}}:m`, 'k');
    (await pipeline.exec())!.forEach(([, value], i) => {
      if (value === 1) waiting.delete(pending[i]);
    });
    if (waiting.size === 0) {
      log(`   every one of ${pollers.length} polls parked within ${((now() - started) / 1000).toFixed(1)} s`);
      return;
    }
    if (now() - reported > 15_000) {
      reported = now();
      log(
        `   ${waiting.size} of ${pollers.length} polls not parked yet after ${((now() - started) / 1000).toFixed(0)} s`,
      );
    }
    if (now() - started > PARK_DEADLINE_MS) {
      const missing = [...waiting];
      const exists = redis.pipeline();
      for (const poller of missing) exists.exists(`${prefix}{q:${poller.queueId}}:m`);
      const present = (await exists.exec())!.map(([, value]) => value === 1);
      const lines = missing
        .slice(0, 20)
        .map(
          (poller, i) =>
            `     ${poller.queueId} (user ${poller.user.id}, queue ${present[i] ? 'exists' : 'GONE'}): ${poller.describeAnswers()}`,
        );
      throw new Error(
        `${missing.length} of ${pollers.length} polls never parked within ${PARK_DEADLINE_MS / 1000} s ` +
          `(${present.filter((p) => !p).length} of their queues are gone):\n${lines.join('\n')}` +
          (missing.length > 20 ? `\n     ... and ${missing.length - 20} more` : ''),
      );
    }
    // Not faster: each round asks Redis about every queue not yet seen parked (10,000 at first),
    // work that competes with the replica's on a busy machine.
    await sleep(2000);
  }
}

/** Bytes per queue: (process RSS growth + Redis bytes of the queues) / queues, with every poll parked. */
async function measureMemory(
  start: () => Promise<{
    proc: Proc;
    system: System;
    redisBytes: () => Promise<number>;
    /** Resolves once every queue was seen with a parked poll; throws with what is missing past PARK_DEADLINE_MS. */
    parkedAll?: (pollers: Poller[]) => Promise<void>;
    /** What the process's heap holds at the reading (its /metrics), printed beside the figure. */
    heap?: () => Promise<string>;
    /** Calls per Redis command so far (INFO commandstats of the process's own Redis). */
    redisCommands?: () => Promise<Map<string, number>>;
  }>,
  users: BenchUser[],
) {
  const { proc, system, redisBytes, parkedAll, heap, redisCommands } = await start();
  await sleep(2000);
  const rssBefore = rssBytes(proc);
  const redisBefore = await redisBytes();
  const queues = await registerQueues(system, users, MEMORY_QUEUES_PER_USER);
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const pollers = startPollers(agent, system, queues, () => undefined);
  if (parkedAll) {
    try {
      await parkedAll(pollers);
    } catch (error) {
      await stopPollers(pollers, agent);
      await stop(proc);
      throw error;
    }
  }
  // Idle for a while, as the figure's queues are: V8's memory reducer collects what registering
  // left behind (the same for both systems), so RSS growth is what the parked queues hold.
  await sleep(MEMORY_SETTLE_MS);
  // What the idle parked polls cost: the process's CPU, and (for the event tier) its Redis
  // commands, over IDLE_MS with nothing published, beside what their heartbeats alone need.
  let idle: IdleCost | undefined;
  if (redisCommands) {
    const before = await redisCommands();
    const cpuBefore = cpuMs(proc.child.pid!);
    const answersBefore = pollers.reduce((n, poller) => n + poller.total(), 0);
    const started = now();
    await sleep(IDLE_MS);
    const seconds = (now() - started) / 1000;
    const after = await redisCommands();
    let commands = 0;
    let scripts = 0;
    for (const [name, calls] of after) {
      const added = calls - (before.get(name) ?? 0);
      commands += added;
      if (name === 'evalsha' || name === 'eval') scripts += added;
    }
    const heartbeatsPerSecond = queues.length / (HEARTBEAT_MEAN_MS / 1000);
    idle = {
      seconds,
      cpuPercent: (cpuMs(proc.child.pid!) - cpuBefore) / 10 / seconds,
      commandsPerSecond: commands / seconds,
      scriptsPerSecond: scripts / seconds,
      answersPerSecond: (pollers.reduce((n, poller) => n + poller.total(), 0) - answersBefore) / seconds,
      heartbeatsPerSecond,
      // Each heartbeat: the heartbeat script, then the client's next poll's script.
      heartbeatScriptsPerSecond: 2 * heartbeatsPerSecond,
    };
    log(
      `   ${system.name}: idle ${seconds.toFixed(0)} s with ${queues.length} parked polls: process CPU ${idle.cpuPercent.toFixed(1)} % of a core, ` +
        `Redis ${idle.commandsPerSecond.toFixed(0)} commands/s of which ${idle.scriptsPerSecond.toFixed(1)} scripts/s ` +
        `(heartbeats alone: ${idle.heartbeatScriptsPerSecond.toFixed(1)} scripts/s), answers ${idle.answersPerSecond.toFixed(1)}/s (heartbeats due ${heartbeatsPerSecond.toFixed(1)}/s)`,
    );
  }
  const processBytes = rssBytes(proc) - rssBefore;
  const redisGrowth = (await redisBytes()) - redisBefore;
  if (heap) log(`   ${system.name}: ${await heap()}`);
  if (heap && MEMORY_SNAPSHOT) {
    // --heapsnapshot-signal: a full GC, then the live heap written to Heap.*.heapsnapshot.
    proc.child.kill('SIGUSR2');
    await sleep(45_000);
  }
  await stopPollers(pollers, agent);
  await stop(proc);
  const perQueue = (processBytes + redisGrowth) / queues.length;
  log(
    `   ${system.name}: ${queues.length} queues, process +${(processBytes / 1e6).toFixed(1)} MB, Redis +${(redisGrowth / 1e6).toFixed(1)} MB, ${perQueue.toFixed(0)} B/queue`,
  );
  return { perQueue, processBytes, redisBytes: redisGrowth, queues: queues.length, idle };
}

/** What idle parked polls cost (the memory figure's, nothing published). */
interface IdleCost {
  seconds: number;
  /** The event replica's CPU over the window, % of one core. */
  cpuPercent: number;
  commandsPerSecond: number;
  scriptsPerSecond: number;
  /** Poll answers the clients got per second (heartbeats, when idle). */
  answersPerSecond: number;
  /** Heartbeats due per second: parked polls / the mean heartbeat delay. */
  heartbeatsPerSecond: number;
  heartbeatScriptsPerSecond: number;
}

async function main() {
  const database = await createTestDatabase();
  const { env, serviceEnv } = benchEnv(database.url, { prefix: 'bench:', eventPartitions: REALMS });
  const prefix = env.REDIS_PREFIX;
  const deps = createBaseDeps('bench', env, { logger: createLogger('bench', 'warn') });
  const redis: Redis = createRedis(env.REDIS_URL, { name: 'bench-producer' });
  const bus = new EventBus(redis, prefix, REALMS);
  const procs: Proc[] = [];
  const notes: string[] = [];
  const skipped = {
    perSecond: NaN,
    deliveries: 0,
    seconds: 0,
    p99: NaN,
    p50: NaN,
    perQueue: NaN,
    processBytes: NaN,
    redisBytes: NaN,
    queues: 0,
    idle: undefined as IdleCost | undefined,
  };

  try {
    log('» creating 4 realms and 100 users');
    const realms: BenchUser[][] = [];
    for (let r = 0; r < REALMS; r++) {
      const realm = await doCreateRealm(deps.db, {
        stringId: `bench${r}`,
        name: `Bench ${r}`,
        host: `bench${r}.teamchat.test`,
      });
      const users: BenchUser[] = [];
      for (let u = 0; u < USERS_PER_REALM; u++) {
        const { user, apiKey } = await doCreateUser(deps, realm, {
          email: `u${u}@bench${r}.test`,
          fullName: `User ${r}.${u}`,
          role: 400,
        });
        users.push({ id: user.id, email: user.delivery_email, apiKey, realm, role: user.role });
      }
      realms.push(users);
    }
    const allUsers = realms.flat();

    // ---- teamchat: event replicas (behind a connection balancer, as a Kubernetes Service is), the gateway
    const messagesAvailable = fs.existsSync(path.join(ROOT, 'services/messages/dist/main.js'));
    /** A deployment; another `redisPrefix` gives it its own queues and intake, apart from the others. */
    /** `direct`: the polls go straight to the event tier (the production path), not through the gateway. */
    const deployment = async (
      replicas: number,
      balanced: boolean,
      { redisPrefix = prefix, withMessages = true, direct = false } = {},
    ) => {
      const tag = redisPrefix === prefix ? '' : `${redisPrefix.slice(prefix.length, -1)}-`;
      // 1,000 polls of 100 users for minutes are far over Zulip's per-user API budget (polls that
      // may park spend none, the rest would).
      const deploymentEnv = { ...serviceEnv, REDIS_PREFIX: redisPrefix, RATE_LIMIT_ENABLED: 'false' };
      const deploymentBus = redisPrefix === prefix ? bus : new EventBus(redis, redisPrefix, REALMS);
      const events: Proc[] = [];
      for (let i = 0; i < replicas; i++) {
        events.push(
          await startService(`${tag}events-${i}`, 'events', {
            ...deploymentEnv,
            EVENTS_REPLICA_ID: `bench-${tag}events-${i}`,
            DB_POOL_SIZE: '10',
          }),
        );
      }
      const balancer = balanced
        ? await startPrintingPort(
            `${tag}balancer`,
            path.join(__dirname, 'balancer.mjs'),
            events.map((proc) => String(proc.port)),
          )
        : undefined;
      let messages: Proc | undefined;
      if (messagesAvailable && withMessages) {
        try {
          messages = await startService(`${tag}messages`, 'messages', deploymentEnv);
        } catch (error) {
          notes.push(
            `messages service did not start (${(error as Error).message.split('\n')[0]}); typing published to the intake directly`,
          );
        }
      }
      const unreachable = 'http://127.0.0.1:9';
      const gateway = await startService(`${tag}gateway`, 'gateway', {
        ...deploymentEnv,
        EVENTS_URL: `http://127.0.0.1:${(balancer ?? events[0]).port}`,
        MESSAGES_URL: messages ? `http://127.0.0.1:${messages.port}` : unreachable,
        USERS_URL: unreachable,
        CHANNELS_URL: unreachable,
        UPLOADS_URL: unreachable,
      });
      const started = [...events, ...(balancer ? [balancer] : []), ...(messages ? [messages] : []), gateway];
      procs.push(...started);
      const pids: Record<string, number> = Object.fromEntries(started.map((proc) => [proc.name, proc.child.pid!]));
      pids['redis (shared)'] = await redisServerPid(redis);
      const typingThrough = messages && process.env.BENCH_TYPING_THROUGH !== 'intake' ? 'api' : 'bus';
      const eventsUrl = `http://127.0.0.1:${(balancer ?? events[0]).port}`;
      const system = teamchatThroughGateway(
        `http://127.0.0.1:${gateway.port}`,
        deploymentBus,
        typingThrough,
        pids,
        direct ? eventsUrl : undefined,
      );
      const route = direct ? 'direct' : 'via gateway';
      system.name = balanced
        ? `teamchat ${route}, ${replicas} replica${replicas > 1 ? 's' : ''} (balanced)`
        : `teamchat ${route}`;
      return { system, stop: () => Promise.all(started.map(stop)) };
    };

    // ---- figures 1 and 2: the baseline (in its own process), teamchat on the production path
    // (polls straight to one event replica, with Basic auth, as the Ingress routes them) and
    // teamchat with the polls through the gateway (its own deployment and key prefix, so that the
    // events of one do not reach the other's queues), all with their 1,000 polls parked at once,
    // measured in alternation.
    const skippedLatency: TypingLatency = { sentP99: NaN, sentP50: NaN, acceptedP99: NaN, acceptedP50: NaN };
    let baseline1: Figures = { throughput: skipped, latency: skippedLatency };
    let floor1: Figures = { throughput: skipped, latency: skippedLatency };
    let teamchat1: Figures = { throughput: skipped, latency: skippedLatency };
    let viaGateway1: Figures = { throughput: skipped, latency: skippedLatency };
    let balanced1: Figures = { throughput: skipped };
    let balanced2: Figures = { throughput: skipped };
    let baseMemory = skipped;
    let queues: QueueRef[] | undefined;
    // One set of queues for every deployment: replicas are interchangeable, queues live in Redis.
    const teamchatQueues = async (system: System) =>
      (queues ??= await registerQueues(system, allUsers, QUEUES_PER_USER));
    if (PHASES.has('baseline') || PHASES.has('one')) {
      const parked: ParkedSystem[] = [];
      let baseProc: Proc | undefined;
      let floorProc: Proc | undefined;
      let one: Awaited<ReturnType<typeof deployment>> | undefined;
      let viaGateway: Awaited<ReturnType<typeof deployment>> | undefined;
      if (PHASES.has('baseline')) {
        log('» baseline: bare node:http long-poll server, in-memory queues');
        baseProc = await startPrintingPort('baseline', path.join(__dirname, 'baseline-server.mjs'));
        procs.push(baseProc);
        const system = baseline(`http://127.0.0.1:${baseProc.port}`, { baseline: baseProc.child.pid! });
        parked.push(await park(system, await registerQueues(system, allUsers, QUEUES_PER_USER)));
        log('» baseline, queues in Redis: the same server keeping its queues in Redis, as the event tier must');
        floorProc = await startPrintingPort('baseline-redis', path.join(__dirname, 'baseline-redis-server.mjs'), [
          env.REDIS_URL,
          `${prefix}floor:`,
        ]);
        procs.push(floorProc);
        const floor = baseline(
          `http://127.0.0.1:${floorProc.port}`,
          { 'baseline-redis': floorProc.child.pid!, 'redis (shared)': await redisServerPid(redis) },
          'baseline, queues in Redis',
        );
        parked.push(await park(floor, await registerQueues(floor, allUsers, QUEUES_PER_USER)));
      }
      if (PHASES.has('one')) {
        log('» teamchat: polls straight to one event replica (Basic auth; register and typing through the gateway)');
        one = await deployment(1, false, { direct: true });
        parked.push(await park(one.system, await teamchatQueues(one.system)));
        log('» teamchat: polls through the gateway -> one event replica (apart: its own key prefix)');
        viaGateway = await deployment(1, false, { redisPrefix: `${prefix}gw:` });
        parked.push(await park(viaGateway.system, await registerQueues(viaGateway.system, allUsers, QUEUES_PER_USER)));
      }
      log(
        `» ${parked.map(({ system }) => system.name).join(' and ')}: deliveries/s and typing latency, ${ROUNDS} rounds interleaved`,
      );
      const figures = await measureInterleaved(parked, realms, true);
      for (const p of parked) await unpark(p);
      if (baseProc) baseline1 = figures.shift()!;
      if (floorProc) floor1 = figures.shift()!;
      if (one) teamchat1 = figures.shift()!;
      if (viaGateway) viaGateway1 = figures.shift()!;
      await stop(baseProc);
      await stop(floorProc);
      await one?.stop();
      await viaGateway?.stop();
    }
    if (PHASES.has('memory')) {
      baseMemory = {
        ...skipped,
        ...(await measureMemory(async () => {
          const memoryProc = await startPrintingPort('baseline-memory', path.join(__dirname, 'baseline-server.mjs'));
          procs.push(memoryProc);
          return {
            proc: memoryProc,
            system: baseline(`http://127.0.0.1:${memoryProc.port}`, { baseline: memoryProc.child.pid! }),
            redisBytes: async () => 0,
          };
        }, allUsers)),
      };
    }
    if (PHASES.has('two')) {
      // Both deployments at once, each with its own queues and intake (its own key prefix), and
      // measured in alternation, like figures 1 and 2.
      log('» teamchat: polls straight to a balancer -> one event replica, and (apart) balancer -> two event replicas');
      const one = await deployment(1, true, { redisPrefix: `${prefix}one:`, withMessages: false, direct: true });
      const parkedOne = await park(one.system, await registerQueues(one.system, allUsers, QUEUES_PER_USER));
      const two = await deployment(2, true, { redisPrefix: `${prefix}two:`, withMessages: false, direct: true });
      const parkedTwo = await park(two.system, await registerQueues(two.system, allUsers, QUEUES_PER_USER));
      [balanced1, balanced2] = await measureInterleaved([parkedOne, parkedTwo], realms, false);
      await unpark(parkedOne);
      await unpark(parkedTwo);
      await one.stop();
      await two.stop();
    }

    let memory = skipped;
    let ownRedis: OwnRedis | undefined;
    if (PHASES.has('memory')) {
      log('» teamchat memory at 10,000 queues (straight to one replica)');
      memory = {
        ...skipped,
        ...(await measureMemory(async () => {
          // Its own Redis server: INFO commandstats then counts this replica's commands alone (the
          // shared one serves the bench's own reads, and whatever else runs on the machine).
          ownRedis = await startOwnRedis();
          const proc = await startService('events-memory', 'events', {
            ...serviceEnv,
            REDIS_URL: ownRedis.url,
            EVENTS_REPLICA_ID: 'bench-memory',
            ...(MEMORY_SNAPSHOT ? { NODE_OPTIONS: '--heapsnapshot-signal=SIGUSR2' } : {}),
            EVENTS_QUEUE_LIFESPAN_SECS: '3600',
            DB_POOL_SIZE: '10',
          });
          procs.push(proc);
          const own = ownRedis.client;
          // Register and polls straight to the replica with Basic credentials: the path the Ingress
          // routes both on (docs/adr/0006); this figure has no gateway. Nothing is published.
          const replicaUrl = `http://127.0.0.1:${proc.port}`;
          const system = teamchatThroughGateway(replicaUrl, bus, 'bus', {}, replicaUrl);
          system.name = 'teamchat (direct)';
          return {
            proc,
            system,
            redisBytes: async () =>
              (await redisBytesWithPrefix(own, `${prefix}{q:`)) +
              (await redisBytesWithPrefix(own, `${prefix}events:user:`)),
            redisCommands: async () => {
              const counts = new Map<string, number>();
              for (const match of (await own.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
                if (match[1] !== 'info') counts.set(match[1], Number(match[2]));
              return counts;
            },
            heap: async () => {
              // The admin listener (PORT + 1000): prom-client's process and heap gauges.
              const text = await new Promise<string>((resolve, reject) =>
                http
                  .get(`http://127.0.0.1:${proc.port + 1000}/metrics`, (res) => {
                    let body = '';
                    res.on('data', (chunk: Buffer) => (body += chunk.toString()));
                    res.on('end', () => resolve(body));
                  })
                  .on('error', reject),
              );
              const mb = (name: string) => {
                const value = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
                return value === undefined ? 'n/a' : `${(Number(value) / 1e6).toFixed(1)} MB`;
              };
              return `V8 heap used ${mb('nodejs_heap_size_used_bytes')} of ${mb('nodejs_heap_size_total_bytes')}, external ${mb('nodejs_external_memory_bytes')}, RSS ${mb('process_resident_memory_bytes')}`;
            },
            parkedAll: (pollers: Poller[]) => waitParked(own, prefix, pollers),
          };
        }, allUsers).finally(() => ownRedis?.stop())),
      };
    }

    const rows: Row[] = [
      {
        metric: 'deliveries/s to 1,000 parked polls (direct, Ingress path)',
        value: teamchat1.throughput.perSecond,
        baseline: baseline1.throughput.perSecond,
        unit: 'events/s',
        better: 'higher',
        goal: '>= 0.8',
      },
      {
        metric: 'deliveries/s, the bare server with its queues in Redis',
        value: floor1.throughput.perSecond,
        baseline: baseline1.throughput.perSecond,
        unit: 'events/s',
        better: 'higher',
      },
      {
        metric: 'deliveries/s direct vs the bare server with its queues in Redis',
        value: teamchat1.throughput.perSecond,
        baseline: floor1.throughput.perSecond,
        unit: 'events/s',
        better: 'higher',
      },
      {
        metric: 'deliveries/s to 1,000 parked polls (via gateway)',
        value: viaGateway1.throughput.perSecond,
        baseline: baseline1.throughput.perSecond,
        unit: 'events/s',
        better: 'higher',
      },
      // The issue's figure: from POST /typing accepted, against the baseline's publish-to-receive.
      {
        metric: 'p99 typing accepted -> received (1,000 parked)',
        value: teamchat1.latency!.acceptedP99,
        baseline: baseline1.latency!.sentP99,
        unit: 'ms',
        better: 'lower',
        goal: '<= 2',
      },
      {
        metric: 'memory per idle queue + parked poll @10k',
        value: memory.perQueue,
        baseline: baseMemory.perQueue,
        unit: 'bytes',
        better: 'lower',
        goal: '<= 3',
      },
      {
        metric: 'Redis scripts/s, 10,000 idle parked polls vs their heartbeats alone',
        value: memory.idle?.scriptsPerSecond ?? NaN,
        baseline: memory.idle?.heartbeatScriptsPerSecond ?? NaN,
        unit: 'scripts/s',
        better: 'lower',
        goal: '<= 1.2',
      },
      {
        metric: 'deliveries/s, 2 event replicas vs 1',
        value: balanced2.throughput.perSecond,
        baseline: balanced1.throughput.perSecond,
        unit: 'events/s',
        better: 'higher',
        goal: '>= 0.9',
      },
    ];
    console.log('');
    report('events', rows, {
      notes,
      details: {
        throughput: {
          baseline: baseline1.throughput,
          baselineQueuesInRedis: floor1.throughput,
          oneReplica: teamchat1.throughput,
          oneReplicaViaGateway: viaGateway1.throughput,
          balancedOne: balanced1.throughput,
          balancedTwo: balanced2.throughput,
          events: THROUGHPUT_EVENTS,
          window: WINDOW,
        },
        latency: {
          baseline: baseline1.latency,
          baselineQueuesInRedis: floor1.latency,
          teamchat: teamchat1.latency,
          teamchatViaGateway: viaGateway1.latency,
          samples: LATENCY_SAMPLES,
          typingThrough: messagesAvailable ? 'POST /api/v1/typing' : 'intake',
        },
        memory: { baseline: baseMemory, teamchat: memory },
      },
    });
    for (const [name, t] of [
      ['teamchat (direct)', teamchat1.latency!],
      ['teamchat (via gateway)', viaGateway1.latency!],
    ] as const)
      console.log(
        `\ntyping latency, ${name}: accepted -> received p99 ${t.acceptedP99.toFixed(2)} / p50 ${t.acceptedP50.toFixed(2)} ms; POST /typing sent -> received p99 ${t.sentP99.toFixed(2)} / p50 ${t.sentP50.toFixed(2)} ms`,
      );
    console.log(
      `typing latency, baseline: publish sent -> received p99 ${baseline1.latency!.sentP99.toFixed(2)} / p50 ${baseline1.latency!.sentP50.toFixed(2)} ms`,
    );
    console.log(
      `memory @10k: event tier process ${(memory.processBytes / 1e6).toFixed(1)} MB + Redis ${(memory.redisBytes / 1e6).toFixed(1)} MB; baseline process ${(baseMemory.processBytes / 1e6).toFixed(1)} MB`,
    );
    if (memory.idle)
      console.log(
        `idle @10k parked: event replica CPU ${memory.idle.cpuPercent.toFixed(1)} % of a core; Redis ${memory.idle.commandsPerSecond.toFixed(0)} commands/s, ${memory.idle.scriptsPerSecond.toFixed(1)} scripts/s (heartbeats alone ${memory.idle.heartbeatScriptsPerSecond.toFixed(1)}); answers ${memory.idle.answersPerSecond.toFixed(1)}/s (heartbeats due ${memory.idle.heartbeatsPerSecond.toFixed(1)}/s)`,
      );
    for (const note of notes) console.log(`note: ${note}`);
    log('» cleaning up');
  } finally {
    for (const proc of procs) await stop(proc);
    log('   processes stopped');
    log(`   ${await deleteTestRedisKeys(redis, `${prefix}*`)} Redis keys dropped`);
    await redis.quit();
    await deps.close();
    log('   connections closed');
    await database.drop();
    log('   database dropped');
  }
}

interface OwnRedis {
  url: string;
  client: Redis;
  stop(): Promise<void>;
}

/** A redis-server of its own (no persistence), for counting one process's commands. */
async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-events-redis-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  // Killed with the bench's other processes, however it ends.
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  onInterrupt(async () => kill());
  const url = `redis://127.0.0.1:${port}`;
  const client: Redis = createRedis(url, { name: 'bench-own' });
  // Refused until the server listens; the pings below wait for it.
  client.on('error', () => undefined);
  for (let tries = 0; ; tries++) {
    try {
      await client.ping();
      break;
    } catch (error) {
      if (tries > 100) throw error;
      await sleep(100);
    }
  }
  return {
    url,
    client,
    async stop() {
      client.disconnect();
      if (child.pid) process.kill(child.pid, 'SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Bytes Redis uses for the keys starting with `prefix` (MEMORY USAGE of each). */
async function redisBytesWithPrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let total = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) {
      const pipeline = redis.pipeline();
      for (const key of keys) pipeline.memory('USAGE', key);
      for (const [, bytes] of (await pipeline.exec())!) total += Number(bytes ?? 0);
    }
  } while (cursor !== '0');
  return total;
}

// Run as a suite; imported (bench/fanout reuses the driver), nothing runs.
if (require.main === module)
  main().then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
