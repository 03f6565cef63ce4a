// The Content-Security-Policy of the pages Zulip's web app runs under. Zulip 10.2 sends none on
// its pages (its nginx sets one only on uploads); ours allows what the app does and nothing else:
// its bundles and lazily loaded chunks from our origin, the page's one inline script by nonce,
// inline styles (the page's loading style and the app's style attributes), images from anywhere
// (avatars, message previews), and video embeds from the players the app knows.
import crypto from 'node:crypto';

/** A fresh nonce for a page's inline script (Zulip: secrets.token_hex(24)). */
export function cspNonce(): string {
  return crypto.randomBytes(24).toString('hex');
}

export function pageCsp(nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}'`,
    "style-src 'self' 'unsafe-inline'",
    'img-src * data: blob:',
    "media-src 'self' blob: data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "frame-src 'self' https://www.youtube-nocookie.com https://www.youtube.com https://player.vimeo.com",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
  ].join('; ');
}
