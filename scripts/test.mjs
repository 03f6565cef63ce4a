// npm test: every test, on a fresh clone. Installs what it needs, finds (or starts) PostgreSQL
// and Redis, builds the services (multi-process tests run the bundles), checks the sources (import
// cycles, types, lint, format), runs jest.
// Arguments go to jest: npm test -- services/users
// The cluster pass: the Redis-touching suites (CLUSTER_SUITES) again against a real Redis Cluster
// (3 masters, 3 replicas, started here and stopped after), with TEST_REDIS_CLUSTER_NODES set. The
// whole run does it after the main pass; `npm test -- --cluster [paths]` does only it (on `paths`,
// else CLUSTER_SUITES). A TEST_REDIS_CLUSTER_NODES already set names a cluster to use instead.
// The replica pass: the suites of the routed heavy reads (REPLICA_SUITES) again with every test
// database's processes reading from a streaming standby (DATABASE_REPLICA_URL, the same database
// there; TEST_DATABASE_REPLICA_URL names the standby). The standby is of the test PostgreSQL when
// it lets this host replicate (pg_hba.conf `host replication`), else of a private primary started
// for the pass (which TEST_DATABASE_URL then names). It runs on the Redis Cluster as well, so those
// suites (register, narrows, the zulip-js checks, the events checkers) pass with both stores beyond
// one host at once. The whole run does it after the cluster pass, on the same cluster;
// `npm test -- --replica [paths]` does only it.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import readline from 'node:readline';
import path from 'node:path';
import { build } from './build.mjs';
import { root } from './lib/deps.mjs';
import { ensurePostgres, ensureRedis } from './lib/infra.mjs';
import { varDir } from './lib/stack.mjs';

await build({ quiet: true });
ensureChromium();
const postgres = await ensurePostgres('postgres', { varDir: path.join(varDir, 'test') });
const redis = await ensureRedis({ varDir: path.join(varDir, 'test') });
const env = {
  ...process.env,
  TEST_DATABASE_URL: postgres.adminUrl ?? postgres.url,
  TEST_REDIS_URL: redis.url,
  TURBO_TELEMETRY_DISABLED: '1',
};

/** The suites that touch Redis, run once more against a Redis Cluster (docs: tests/README.md). */
const CLUSTER_SUITES = [
  'packages/bus/test',
  'services/events/test',
  'services/gateway/test/auth.test.ts',
  'services/gateway/test/rate-limit.test.ts',
  'services/gateway/test/event-queue-limits.test.ts',
  'services/gateway/test/sessions.test.ts',
  'services/web/test/password-reset.test.ts',
  'services/uploads/test/tus-locker.test.ts',
  'services/uploads/test/tus.test.ts',
  'services/messages/test/mark-all-read.test.ts',
  'services/channels/test/delete-topic-crash.test.ts',
  'services/users/test/zulip-js.test.ts',
  'services/messages/test/zulip-js.test.ts',
  'services/channels/test/zulip-js.test.ts',
  'services/events/test/zulip-js.test.ts',
];
/**
 * Inherently single-server, left out of the cluster pass: readiness.test.ts cuts the replica's
 * Redis with a TCP proxy in front of one server (a Cluster's clients follow the nodes' own addresses).
 */
const SINGLE_SERVER_ONLY = ['services/events/test/readiness\\.test\\.ts'];

/** The suites whose reads the read replica serves (register, GET /messages, topics, user lists), run once more with a standby. */
const REPLICA_SUITES = [
  'services/events/test/register.test.ts',
  'services/events/test/realm-state-cache.test.ts',
  'services/events/test/events.test.ts',
  'services/messages/test/fetch.test.ts',
  'services/channels/test/topics.test.ts',
  'services/users/test/users.test.ts',
  'services/users/test/zulip-js.test.ts',
  'services/messages/test/zulip-js.test.ts',
  'services/channels/test/zulip-js.test.ts',
  'services/events/test/zulip-js.test.ts',
  'tests/faults/events-checker.test.ts',
  'tests/faults/redis-cluster-checker.test.ts',
];

