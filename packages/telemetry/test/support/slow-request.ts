// A request whose body arrives in two parts, so it is still "in flight" at the service for as
// long as the test wants (e.g. across a SIGTERM).

import http from 'node:http';

export interface SlowRequest {
  /** Sends the rest of the body. */
  finish(): void;
  response: Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }>;
}

interface RequestOptions {
  url: string;
  path: string;
  headers?: Record<string, string>;
  host?: string;
}

function open(options: RequestOptions & { method: string; contentHeaders: Record<string, string> }) {
  const url = new URL(options.path, options.url);
  // No keep-alive: each request has its own connection.
  const req = http.request(url, {
    method: options.method,
    agent: new http.Agent({ keepAlive: false }),
    headers: { ...options.contentHeaders, ...(options.host ? { host: options.host } : {}), ...options.headers },
  });
  const response = new Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // Not JSON: keep the text for the failure message.
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  return { req, response };
}

export function slowRequest(options: RequestOptions & { method: string; body: string }): SlowRequest {
  const body = Buffer.from(options.body);
  const half = Math.floor(body.length / 2);
  const { req, response } = open({
    ...options,
    contentHeaders: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(body.length) },
  });
  req.write(body.subarray(0, half));
  return {
    finish: () => {
      req.end(body.subarray(half));
    },
    response,
  };
}

/** A GET (e.g. a long-poll) with no body, already complete when sent. */
export function pendingGet(options: RequestOptions): SlowRequest {
  const { req, response } = open({ ...options, method: 'GET', contentHeaders: {} });
  req.end();
  return { finish: () => undefined, response };
}
