// GET /: Zulip's web app (zerver/views/home.py). A user's page embeds register's answer under the
// web app's arguments, made by the event tier's own POST /register (one code path, so the page's
// state is never a copy; docs/web-app.md); an organisation open to spectators gets the app without
// state (it registers itself), anyone else the login page.
import type { IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { callServiceRaw, JsonText, JsonableError, RESPONDED, type ViewContext, type ViewResult } from '@teamchat/core';
import { allowsSpectators } from '@teamchat/domain';
import type { WebDeps } from '../deps';
import { cspNonce } from '../lib/csp';
import { defaultPageParams, HOME_REGISTER_PARAMS, homePageParams, LOGIN_PAGE } from '../lib/page-params';
import { sessionCsrfToken } from '../lib/session';
import { StateDataIntoPage } from '../lib/state-data';
import { csrfInput, escapeHtml, pageHeaders, sendPage } from '../lib/html';
import type { ZulipWebApp } from '../lib/web-app';
import { INSTALL_HINT } from '../lib/zulip-web-dir';

/** The installed app, or Zulip's 500 wording with how to install it. */
export function installedWebApp(deps: WebDeps): ZulipWebApp {
  if (!deps.webApp) throw new JsonableError(INSTALL_HINT, { status: 503 });
  return deps.webApp;
}

/** Django's redirect_to_login: the login page, with where to come back to. */
function loginRedirect(path: string): string {
  return `${LOGIN_PAGE}?next=${encodeURIComponent(path).replace(/%2F/g, '/')}`;
}

export async function homePage(ctx: ViewContext<WebDeps>): Promise<ViewResult> {
  const { deps, req, res, requester } = ctx;
  const webApp = installedWebApp(deps);
  const realm = await deps.db.realm.findUnique({ where: { id: requester?.realmId ?? ctx.realmId } });
  if (!realm) throw new JsonableError('Invalid subdomain', { status: 404 });

  let pageParams;
  let answer: IncomingMessage | null = null;
  let requestLanguage = 'en';
  if (requester) {
    const [register, user] = await Promise.all([
      callServiceRaw(deps.config.EVENTS_URL, deps.env.INTERNAL_JWT_SECRET, {
        method: 'POST',
        path: '/api/v1/register',
        actingAs: requester,
        params: HOME_REGISTER_PARAMS,
        requestId: ctx.requestId || undefined,
      }),
      deps.db.userProfile.findUnique({ where: { id: requester.userId }, select: { default_language: true } }),
    ]);
    requestLanguage = user?.default_language ?? 'en';
    answer = register;
    pageParams = homePageParams({ stateData: new JsonText(STATE_DATA_MARK), furthestReadTime: null });
  } else if (await allowsSpectators(deps.db, realm, deps.env.WEB_PUBLIC_STREAMS_ENABLED)) {
    pageParams = homePageParams({
      stateData: null,
      furthestReadTime: Date.now() / 1000,
      realmRenderedDescription: realm.description ? `<p>${escapeHtml(realm.description)}</p>` : '',
    });
  } else {
    res.redirect(302, loginRedirect(req.path));
    return RESPONDED;
  }

  const nonce = cspNonce();
  const html = webApp.render('zerver/app/index.html', {
    LANGUAGE_CODE: requestLanguage,
    user_profile: requester ? { realm: { name: realm.name } } : null,
    realm_name: realm.name,
    csp_nonce: nonce,
    csrf_input: csrfInput(sessionCsrfToken(req)),
    default_page_params: defaultPageParams(requestLanguage),
    page_params: pageParams,
    color_scheme: null,
    enable_gravatar: false,
    is_firefox_android: /Firefox/.test(req.get('user-agent') ?? '') && /Android/.test(req.get('user-agent') ?? ''),
    allow_search_engine_indexing: false,
    PAGE_METADATA_URL: '',
  });
  if (!answer) {
    sendPage(res, html, nonce);
    return RESPONDED;
  }
  // The page streams out as register's answer streams in (chunked: its length is known at the end).
  const at = html.indexOf(STATE_DATA_MARK);
  res.writeHead(200, pageHeaders(nonce));
  await pipeline(
    answer,
    new StateDataIntoPage(Buffer.from(html.slice(0, at)), Buffer.from(html.slice(at + STATE_DATA_MARK.length))),
    res,
  );
  return RESPONDED;
}

/** Where register's answer goes in the rendered page (see StateDataIntoPage). */
const STATE_DATA_MARK = '@@state_data@@';
