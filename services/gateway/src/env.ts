import { env, loadEnv, type EnvOf } from '@teamchat/core';
import { baseEnvSpec } from '@teamchat/runtime';

export const gatewayEnvSpec = {
  ...baseEnvSpec,
  PORT: env.int('port the gateway listens on', 9991),
  USERS_URL: env.url('base URL of the users service', 'http://127.0.0.1:9101'),
  MESSAGES_URL: env.url('base URL of the messages service', 'http://127.0.0.1:9102'),
  CHANNELS_URL: env.url('base URL of the channels service', 'http://127.0.0.1:9103'),
  UPLOADS_URL: env.url('base URL of the uploads service', 'http://127.0.0.1:9104'),
  EVENTS_URL: env.url('base URL of the event tier (a Service in front of its replicas)', 'http://127.0.0.1:9105'),
  UPSTREAM_TIMEOUT_MS: env.int('longest wait for a service answer (long-polls excepted)', 60_000),
};

export type GatewayEnv = EnvOf<typeof gatewayEnvSpec>;

export const loadGatewayEnv = (source: NodeJS.ProcessEnv = process.env): GatewayEnv => loadEnv(gatewayEnvSpec, source);
