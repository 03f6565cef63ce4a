// BigBlueButton calls (Zulip's get_bigbluebutton_url): a join link naming a new meeting, its
// settings and the creator's moderator password, signed so no user can alter it to reach
// another meeting of the same BigBlueButton server.

import crypto from 'node:crypto';
import { JsonableError } from '@teamchat/core';
import type { MessagesConfig } from '../env';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 (Python's b32encode), padding included. */
function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out.padEnd(Math.ceil(out.length / 8) * 8, '=');
}

/** The key the join links are signed with, derived from the server's BigBlueButton secret. */
function signingKey(secret: string): Buffer {
  return crypto.createHash('sha256').update(`teamchat-bigbluebutton-join:${secret}`).digest();
}

/** Django's Signer.sign_object shape: base64url(compact JSON) ":" base64url(HMAC). */
export function signJoinPayload(secret: string, payload: Record<string, unknown>): string {
  const data = Buffer.from(JSON.stringify(payload)).toString('base64url');
  const signature = crypto.createHmac('sha256', signingKey(secret)).update(data).digest('base64url');
  return `${data}:${signature}`;
}

/** The signed payload of a join link, or null if it was altered. */
export function verifyJoinPayload(secret: string, signed: string): Record<string, unknown> | null {
  const [data, signature] = signed.split(':');
  if (!data || !signature) return null;
  const expected = crypto.createHmac('sha256', signingKey(secret)).update(data).digest('base64url');
  if (expected.length !== signature.length || !crypto.timingSafeEqual(Buffer.from(expected), Buffer.from(signature)))
    return null;
  return JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as Record<string, unknown>;
}

export function bigBlueButtonUrl(config: MessagesConfig, meetingName: string, voiceOnly: boolean): string {
  if (!config.BIG_BLUE_BUTTON_URL || !config.BIG_BLUE_BUTTON_SECRET)
    throw new JsonableError('Big Blue Button is not configured.');
  const meetingId = `zulip-${crypto.randomInt(100_000_000_000, 1_000_000_000_000)}`;
  // 20 random bytes: a 32-character password.
  const moderator = base32(crypto.randomBytes(20));
  const signed = signJoinPayload(config.BIG_BLUE_BUTTON_SECRET, {
    meeting_id: meetingId,
    name: meetingName,
    lock_settings_disable_cam: voiceOnly,
    moderator,
  });
  return `/calls/bigbluebutton/join?bigbluebutton=${signed}`;
}
