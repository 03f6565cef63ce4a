// kill -9 of each process of the stack in turn (gateway, users, messages, channels, uploads,
// one of two event-tier replicas, worker) while a scripted workload runs, then a restart.
// Afterwards: every answered write is stored, every client's event stream holds exactly the
// events the database implies (none lost, none twice, no re-registration: a killed process
// never loses a queue), and every mark-all-read job completed exactly once.
//
// The processes are the built bundles (node scripts/build.mjs, done here) against a test
// database on the shared PostgreSQL and a key prefix of its own on the shared Redis (neither is
// restarted here; see store-restarts.test.ts for that).

import { setTimeout as sleep } from 'node:timers/promises';
import type { ProcessCluster } from './support/cluster';
import { baseline, finishAndCheck, jobProblems, startClients, useProcessCluster, Workload } from './support/workload';

jest.setTimeout(120_000);

const setting = useProcessCluster(2);

const SLOTS = ['gateway', 'users', 'messages', 'channels', 'uploads', 'events-0', 'worker'];

/**
 * The worker dies in the middle of a mark-all-read job. A job seen running may still finish
 * before the kill lands (its last batches are short); then the worker is started again and
 * another job is waited for. A job the kill caught stays active, its lock held by the dead
 * worker, until the next worker finds it stalled.
 */
async function killWorkerMidJob(cluster: ProcessCluster, workload: Workload): Promise<void> {
  const queue = cluster.deps.jobs.queue('mark-all-read');
  for (let attempt = 1; ; attempt++) {
    await workload.jobRunning(cluster);
    await cluster.kill('worker');
    if ((await queue.getActiveCount()) > 0 || attempt === 3) return;
    await cluster.startSlot('worker');
  }
}

test.each(SLOTS)('kill -9 of %s in the middle of the workload loses and duplicates nothing', async (slot) => {
  const { cluster, users, channelName } = setting;
  const clients = await startClients(users);
  const start = await baseline(cluster);
  const workload = new Workload(users, clients, channelName);
  workload.start();
  await workload.progressed(10);
  if (slot === 'worker') await killWorkerMidJob(cluster, workload);
  else await cluster.kill(slot);
  await sleep(500);
  await cluster.startSlot(slot);
  // The workload goes on after the restart, every kind of write succeeding again.
  await workload.progressed(10);
  const problems = await finishAndCheck(cluster, workload, clients, start);
  expect(problems).toEqual([]);
  // A killed process makes requests fail with 502/503 or a reset connection, never a 500 (a bug).
  expect(workload.internalErrors).toEqual([]);
  // The killed worker's job was taken over (BullMQ saw it stalled) and still completed once.
  if (slot === 'worker') expect((await jobProblems(cluster)).stalled).toBeGreaterThan(0);
  console.log(`kill -9 ${slot}: ${JSON.stringify(workload.stats)}`);
});
