// Zulip's error pages from the installed templates (404.html), with a plain page when the
// templates cannot render it.
import type { ServerResponse } from 'node:http';
import { cspNonce } from './csp';
import { sendPage } from './html';
import { defaultPageParams } from './page-params';
import type { ZulipWebApp } from './web-app';

const renderedNotFound = new WeakMap<ZulipWebApp, string>();

const PLAIN_NOT_FOUND =
  '<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><title>Error | Zulip</title></head>' +
  '<body><h1>Page not found (404)</h1></body></html>';

/** The 404 page: the same for every request, rendered once (it has no inline script: any nonce will do). */
export function sendNotFoundPage(res: ServerResponse, webApp: ZulipWebApp | null): void {
  let html = webApp ? renderedNotFound.get(webApp) : PLAIN_NOT_FOUND;
  if (html === undefined && webApp) {
    try {
      html = webApp.render('404.html', {
        LANGUAGE_CODE: 'en',
        default_page_params: defaultPageParams('en'),
        support_email: '',
        isolated_page: true,
        skip_footer: true,
      });
    } catch {
      html = PLAIN_NOT_FOUND;
    }
    renderedNotFound.set(webApp, html);
  }
  sendPage(res, html ?? PLAIN_NOT_FOUND, cspNonce(), 404);
}

const renderedCsrfFailure = new WeakMap<ZulipWebApp, string>();

const PLAIN_CSRF_FAILURE =
  '<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><title>Error | Zulip</title></head>' +
  '<body><h1>Access forbidden (403)</h1><p>Your request could not be completed because your browser did not ' +
  'send the credentials required to authenticate your access.</p></body></html>';

/** Zulip's csrf_failure for a page: 4xx.html with csrf_failure, status 403 (rendered once). */
export function sendCsrfFailurePage(res: ServerResponse, webApp: ZulipWebApp | null): void {
  let html = webApp ? renderedCsrfFailure.get(webApp) : PLAIN_CSRF_FAILURE;
  if (html === undefined && webApp) {
    try {
      html = webApp.render('4xx.html', {
        LANGUAGE_CODE: 'en',
        default_page_params: defaultPageParams('en'),
        csrf_failure: true,
        support_email: '',
        isolated_page: true,
        skip_footer: true,
      });
    } catch {
      html = PLAIN_CSRF_FAILURE;
    }
    renderedCsrfFailure.set(webApp, html);
  }
  sendPage(res, html ?? PLAIN_CSRF_FAILURE, cspNonce(), 403);
}
