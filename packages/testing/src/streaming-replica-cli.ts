// A streaming standby for a test run (npm test's replica pass, or by hand): a standby of the
// server at TEST_DATABASE_URL when it lets this host in for replication, else a private primary
// with its standby (said on stderr, with pg_basebackup's reason). Prints
// {"primaryUrl": ..., "standbyUrl": ..., "dir": ...} (each server's `postgres` database) as one
// line on stdout, and stops what it started (and removes its files) when its stdin closes or on
// SIGTERM/SIGINT.
//   TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npx tsx packages/testing/src/streaming-replica-cli.ts
import { StreamingReplica } from './streaming-replica';

async function standby(): Promise<StreamingReplica> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (adminUrl) {
    try {
      return await StreamingReplica.of(adminUrl);
    } catch (error) {
      const reason = (error as Error).message.split('\n')[0];
      console.error(`» no standby of ${new URL(adminUrl).host} (${reason}): a private primary and standby instead`);
    }
  }
  return StreamingReplica.start();
}

async function main(): Promise<void> {
  const replica = await standby();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void replica.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // The parent holds our stdin: when it goes away (even killed -9), so do the servers.
  process.stdin.on('end', stop).on('close', stop).resume();
  const line = {
    primaryUrl: replica.primaryUrl('postgres'),
    standbyUrl: replica.standbyUrl('postgres'),
    dir: replica.dir,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
