// Boot only: env, dependencies, listen, graceful shutdown.
import { loadEnv } from '@teamchat/core';
import { baseEnvSpec, createBaseDeps, serve } from '@teamchat/runtime';
import { createService } from './app';
import { eventsEnvSpec } from './env';

async function main() {
  const config = loadEnv({ ...baseEnvSpec, ...eventsEnvSpec });
  const deps = createBaseDeps('events', config);
  const service = await createService(deps, process.env);
  await serve(
    {
      ...service,
      close: async () => {
        await service.close();
        await deps.close();
      },
    },
    { name: 'events', port: config.PORT, host: config.HOST, metricsPort: config.METRICS_PORT, logger: deps.logger },
  );
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
