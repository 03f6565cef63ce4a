// Boot only: env, dependencies, listen, graceful shutdown.
import { runService } from '@teamchat/runtime';
import { createService } from './app';
import { uploadsEnvSpec } from './env';

runService('uploads', uploadsEnvSpec, (deps) => createService(deps, process.env));
