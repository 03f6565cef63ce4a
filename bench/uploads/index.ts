// Uploads benchmark: a 100 MiB resumable (tus) upload to S3 through the gateway, against
// uploading the same bytes straight to the same S3 server (one PutObject, and a multipart
// upload with the AWS SDK's own uploader). Goal: tus throughput >= 0.7x the direct upload.
//
// Separate processes, as deployed: this one (the clients), the S3 server (s3rver), and the
// system under test — the gateway and the uploads service, each its own process started from
// its built bundle (services/*/dist/main.js), with a fresh database and Redis prefix, storing
// into that S3 server. Each round runs every contender once, in turn; the table reports
// medians over the rounds. Besides wall time it reports the CPU seconds each path costs across
// its processes, which a busy shared machine disturbs far less.

import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { DeleteObjectsCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload as S3Upload } from '@aws-sdk/lib-storage';
import { JOB_QUEUES } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { createBaseDeps } from '@teamchat/runtime';
import { doCreateRealm, doCreateUser } from '@teamchat/service-users';
import { s3ClientConfig, type S3StorageConfig } from '@teamchat/storage';
import { createTestDatabase } from '@teamchat/testing';
import * as tus from 'tus-js-client';
import { benchEnv, cpuMs, startService, stop, type Proc } from '../lib/procs';
import { median, report } from '../lib/report';

const MiB = 1024 * 1024;
const SIZE = 100 * MiB;
const ROUNDS = Number(process.env.BENCH_UPLOADS_ROUNDS ?? 3);

const children: ChildProcess[] = [];

