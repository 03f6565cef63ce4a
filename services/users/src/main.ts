// Boot only: env, dependencies, listen, graceful shutdown.
import { env } from '@teamchat/core';
import { baseEnvSpec, runService } from '@teamchat/runtime';
import { storageEnvSpec } from '@teamchat/storage';
import { createService, DEFAULT_CHANNELS_URL, DEFAULT_MESSAGES_URL } from './app';
import { loginThrottleEnvSpec } from './lib/login-throttle';
import { presenceCacheEnvSpec } from './lib/presence-cache';

const usersEnvSpec = {
  ...baseEnvSpec,
  ...loginThrottleEnvSpec,
  ...presenceCacheEnvSpec,
  ...storageEnvSpec,
  PORT: env.int('port the users service listens on', 9101),
  CHANNELS_URL: env.string('where the channels service is (new accounts are subscribed there)', DEFAULT_CHANNELS_URL),
  MESSAGES_URL: env.string(
    "where the messages service is (a muted user's messages are marked read there)",
    DEFAULT_MESSAGES_URL,
  ),
};

// The settings as validated above, in the form createService reads them.
runService('users', usersEnvSpec, (deps, config) =>
  createService(deps, Object.fromEntries(Object.entries(config).map(([name, value]) => [name, String(value)]))),
);
