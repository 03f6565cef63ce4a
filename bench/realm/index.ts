// Benchmark of one big organisation: what a user of the realm costs as the realm grows. Two
// realms in one deployment, a small one (the baseline) and a big one, and the same driver:
//   1. POST /api/v1/register on the path a client takes in production (the Ingress sends it
//      straight to the event tier, docs/adr/0006), with the whole initial state as a client asks
//      for it by default (the realm's user list, groups, presence...): CPU of the stack per
//      register and per 1,000 users the realm holds, big realm vs small. 1.0x means the cost
//      grows as the realm does; a cost that grows faster (a loop quadratic in the realm's size)
//      shows as a ratio well above 1. The same through the gateway, for comparison;
//   2. account creation (the users service's action, in this process): ms per account, made at
//      the big realm's size vs the small one's. Each new account is announced to everyone in the
//      realm, as Zulip does, so this one grows with the realm by nature.
// The realms take turns (3 each, medians reported); a run whose small-realm turns differ by more
// than 15 % is flagged. Run: npm run bench -- realm   (see bench/README.md).

import crypto from 'node:crypto';
import http from 'node:http';
import { createLogger } from '@teamchat/core';
import type { Realm } from '@teamchat/db';
import { createBaseDeps } from '@teamchat/runtime';
import { doCreateRealm, doCreateUser } from '@teamchat/service-users';
import { createTestDatabase } from '@teamchat/testing';
import {
  benchEnv,
  databaseBackendPids,
  onInterrupt,
  sleep,
  startCpuMeter,
  startService,
  stop,
  type Proc,
} from '../lib/procs';
import { median, report, type Row } from '../lib/report';
import { describeTurns, measureTurn, type TurnFigure } from '../lib/turns';

const QUICK = process.env.BENCH_QUICK === '1';
const num = (name: string, quick: number, full: number) => Number(process.env[name] ?? (QUICK ? quick : full));
const SMALL = num('BENCH_REALM_SMALL', 200, 1000);
const BIG = num('BENCH_REALM_BIG', 2000, 8000);
/** Registers measured per realm and turn (each by a different user, one at a time). */
const REGISTERS = num('BENCH_REALM_REGISTERS', 5, 10);
/** Turns each realm takes (small, big, small, big...); medians are reported. */
const TURNS = num('BENCH_REALM_TURNS', 2, 3);
/** Accounts whose creation is timed, the last ones made in each realm. */
const TIMED_ACCOUNTS = num('BENCH_REALM_TIMED_ACCOUNTS', 100, 200);
const BASELINE_TOLERANCE = 0.15;

