// The cookies services read besides the session's, which the gateway keeps to itself: Django's
// language cookie (a spectator's language) and CSRF cookie (the login form's check).
import type { Request } from 'express';

/** Django's LANGUAGE_COOKIE_NAME. */
export const LANGUAGE_COOKIE_NAME = 'django_language';
/** Django's CSRF_COOKIE_NAME. */
export const CSRF_COOKIE_NAME = 'csrftoken';

/** A cookie of the request, or undefined. */
export function requestCookie(req: Request, name: string): string | undefined {
  for (const part of (req.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      try {
        return decodeURIComponent(value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value);
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** A language code as Django's cookie carries one ("en", "pt-br", "zh-hans"). */
const LANGUAGE_CODE = /^[a-z]{2,3}(?:[-_][a-z0-9]{2,8})*$/i;

/**
 * The visitor's language from Django's language cookie, or undefined when there is none or it is
 * malformed: a spectator's language is this, else the organisation's (Zulip's
 * get_default_language_for_anonymous_user).
 */
export function cookieLanguage(req: Request): string | undefined {
  const cookie = requestCookie(req, LANGUAGE_COOKIE_NAME);
  return cookie !== undefined && LANGUAGE_CODE.test(cookie) ? cookie : undefined;
}
