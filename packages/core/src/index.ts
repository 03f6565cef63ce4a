export * from './errors';
export * as v from './validators';
export type { Validator, Infer } from './validators';
export { param, required, optional, RequestParams, pathInt, type ParamType, type Parsed } from './params';
export * from './http';
export { BODY_LIMITS, LIST_LIMITS } from './limits';
export * from './internal-token';
export * from './env';
export { cookieLanguage, CSRF_COOKIE_NAME, LANGUAGE_COOKIE_NAME, requestCookie } from './cookies';
export { appendTo, compareCodePoints, sortedByName } from './collections';
export { createLogger, type Logger } from './logger';
export { callService, callServiceRaw, serviceError, type ServiceCall } from './service-client';
export { fulfilledWithin, repeat, settledWithin, type Repeating } from './time';
export {
  EMBED_REGISTER_HEADER,
  EMBEDS_HEADER,
  htmlSafeJsonPieces,
  STATE_DATA_MARK,
  StateDataIntoPage,
} from './page-state-data';