const started = performance.now();
const log = (line: string) =>
  console.log(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}`);

interface Member {
  email: string;
  apiKey: string;
}

interface RealmUnderTest {
  realm: Realm;
  members: Member[];
  /** ms per account over the last TIMED_ACCOUNTS accounts made. */
  creationMs: number;
}

/** Makes `count` accounts, 8 at a time (as an admin's bulk invite would), timing the last ones. */
async function populate(deps: ReturnType<typeof createBaseDeps>, realm: Realm, count: number): Promise<RealmUnderTest> {
  const members: Member[] = new Array(count);
  let next = 0;
  let timedFrom = 0;
  const timedStart = count - Math.min(TIMED_ACCOUNTS, count);
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const i = next++;
        if (i === timedStart) timedFrom = performance.now();
        const { user, apiKey } = await doCreateUser(deps, realm, {
          email: `u${i}@${realm.string_id}.test`,
          fullName: `User ${i}`,
          role: 400,
        });
        members[i] = { email: user.delivery_email, apiKey };
      }
    }),
  );
  return { realm, members, creationMs: (performance.now() - timedFrom) / (count - timedStart) };
}

function register(entry: string, realm: Realm, member: Member): Promise<{ ms: number; bytes: number }> {
  const startedAt = performance.now();
  return new Promise((resolve, reject) => {
    const headers = {
      authorization: `Basic ${Buffer.from(`${member.email}:${member.apiKey}`).toString('base64')}`,
      host: realm.host,
      'content-length': '0',
    };
    const req = http.request(`${entry}/api/v1/register`, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const json = JSON.parse(body.toString()) as { result: string };
        if (json.result !== 'success') return reject(new Error(`register: ${body.toString().slice(0, 300)}`));
        resolve({ ms: performance.now() - startedAt, bytes: body.length });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * A turn of REGISTERS registers by random members of the realm, sent to `entry`; the CPU is the
 * stack's (gateway, event tier, PostgreSQL) per register.
 */
function measureRegisters(
  entry: string,
  target: RealmUnderTest,
  pids: Record<string, number>,
  postgresBackends: number[],
): Promise<TurnFigure> {
  return measureTurn(REGISTERS, pids, postgresBackends, () =>
    register(entry, target.realm, target.members[crypto.randomInt(target.members.length)]),
  );
}

/** Waits until the processes and PostgreSQL use under 5 % of a core for 3 s in a row (at most 2 minutes); returns the seconds waited. */
async function settle(pids: Record<string, number>): Promise<number> {
  const startedAt = performance.now();
  let quietSeconds = 0;
  while (quietSeconds < 3 && performance.now() - startedAt < 120_000) {
    const spent = startCpuMeter(pids);
    await sleep(1000);
    const used = Object.values(spent()).reduce((sum, ms) => sum + ms, 0);
    quietSeconds = used < 50 ? quietSeconds + 1 : 0;
  }
  return (performance.now() - startedAt) / 1000;
}

async function main(): Promise<void> {
  const database = await createTestDatabase();
  onInterrupt(() => database.drop());
  const { env, serviceEnv } = benchEnv(database.url, { prefix: 'bench:realm:', eventPartitions: 1 });
  const deps = createBaseDeps('bench', { ...env, DB_POOL_SIZE: 10 }, { logger: createLogger('bench', 'warn') });
  const procs: Proc[] = [];
  try {
    log(
      `» realms of ${SMALL} and ${BIG} users; ${TURNS} turns of ${REGISTERS} registers per realm; creation timed over the last ${TIMED_ACCOUNTS} accounts of each`,
    );
    // Register is the event tier's; the gateway authenticates and forwards. Both run while the
    // accounts are made, as in production: the event tier takes each account's events as they come.
    const events = await startService('events', 'events', { ...serviceEnv, DB_POOL_SIZE: '10' });
    procs.push(events);
    const gatewayProc = await startService('gateway', 'gateway', {
      ...serviceEnv,
      DB_POOL_SIZE: '3',
      EVENTS_URL: `http://127.0.0.1:${events.port}`,
      RATE_LIMIT_ENABLED: 'false',
    });
    procs.push(gatewayProc);
    const gateway = `http://127.0.0.1:${gatewayProc.port}`;
    const direct = `http://127.0.0.1:${events.port}`;
    const pids = { gateway: gatewayProc.child.pid!, events: events.child.pid! };
    // The production path does not touch the gateway: its CPU is not the register's.
    const directPids = { events: events.child.pid! };

    const small = await populate(
      deps,
      await doCreateRealm(deps.db, { stringId: 'small', name: 'Small', host: 'small.teamchat.test' }),
      SMALL,
    );
    log(`   small realm: ${SMALL} accounts, ${small.creationMs.toFixed(1)} ms per account at the end`);
    const big = await populate(
      deps,
      await doCreateRealm(deps.db, { stringId: 'big', name: 'Big', host: 'big.teamchat.test' }),
      BIG,
    );
    log(`   big realm: ${BIG} accounts, ${big.creationMs.toFixed(1)} ms per account at the end`);
    // What thousands of inserts leave behind would otherwise run during the measurement: fresh
    // planner statistics now, then the event tier's and PostgreSQL's backlog.
    await deps.db.$executeRawUnsafe('VACUUM ANALYZE');
    log(`   quiet after ${(await settle(pids)).toFixed(0)} s`);

    // Warm-up: the first calls compile the code paths and fill the caches (the gateway's and
    // the event tier's realm-wide parts, built once per realm state version).
    for (const target of [small, big])
      for (const entry of [direct, gateway])
        for (let i = 0; i < 3; i++) await register(entry, target.realm, target.members[i]);
    // PostgreSQL's share: the backends of this benchmark's database only (the server is shared),
    // every connection the services opened by now (registers come one at a time after the warm-up).
    const backends = await databaseBackendPids(deps.db);
    log(`   ${backends.length} PostgreSQL backends of the services measured`);
    // The realms and the paths take turns, so that all see the same machine.
    const smallTurns: TurnFigure[] = [];
    const bigTurns: TurnFigure[] = [];
    const bigViaGateway: TurnFigure[] = [];
    for (let turn = 0; turn < TURNS; turn++) {
      smallTurns.push(await measureRegisters(direct, small, directPids, backends));
      bigTurns.push(await measureRegisters(direct, big, directPids, backends));
      bigViaGateway.push(await measureRegisters(gateway, big, pids, backends));
    }
    const medianOf = (turns: TurnFigure[]): TurnFigure => ({
      ms: median(turns.map((t) => t.ms)),
      cpuMs: median(turns.map((t) => t.cpuMs)),
      byProcess: Object.fromEntries(
        Object.keys(turns[0].byProcess).map((name) => [name, median(turns.map((t) => t.byProcess[name]))]),
      ),
      bytes: turns[0].bytes,
    });
    for (const [name, turns] of [
      ['small', smallTurns],
      ['big', bigTurns],
      ['big (through the gateway)', bigViaGateway],
    ] as const) {
      log(
        `   register, ${name} realm: ${describeTurns(turns)} (client median / stack CPU per register, by turn); ${(turns[0].bytes / 1024).toFixed(0)} KiB`,
      );
    }
    const smallCpu = smallTurns.map((t) => t.cpuMs);
    const spread = (Math.max(...smallCpu) - Math.min(...smallCpu)) / Math.max(...smallCpu);
    if (spread > BASELINE_TOLERANCE)
      log(
        `   ! the small realm's register CPU moved ${(spread * 100).toFixed(0)} % between turns: a noisy machine, read with care`,
      );
    const baseline = medianOf(smallTurns);
    const bigFigure = medianOf(bigTurns);
    const gatewayFigure = medianOf(bigViaGateway);

    const perThousand = (value: number, users: number) => (value * 1000) / users;
    const rows: Row[] = [
      {
        metric: `register at ${BIG} users, stack CPU ms per register vs the goal (100 ms)`,
        value: bigFigure.cpuMs,
        baseline: 100,
        unit: 'ms',
        better: 'lower',
        goal: '<= 1',
      },
      {
        metric: `register at ${BIG} users: straight to the event tier vs through the gateway (stack CPU)`,
        value: bigFigure.cpuMs,
        baseline: gatewayFigure.cpuMs,
        unit: 'ms',
        better: 'lower',
      },
      {
        metric: `register, stack CPU ms per register (${BIG} vs ${SMALL} users)`,
        value: bigFigure.cpuMs,
        baseline: baseline.cpuMs,
        unit: 'ms',
        better: 'lower',
      },
      {
        metric: 'register, stack CPU ms per 1,000 users of the realm (1.0x: linear)',
        value: perThousand(bigFigure.cpuMs, BIG),
        baseline: perThousand(baseline.cpuMs, SMALL),
        unit: 'ms',
        better: 'lower',
      },
      {
        metric: 'register, client ms per 1,000 users of the realm',
        value: perThousand(bigFigure.ms, BIG),
        baseline: perThousand(baseline.ms, SMALL),
        unit: 'ms',
        better: 'lower',
      },
      {
        metric: `account creation, ms per account (at ${BIG} vs ${SMALL} users)`,
        value: big.creationMs,
        baseline: small.creationMs,
        unit: 'ms',
        better: 'lower',
      },
    ];
    console.log('');
    report('realm', rows, {
      small: SMALL,
      big: BIG,
      registers: { small: smallTurns, big: bigTurns, bigViaGateway },
      creationMs: { small: small.creationMs, big: big.creationMs },
    });
  } finally {
    await Promise.all(procs.map(stop));
    await deps.close();
    await database.drop();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
