import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendJson } from '../src/http';

// sendJson declares the byte length of what it sends (not the string's length), whatever
// characters the JSON holds, for a poll-sized answer and a register-sized one.

let server: http.Server;
let body = '';

beforeAll(async () => {
  server = http.createServer((_req, res) => sendJson(res, 200, body, { 'X-Extra': 'kept' }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function fetchRaw(): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: Buffer }> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

test.each([
  ['a small answer', 10],
  ['a large answer', 5_000],
])('%s with accented letters and emoji arrives whole, its Content-Length in bytes', async (_name, repeat) => {
  const value = { events: Array.from({ length: repeat }, (_, id) => ({ id, content: 'héllo ✓ 🎉' })) };
  body = JSON.stringify(value);
  const { status, headers, bytes } = await fetchRaw();
  expect(status).toBe(200);
  expect(headers['content-type']).toBe('application/json; charset=utf-8');
  expect(headers['x-extra']).toBe('kept');
  expect(Number(headers['content-length'])).toBe(bytes.length);
  expect(bytes.length).toBeGreaterThan(body.length);
  expect(JSON.parse(bytes.toString('utf8'))).toEqual(value);
});
