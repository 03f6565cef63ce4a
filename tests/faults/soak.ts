// The soak: a long mixed workload (messages, stars, mark-all-read jobs, uploads, event queues
// long-polled by clients) against the whole stack as processes, with one event-tier replica
// killed (kill -9) every minute and started again. At the end: zero lost or duplicated events
// (every client's stream checked against the database), every answered write stored, every job
// completed exactly once, and the resident memory of every process sampled over the run
// (start / after warm-up / end / max per process).
//
//   npm run soak                       # 10 minutes
//   SOAK_MINUTES=3 npm run soak        # shorter
//
// Settings: SOAK_MINUTES (10), SOAK_KILL_EVERY_S (60), SOAK_REPLICAS (3 event replicas),
// SOAK_SAMPLE_EVERY_S (5), SOAK_REPORT (bench/results/soak.json). Uses a fresh test database on
// the shared PostgreSQL and its own key prefix on the shared Redis (neither is restarted).

import { setTimeout as sleep } from 'node:timers/promises';
import fs from 'node:fs';
import path from 'node:path';
import { createTestDatabase, repoRoot, residentBytes, testRedisUrl } from '@teamchat/testing';
import { ProcessCluster } from './support/cluster';
import { baseline, createParticipants, finishAndCheck, jobProblems, startClients, Workload } from './support/workload';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const KILL_EVERY_S = Number(process.env.SOAK_KILL_EVERY_S ?? 60);
const REPLICAS = Number(process.env.SOAK_REPLICAS ?? 3);
const SAMPLE_EVERY_S = Number(process.env.SOAK_SAMPLE_EVERY_S ?? 5);
const REPORT = process.env.SOAK_REPORT ?? path.join(repoRoot, 'bench/results/soak.json');
/** Memory is compared against the first sample after this long (heaps and caches warm up). */
const WARM_UP_S = Math.min(60, MINUTES * 15);

const mib = (bytes: number | undefined) => (bytes === undefined ? NaN : Math.round((bytes / 1024 / 1024) * 10) / 10);

interface ProcessMemory {
  process: string;
  pid: number;
  samples: { t: number; rss: number }[];
}

