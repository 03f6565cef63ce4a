// Temporary file URLs (Zulip's generate_unauthed_file_access_url): a link to one upload that
// works without credentials for a minute, for clients that hand a file to something that
// cannot authenticate (the mobile app opening a document or a video in the system viewer).
// The token is a JWT naming the file, signed with a key derived from the internal secret and
// its own audience, so it is neither an internal token nor usable for another file.

import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';

const LIFETIME_SECONDS = 60;
const AUDIENCE = 'teamchat-temporary-upload-url';
export const TEMPORARY_URL_PREFIX = '/user_uploads/temporary/';

const signingKeys = new Map<string, Buffer>();
function signingKey(secret: string): Buffer {
  let key = signingKeys.get(secret);
  if (!key) {
    key = crypto.createHmac('sha256', secret).update(AUDIENCE).digest();
    signingKeys.set(secret, key);
  }
  return key;
}

/** "/user_uploads/temporary/{token}/{file name}" for the upload at `pathId` of `realmId`. */
export function temporaryFileUrl(secret: string, realmId: number, pathId: string): string {
  const token = jwt.sign({ p: pathId, r: realmId }, signingKey(secret), {
    algorithm: 'HS256',
    expiresIn: LIFETIME_SECONDS,
    audience: AUDIENCE,
  });
  return `${TEMPORARY_URL_PREFIX}${token}/${encodeURIComponent(pathId.split('/').at(-1)!)}`;
}

/** The upload a temporary URL's token names, or null if the token is forged, expired or malformed. */
export function uploadOfTemporaryToken(
  secret: string,
  token: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): { pathId: string; realmId: number } | null {
  try {
    const payload = jwt.verify(token, signingKey(secret), {
      algorithms: ['HS256'],
      audience: AUDIENCE,
      clockTimestamp: nowSeconds,
    }) as { p?: unknown; r?: unknown };
    return typeof payload.p === 'string' && typeof payload.r === 'number'
      ? { pathId: payload.p, realmId: payload.r }
      : null;
  } catch {
    return null;
  }
}
