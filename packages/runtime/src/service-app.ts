// What every service on the common deps passes to createServiceApp besides its name and routes.

import type { Route, ServiceAppOptions } from '@teamchat/core';
import { storesReachable, type BaseDeps } from './deps';

/**
 * createServiceApp's options for a service on the common deps: tokens checked with the
 * deployment's secret, ready while PostgreSQL and Redis answer, and each user's write recorded
 * for the read replica (its organisation's next heavy reads wait for the standby to replay it).
 */
export function serviceAppOptions<D extends BaseDeps>(name: string, routes: Route<D>[], deps: D): ServiceAppOptions<D> {
  return {
    name,
    routes,
    deps,
    internalSecret: deps.env.INTERNAL_JWT_SECRET,
    logger: deps.logger,
    ready: () => storesReachable(deps),
    afterWrite: (requester) => deps.reads.recordWrite(requester.realmId),
  };
}
