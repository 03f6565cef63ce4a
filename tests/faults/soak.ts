// The soak: the event tier's checker (support/checker.ts) run long. The whole stack as processes
// on a PRIVATE Redis (each event replica through its own TCP proxy), clients on many queues
// (sticky ones on one queue for the whole run, session ones coming and going with lifespans from
// a minute to hours, re-registering on BAD_EVENT_QUEUE_ID), the workload writing (messages,
// stars, mark-all-read, uploads), and every fault kind injected `rounds` times on a shuffled,
// seeded schedule: kill -9 of a replica (restarted), SIGSTOP past the lease (then SIGCONT), Redis
// stalled (DEBUG SLEEP) past the lease, Redis kill -9 + restart with appendfsync always and with
// everysec, a replica's Redis traffic held / its connections reset and refused / reset and let
// back in another order (through its proxy), scale-out (a new replica) and scale-in (SIGTERM,
// timed). At the end every queue is judged against the database: lost, duplicated, out of
// order; every client told BAD_EVENT_QUEUE_ID must have recovered. Exit code 1 on any of those,
// a 500, a replica that ignored SIGTERM or a process that died unasked.
//
//   npm run soak                                  # 10 minutes, each fault kind once
//   SOAK_MINUTES=60 npm run soak                  # the full run: each fault kind 6 times
//   SOAK_MINUTES=3 SOAK_KINDS=proxy-cut,scale-in npm run soak
//
// Settings (env):
//   SOAK_MINUTES (10)            length of the faulty run (then the streams settle and are judged)
//   SOAK_ROUNDS (minutes / 10)   times each fault kind is injected (at least 1)
//   SOAK_KINDS (all)             comma-separated fault kinds (see FAULT_KINDS in support/checker.ts)
//   SOAK_SEED (1)                the schedule's and the clients' random seed
//   SOAK_REPLICAS (3)            event replicas at the start
//   SOAK_USERS (10), SOAK_STICKY (10), SOAK_SESSIONS (30)   users, one-queue clients, session clients
//   SOAK_STICKY_LIFESPANS (60,600,3600,14400)   queue_lifespan_secs of the sticky clients, in turn
//   SOAK_LONE_LIFESPANS (60,600) one more sticky client per value, each alone on a user of its own
//                                (no other register refreshes that user's queue index)
//   SOAK_SESSION_LIFESPAN (60-7200)             queue_lifespan_secs range of session queues
//   SOAK_SESSION_SECS (30-min(1200, run/2))     how long a session polls before leaving
//   SOAK_LEASE_MS (1500), SOAK_HEARTBEAT_MS (5000) with 1000 ms jitter
//   SOAK_FAULT_MS (2.5 leases)   how long a stop / stall / hold / cut lasts
//   SOAK_DOWN_MS (1500)          how long a killed replica or Redis stays down
//   SOAK_TERM_GRACE_MS (15000)   a replica not gone this long after SIGTERM ignored it (failure)
//   SOAK_SEND_PAUSE_MS (250)     pause of each of the two senders between messages
//   SOAK_SAMPLE_EVERY_S (5)      memory sample period (Redis used_memory, process RSS)
//   SOAK_REPORT (bench/results/soak.json)
// Uses a fresh test database on the shared PostgreSQL (not restarted) and its own Redis.

import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '@teamchat/testing';
import { FAULT_KINDS, type FaultKind, printReport, runChecker } from './support/checker';

const number = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const range = (name: string, fallback: [number, number]): [number, number] => {
  const value = process.env[name];
  if (!value) return fallback;
  const [min, max] = value.split('-').map(Number);
  return [min, max ?? min];
};

async function main(): Promise<void> {
  const minutes = number('SOAK_MINUTES', 10);
  const leaseMs = number('SOAK_LEASE_MS', 1500);
  const kinds = (process.env.SOAK_KINDS?.split(',').map((kind) => kind.trim()) ?? [...FAULT_KINDS]) as FaultKind[];
  const unknown = kinds.filter((kind) => !FAULT_KINDS.includes(kind));
  if (unknown.length) throw new Error(`unknown SOAK_KINDS: ${unknown.join(', ')} (known: ${FAULT_KINDS.join(', ')})`);
  const report = process.env.SOAK_REPORT ?? path.join(repoRoot, 'bench/results/soak.json');
  const started = Date.now();
  const result = await runChecker({
    runSecs: minutes * 60,
    rounds: number('SOAK_ROUNDS', Math.max(1, Math.floor(minutes / 10))),
    kinds,
    replicas: number('SOAK_REPLICAS', 3),
    users: number('SOAK_USERS', 10),
    stickyClients: number('SOAK_STICKY', 10),
    sessionClients: number('SOAK_SESSIONS', 30),
    stickyLifespansSecs: (process.env.SOAK_STICKY_LIFESPANS ?? '60,600,3600,14400').split(',').map(Number),
    loneLifespansSecs: (process.env.SOAK_LONE_LIFESPANS ?? '60,600').split(',').filter(Boolean).map(Number),
    sessionLifespanSecs: range('SOAK_SESSION_LIFESPAN', [60, 7200]),
    sessionSecs: range('SOAK_SESSION_SECS', [30, Math.max(60, Math.min(1200, minutes * 30))]),
    leaseMs,
    heartbeatMinMs: number('SOAK_HEARTBEAT_MS', 5000),
    heartbeatJitterMs: 1000,
    faultMs: number('SOAK_FAULT_MS', Math.round(leaseMs * 2.5)),
    downMs: number('SOAK_DOWN_MS', 1500),
    termGraceMs: number('SOAK_TERM_GRACE_MS', 15_000),
    sendPauseMs: number('SOAK_SEND_PAUSE_MS', 250),
    sampleEveryMs: number('SOAK_SAMPLE_EVERY_S', 5) * 1000,
    settleMs: 60_000,
    seed: number('SOAK_SEED', 1),
    log: (message) =>
      console.log(`[soak ${String(Math.round((Date.now() - started) / 1000)).padStart(5)} s] ${message}`),
  });
  fs.mkdirSync(path.dirname(report), { recursive: true });
  fs.writeFileSync(report, JSON.stringify({ minutes, shortened: minutes < 60, ...result }, null, 2));
  printReport(result);
  console.log(`report: ${report}`);
  process.exit(result.ok ? 0 : 1);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
