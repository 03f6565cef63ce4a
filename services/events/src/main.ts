// Boot only: env, dependencies, listen, graceful shutdown.
import { baseEnvSpec, runService } from '@teamchat/runtime';
import { createService } from './app';
import { eventsEnvSpec } from './env';

runService('events', { ...baseEnvSpec, ...eventsEnvSpec }, (deps) => createService(deps, process.env));
