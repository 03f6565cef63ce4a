// The floors of the load benchmark's gateway-cost figure, each a process of its own that prints
// {"port": N} once listening:
//   node floor.mjs bare            a bare node:http server answering GET /api/v1/users/me with
//                                  a fixed JSON body (Zulip's shape) — what the runtime allows;
//   node floor.mjs express         a bare express app answering the same (no auth, no database);
//   node floor.mjs proxy <port>    a minimal node:http reverse proxy (keep-alive agent, headers
//                                  copied, body piped) in front of 127.0.0.1:<port>.
// Also the machine-condition probe: `bare` is what every run measures before and after the
// system under test.
import http from 'node:http';
import express from 'express';

const [mode, target] = process.argv.slice(2);
const body = JSON.stringify({
  result: 'success',
  msg: '',
  user_id: 10,
  email: 'user10@bench.teamchat.test',
  full_name: 'User 10',
  is_admin: false,
  is_owner: false,
  is_guest: false,
  is_bot: false,
  role: 400,
  is_active: true,
  timezone: '',
  date_joined: '2025-01-01T00:00:00+00:00',
  delivery_email: 'user10@bench.teamchat.test',
  avatar_url: null,
  avatar_version: 1,
  max_message_id: 100,
});

let server;
if (mode === 'bare') {
  server = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
} else if (mode === 'express') {
  const app = express();
  app.disable('x-powered-by');
  app.get('/api/v1/users/me', (_req, res) => {
    res.type('application/json').send(body);
  });
  server = http.createServer(app);
} else if (mode === 'proxy') {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024 });
  const upstreamPort = Number(target);
  server = http.createServer((req, res) => {
    const headers = { ...req.headers, host: `127.0.0.1:${upstreamPort}` };
    delete headers.connection;
    const upstream = http.request(
      { host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers, agent },
      (upstreamRes) => {
        const out = { ...upstreamRes.headers };
        delete out.connection;
        delete out['keep-alive'];
        delete out['transfer-encoding'];
        res.writeHead(upstreamRes.statusCode ?? 502, out);
        upstreamRes.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
} else {
  console.error('usage: floor.mjs bare|express|proxy <port>');
  process.exit(2);
}
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
process.on('SIGTERM', () => process.exit(0));
