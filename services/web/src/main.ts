// Boot only: env, dependencies, listen, graceful shutdown.
import { env, loadEnv } from '@teamchat/core';
import { baseEnvSpec, createBaseDeps, serve } from '@teamchat/runtime';
import { createService } from './app';

async function main() {
  const config = loadEnv({ ...baseEnvSpec, PORT: env.int('port the web service listens on', 9107) });
  const deps = createBaseDeps('web', config);
  const service = await createService(deps, process.env);
  await serve(
    {
      ...service,
      close: async () => {
        await service.close();
        await deps.close();
      },
    },
    { name: 'web', port: config.PORT, host: config.HOST, metricsPort: config.METRICS_PORT, logger: deps.logger },
  );
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
