// The whole HTTP surface of the users service. Specific paths come before the patterns that
// would also match them (/users/me/... before /users/{user}).
import type { Route } from '@teamchat/core';
import type { UsersDeps } from './deps';
import { addAlertWords, listAlertWords, removeAlertWords } from './views/alert-words';
import {
  deleteAvatar,
  deleteRealmIcon,
  deleteRealmLogo,
  redirectToAvatar,
  uploadAvatar,
  uploadRealmIcon,
  uploadRealmLogo,
} from './views/avatars';
import { getBotStorage, removeBotStorage, updateBotStorage } from './views/bot-storage';
import { createBot, deactivateBot, getBots, regenerateBotApiKey, updateBot } from './views/bots';
import { fetchApiKey, internalPasswordLogin, internalPasswordReset } from './views/fetch-api-key';
import {
  createMultiuseInvite,
  getInvites,
  resendUserInvite,
  revokeMultiuseInvite,
  revokeUserInvite,
  sendInvites,
} from './views/invites';
import { acceptMultiuseInvite, showJoinPage, submitJoinForm } from './views/join';
import {
  createLinkifier,
  deleteLinkifier,
  listLinkifiers,
  listLinkifiersLegacy,
  reorderLinkifiers,
  updateLinkifier,
} from './views/linkifiers';
import {
  addNavigationView,
  getNavigationViews,
  removeNavigationView,
  updateNavigationView,
} from './views/navigation-views';
import { getOwnUser } from './views/own-user';
import { getRealmPresence, getUserPresence, updatePresence } from './views/presence';
import {
  createProfileField,
  listProfileFields,
  removeOwnProfileData,
  reorderProfileFields,
  updateOwnProfileData,
} from './views/profile-fields';
import { sendTestPushNotification } from './views/mobile-push';
import { addApnsToken, addFcmToken, removeApnsToken, removeFcmToken } from './views/push-tokens';
import { listRealmEmoji } from './views/realm-emoji';
import { getServerSettings } from './views/server-settings';
import { updateSettings } from './views/settings';
import { updateRealm } from './views/realm';
import { createRealmDomain, deleteRealmDomain, listRealmDomains, updateRealmDomain } from './views/realm-domains';
import { markOnboardingStepAsRead } from './views/onboarding-steps';
import {
  createUserGroup,
  deactivateUserGroup,
  getIsUserGroupMember,
  getUserGroupMembers,
  getUserGroups,
  getUserGroupSubgroups,
  updateUserGroup,
  updateUserGroupMembers,
  updateUserGroupSubgroups,
} from './views/user-groups';
import { muteUser, unmuteUser } from './views/muted-users';
import { addRealmPlayground, removeRealmPlayground } from './views/realm-playgrounds';
import { createSavedSnippet, deleteSavedSnippet, editSavedSnippet, getSavedSnippets } from './views/saved-snippets';
import { updateRealmUserSettingsDefaults } from './views/user-settings-defaults';
import { runZcommand } from './views/zcommand';
import { getUserStatus, updateOwnStatus } from './views/user-status';
import {
  createUser,
  deactivateOwnUser,
  deactivateUser,
  getUser,
  getUsers,
  reactivateUser,
  updateUser,
} from './views/users';

