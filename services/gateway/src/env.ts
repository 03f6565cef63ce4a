import { env, loadEnv, type EnvOf } from '@teamchat/core';
import { baseEnvSpec, rateLimitEnvSpec } from '@teamchat/runtime';

/** Under the services' 65 s keep-alive timeout, so the gateway closes idle connections first. */
/**
 * An event replica answers a parked poll within its heartbeat delay (EVENTS_HEARTBEAT_MIN_MS +
 * _JITTER_MS, 55 s by default). A replica silent for longer is gone or cut off (a host off the
 * network closes nothing): the poll is ended with a 503, and the client's next poll is balanced
 * to a live replica.
 */
export const LONG_POLL_TIMEOUT_DEFAULT_MS = 90_000;

export const UPSTREAM_SOCKET_DEFAULTS = { maxAgeMs: 30_000, idleMs: 15_000 };

export const gatewayEnvSpec = {
  ...baseEnvSpec,
  PORT: env.int('port the gateway listens on', 9991),
  METRICS_PORT: env.int('admin port serving GET /metrics, never published (the public port does not serve it)', 9990),
  USERS_URL: env.url('base URL of the users service', 'http://127.0.0.1:9101'),
  MESSAGES_URL: env.url('base URL of the messages service', 'http://127.0.0.1:9102'),
  CHANNELS_URL: env.url('base URL of the channels service', 'http://127.0.0.1:9103'),
  UPLOADS_URL: env.url('base URL of the uploads service', 'http://127.0.0.1:9104'),
  EVENTS_URL: env.url('base URL of the event tier (a Service in front of its replicas)', 'http://127.0.0.1:9105'),
  WEB_URL: env.url(
    "base URL of the web service (the pages around Zulip's web app, its static files)",
    'http://127.0.0.1:9107',
  ),
  UPSTREAM_TIMEOUT_MS: env.int('longest wait for a service answer (long-polls excepted)', 60_000),
  UPSTREAM_LONG_POLL_TIMEOUT_MS: env.int(
    "longest silence of an event replica on a long-poll (above the event tier's longest heartbeat delay)",
    LONG_POLL_TIMEOUT_DEFAULT_MS,
  ),
  UPSTREAM_SOCKET_MAX_AGE_MS: env.int(
    'longest time a connection to a service is reused (so new replicas get requests after a scale-out)',
    UPSTREAM_SOCKET_DEFAULTS.maxAgeMs,
  ),
  UPSTREAM_SOCKET_IDLE_MS: env.int(
    'how long an unused connection to a service is kept open',
    UPSTREAM_SOCKET_DEFAULTS.idleMs,
  ),
  ...rateLimitEnvSpec,
};

export type GatewayEnv = EnvOf<typeof gatewayEnvSpec>;

export const loadGatewayEnv = (source: NodeJS.ProcessEnv = process.env): GatewayEnv => loadEnv(gatewayEnvSpec, source);
