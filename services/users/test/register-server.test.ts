// manage register-server: this server's registration with the push notification bouncer
// (Zulip's manage.py register_server), against a stand-in that records the request.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BaseDeps } from '@teamchat/runtime';
import { runCommand } from '../src/manage';

const saved = { ...process.env };
let server: http.Server;
const received: { url?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push({ url: req.url, headers: req.headers, body });
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"result":"success","msg":"","created":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  process.env = saved;
  await new Promise((resolve) => server.close(resolve));
});

test('register-server posts the org id and key, hostname and contact email', async () => {
  const lines: string[] = [];
  const run = (...argv: string[]) => runCommand({} as BaseDeps, argv, (line) => lines.push(line));
  process.env.PUSH_NOTIFICATION_BOUNCER_URL = '';
  await expect(run('register-server', '--hostname', 'chat.example.com', '--contact-email', 'a@x.test')).rejects.toThrow(
    /PUSH_NOTIFICATION_BOUNCER_URL/,
  );

  process.env.PUSH_NOTIFICATION_BOUNCER_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.ZULIP_ORG_ID = '6cde5f7a-1f7e-4978-9716-49f69746f9ce';
  process.env.ZULIP_ORG_KEY = 'k'.repeat(64);
  await run('register-server', '--hostname', 'chat.example.com', '--contact-email', 'admin@example.com');
  expect(received).toHaveLength(1);
  expect(received[0].url).toBe('/api/v1/remotes/server/register');
  expect(received[0].headers['user-agent']).toMatch(/^ZulipServer\//);
  expect(Object.fromEntries(new URLSearchParams(received[0].body))).toEqual({
    zulip_org_id: '6cde5f7a-1f7e-4978-9716-49f69746f9ce',
    zulip_org_key: 'k'.repeat(64),
    hostname: 'chat.example.com',
    contact_email: 'admin@example.com',
  });
  expect(lines).toEqual([
    `registered chat.example.com with ${process.env.PUSH_NOTIFICATION_BOUNCER_URL} as 6cde5f7a-1f7e-4978-9716-49f69746f9ce`,
  ]);
});
