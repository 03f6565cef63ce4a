export * from './errors';
export * as v from './validators';
export type { Validator, Infer } from './validators';
export { param, required, optional, RequestParams, pathInt, type ParamType, type Parsed } from './params';
export * from './http';
export * from './internal-token';
export * from './env';
export { createLogger, type Logger } from './logger';
export { callService, type ServiceCall } from './service-client';
