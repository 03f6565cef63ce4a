export * from './auth';
export * from './deps';
export * from './rate-limit';
export * from './realms';
export * from './serve';
export * from './idle-collection';
export * from './run-service';
export * from './service-app';
