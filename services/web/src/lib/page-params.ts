// The page parameters of Zulip's home page (zerver/lib/home.py build_page_params_for_home_page_load,
// checked by the app with zod in web/src/base_page_params.ts), and the register call whose
// answer is their state_data.
import { JsonText, LANGUAGE_COOKIE_NAME } from '@teamchat/core';
import { WEB_APP_CLIENT_CAPABILITIES } from '@teamchat/domain';
import { PythonDict } from './templates';

/** Zulip's PRESENCE_HISTORY_LIMIT_DAYS_FOR_WEB_APP. */
export const PRESENCE_HISTORY_LIMIT_DAYS_FOR_WEB_APP = 365;

/** Where the app sends a browser whose session ended (Zulip's HOME_NOT_LOGGED_IN). */
export const LOGIN_PAGE = '/login/';

/** The register parameters of the home page (Zulip's do_events_register call in home.py). */
export const HOME_REGISTER_PARAMS = {
  apply_markdown: true,
  client_gravatar: true,
  slim_presence: true,
  // do_events_register's default, which the home view keeps (the API's register defaults to
  // false): the app's buddy list and channel settings show each channel's subscribers.
  include_subscribers: true,
  presence_history_limit_days: PRESENCE_HISTORY_LIMIT_DAYS_FOR_WEB_APP,
  include_streams: false,
  client_capabilities: WEB_APP_CLIENT_CAPABILITIES,
};

/** The languages the settings offer: English only, as no translation is installed. */
const LANGUAGE_LIST = [{ code: 'en', locale: 'en', name: 'English' }];

/** Every page's parameters (Zulip's default_page_params). */
export function defaultPageParams(requestLanguage: string): PythonDict {
  return PythonDict.of({ page_type: 'default', development_environment: false, request_language: requestLanguage });
}

/** The home page's own parameters (merged over the default ones by base.html). */
export function homePageParams(input: {
  /** Register's answer (or a mark the page replaces with it); null for a spectator. */
  stateData: JsonText | null;
  realmRenderedDescription?: string;
  furthestReadTime: number | null;
}): PythonDict {
  const spectator = input.stateData === null;
  return PythonDict.of({
    page_type: 'home',
    test_suite: false,
    insecure_desktop_app: false,
    login_page: LOGIN_PAGE,
    warn_no_email: false,
    corporate_enabled: false,
    language_list: LANGUAGE_LIST,
    furthest_read_time: input.furthestReadTime,
    embedded_bots_enabled: false,
    two_fa_enabled: false,
    apps_page_url: 'https://zulip.com/apps/',
    promote_sponsoring_zulip: false,
    show_webathena: false,
    two_fa_enabled_user: false,
    is_spectator: spectator,
    presence_history_limit_days_for_web_app: PRESENCE_HISTORY_LIMIT_DAYS_FOR_WEB_APP,
    no_event_queue: spectator,
    state_data: input.stateData,
    // English: the app's own strings, no catalogue.
    translation_data: {},
    ...(spectator
      ? { realm_rendered_description: input.realmRenderedDescription ?? '', language_cookie_name: LANGUAGE_COOKIE_NAME }
      : {}),
  });
}
