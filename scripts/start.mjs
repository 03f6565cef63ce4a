// npm start: the whole stack on this machine, in one command.
//   1. install dependencies if missing, build the services;
//   2. PostgreSQL and Redis: DATABASE_URL/REDIS_URL when set, else the standard local ports,
//      else embedded ones; apply migrations;
//   3. the demo realm with an owner, a member and a bot on the first run, a zuliprc per demo user;
//   4. every service and the gateway as separate processes; Ctrl-C stops everything.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { build, TELEMETRY_PRELOAD } from './build.mjs';
import { root } from './lib/deps.mjs';
import { portAnswers } from './lib/infra.mjs';
import { GATEWAY_NODE_OPTIONS, GATEWAY_PORT, SERVICES } from './lib/services.mjs';
import { ensureDataStores, varDir } from './lib/stack.mjs';

const built = new Set(await build({ quiet: true }));
const { postgres, redis } = await ensureDataStores();
const logDir = path.join(varDir, 'log');
const zuliprcDir = path.join(varDir, 'zuliprc');
fs.mkdirSync(logDir, { recursive: true });

const host = process.env.TEAMCHAT_HOST ?? `localhost:${GATEWAY_PORT}`;
// Every process knows where every service is (the gateway routes; services call each other).
const serviceUrls = Object.fromEntries(
  SERVICES.filter((s) => s.urlVar).map((s) => [s.urlVar, `http://127.0.0.1:${s.port}`]),
);
const commonEnv = {
  ...process.env,
  ...serviceUrls,
  DATABASE_URL: postgres.url,
  REDIS_URL: redis.url,
  INTERNAL_JWT_SECRET: process.env.INTERNAL_JWT_SECRET ?? crypto.randomBytes(32).toString('hex'),
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  NODE_ENV: process.env.NODE_ENV ?? 'development',
  // The demo's addresses have no Gravatar, and a stack on one machine must not need the internet
  // (nor tell a third party its users' addresses): the server's default avatar, unless asked.
  ENABLE_GRAVATAR: process.env.ENABLE_GRAVATAR ?? 'false',
  // Without an SMTP server (EMAIL_HOST), the worker writes each email here as an .eml file.
  EMAIL_LOG_DIR: process.env.EMAIL_LOG_DIR ?? path.join(logDir, 'emails'),
};

// Zulip's web app, served by the web service from the folder the operator installed
// (npm run web:install): where it is (ZULIP_WEB_DIR, var/zulip-web, ../shared/zulip-web), or why not.
const webAppLocated = spawnSync(process.execPath, [path.join(root, 'services/web/dist/manage.js'), 'locate'], {
  env: commonEnv,
  encoding: 'utf8',
});
const webAppDir = webAppLocated.status === 0 ? webAppLocated.stdout.trim() : null;
if (webAppDir) commonEnv.ZULIP_WEB_DIR = webAppDir;

const seed = spawnSync(
  process.execPath,
  [path.join(root, 'services/users/dist/manage.js'), 'seed-demo', '--host', host, '--dir', zuliprcDir],
  {
    stdio: 'inherit',
    env: { ...commonEnv, LOG_LEVEL: 'warn' },
  },
);
if (seed.status !== 0) process.exit(seed.status ?? 1);

const children = [];
function startProcess(name, env) {
  const log = fs.openSync(path.join(logDir, `${name}.log`), 'a');
  const dist = path.join(root, 'services', name, 'dist');
  // The telemetry preload first, so OpenTelemetry instruments the modules main.js loads.
  const child = spawn(
    process.execPath,
    ['--enable-source-maps', '--require', path.join(dist, TELEMETRY_PRELOAD), path.join(dist, 'main.js')],
    {
      env: { ...commonEnv, ...env },
      stdio: ['ignore', log, log],
    },
  );
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`✗ ${name} exited (${signal ?? code}); see ${path.join(logDir, `${name}.log`)}`);
      stop(1);
    }
  });
  children.push({ name, child });
}

