// What the gateway tells this service about the browser's session besides the user (who is in
// the internal token): the session's CSRF token, for the pages' csrfmiddlewaretoken inputs.
import type { Request } from 'express';
import { SESSION_CSRF_HEADER } from '@teamchat/core';

/** The session's CSRF token, or '' without a session. */
export function sessionCsrfToken(req: Request): string {
  return req.get(SESSION_CSRF_HEADER) ?? '';
}
