// A Redis Cluster for a test run (npm test's cluster pass, or by hand): starts an OwnRedisCluster
// (3 masters, 3 replicas), prints {"seedList": "host:port,..."} as one line on stdout, and stops
// the cluster (and removes its files) when its stdin closes or on SIGTERM/SIGINT.
//   npx tsx packages/testing/src/redis-cluster-cli.ts
import { OwnRedisCluster } from './redis-cluster';

async function main(): Promise<void> {
  const cluster = await OwnRedisCluster.start({ masters: 3, replicasPerMaster: 1 });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void cluster.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // The parent holds our stdin: when it goes away (even killed -9), so does the cluster.
  process.stdin.on('end', stop).on('close', stop).resume();
  process.stdout.write(`${JSON.stringify({ seedList: cluster.seedList, dir: cluster.dir })}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