export const routes: Route<UsersDeps>[] = [
  { method: 'GET', path: '/api/v1/server_settings', view: getServerSettings, auth: 'anonymous' },
  { method: 'POST', path: '/api/v1/fetch_api_key', view: fetchApiKey, auth: 'anonymous' },
  { method: 'POST', path: '/internal/password_login', view: internalPasswordLogin, auth: 'anonymous' },
  { method: 'POST', path: '/internal/password_reset', view: internalPasswordReset, auth: 'anonymous' },

  // One's own account.
  { method: 'GET', path: '/api/v1/users/me', view: getOwnUser },
  { method: 'DELETE', path: '/api/v1/users/me', view: deactivateOwnUser },
  { method: 'PATCH', path: '/api/v1/settings', view: updateSettings },
  { method: 'POST', path: '/api/v1/zcommand', view: runZcommand },
  { method: 'GET', path: '/api/v1/users/me/alert_words', view: listAlertWords },
  { method: 'POST', path: '/api/v1/users/me/alert_words', view: addAlertWords },
  { method: 'DELETE', path: '/api/v1/users/me/alert_words', view: removeAlertWords },
  { method: 'PATCH', path: '/api/v1/users/me/profile_data', view: updateOwnProfileData },
  { method: 'DELETE', path: '/api/v1/users/me/profile_data', view: removeOwnProfileData },
  { method: 'POST', path: '/api/v1/users/me/presence', view: updatePresence },
  // Avatars, the organisation's icon and logos: the image files go to the uploads storage.
  { method: 'POST', path: '/api/v1/users/me/avatar', view: uploadAvatar, body: 'raw' },
  { method: 'DELETE', path: '/api/v1/users/me/avatar', view: deleteAvatar },
  { method: 'POST', path: '/api/v1/realm/icon', view: uploadRealmIcon, body: 'raw' },
  { method: 'DELETE', path: '/api/v1/realm/icon', view: deleteRealmIcon },
  { method: 'POST', path: '/api/v1/realm/logo', view: uploadRealmLogo, body: 'raw' },
  { method: 'DELETE', path: '/api/v1/realm/logo', view: deleteRealmLogo },
  { method: 'GET', path: '/avatar/:user', view: redirectToAvatar },
  { method: 'GET', path: '/avatar/:user/medium', view: redirectToAvatar },
  { method: 'POST', path: '/api/v1/users/me/status', view: updateOwnStatus },
  { method: 'POST', path: '/api/v1/users/me/onboarding_steps', view: markOnboardingStepAsRead },
  { method: 'POST', path: '/api/v1/users/me/muted_users/:muted_user_id', view: muteUser },
  { method: 'DELETE', path: '/api/v1/users/me/muted_users/:muted_user_id', view: unmuteUser },
  { method: 'POST', path: '/api/v1/users/me/apns_device_token', view: addApnsToken },
  { method: 'DELETE', path: '/api/v1/users/me/apns_device_token', view: removeApnsToken },
  { method: 'POST', path: '/api/v1/users/me/android_gcm_reg_id', view: addFcmToken },
  { method: 'DELETE', path: '/api/v1/users/me/android_gcm_reg_id', view: removeFcmToken },
  { method: 'POST', path: '/api/v1/users/me/mobile_push_reg_id', view: addFcmToken },
  { method: 'DELETE', path: '/api/v1/users/me/mobile_push_reg_id', view: removeFcmToken },
  { method: 'POST', path: '/api/v1/mobile_push/test_notification', view: sendTestPushNotification },
  { method: 'GET', path: '/api/v1/saved_snippets', view: getSavedSnippets },
  { method: 'POST', path: '/api/v1/saved_snippets', view: createSavedSnippet },
  { method: 'PATCH', path: '/api/v1/saved_snippets/:saved_snippet_id', view: editSavedSnippet },
  { method: 'DELETE', path: '/api/v1/saved_snippets/:saved_snippet_id', view: deleteSavedSnippet },

  // Other users.
  { method: 'GET', path: '/api/v1/users', view: getUsers },
  { method: 'POST', path: '/api/v1/users', view: createUser },
  { method: 'GET', path: '/api/v1/users/:user', view: getUser },
  { method: 'GET', path: '/api/v1/users/:user_id/status', view: getUserStatus },
  { method: 'PATCH', path: '/api/v1/users/:user', view: updateUser },
  { method: 'DELETE', path: '/api/v1/users/:user', view: deactivateUser },
  { method: 'POST', path: '/api/v1/users/:user/reactivate', view: reactivateUser },
  { method: 'GET', path: '/api/v1/users/:user_id_or_email/presence', view: getUserPresence },

  // Bots (their owners and administrators); creating and changing one may carry its avatar.
  { method: 'GET', path: '/api/v1/bots', view: getBots },
  { method: 'POST', path: '/api/v1/bots', view: createBot, body: 'raw' },
  { method: 'PATCH', path: '/api/v1/bots/:bot_id', view: updateBot, body: 'raw' },
  { method: 'DELETE', path: '/api/v1/bots/:bot_id', view: deactivateBot },
  { method: 'POST', path: '/api/v1/bots/:bot_id/api_key/regenerate', view: regenerateBotApiKey },
  { method: 'GET', path: '/api/v1/bot_storage', view: getBotStorage },
  { method: 'PUT', path: '/api/v1/bot_storage', view: updateBotStorage },
  { method: 'DELETE', path: '/api/v1/bot_storage', view: removeBotStorage },

  // User groups.
  { method: 'GET', path: '/api/v1/user_groups', view: getUserGroups },
  { method: 'POST', path: '/api/v1/user_groups/create', view: createUserGroup },
  { method: 'PATCH', path: '/api/v1/user_groups/:user_group_id', view: updateUserGroup },
  { method: 'POST', path: '/api/v1/user_groups/:user_group_id/members', view: updateUserGroupMembers },
  { method: 'GET', path: '/api/v1/user_groups/:user_group_id/members', view: getUserGroupMembers },
  { method: 'GET', path: '/api/v1/user_groups/:user_group_id/members/:user_id', view: getIsUserGroupMember },
  { method: 'POST', path: '/api/v1/user_groups/:user_group_id/subgroups', view: updateUserGroupSubgroups },
  { method: 'GET', path: '/api/v1/user_groups/:user_group_id/subgroups', view: getUserGroupSubgroups },
  { method: 'POST', path: '/api/v1/user_groups/:user_group_id/deactivate', view: deactivateUserGroup },

  // Reusable invitation links; the link itself needs no credentials.
  { method: 'GET', path: '/api/v1/invites', view: getInvites },
  { method: 'POST', path: '/api/v1/invites/multiuse', view: createMultiuseInvite },
  { method: 'POST', path: '/api/v1/invites/multiuse/accept', view: acceptMultiuseInvite, auth: 'anonymous' },
  { method: 'DELETE', path: '/api/v1/invites/multiuse/:invite_id', view: revokeMultiuseInvite },
  // Invitations by email (the email itself is sent by the notifications work).
  { method: 'POST', path: '/api/v1/invites', view: sendInvites },
  { method: 'DELETE', path: '/api/v1/invites/:invite_id', view: revokeUserInvite },
  { method: 'POST', path: '/api/v1/invites/:invite_id/resend', view: resendUserInvite },
  { method: 'GET', path: '/join/:key', view: showJoinPage, auth: 'anonymous' },
  { method: 'POST', path: '/join/:key', view: submitJoinForm, auth: 'anonymous' },

  // Navigation views (fragments may contain slashes).
  { method: 'GET', path: '/api/v1/navigation_views', view: getNavigationViews },
  { method: 'POST', path: '/api/v1/navigation_views', view: addNavigationView },
  { method: 'PATCH', path: '/api/v1/navigation_views/*fragment', view: updateNavigationView },
  { method: 'DELETE', path: '/api/v1/navigation_views/*fragment', view: removeNavigationView },

  // Realm configuration.
  { method: 'PATCH', path: '/api/v1/realm', view: updateRealm },
  { method: 'GET', path: '/api/v1/realm/domains', view: listRealmDomains },
  { method: 'POST', path: '/api/v1/realm/domains', view: createRealmDomain },
  { method: 'PATCH', path: '/api/v1/realm/domains/:domain', view: updateRealmDomain },
  { method: 'DELETE', path: '/api/v1/realm/domains/:domain', view: deleteRealmDomain },
  { method: 'GET', path: '/api/v1/realm/linkifiers', view: listLinkifiers },
  { method: 'PATCH', path: '/api/v1/realm/linkifiers', view: reorderLinkifiers },
  { method: 'GET', path: '/api/v1/realm/filters', view: listLinkifiersLegacy },
  { method: 'POST', path: '/api/v1/realm/filters', view: createLinkifier },
  { method: 'PATCH', path: '/api/v1/realm/filters/:filter_id', view: updateLinkifier },
  { method: 'DELETE', path: '/api/v1/realm/filters/:filter_id', view: deleteLinkifier },
  { method: 'GET', path: '/api/v1/realm/profile_fields', view: listProfileFields },
  { method: 'POST', path: '/api/v1/realm/profile_fields', view: createProfileField },
  { method: 'PATCH', path: '/api/v1/realm/profile_fields', view: reorderProfileFields },
  { method: 'GET', path: '/api/v1/realm/emoji', view: listRealmEmoji },
  { method: 'GET', path: '/api/v1/realm/presence', view: getRealmPresence },
  { method: 'POST', path: '/api/v1/realm/playgrounds', view: addRealmPlayground },
  { method: 'DELETE', path: '/api/v1/realm/playgrounds/:playground_id', view: removeRealmPlayground },
  { method: 'PATCH', path: '/api/v1/realm/user_settings_defaults', view: updateRealmUserSettingsDefaults },
];
