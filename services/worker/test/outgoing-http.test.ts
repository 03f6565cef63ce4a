// The address guard of outgoing webhook calls (src/lib/outgoing-http.ts): which addresses are
// refused unless their host is allowed, and that a refused one is never connected to.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DisallowedAddressError, guardedPost, isRefusedAddress, parseAllowedHosts } from '../src/lib/outgoing-http';

test('loopback, link-local, private, shared and reserved addresses are refused; public ones are not', () => {
  for (const address of [
    '127.0.0.1',
    '127.8.9.10',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
  ]) {
    expect([address, isRefusedAddress(address)]).toEqual([address, true]);
  }
  for (const address of ['93.184.216.34', '172.32.0.1', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8']) {
    expect([address, isRefusedAddress(address)]).toEqual([address, false]);
  }
});

test('OUTGOING_WEBHOOK_ALLOWED_HOSTS: comma-separated, trimmed, lowercase', () => {
  expect([...parseAllowedHosts(' Bots.Internal:8080, 10.0.0.5 ,,')]).toEqual(['bots.internal:8080', '10.0.0.5']);
  expect(parseAllowedHosts('').size).toBe(0);
});

describe('guardedPost', () => {
  let server: http.Server;
  let requests = 0;
  let port: number;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      requests++;
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const post = (url: string, allowed: string) =>
    guardedPost({
      url,
      body: '{}',
      contentType: 'application/json',
      userAgent: 'test',
      timeoutSeconds: 5,
      allowedHosts: parseAllowedHosts(allowed),
    });

  test('a loopback address, by address or by name, is refused without a connection unless allowed', async () => {
    await expect(post(`http://127.0.0.1:${port}/`, '')).rejects.toBeInstanceOf(DisallowedAddressError);
    await expect(post(`http://localhost:${port}/`, '')).rejects.toBeInstanceOf(DisallowedAddressError);
    await expect(post(`http://localhost:${port}/`, `127.0.0.1:${port}`)).rejects.toBeInstanceOf(DisallowedAddressError);
    await expect(post(`http://127.0.0.1:${port + 1}/`, `127.0.0.1:${port}`)).rejects.toBeInstanceOf(
      DisallowedAddressError,
    );
    expect(requests).toBe(0);

    const answer = await post(`http://127.0.0.1:${port}/`, `127.0.0.1:${port}`);
    expect([answer.status, answer.body.toString()]).toEqual([200, '{"ok":true}']);
    const byName = await post(`http://localhost:${port}/`, 'localhost');
    expect(byName.status).toBe(200);
    expect(requests).toBe(2);
  });

  test('only http and https', async () => {
    await expect(post('ftp://example.com/', '')).rejects.toBeInstanceOf(DisallowedAddressError);
  });
});
