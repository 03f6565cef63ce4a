export { createApp, createService } from './app';
export { doCreateRealm, type CreateRealmInput } from './actions/realms';
export {
  doCreateUser,
  doIssueApiKey,
  doRegenerateApiKey,
  doSetPassword,
  type CreateUserInput,
  type CreatedUser,
} from './actions/users';
