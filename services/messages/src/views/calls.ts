import {
  optional,
  param,
  required,
  RESPONDED,
  type AuthedContext,
  type ViewContext,
  type ViewResult,
} from '@teamchat/core';
import type { MessagesDeps } from '../deps';
import { BIG_BLUE_BUTTON_JOIN_PATH, bigBlueButtonJoinUrl, bigBlueButtonUrl } from '../lib/video-calls';

/** GET /calls/bigbluebutton/create */
export async function createBigBlueButtonCall({ deps, params, requester }: AuthedContext<MessagesDeps>) {
  const parsed = params.parse({
    meeting_name: required(param.string()),
    voice_only: optional(param.bool(), false),
  });
  return { url: bigBlueButtonUrl(deps.config, parsed.meeting_name, parsed.voice_only, requester.userId) };
}

/**
 * GET /calls/bigbluebutton/join (a page: the browser's session): to the BigBlueButton meeting
 * the signed link names; a logged-out browser first logs in and comes back (Zulip's
 * zulip_login_required).
 */
export async function joinBigBlueButtonCall({
  deps,
  params,
  requester,
  req,
  res,
}: ViewContext<MessagesDeps>): Promise<ViewResult> {
  const never = { 'Cache-Control': 'max-age=0, no-cache, no-store, must-revalidate, private' };
  if (!requester) {
    const query = req.originalUrl.indexOf('?');
    const back = BIG_BLUE_BUTTON_JOIN_PATH + (query >= 0 ? req.originalUrl.slice(query) : '');
    res.writeHead(302, { Location: `/login/?next=${encodeURIComponent(back)}`, ...never });
    res.end();
    return RESPONDED;
  }
  const { bigbluebutton } = params.parse({ bigbluebutton: required(param.string()) });
  const location = await bigBlueButtonJoinUrl(deps, bigbluebutton, requester.userId);
  res.writeHead(302, { Location: location, ...never });
  res.end();
  return RESPONDED;
}
