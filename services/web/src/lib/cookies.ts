// The login form's CSRF cookie and token (Django's get_token and CsrfViewMiddleware).
import { randomInt, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { CSRF_COOKIE_NAME, requestCookie } from '@teamchat/core';

/** Django's CSRF_COOKIE_AGE: a year. */
const CSRF_COOKIE_AGE_SECONDS = 60 * 60 * 24 * 7 * 52;
/** Django's CSRF secret: 32 characters of letters and digits. */
const CSRF_TOKEN = /^[A-Za-z0-9]{32}$/;
const CSRF_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/**
 * The login form's CSRF token (Django's get_token): the browser's CSRF cookie if it has a good
 * one, else a new one, with the Set-Cookie header that gives it to the browser.
 */
export function loginCsrfToken(req: Request, secure: boolean): { token: string; setCookie?: string } {
  const current = requestCookie(req, CSRF_COOKIE_NAME);
  if (current !== undefined && CSRF_TOKEN.test(current)) return { token: current };
  let token = '';
  for (let i = 0; i < 32; i++) token += CSRF_ALPHABET[randomInt(CSRF_ALPHABET.length)];
  const expires = new Date(Date.now() + CSRF_COOKIE_AGE_SECONDS * 1000).toUTCString();
  // HttpOnly as Zulip's CSRF_COOKIE_HTTPONLY: pages carry the token in their forms.
  return {
    token,
    setCookie: `${CSRF_COOKIE_NAME}=${token}; expires=${expires}; HttpOnly; Max-Age=${CSRF_COOKIE_AGE_SECONDS}; Path=/; SameSite=Lax${secure ? '; Secure' : ''}`,
  };
}

/** Django's CsrfViewMiddleware on a form POST: the form's csrfmiddlewaretoken is the CSRF cookie's. */
export function loginCsrfPasses(req: Request, given: string | undefined): boolean {
  const cookie = requestCookie(req, CSRF_COOKIE_NAME);
  if (cookie === undefined || !CSRF_TOKEN.test(cookie) || given === undefined) return false;
  const expected = Buffer.from(cookie);
  const actual = Buffer.from(given);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
