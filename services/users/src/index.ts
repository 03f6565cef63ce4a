export { createApp, createService } from './app';
export { doCreateRealm, type CreateRealmInput } from './actions/realms';
export { USER_STATE_SIZE_LIMIT } from './actions/bot-storage';
export {
  doCreateUser,
  doIssueApiKey,
  doRegenerateApiKey,
  doSetPassword,
  type CreateUserInput,
  type CreatedUser,
} from './actions/users';
