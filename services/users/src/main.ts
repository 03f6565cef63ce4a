// Boot only: env, dependencies, listen, graceful shutdown.
import { env, loadEnv } from '@teamchat/core';
import { baseEnvSpec, createBaseDeps, serve } from '@teamchat/runtime';
import { createService, DEFAULT_CHANNELS_URL } from './app';

async function main() {
  const config = loadEnv({
    ...baseEnvSpec,
    PORT: env.int('port the users service listens on', 9101),
    CHANNELS_URL: env.string('where the channels service is (new accounts are subscribed there)', DEFAULT_CHANNELS_URL),
  });
  const deps = createBaseDeps('users', config);
  const service = await createService(deps, { CHANNELS_URL: config.CHANNELS_URL });
  await serve({ ...service, close: async () => { await service.close(); await deps.close(); } }, { name: 'users', port: config.PORT, host: config.HOST, logger: deps.logger });
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
