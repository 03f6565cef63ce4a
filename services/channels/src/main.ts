// Boot only: env, dependencies, listen, graceful shutdown.
import { env } from '@teamchat/core';
import { baseEnvSpec, runService } from '@teamchat/runtime';
import { createService } from './app';

runService('channels', { ...baseEnvSpec, PORT: env.int('port the channels service listens on', 9103) }, (deps) =>
  createService(deps, process.env),
);
