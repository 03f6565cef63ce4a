// Property-based fuzzing of every endpoint through the gateway (fast-check). Every answer to a
// malformed request is a 4xx Zulip error envelope (never a 5xx, never a non-JSON body), every
// service is still ready afterwards, and a refused request changes nothing in the database.
//
// FUZZ_RUNS (default 10) is the number of generated requests per endpoint. FUZZ_SEED picks the
// requests: by default one fixed seed, so `npm test` replays the same cases every time (a
// regression suite); FUZZ_SEED=random explores new ones (and prints its seed to replay a find).
// The per-endpoint counts are printed and written to var/fuzz/report.json (FUZZ_REPORT
// overrides the path). The long run: `FUZZ_SEED=random FUZZ_RUNS=500 npx jest tests/fuzz`.

import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { caseArb, targetedCases, type FuzzRequest } from './cases';
import { listEndpoints, samplePath, type Endpoint } from './endpoints';
import {
  changedTables,
  checkAnswer,
  closeSender,
  fingerprint,
  fingerprintQuery,
  installWriteCounter,
  send,
  startFuzzStack,
  writeCount,
  type FuzzStack,
  type Fingerprint,
} from './harness';

const RUNS = Number(process.env.FUZZ_RUNS ?? 10);
const SEED = process.env.FUZZ_SEED === 'random' ? Date.now() % 2 ** 31 : Number(process.env.FUZZ_SEED ?? 2_026_1121);
const REPORT = process.env.FUZZ_REPORT ?? path.resolve(__dirname, '../../var/fuzz/report.json');

const ONLY = process.env.FUZZ_ONLY ? new RegExp(process.env.FUZZ_ONLY) : null;
const VERBOSE = Boolean(process.env.FUZZ_VERBOSE);

const endpoints = listEndpoints();
const key = (e: Endpoint) => `${e.method} ${e.path}`;

interface Failure {
  endpoint: string;
  kind: string;
  request: string;
  problem: string;
}

const counts = new Map<string, number>();
const millis = new Map<string, number>();
const kinds = new Map<string, number>();
const failures: Failure[] = [];
/** The last requests sent (what led up to a hang). */
const recent: string[] = [];

function describeRequest(request: FuzzRequest): string {
  const body = request.body
    ? ` body(${request.body.length}B)=${JSON.stringify(request.body.subarray(0, 200).toString('latin1'))}`
    : '';
  return `${request.method} ${request.path.slice(0, 300)} ${JSON.stringify(request.headers).slice(0, 300)}${body}`;
}

let fuzz: FuzzStack;
let fpQuery: string;
let baseline: Fingerprint;
let baselineWrites: string;

beforeAll(async () => {
  fuzz = await startFuzzStack();
  fpQuery = await fingerprintQuery(fuzz.stack);
  await installWriteCounter(fuzz.stack);
  baseline = await fingerprint(fuzz.stack, fpQuery);
  baselineWrites = await writeCount(fuzz.stack);
}, 60_000);

afterAll(async () => {
  const report = {
    seed: SEED,
    runsPerEndpoint: RUNS,
    total: [...counts.values()].reduce((a, b) => a + b, 0),
    endpoints: Object.fromEntries([...counts.entries()].sort()),
    kinds: Object.fromEntries([...kinds.entries()].sort()),
    failures: failures.length,
  };
  fs.mkdirSync(path.dirname(REPORT), { recursive: true });
  fs.writeFileSync(REPORT, `${JSON.stringify(report, null, 2)}\n`);
  console.log(
    `fuzz: ${report.total} requests over ${counts.size} endpoints (seed ${SEED}, FUZZ_RUNS=${RUNS}), ${failures.length} failures; report ${REPORT}\n` +
      [...counts.entries()]
        .sort()
        .map(([name, n]) => `  ${String(n).padStart(5)}  ${name}  (${millis.get(name) ?? 0} ms)`)
        .join('\n'),
  );
  closeSender();
  await fuzz?.close();
});

/** Sends one request, checks the answer and (when refused) that the database did not change. */
async function attempt(endpoint: Endpoint, request: FuzzRequest): Promise<void> {
  counts.set(key(endpoint), (counts.get(key(endpoint)) ?? 0) + 1);
  kinds.set(request.kind, (kinds.get(request.kind) ?? 0) + 1);
  const record = (problem: string) =>
    failures.push({ endpoint: key(endpoint), kind: request.kind, request: describeRequest(request), problem });
  let refused = true;
  recent.push(describeRequest(request).slice(0, 400));
  if (recent.length > 4) recent.shift();
  try {
    const started = Date.now();
    const response = await send(fuzz.stack.gatewayUrl, request);
    if (VERBOSE) console.log(`${Date.now() - started} ms ${response.status} ${describeRequest(request).slice(0, 200)}`);
    const problem = checkAnswer(endpoint.path, response);
    if (problem) record(`${problem}: ${response.body.subarray(0, 300).toString('utf8')}`);
    refused = response.status >= 400;
  } catch (error) {
    record(`no answer: ${(error as Error).message}; after: ${recent.slice(0, -1).join(' || ')}`);
  }
  const writes = await writeCount(fuzz.stack);
  if (writes === baselineWrites) return;
  // Something was written: what changed, by content?
  const after = await fingerprint(fuzz.stack, fpQuery);
  if (refused) {
    const changed = changedTables(baseline, after);
    if (changed.length) record(`refused, yet changed tables: ${changed.join(', ')}`);
  }
  baseline = after;
  baselineWrites = writes;
}