async function main(): Promise<void> {
  const started = Date.now();
  const elapsed = () => Math.round((Date.now() - started) / 1000);
  const log = (message: string) => console.log(`[soak ${String(elapsed()).padStart(4)} s] ${message}`);

  const database = await createTestDatabase();
  const cluster = await ProcessCluster.start({ databaseUrl: database.url, redisUrl: testRedisUrl(), eventReplicas: REPLICAS, maxLogLines: 2000 });
  let exitCode = 1;
  try {
    const { users, channelName } = await createParticipants(cluster);
    const clients = await startClients(users);
    const start = await baseline(cluster);
    const workload = new Workload(users, clients, channelName, { pauseMs: 100 });
    log(`stack up (${REPLICAS} event replicas); workload running for ${MINUTES} min, an event replica killed every ${KILL_EVERY_S} s`);
    const runStarted = Date.now();
    workload.start();

    // Memory: every process (by pid: a restarted replica is a new process), plus this driver.
    const memory = new Map<number, ProcessMemory>();
    const sample = () => {
      const t = Math.round((Date.now() - runStarted) / 1000);
      for (const slot of cluster.slots.values()) {
        const process = slot.process;
        if (!process?.running) continue;
        const rss = residentBytes(process.pid);
        if (rss === undefined) continue;
        let entry = memory.get(process.pid);
        if (!entry) memory.set(process.pid, (entry = { process: `${slot.id}#${slot.history.length}`, pid: process.pid, samples: [] }));
        entry.samples.push({ t, rss });
      }
    };
    sample();
    const sampler = setInterval(sample, SAMPLE_EVERY_S * 1000);

    const kills: { t: number; replica: string; downMs: number; pollFailuresDuring?: number }[] = [];
    const replicaIds = cluster.slotIds('events');
    const endAt = runStarted + MINUTES * 60_000;
    let nextKill = runStarted + KILL_EVERY_S * 1000;
    let round = 0;
    while (Date.now() < endAt) {
      if (Date.now() >= nextKill && Date.now() < endAt - 10_000) {
        const replica = replicaIds[round++ % replicaIds.length];
        const t0 = Date.now();
        await cluster.kill(replica);
        await sleep(1000);
        await cluster.startSlot(replica);
        kills.push({ t: Math.round((t0 - runStarted) / 1000), replica, downMs: Date.now() - t0 });
        log(`killed -9 and restarted ${replica} (${Date.now() - t0} ms down); sent ${workload.sent.length}, events received ${clients.reduce((sum, client) => sum + client.events.length, 0)}`);
        nextKill += KILL_EVERY_S * 1000;
      }
      await sleep(500);
    }
    sample();
    clearInterval(sampler);
    log('workload stopping; checking streams, writes and jobs');
    const problems = await finishAndCheck(cluster, workload, clients, start);
    const jobs = await jobProblems(cluster);
    const unexpectedExits = cluster.unexpectedExits(new Set(cluster.slotIds('events').flatMap((id) => cluster.slots.get(id)!.history.slice(0, -1))));

    const receivedEvents = Object.fromEntries(
      clients.map((client) => [
        client.label,
        {
          events: client.events.length,
          messages: client.messageIds().length,
          starred: client.flaggedIds('starred').length,
          read: client.flaggedIds('read').length,
          attachments: client.attachmentIds().length,
          re_registrations: client.reRegistrations,
          repeated_ids_ignored: client.repeatedIds,
          poll_failures: Object.fromEntries(client.failures),
        },
      ]),
    );
    const memoryRows = [...memory.values()].map((entry) => {
      const first = entry.samples[0];
      const warm = entry.samples.find((s) => s.t >= WARM_UP_S) ?? first;
      const last = entry.samples[entry.samples.length - 1];
      const max = Math.max(...entry.samples.map((s) => s.rss));
      return {
        process: entry.process,
        pid: entry.pid,
        from_s: first.t,
        to_s: last.t,
        start_mib: mib(first.rss),
        warm_mib: mib(warm.rss),
        end_mib: mib(last.rss),
        max_mib: mib(max),
        growth_after_warm_up_mib: Math.round((mib(last.rss) - mib(warm.rss)) * 10) / 10,
        samples: entry.samples.length,
        series_mib: entry.samples.map((s) => [s.t, mib(s.rss)]),
      };
    });
    const report = {
      minutes: MINUTES,
      shortened: MINUTES < 10,
      event_replicas: REPLICAS,
      kill_every_s: KILL_EVERY_S,
      kills,
      workload: { ...workload.stats, answered: { messages: workload.sent.length, stars: workload.stars.length, uploads: workload.uploads.length, mark_all_as_read: workload.markAllRequests.length } },
      jobs: { added: jobs.added, completed: jobs.completed, stalled: jobs.stalled },
      clients: receivedEvents,
      lost_or_duplicated: problems,
      internal_errors: workload.internalErrors,
      // Warnings and errors the processes logged, by process (first 20 each).
      logged_problems: Object.fromEntries(
        [...cluster.slots.values()].flatMap((slot) => slot.history.map((p, i) => [`${slot.id}#${i + 1}`, p.problems.slice(0, 20)] as const)).filter(([, lines]) => lines.length),
      ),
      unexpected_exits: unexpectedExits,
      memory: memoryRows,
      driver_rss_mib: mib(residentBytes(process.pid)),
      ok: problems.length === 0 && unexpectedExits.length === 0,
    };
    fs.mkdirSync(path.dirname(REPORT), { recursive: true });
    fs.writeFileSync(REPORT, JSON.stringify(report, null, 2));

    console.log(`\nSoak: ${MINUTES} min${MINUTES < 10 ? ' (SHORTENED)' : ''}, ${REPLICAS} event replicas, ${kills.length} replica kills`);
    console.log(`answered: ${workload.sent.length} messages, ${workload.stars.length} stars, ${workload.uploads.length} uploads, ${workload.markAllRequests.length} mark_all_as_read; jobs added ${jobs.added}, completed ${jobs.completed}, stalled ${jobs.stalled}`);
    console.log(`request errors (during kills): ${JSON.stringify(workload.stats.errors)}`);
    console.table(Object.fromEntries(Object.entries(receivedEvents).map(([label, { poll_failures: _f, ...rest }]) => [label, rest])));
    console.table(Object.fromEntries(memoryRows.map(({ process: name, pid: _pid, samples: _s, series_mib: _series, ...rest }) => [name, rest])));
    if (workload.internalErrors.length) console.log(`internal errors (500):\n  ${workload.internalErrors.join('\n  ')}`);
    console.log(problems.length ? `PROBLEMS:\n  ${problems.join('\n  ')}` : 'zero lost or duplicated events; every answered write present; every job completed once');
    if (unexpectedExits.length) console.log(`UNEXPECTED EXITS:\n${unexpectedExits.join('\n')}`);
    console.log(`report: ${REPORT}`);
    exitCode = report.ok ? 0 : 1;
  } finally {
    await cluster.stop();
    await database.drop();
  }
  process.exit(exitCode);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
