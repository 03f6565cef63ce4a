// Writing HTML pages: escaping, trusted fragments, and the headers every page of the app carries.
import type { ServerResponse } from 'node:http';
import nunjucks from 'nunjucks';
import { pageCsp } from './csp';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => HTML_ESCAPES[character]);
}

/** Markup a template writes as it is (Django's SafeString). */
export function safeHtml(markup: string): unknown {
  return new nunjucks.runtime.SafeString(markup);
}

/** Django's csrf_input: the hidden field a page's forms post the session's CSRF token with. */
export function csrfInput(token: string): unknown {
  return safeHtml(`<input type="hidden" name="csrfmiddlewaretoken" value="${escapeHtml(token)}">`);
}

/**
 * The headers of a page: never cached (Zulip's home view: no-cache, no-store, must-revalidate),
 * under the policy of pages that run the app (`nonce`: its inline script's).
 */
export function pageHeaders(nonce: string): Record<string, string> {
  return {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'max-age=0, no-cache, no-store, must-revalidate, private',
    'Content-Security-Policy': pageCsp(nonce),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'strict-origin-when-cross-origin',
  };
}

/** A page, encoded once. */
export function sendPage(res: ServerResponse, html: string, nonce: string, status = 200): void {
  const body = Buffer.from(html);
  res.writeHead(status, { ...pageHeaders(nonce), 'Content-Length': body.length });
  res.end(body);
}
