// The boot of every service built on the common deps (each `src/main.ts` is one call): its
// settings validated, the common deps, the service, listening, and a shutdown that closes the
// service and then the deps.

import { loadEnv, type EnvOf, type EnvVar } from '@teamchat/core';
import { baseEnvSpec, createBaseDeps, type BaseDeps } from './deps';
import { serve, type RunningService } from './serve';

/** The settings runService reads itself: the common ones and the service's port. */
export type ServiceEnvSpec = typeof baseEnvSpec & { PORT: EnvVar<number> };

/**
 * Boots the service `name`: `envSpec` is validated at once (every problem listed, then exit 1),
 * `start` builds the service from the common deps and the validated settings.
 */
export function runService<S extends ServiceEnvSpec>(
  name: string,
  envSpec: S,
  start: (deps: BaseDeps, config: EnvOf<S>) => Promise<RunningService>,
): void {
  const boot = async () => {
    const config = loadEnv(envSpec);
    const common: EnvOf<ServiceEnvSpec> = config;
    const deps = createBaseDeps(name, common);
    const service = await start(deps, config);
    await serve(
      {
        ...service,
        close: async () => {
          await service.close();
          await deps.close();
        },
      },
      { name, port: common.PORT, host: common.HOST, metricsPort: common.METRICS_PORT, logger: deps.logger },
    );
  };
  boot().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
