// The in-process test stack: needs the services, so only tests and benches depend on it.
export {
  startStack,
  Stack,
  GENEROUS_RATE_LIMITS,
  type GatewayReplica,
  type StackOptions,
  type TestUser,
  type ServiceName,
} from './stack';
