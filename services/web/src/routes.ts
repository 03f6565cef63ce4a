// The whole HTTP surface of the web service: the pages around Zulip's web app (home, login,
// password reset), the session's entry and exit, and the app's static files.
import type { Route } from '@teamchat/core';
import type { WebDeps } from './deps';
import {
  loginPage,
  loginSubmit,
  logout,
  passwordResetDone,
  passwordResetPage,
  passwordResetSent,
  passwordResetSubmit,
  setPasswordPage,
  setPasswordSubmit,
} from './views/accounts';
import { homePage } from './views/home';
import { serveStatic } from './views/static';

export const routes: Route<WebDeps>[] = [
  // Logging in and out (views/accounts.ts).
  { method: 'GET', path: '/login/', view: loginPage, auth: 'anonymous' },
  { method: 'GET', path: '/accounts/login/', view: loginPage, auth: 'anonymous' },
  { method: 'POST', path: '/accounts/login/', view: loginSubmit, auth: 'anonymous' },
  { method: 'POST', path: '/login/', view: loginSubmit, auth: 'anonymous' },
  { method: 'GET', path: '/accounts/logout/', view: logout, auth: 'anonymous' },
  { method: 'POST', path: '/accounts/logout/', view: logout, auth: 'anonymous' },
  // Password reset by email.
  { method: 'GET', path: '/accounts/password/reset/', view: passwordResetPage, auth: 'anonymous' },
  { method: 'POST', path: '/accounts/password/reset/', view: passwordResetSubmit, auth: 'anonymous' },
  { method: 'GET', path: '/accounts/password/reset/done/', view: passwordResetSent, auth: 'anonymous' },
  { method: 'GET', path: '/accounts/password/reset/:uidb64/:token/', view: setPasswordPage, auth: 'anonymous' },
  { method: 'POST', path: '/accounts/password/reset/:uidb64/:token/', view: setPasswordSubmit, auth: 'anonymous' },
  { method: 'GET', path: '/accounts/password/done/', view: passwordResetDone, auth: 'anonymous' },
  // The app (anonymous: spectators may have it; anyone else is sent to the login page).
  { method: 'GET', path: '/', view: homePage, auth: 'anonymous' },
  // The app's files (HEAD is served by the GET route).
  { method: 'GET', path: '/static/*path', view: serveStatic, auth: 'anonymous' },
];
