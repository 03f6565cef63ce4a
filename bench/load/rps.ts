// A closed-loop requests/s driver: `concurrency` loops, each sending the same request over a
// keep-alive connection as soon as the previous answer is read, for `seconds` (after a short
// warm-up). Counts answers with the expected status; anything else is an error.

import http from 'node:http';

export interface RpsResult {
  perSecond: number;
  requests: number;
  errors: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
}

export async function measureRps(
  url: string,
  options: { headers?: Record<string, string>; concurrency: number; seconds: number; warmupSeconds?: number },
): Promise<RpsResult> {
  const agent = new http.Agent({
    keepAlive: true,
    maxSockets: options.concurrency,
    maxFreeSockets: options.concurrency,
  });
  const target = new URL(url);
  const requestOptions: http.RequestOptions = {
    host: target.hostname,
    port: target.port,
    path: target.pathname + target.search,
    method: 'GET',
    headers: options.headers ?? {},
    agent,
  };
  let counting = false;
  let stopping = false;
  let requests = 0;
  let errors = 0;
  const latencies: number[] = [];
  const one = () =>
    new Promise<boolean>((resolve) => {
      const started = performance.now();
      const req = http.request(requestOptions, (res) => {
        res.on('data', () => undefined);
        res.on('end', () => {
          if (counting) latencies.push(performance.now() - started);
          resolve(res.statusCode === 200);
        });
        res.on('error', () => resolve(false));
      });
      req.on('error', () => resolve(false));
      req.end();
    });
  const loops = Array.from({ length: options.concurrency }, async () => {
    while (!stopping) {
      const ok = await one();
      if (!counting) continue;
      requests++;
      if (!ok) errors++;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, (options.warmupSeconds ?? 1) * 1000));
  counting = true;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, options.seconds * 1000));
  counting = false;
  const seconds = (performance.now() - started) / 1000;
  stopping = true;
  await Promise.all(loops);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
  return { perSecond: (requests - errors) / seconds, requests, errors, seconds, p50Ms: at(0.5), p99Ms: at(0.99) };
}
