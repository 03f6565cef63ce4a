// Manual check (not part of npm test: python-zulip-api is not a project dependency):
// python-zulip-api's call_on_each_event keeps receiving every event while the event replica
// serving it is stopped (SIGTERM) and others are killed (-9). Needs the bundle and the library:
//   node scripts/build.mjs events
//   PYTHONPATH=/path/to/python-zulip-api/zulip node --import tsx services/events/test/manual/pyzulip.ts
// (tests/README.md has a recipe).
import { sleep } from '@teamchat/testing';
import { spawn } from 'node:child_process';
import { startStack } from '@teamchat/stack';
import { EventCluster } from '../support/cluster';
import { alertWords, commitEvent } from '../support/producers';

async function main() {
  const stack = await startStack();
  const cluster = await EventCluster.start(stack, 2, {
    EVENTS_HEARTBEAT_MIN_MS: '2000',
    EVENTS_HEARTBEAT_JITTER_MS: '100',
  });
  const user = await stack.createUser();
  const py = `
import json, sys, zulip
c = zulip.Client(email=sys.argv[1], api_key=sys.argv[2], site=sys.argv[3], verbose=True)
def cb(e):
    print("EVENT " + json.dumps(e), flush=True)
c.call_on_each_event(cb, event_types=['alert_words'])
`;
  const child = spawn('/usr/bin/python3', ['-c', py, user.deliveryEmail, user.apiKey, cluster.gatewayUrl], {
    env: process.env,
  });
  const received: string[] = [];
  child.stdout.on('data', (d: Buffer) => {
    for (const line of d.toString().split('\n')) {
      if (line.startsWith('EVENT ')) received.push(JSON.parse(line.slice(6)).alert_words[0]);
      else if (line.trim()) console.log('py:', line.trim());
    }
  });
  child.stderr.on('data', (d: Buffer) => console.log('py err:', d.toString().trim().slice(0, 300)));
  await sleep(3000);
  const send = async (word: string) => {
    await commitEvent(stack, alertWords([word]), [user.id]);
    const deadline = Date.now() + 20000;
    while (!received.includes(word) && Date.now() < deadline) await sleep(100);
    console.log(received.includes(word) ? `received ${word}` : `MISSING ${word}`);
  };
  await send('one');
  cluster.replicas[0].kill('SIGTERM');
  await cluster.replicas[0].exited;
  await cluster.startReplica();
  await send('two after graceful restart');
  cluster.replicas[1].kill('SIGKILL');
  await cluster.replicas[1].exited;
  await send('three after kill -9');
  await cluster.startReplica();
  cluster.replicas[2].kill('SIGKILL');
  await send('four after another kill -9');
  console.log('received in order:', JSON.stringify(received));
  child.kill('SIGKILL');
  await cluster.stop();
  await stack.close();
}
main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
