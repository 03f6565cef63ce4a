// Boot only: env, dependencies, listen, graceful shutdown.
import { env } from '@teamchat/core';
import { baseEnvSpec, runService } from '@teamchat/runtime';
import { createService } from './app';

runService('messages', { ...baseEnvSpec, PORT: env.int('port the messages service listens on', 9102) }, (deps) =>
  createService(deps, process.env),
);
