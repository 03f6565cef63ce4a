// GET /: Zulip's web app (zerver/views/home.py). A user's page embeds register's answer under the
// web app's arguments, made by the event tier's own POST /register (one code path, so the page's
// state is never a copy; docs/web-app.md); an organisation open to spectators gets the app without
// state (it registers itself), anyone else the login page.
import type { IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream/promises';
import {
  callServiceRaw,
  cookieLanguage,
  EMBED_REGISTER_HEADER,
  EMBEDS_HEADER,
  JsonableError,
  JsonText,
  RESPONDED,
  STATE_DATA_MARK,
  StateDataIntoPage,
  type ViewContext,
  type ViewResult,
} from '@teamchat/core';
import { allowsSpectators } from '@teamchat/domain';
import type { WebDeps } from '../deps';
import { cspNonce } from '../lib/csp';
import { defaultPageParams, HOME_REGISTER_PARAMS, homePageParams, LOGIN_PAGE } from '../lib/page-params';
import { sessionCsrfToken } from '../lib/session';
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
  let requestLanguage: string;
  // Through the gateway, the gateway splices register's answer in (one hop of its megabytes, as
  // the API's register); called directly, this service does.
  const gatewayEmbeds = req.get(EMBEDS_HEADER) === 'register';
  if (requester) {
    const [register, user] = await Promise.all([
      gatewayEmbeds
        ? null
        : callServiceRaw(deps.config.EVENTS_URL, deps.env.INTERNAL_JWT_SECRET, {
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
    // Zulip's home.py: a spectator's language cookie, else the organisation's language.
    requestLanguage = cookieLanguage(req) ?? realm.default_language;
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
  const context = {
    LANGUAGE_CODE: requestLanguage,
    user_profile: requester ? { realm: { name: realm.name } } : null,
    realm_name: realm.name,
    default_page_params: defaultPageParams(requestLanguage),
    page_params: pageParams,
    color_scheme: null,
    enable_gravatar: false,
    is_firefox_android: /Firefox/.test(req.get('user-agent') ?? '') && /Android/.test(req.get('user-agent') ?? ''),
    allow_search_engine_indexing: false,
    PAGE_METADATA_URL: '',
  };
  // A user's page differs from the next one's only by what the key holds, the nonce and the CSRF
  // token (its state is register's); a spectator's holds the time.
  const cacheKey = requester
    ? JSON.stringify([realm.name, requestLanguage, context.is_firefox_android, answer === null])
    : null;
  const html = renderWithMarks(webApp, 'zerver/app/index.html', context, cacheKey)
    .replaceAll(NONCE_MARK, nonce)
    .replaceAll(CSRF_TOKEN_MARK, escapeHtml(sessionCsrfToken(req)));
  if (requester && gatewayEmbeds) {
    const body = Buffer.from(html);
    res.writeHead(200, {
      ...pageHeaders(nonce),
      'Content-Length': body.length,
      [EMBED_REGISTER_HEADER]: JSON.stringify(HOME_REGISTER_PARAMS),
    });
    res.end(body);
    return RESPONDED;
  }
  if (!answer) {
    sendPage(res, html, nonce);
    return RESPONDED;
  }
  // The page streams out as register's answer streams in (chunked: its length is known at the end).
  res.writeHead(200, pageHeaders(nonce));
  await pipeline(answer, StateDataIntoPage.around(Buffer.from(html)), res);
  return RESPONDED;
}

/** Where a page's nonce and CSRF token go (neither is changed by HTML escaping). */
const NONCE_MARK = '@@csp_nonce@@';
const CSRF_TOKEN_MARK = '@@csrf_token@@';
/** At most this many pages kept (a key per organisation name, language and browser kind). */
const RENDERED_PAGES_LIMIT = 256;
const renderedPages = new WeakMap<ZulipWebApp, Map<string, string>>();

/**
 * The template rendered with the nonce and CSRF token as marks, kept under `cacheKey` (null:
 * rendered each time). Rendering Zulip's index.html took 10-15 ms of the web service's CPU
 * per page, most of what a page costs it now that register's answer passes it by.
 */
function renderWithMarks(
  webApp: ZulipWebApp,
  template: string,
  context: Record<string, unknown>,
  cacheKey: string | null,
): string {
  let pages = renderedPages.get(webApp);
  if (!pages) renderedPages.set(webApp, (pages = new Map()));
  const kept = cacheKey === null ? undefined : pages.get(cacheKey);
  if (kept !== undefined) return kept;
  const html = webApp.render(template, { ...context, csp_nonce: NONCE_MARK, csrf_input: csrfInput(CSRF_TOKEN_MARK) });
  if (cacheKey !== null) {
    if (pages.size >= RENDERED_PAGES_LIMIT) pages.clear();
    pages.set(cacheKey, html);
  }
  return html;
}