function sampleCases(endpoint: Endpoint, index: number): FuzzRequest[] {
  return fc.sample(caseArb(endpoint, fuzz.fixture), { numRuns: RUNS, seed: SEED + index });
}

/** Service-to-service endpoints: called with an internal token (the worker's), never through the gateway. */
const isInternal = (endpoint: Endpoint) => endpoint.path.startsWith('/internal/');

it('every endpoint of every service is routed by the gateway to its service, and no internal one', () => {
  const unrouted = endpoints
    .filter((e) => !isInternal(e) && e.rule?.service !== e.service)
    .map((e) => `${key(e)} (${samplePath(e.path)})`);
  expect(unrouted).toEqual([]);
  const exposed = endpoints.filter((e) => isInternal(e) && e.rule).map((e) => key(e));
  expect(exposed).toEqual([]);
  expect(endpoints.some(isInternal)).toBe(true);
  expect(endpoints.length).toBeGreaterThan(50);
});

describe.each(['users', 'messages', 'channels', 'uploads', 'events', 'web'])(
  'the %s service under malformed requests',
  (service) => {
    const mine = endpoints.filter((e) => e.service === service && (!ONLY || ONLY.test(key(e))));

    it('answers every one with a 4xx Zulip error (or a success) and changes nothing when refusing', async () => {
      for (const endpoint of mine) {
        const cases = sampleCases(endpoint, endpoints.indexOf(endpoint));
        // Oversized: one body past every form limit (BODY_LIMITS; and the 1 MiB upload limit here), to
        // every endpoint that reads its body itself and to one form endpoint per service (the
        // form limit is the shared parser's); FUZZ_OVERSIZED_ALL=1 sends one to every endpoint.
        if (
          endpoint.body === 'raw' ||
          endpoint === mine.find((e) => e.body === 'form' && e.method !== 'GET') ||
          process.env.FUZZ_OVERSIZED_ALL
        )
          cases.push({
            kind: 'oversized-body',
            method: endpoint.method,
            path: samplePath(endpoint.path),
            headers: { authorization: fuzz.fixture.authorization, 'content-type': 'application/x-www-form-urlencoded' },
            body: OVERSIZED,
          });
        const started = Date.now();
        for (const request of cases) await attempt(endpoint, request);
        millis.set(key(endpoint), Date.now() - started);
      }
      const mineFailures = failures.filter((f) => mine.some((e) => key(e) === f.endpoint));
      // Distinct problems first (one example each), so a run's output stays readable.
      const distinct = new Map<string, Failure>();
      for (const f of mineFailures) {
        const signature = `${f.endpoint} ${f.problem.replace(/\d+/g, 'N').slice(0, 80)}`;
        if (!distinct.has(signature)) distinct.set(signature, f);
      }
      expect([...distinct.values()]).toEqual([]);
      await expectServicesReady();
    }, 300_000);

    // Not random: each documented parameter, one at a time, with ids at 2^31 and 2^53, NUL in
    // plain and JSON strings, and lists past every bound (see TARGETED_VALUES); FUZZ_TARGETED=0
    // skips them.
    const targeted = process.env.FUZZ_TARGETED === '0' ? it.skip : it;
    targeted(
      'answers targeted values (ids past the id columns, NUL, huge lists) with a 4xx, never a 5xx',
      async () => {
        const before = failures.length;
        for (const endpoint of mine) {
          const started = Date.now();
          const requests = targetedCases(endpoint, fuzz.fixture, fixturePath(endpoint.path));
          for (const request of requests) await attempt(endpoint, request);
          millis.set(key(endpoint), (millis.get(key(endpoint)) ?? 0) + Date.now() - started);
        }
        const distinct = new Map<string, Failure>();
        for (const f of failures.slice(before)) distinct.set(`${f.endpoint} ${f.kind} ${f.problem.slice(0, 80)}`, f);
        expect([...distinct.values()]).toEqual([]);
        await expectServicesReady();
      },
      600_000,
    );
  },
);

/** Every service still answers its readiness probe, through the gateway's too. */
async function expectServicesReady(): Promise<void> {
  for (const url of [fuzz.stack.gatewayUrl, ...Object.values(fuzz.stack.serviceUrls)]) {
    const ready = await send(url!, { method: 'GET', path: '/health/ready', headers: {} });
    expect({ url, status: ready.status }).toEqual({ url, status: 200 });
  }
}

/** The pattern with an existing object in every path parameter, so the request gets to its parameters. */
function fixturePath(pattern: string): string {
  return pattern
    .replace(/:(\w+)/g, (_match, name: string) => encodeURIComponent(String(fuzz.fixture.ids[name]?.[0] ?? 1)))
    .replace(/\*(\w+)/g, (_match, name: string) => String(fuzz.fixture.ids[name]?.[0] ?? '2/ab/file.txt'));
}

const OVERSIZED = Buffer.alloc(10 * 1024 * 1024 + 1024, 'a');
OVERSIZED.write('content=', 0);
