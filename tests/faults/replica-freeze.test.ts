// An event-tier replica frozen (SIGSTOP) longer than its partition leases, then resumed
// (SIGCONT), several times while the workload runs: a GC pause, a CPU-starved pod or a VM hiccup
// look like this. Another replica takes its partitions over meanwhile; the frozen one wakes up
// still believing it owns them until its next lease round. Nothing may be lost or applied twice.

import { setTimeout as sleep } from 'node:timers/promises';
import { baseline, finishAndCheck, startClients, useProcessCluster, Workload } from './support/workload';

jest.setTimeout(120_000);

const setting = useProcessCluster(2);

test('a replica frozen past its leases and resumed loses and duplicates nothing', async () => {
  const { cluster, users, channelName } = setting;
  const clients = await startClients(users);
  const start = await baseline(cluster);
  const workload = new Workload(users, clients, channelName, { pauseMs: 20 });
  workload.start();
  await workload.progressed(5);
  for (let round = 0; round < 4; round++) {
    const frozen = cluster.slots.get(`events-${round % 2}`)!.process!;
    frozen.child.kill('SIGSTOP');
    await sleep(2500);
    frozen.child.kill('SIGCONT');
    await workload.progressed(5);
  }
  const problems = await finishAndCheck(cluster, workload, clients, start);
  expect(problems).toEqual([]);
  console.log(`replica freeze: ${JSON.stringify(workload.stats)}`);
});
