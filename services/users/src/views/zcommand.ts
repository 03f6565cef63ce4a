import { param, required, type AuthedContext } from '@teamchat/core';
import { doZcommand } from '../actions/zcommand';
import type { UsersDeps } from '../deps';

/** POST /zcommand (Zulip's zcommand_backend): the web app's /dark, /light, /fluid-width, ... */
export async function runZcommand({ deps, params, requester }: AuthedContext<UsersDeps>) {
  const { command } = params.parse({ command: required(param.string()) });
  return doZcommand(deps, requester.userId, command);
}
