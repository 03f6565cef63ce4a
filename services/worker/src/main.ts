// Boot only: env, dependencies, listen (health), graceful shutdown.
import { env } from '@teamchat/core';
import { baseEnvSpec, runService } from '@teamchat/runtime';
import { createService } from './app';

runService('worker', { ...baseEnvSpec, PORT: env.int('port of the worker health endpoints', 9106) }, (deps) =>
  createService(deps, process.env),
);
