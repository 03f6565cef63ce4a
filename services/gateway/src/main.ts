// Boot only: env, dependencies, listen, graceful shutdown.
import { createDb } from '@teamchat/db';
import { createRedis } from '@teamchat/bus';
import { createLogger } from '@teamchat/core';
import { serve } from '@teamchat/runtime';
import { createGateway } from './app';
import { loadGatewayEnv } from './env';

async function main() {
  const env = loadGatewayEnv();
  const logger = createLogger('gateway', env.LOG_LEVEL);
  const db = createDb(env.DATABASE_URL, { poolSize: env.DB_POOL_SIZE });
  const redis = createRedis(env, { name: 'gateway', logger });
  const gateway = createGateway({
    env,
    db,
    redis,
    logger,
    serviceUrls: {
      users: env.USERS_URL,
      messages: env.MESSAGES_URL,
      channels: env.CHANNELS_URL,
      uploads: env.UPLOADS_URL,
      events: env.EVENTS_URL,
      web: env.WEB_URL,
    },
  });
  await serve(
    {
      handler: gateway.handler,
      async close() {
        await gateway.close();
        await redis.quit();
        await db.$disconnect();
      },
    },
    { name: 'gateway', port: env.PORT, host: env.HOST, metricsPort: env.METRICS_PORT, logger },
  );
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
