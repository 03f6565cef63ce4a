// Boot only: env, dependencies, listen, graceful shutdown.
import { env } from '@teamchat/core';
import { baseEnvSpec, runService } from '@teamchat/runtime';
import { createService } from './app';

runService('web', { ...baseEnvSpec, PORT: env.int('port the web service listens on', 9107) }, (deps) =>
  createService(deps, process.env),
);
