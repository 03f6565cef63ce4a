// Boot only: env, dependencies, listen, graceful shutdown.
import { env, loadEnv } from '@teamchat/core';
import { baseEnvSpec, createBaseDeps, serve } from '@teamchat/runtime';
import { storageEnvSpec } from '@teamchat/storage';
import { createService, DEFAULT_CHANNELS_URL, DEFAULT_MESSAGES_URL } from './app';
import { loginThrottleEnvSpec } from './lib/login-throttle';
import { presenceCacheEnvSpec } from './lib/presence-cache';

async function main() {
  const config = loadEnv({
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
  });
  const deps = createBaseDeps('users', config);
  // The settings as validated above, in the form createService reads them.
  const service = await createService(
    deps,
    Object.fromEntries(Object.entries(config).map(([name, value]) => [name, String(value)])),
  );
  await serve(
    {
      ...service,
      close: async () => {
        await service.close();
        await deps.close();
      },
    },
    { name: 'users', port: config.PORT, host: config.HOST, metricsPort: config.METRICS_PORT, logger: deps.logger },
  );
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
