export * from './deps';
export * from './serve';