/** Starts a TypeScript child process; returns the JSON it prints on its first line, and its pid. */
async function startScript<T>(script: string, env: Record<string, string> = {}): Promise<{ info: T; pid: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines = readline.createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready`)));
    lines.once('line', (line) => resolve({ info: JSON.parse(line) as T, pid: child.pid! }));
  });
}

async function stopChildren(): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
}

interface Measured {
  seconds: number;
  /** CPU seconds the processes involved used meanwhile, all together and each. */
  cpu: number;
  cpuBy: Record<string, number>;
}

async function measure(pids: Record<string, number>, run: () => Promise<unknown>): Promise<Measured> {
  const cpuSeconds = (pid: number) => cpuMs(pid) / 1000;
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));
  const started = process.hrtime.bigint();
  await run();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpuBy = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid) - before[name]]));
  return { seconds, cpu: Object.values(cpuBy).reduce((sum, value) => sum + value, 0), cpuBy };
}

function tusUpload(endpoint: string, authorization: string, data: Buffer, name: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const upload = new tus.Upload(data, {
      endpoint,
      headers: { Authorization: authorization },
      metadata: { filename: name, filetype: 'application/octet-stream' },
      retryDelays: null,
      onSuccess: (payload) => resolve((JSON.parse(payload.lastResponse.getBody()) as { url: string }).url),
      onError: reject,
    });
    upload.start();
  });
}

async function main() {
  // What the services share: a fresh database (the migrated template), a Redis prefix, a secret.
  const database = await createTestDatabase();
  const { env, serviceEnv } = benchEnv(database.url, { prefix: 'bench:uploads:', eventPartitions: 8 });
  const deps = createBaseDeps('bench', env, { logger: createLogger('bench', 'warn') });
  const services: Proc[] = [];
  try {
    const realm = await doCreateRealm(deps.db, { stringId: '', name: 'Bench', host: 'bench.invalid' });
    const { user, apiKey } = await doCreateUser(deps, realm, { email: 'bench@bench.invalid', fullName: 'Bench' });
    await run({ ...serviceEnv, UPLOADS_MAX_FILE_SIZE_MIB: '200' }, `${user.delivery_email}:${apiKey}`, services);
  } finally {
    await deps.jobs.queue(JOB_QUEUES.uploadsCleanup).obliterate({ force: true });
    await deps.close();
    await Promise.all(services.map(stop));
    await stopChildren();
    await database.drop();
  }
}

/** The system under test (each service from its bundle, as the other benchmarks start them), then the rounds. */
async function run(serviceEnv: Record<string, string>, credentials: string, services: Proc[]) {
  const s3 = await startScript<{ config: S3StorageConfig; env: Record<string, string> }>('s3-server.ts');
  const uploads = await startService('uploads', 'uploads', { ...serviceEnv, ...s3.info.env });
  services.push(uploads);
  // The gateway only needs the uploads service here; the others point nowhere.
  const nowhere = 'http://127.0.0.1:9';
  const gateway = await startService('gateway', 'gateway', {
    ...serviceEnv,
    UPLOADS_URL: `http://127.0.0.1:${uploads.port}`,
    USERS_URL: nowhere,
    MESSAGES_URL: nowhere,
    CHANNELS_URL: nowhere,
    EVENTS_URL: nowhere,
  });
  services.push(gateway);
  const client = new S3Client(s3ClientConfig(s3.info.config));
  const bucket = s3.info.config.bucket;
  const authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
  const endpoint = `http://127.0.0.1:${gateway.port}/api/v1/tus`;
  const data = crypto.randomBytes(SIZE);
  const direct = { client: process.pid, s3rver: s3.pid };
  const throughTeamchat = {
    client: process.pid,
    s3rver: s3.pid,
    gateway: gateway.child.pid!,
    uploads: uploads.child.pid!,
  };
  const loadBefore = os.loadavg()[0];

  const runs = { put: [] as Measured[], multipart: [] as Measured[], tus: [] as Measured[] };
  for (let round = 0; round < ROUNDS; round++) {
    const keys = [`direct/put-${round}.bin`, `direct/multipart-${round}.bin`];
    runs.put.push(
      await measure(direct, () =>
        client.send(new PutObjectCommand({ Bucket: bucket, Key: keys[0], Body: data, ContentLength: SIZE })),
      ),
    );
    runs.multipart.push(
      await measure(direct, () =>
        new S3Upload({
          client,
          params: { Bucket: bucket, Key: keys[1], Body: data },
          partSize: 8 * MiB,
          queueSize: 4,
        }).done(),
      ),
    );
    let url = '';
    runs.tus.push(
      await measure(
        throughTeamchat,
        async () => (url = await tusUpload(endpoint, authorization, data, `bench-${round}.bin`)),
      ),
    );
    const pathId = decodeURIComponent(url.slice('/user_uploads/'.length));
    // Keep the S3 server's disk use to one round's worth.
    await client.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: [...keys, pathId, `${pathId}.info`].map((Key) => ({ Key })) },
      }),
    );
    const line = (name: string, m: Measured) =>
      `${name} ${m.seconds.toFixed(2)} s (CPU s: ${Object.entries(m.cpuBy)
        .map(([process, cpu]) => `${process} ${cpu.toFixed(2)}`)
        .join(', ')})`;
    console.log(
      `round ${round + 1}/${ROUNDS}: ${line('PutObject', runs.put[round])}, ${line('multipart', runs.multipart[round])}, ${line('tus', runs.tus[round])}`,
    );
  }
  client.destroy();

  const throughput = (values: Measured[]) => SIZE / MiB / median(values.map((m) => m.seconds));
  const cpu = (values: Measured[]) => median(values.map((m) => m.cpu));
  const tusRate = throughput(runs.tus);
  report(
    'uploads',
    [
      {
        metric: '100 MiB tus upload (gateway, uploads, S3) vs direct PutObject',
        value: tusRate,
        baseline: throughput(runs.put),
        unit: 'MiB/s',
        better: 'higher',
        goal: '>= 0.7',
      },
      {
        metric: '100 MiB tus upload (gateway, uploads, S3) vs direct multipart',
        value: tusRate,
        baseline: throughput(runs.multipart),
        unit: 'MiB/s',
        better: 'higher',
        goal: '>= 0.7',
      },
      {
        metric: 'CPU seconds, all processes: tus path vs direct multipart',
        value: cpu(runs.tus),
        baseline: cpu(runs.multipart),
        unit: 'CPU s',
        better: 'lower',
      },
      {
        metric: 'CPU seconds, all processes: tus path vs direct PutObject',
        value: cpu(runs.tus),
        baseline: cpu(runs.put),
        unit: 'CPU s',
        better: 'lower',
      },
    ],
    {
      sizeBytes: SIZE,
      rounds: ROUNDS,
      cpus: os.cpus().length,
      loadAverage: { before: loadBefore, after: os.loadavg()[0] },
      runs,
    },
  );
  console.log(
    `machine: ${os.cpus().length} CPUs, load average ${loadBefore.toFixed(1)} before, ${os.loadavg()[0].toFixed(1)} after`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