const clusterOnly = process.argv[2] === '--cluster';
const replicaOnly = process.argv[2] === '--replica';
const jestArgs = process.argv.slice(clusterOnly || replicaOnly ? 3 : 2);
const wholeRun = jestArgs.length === 0 && !clusterOnly && !replicaOnly;
let status = 0;
if (wholeRun) {
  // The whole-tree checks (root package.json's scripts), each failing the run on any finding; a run
  // of chosen test files skips them. Through turbo: with no file changed since a passing run, each
  // is answered from its cache (turbo.json).
  const checks = ['check:cycles', 'check:test-dependencies', 'check:dependencies', 'typecheck', 'lint', 'format:check'];
  console.log(`» whole-tree checks: ${checks.join(', ')}`);
  const started = Date.now();
  const result = spawnSync(
    path.join(root, 'node_modules/.bin/turbo'),
    ['run', ...checks, '--continue', '--output-logs=errors-only'],
    { cwd: root, stdio: 'inherit', env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' } },
  );
  if (result.status !== 0) {
    console.error(`» whole-tree checks failed (${Math.round((Date.now() - started) / 1000)} s)`);
    status = result.status ?? 1;
  }
}
const jest = (args, jestEnv) =>
  spawnSync(process.execPath, [path.join(root, 'node_modules/jest/bin/jest.js'), ...args], {
    cwd: root,
    stdio: 'inherit',
    env: jestEnv,
  }).status ?? 1;
/**
 * Run once, in the replica pass (on the Redis Cluster and the standby at once), not also in the
 * whole run's main pass: its thirteen processes and six redis-servers beside the main pass's
 * timing tests (lifespans of a second) on two cores starved them (horizons.test.ts failed so).
 */
const REPLICA_PASS_ONLY = ['tests/faults/redis-cluster-checker\\.test\\.ts'];
if (status === 0 && !clusterOnly && !replicaOnly)
  status = jest(
    wholeRun ? [`--testPathIgnorePatterns=(/node_modules/|${REPLICA_PASS_ONLY.join('|')})`] : jestArgs,
    env,
  );
const redisCluster = status === 0 && (wholeRun || clusterOnly || replicaOnly) ? await startRedisCluster() : undefined;
if (status === 0 && (wholeRun || clusterOnly)) {
  const started = Date.now();
  console.log(`» cluster pass: Redis Cluster ${redisCluster.seedList}`);
  const paths = clusterOnly && jestArgs.length ? jestArgs : CLUSTER_SUITES;
  const ignore = `--testPathIgnorePatterns=(/node_modules/|${SINGLE_SERVER_ONLY.join('|')})`;
  // The option last: jest's array options take the words after them as more values.
  status = jest([...paths, ignore], {
    ...env,
    TEST_REDIS_CLUSTER_NODES: redisCluster.seedList,
  });
  console.log(`» cluster pass ${status === 0 ? 'passed' : 'failed'} (${Math.round((Date.now() - started) / 1000)} s)`);
}
if (status === 0 && (wholeRun || replicaOnly)) {
  const started = Date.now();
  const standby = await startLineChild(
    'packages/testing/src/streaming-replica-cli.ts',
    'the streaming standby',
    env,
  ).catch((error) => console.error(`» replica pass: ${error.message}`));
  if (!standby) status = 1;
  else {
    console.log(
      `» replica pass: primary ${new URL(standby.line.primaryUrl).host}, standby ${new URL(standby.line.standbyUrl).host}, Redis Cluster ${redisCluster.seedList}`,
    );
    try {
      status = jest(replicaOnly && jestArgs.length ? jestArgs : REPLICA_SUITES, {
        ...env,
        TEST_DATABASE_URL: standby.line.primaryUrl,
        TEST_DATABASE_REPLICA_URL: standby.line.standbyUrl,
        TEST_REDIS_CLUSTER_NODES: redisCluster.seedList,
      });
    } finally {
      await standby.stop();
    }
  }
  console.log(`» replica pass ${status === 0 ? 'passed' : 'failed'} (${Math.round((Date.now() - started) / 1000)} s)`);
}
await redisCluster?.stop();
await redis.stop();
await postgres.stop();
process.exit(status);

/**
 * A Redis Cluster for the cluster and replica passes: OwnRedisCluster (packages/testing) in a tsx child that
 * prints the seed list and stops the cluster when its stdin closes (also if this process dies).
 */
async function startRedisCluster() {
  if (process.env.TEST_REDIS_CLUSTER_NODES)
    return { seedList: process.env.TEST_REDIS_CLUSTER_NODES, stop: async () => {} };
  const child = spawn(
    process.execPath,
    [path.join(root, 'node_modules/tsx/dist/cli.mjs'), path.join(root, 'packages/testing/src/redis-cluster-cli.ts')],
    { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const firstLine = once(readline.createInterface({ input: child.stdout }), 'line').then(([line]) => line);
  const line = await Promise.race([firstLine, exited.then(() => undefined)]);
  if (!line) throw new Error('the Redis Cluster did not start');
  return {
    seedList: JSON.parse(line).seedList,
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/**
 * A helper process (tsx `script`) that prints one JSON line when ready and stops what it started
 * when its stdin closes (also if this process dies): the line, and stop().
 */
async function startLineChild(script, what, childEnv) {
  const child = spawn(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), path.join(root, script)], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
    env: childEnv,
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const firstLine = once(readline.createInterface({ input: child.stdout }), 'line').then(([line]) => line);
  const line = await Promise.race([firstLine, exited.then(() => undefined)]);
  if (!line) throw new Error(`${what} did not start`);
  return {
    line: JSON.parse(line),
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/**
 * The browser tests (tests/browser) drive Debian's chromium (CHROMIUM_PATH names another): installed
 * here with apt-get when it is missing and this runs as root; otherwise those tests say what to install.
 */
function ensureChromium() {
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (fs.existsSync(chromium) || process.getuid?.() !== 0 || process.env.CHROMIUM_PATH) return;
  console.log('» installing chromium (apt-get), for the browser tests');
  const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env: aptEnv });
  spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env: aptEnv });
}
