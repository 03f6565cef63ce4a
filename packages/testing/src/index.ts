export { startStack, Stack, testRedisUrl, GENEROUS_RATE_LIMITS, type GatewayReplica, type StackOptions, type TestUser, type ServiceName } from './stack';
export { ApiClient, encodeValue, type ApiResponse, type Params, type RequestOptions } from './client';
export { createTestDatabase, ensureTemplateDatabase, dropStaleTestDatabases, adminDatabaseUrl, databaseUrl } from './database';
export { zulipOpenApiPath, validateSuccessResponse, declareNewerFields, declareNewerOperation, declareNewerEventType, findOperation, SchemaMismatchError } from './openapi';
export { expectError } from './expect';
export { EventQueue, registerEventQueue, settleEvents, type ReceivedEvent } from './events';
import './newer-fields';
export {
  Balancer,
  buildServices,
  builtServices,
  freePort,
  preloadPath,
  repoRoot,
  residentBytes,
  ServiceProcess,
  stackServices,
  startServiceProcess,
  type BalancerTarget,
  type Exit,
  type LogLine,
  type ServiceDefinition,
  type StartServiceOptions,
} from './processes';
export { TcpProxy, type DelayRule } from './tcp-proxy';