for (const service of SERVICES) {
  if (built.has(service.name))
    startProcess(service.name, {
      PORT: String(service.port),
      ...(service.nodeOptions ? { NODE_OPTIONS: service.nodeOptions } : {}),
    });
}
startProcess('gateway', { PORT: String(GATEWAY_PORT), NODE_OPTIONS: GATEWAY_NODE_OPTIONS });

for (let i = 0; i < 300 && !(await portAnswers(GATEWAY_PORT)); i++)
  await new Promise((resolve) => setTimeout(resolve, 100));

// The demo organisation starts without channels: once, create #general (a default channel,
// with the demo users subscribed) through the API as the owner, as any client would.
await seedDemoChannel().catch((error) => console.error(`✗ could not create #general: ${error.message}`));

async function seedDemoChannel() {
  const zuliprc = (name) => {
    const file = path.join(zuliprcDir, `${name}.zuliprc`);
    if (!fs.existsSync(file)) return null;
    const pairs = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.includes('='));
    return Object.fromEntries(
      pairs.map((line) => [line.slice(0, line.indexOf('=')).trim(), line.slice(line.indexOf('=') + 1).trim()]),
    );
  };
  const owner = zuliprc('owner');
  if (!owner) return;
  const principals = ['owner', 'member', 'bot']
    .map(zuliprc)
    .filter(Boolean)
    .map((rc) => rc.email);
  const call = (method, apiPath, params) =>
    new Promise((resolve, reject) => {
      const body = new URLSearchParams(params).toString();
      const request = http.request(
        {
          host: '127.0.0.1',
          port: GATEWAY_PORT,
          method,
          path: `/api/v1${apiPath}${method === 'GET' ? `?${body}` : ''}`,
          headers: {
            host,
            authorization: `Basic ${Buffer.from(`${owner.email}:${owner.key}`).toString('base64')}`,
            ...(method === 'GET'
              ? {}
              : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) }),
          },
        },
        (response) => {
          const chunks = [];
          response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', () =>
            resolve({ status: response.statusCode, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }),
          );
        },
      );
      request.on('error', reject);
      request.end(method === 'GET' ? undefined : body);
    });
  // The channels service may still be starting behind the gateway.
  let existing;
  for (let attempt = 0; attempt < 60; attempt++) {
    existing = await call('GET', '/streams', { include_all: 'true', exclude_archived: 'false' }).catch(() => null);
    if (existing?.status === 200) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (existing?.status !== 200)
    throw new Error(`the channels service did not answer (${existing?.status ?? 'no answer'})`);
  if (existing.body.streams.length > 0) return;
  const created = await call('POST', '/users/me/subscriptions', {
    subscriptions: JSON.stringify([{ name: 'general', description: 'Everyone in the organization.' }]),
    principals: JSON.stringify(principals),
    is_default_stream: 'true',
  });
  if (created.status !== 200) throw new Error(created.body?.msg ?? `HTTP ${created.status}`);
  console.log('» created #general for the demo users');
}

console.log(`
Teamchat is running at http://${host}
  services: ${children.map(({ name }) => name).join(', ')} (logs in ${logDir})
  zuliprc files for the demo users: ${zuliprcDir}/{owner,member,bot}.zuliprc
  emails: ${commonEnv.EMAIL_HOST ? `sent through ${commonEnv.EMAIL_HOST}` : `EMAIL_HOST is not set, so they are written to ${commonEnv.EMAIL_LOG_DIR} as .eml files`}
  try:  curl -u "$(sed -n 's/^email=//p' ${zuliprcDir}/owner.zuliprc):$(sed -n 's/^key=//p' ${zuliprcDir}/owner.zuliprc)" http://${host}/api/v1/users/me
  web app: ${webAppDir ? `open http://${host}/ in a browser (Zulip's web app from ${webAppDir}; demo passwords: owner-demo-password, member-demo-password)` : webAppLocated.stderr.trim()}
Press Ctrl-C to stop.`);

let stopping = false;
async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  console.log('\n» stopping');
  await Promise.all(
    children.map(
      ({ child }) =>
        new Promise((resolve) => {
          if (child.exitCode !== null) return resolve();
          const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
          child.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  await redis.stop();
  await postgres.stop();
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
