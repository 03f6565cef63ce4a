// /api/v1/tus and /api/v1/tus/{upload}: resumable uploads, handed to @tus/server (lib/tus.ts)
// with the authenticated requester attached for its hooks.
import { MethodNotAllowedError, RESPONDED, type AuthedContext, type ViewResult } from '@teamchat/core';
import type { UploadsDeps } from '../deps';
import { handleTusRequest, setTusRequester } from '../lib/tus';

export async function handleTus(ctx: AuthedContext<UploadsDeps>): Promise<ViewResult> {
  // Express routes HEAD to GET routes: HEAD (the upload's offset) is tus; GET (downloading
  // an unfinished upload around the access checks) is not offered.
  if (ctx.req.method === 'GET') throw new MethodNotAllowedError(['HEAD', 'PATCH', 'DELETE']);
  setTusRequester(ctx.req, ctx.requester);
  await handleTusRequest(ctx.deps.tus, ctx.req, ctx.res);
  return RESPONDED;
}
