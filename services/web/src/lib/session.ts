// What the gateway tells this service about the browser's session besides the user (who is in
// the internal token): the session's CSRF token, for the pages' csrfmiddlewaretoken inputs.
import type { Request } from 'express';

/** The gateway's header with the session's CSRF token (@teamchat/core's SESSION_CSRF_HEADER). */
const SESSION_CSRF_HEADER = 'x-teamchat-session-csrf';

/** The session's CSRF token, or '' without a session. */
export function sessionCsrfToken(req: Request): string {
  const token = req.get(SESSION_CSRF_HEADER);
  return token ?? '';
}
