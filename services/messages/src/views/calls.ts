import { optional, param, required, type AuthedContext } from '@teamchat/core';
import type { MessagesDeps } from '../deps';
import { bigBlueButtonUrl } from '../lib/video-calls';

/** GET /calls/bigbluebutton/create */
export async function createBigBlueButtonCall({ deps, params }: AuthedContext<MessagesDeps>) {
  const parsed = params.parse({
    meeting_name: required(param.string()),
    voice_only: optional(param.bool(), false),
  });
  return { url: bigBlueButtonUrl(deps.config, parsed.meeting_name, parsed.voice_only) };
}
