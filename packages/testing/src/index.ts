// Test helpers that need no service (the in-process stack of services is @teamchat/stack, a layer above).
export { ApiClient, encodeValue, type ApiResponse, type Params, type ParamValue, type RequestOptions } from './client';
export {
  createTestDatabase,
  ensureTemplateDatabase,
  dropStaleTestDatabases,
  adminDatabaseUrl,
  databaseUrl,
  replicaDatabaseUrl,
  testReplicaEnv,
  type TestDatabase,
} from './database';
export {
  deleteTestRedisKeys,
  testRedisClusterNodes,
  testRedisConnection,
  testRedisKeys,
  testRedisServers,
  testRedisTarget,
  testRedisUrl,
} from './redis';
export {
  zulipOpenApiPath,
  validateSuccessResponse,
  declareNewerFields,
  declareNewerOperation,
  declareNewerEventType,
  findOperation,
  SchemaMismatchError,
} from './openapi';
export { expectError } from './expect';
export { EventQueue, registerEventQueue, settleEvents, type ReceivedEvent } from './events';
export { captureEvents, ofType, type CapturedEvent, type EventSource } from './committed-events';
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
  deployedNodeArgs,
  stackServices,
  startServiceProcess,
  type BalancerTarget,
  type Exit,
  type LogLine,
  type ServiceDefinition,
  type StackDefinition,
  type StartServiceOptions,
} from './processes';
export { TcpProxy, type DelayRule } from './tcp-proxy';
export { OwnRedisCluster, RedisClusterNode, type RedisClusterOptions } from './redis-cluster';
export { StreamingReplica, type ReplicaServer } from './streaming-replica';
export { until } from './until';
export { sleep, waitFor, type WaitOptions } from './wait';
export { sendMessage } from './send-message';
export { GIF_BOMB, ONE_PIXEL_PNG, pngDeclaring } from './images';
export { WEB_APP_REGISTER_PARAMS, webAppStateProblems, webAppStateSchema } from './web-app-state';
export {
  applyEvent,
  applyEvents,
  appliedEventTypes,
  type ApplyOptions,
  type RegisterArguments,
  type ServerLookups,
} from './apply-event';
export {
  differences,
  REGISTER_KEYS_NOT_COMPARED,
  StateMismatchError,
  verifyAction,
  type StateDifference,
  type VerifiedAction,
  type VerifyOptions,
} from './verify-action';
