// The process helpers live in @teamchat/testing (shared with the event-tier and fault tests).
export {
  builtServices,
  freePort,
  preloadPath,
  repoRoot,
  ServiceProcess,
  stackServices,
  startServiceProcess,
  type Exit,
  type LogLine,
  type ServiceDefinition,
} from '@teamchat/testing';
