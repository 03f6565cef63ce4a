// BigBlueButton calls (Zulip's zerver/views/video_calls.py): GET /calls/bigbluebutton/create
// hands out a join link naming a new meeting, its settings and its creator (the moderator),
// signed so no user can alter it to reach another meeting of the same BigBlueButton server;
// GET /calls/bigbluebutton/join (a logged-in browser) creates the meeting on the server and
// sends the browser on to it, each BigBlueButton API call carrying the API's checksum
// (https://docs.bigbluebutton.org/dev/api.html#usage).

import crypto from 'node:crypto';
import { JsonableError } from '@teamchat/core';
import type { Db } from '@teamchat/db';
import type { MessagesConfig } from '../env';

export const BIG_BLUE_BUTTON_JOIN_PATH = '/calls/bigbluebutton/join';

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
  const [data, signature, ...rest] = signed.split(':');
  if (!data || !signature || rest.length > 0) return null;
  const expected = crypto.createHmac('sha256', signingKey(secret)).update(data).digest('base64url');
  if (expected.length !== signature.length || !crypto.timingSafeEqual(Buffer.from(expected), Buffer.from(signature)))
    return null;
  try {
    const payload: unknown = JSON.parse(Buffer.from(data, 'base64url').toString('utf8'));
    return payload && typeof payload === 'object' && !Array.isArray(payload)
      ? (payload as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

interface BigBlueButtonServer {
  url: string;
  secret: string;
}

function configuredServer(config: MessagesConfig): BigBlueButtonServer | null {
  return config.BIG_BLUE_BUTTON_URL && config.BIG_BLUE_BUTTON_SECRET
    ? { url: config.BIG_BLUE_BUTTON_URL, secret: config.BIG_BLUE_BUTTON_SECRET }
    : null;
}

export function bigBlueButtonUrl(
  config: MessagesConfig,
  meetingName: string,
  voiceOnly: boolean,
  creatorId: number,
): string {
  const server = configuredServer(config);
  if (!server) throw new JsonableError('Big Blue Button is not configured.');
  const signed = signJoinPayload(server.secret, {
    meeting_id: `zulip-${crypto.randomInt(100_000_000_000, 1_000_000_000_000)}`,
    name: meetingName,
    lock_settings_disable_cam: voiceOnly,
    moderator: creatorId,
  });
  return `${BIG_BLUE_BUTTON_JOIN_PATH}?bigbluebutton=${signed}`;
}

/**
 * Python's urlencode(..., quote_via=quote): every character but A-Z a-z 0-9 _ . - ~ escaped
 * (encodeURIComponent leaves ! ' ( ) * as they are), booleans as Python prints them. The
 * checksum is over exactly this text, so it must be the same text Zulip sends.
 */
function pythonQuery(params: [string, string | boolean][]): string {
  const quote = (value: string) =>
    encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return params
    .map(([name, value]) => `${quote(name)}=${quote(typeof value === 'boolean' ? (value ? 'True' : 'False') : value)}`)
    .join('&');
}

/** A BigBlueButton API call's URL: its query and the checksum, sha256(call name + query + secret). */
function apiCallUrl(server: BigBlueButtonServer, call: 'create' | 'join', query: string): string {
  const checksum = crypto.createHash('sha256').update(`${call}${query}${server.secret}`).digest('hex');
  return `${server.url}api/${call}${server.url.includes('?') ? '&' : '?'}${query}&checksum=${checksum}`;
}

/** The text of a top-level element of BigBlueButton's XML answer (none: undefined). */
function xmlField(xml: string, name: string): string | undefined {
  return new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1]?.trim();
}

const UNEXPECTED = 'BigBlueButton server returned an unexpected error.';

/**
 * Zulip's join_bigbluebutton: checks the link's signature, creates its meeting on the server (a
 * meeting that exists already is answered as created), and answers where to send the browser:
 * the server's join URL for this user, moderator if they created the call.
 */
export async function bigBlueButtonJoinUrl(
  deps: { config: MessagesConfig; db: Db },
  signed: string,
  userId: number,
): Promise<string> {
  const { config } = deps;
  const server = configuredServer(config);
  if (!server) throw new JsonableError('BigBlueButton is not configured.');
  const data = verifyJoinPayload(server.secret, signed);
  if (!data || typeof data.meeting_id !== 'string' || typeof data.name !== 'string')
    throw new JsonableError('Invalid signature.');
  const createQuery = pythonQuery([
    ['meetingID', data.meeting_id],
    ['name', data.name],
    ['lockSettingsDisableCam', data.lock_settings_disable_cam === true],
  ]);
  let answer: string;
  try {
    const response = await fetch(apiCallUrl(server, 'create', createQuery), { signal: AbortSignal.timeout(15_000) });
    if (!response.ok) throw new Error(`BigBlueButton answered ${response.status}`);
    answer = await response.text();
  } catch {
    throw new JsonableError('Error connecting to the BigBlueButton server.');
  }
  if (xmlField(answer, 'messageKey') === 'checksumError')
    throw new JsonableError('Error authenticating to the BigBlueButton server.');
  const createTime = xmlField(answer, 'createTime');
  if (xmlField(answer, 'returncode') !== 'SUCCESS' || createTime === undefined) throw new JsonableError(UNEXPECTED);
  const user = await deps.db.userProfile.findUniqueOrThrow({ where: { id: userId }, select: { full_name: true } });
  const joinQuery = pythonQuery([
    ['meetingID', data.meeting_id],
    // Only the creator may turn a voice-only call into a video call.
    ['role', data.moderator === userId ? 'MODERATOR' : 'VIEWER'],
    ['fullName', user.full_name],
    // Ties the join URL to this creation of the meeting (BigBlueButton's create docs).
    ['createTime', createTime],
  ]);
  return apiCallUrl(server, 'join', joinQuery);
}
