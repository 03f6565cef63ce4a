// Fields and operations the interface spec defines after Zulip 10.2 (so absent from
// zulip.yaml), declared explicitly: validation stays on for everything else. Each entry names
// the spec section or feature level that introduces it.
import { declareNewerEventType, declareNewerFields, declareNewerOperation } from './openapi';

void declareNewerFields;
void declareNewerOperation;

// ---- users service ---------------------------------------------------------------------------

/** Checks a success body has exactly `keys` besides result/msg/ignored_parameters_unsupported. */
function exactKeys(body: Record<string, unknown>, keys: string[]): string | null {
  if (body.result !== 'success' || body.msg !== '') return 'not a success envelope';
  const extra = Object.keys(body).filter(
    (key) => !['result', 'msg', 'ignored_parameters_unsupported', ...keys].includes(key),
  );
  if (extra.length) return `unexpected keys ${extra.join(', ')}`;
  const missing = keys.filter((key) => !(key in body));
  return missing.length ? `missing keys ${missing.join(', ')}` : null;
}

function navigationViewProblem(view: unknown): string | null {
  const v = view as Record<string, unknown>;
  if (typeof v !== 'object' || v === null) return 'navigation view is not an object';
  if (typeof v.fragment !== 'string' || typeof v.is_pinned !== 'boolean')
    return 'navigation view needs fragment and is_pinned';
  if (!(v.name === null || typeof v.name === 'string')) return 'navigation view name must be a string or null';
  return Object.keys(v).every((key) => ['fragment', 'is_pinned', 'name'].includes(key))
    ? null
    : 'navigation view has unexpected keys';
}

// Navigation views: spec "Navigation view" / "Add a navigation view", feature level 390.
declareNewerOperation('GET', /^\/navigation_views$/, (body) => {
  const problem = exactKeys(body, ['navigation_views']);
  if (problem) return problem;
  if (!Array.isArray(body.navigation_views)) return 'navigation_views is not an array';
  return body.navigation_views.map(navigationViewProblem).find((p) => p !== null) ?? null;
});
for (const method of ['POST', 'PATCH', 'DELETE']) {
  declareNewerOperation(method, method === 'POST' ? /^\/navigation_views$/ : /^\/navigation_views\/.+$/, (body) =>
    exactKeys(body, []),
  );
}
// Spec "Remove a push registration token": the neutral path (Zulip's android_gcm_reg_id).
declareNewerOperation('DELETE', /^\/users\/me\/mobile_push_reg_id$/, (body) => exactKeys(body, []));
declareNewerOperation('POST', /^\/users\/me\/mobile_push_reg_id$/, (body) => exactKeys(body, []));
// Spec "Create a reusable invitation link": the link must work, so accepting it is an operation.
const acceptedInvite = (body: Record<string, unknown>) =>
  exactKeys(body, ['user_id', 'email', 'api_key']) ??
  (typeof body.user_id === 'number' && typeof body.email === 'string' && typeof body.api_key === 'string'
    ? null
    : 'user_id, email, api_key have the wrong types');
declareNewerOperation('POST', /^\/invites\/multiuse\/accept$/, acceptedInvite);
declareNewerOperation('POST', /^\/join\/[^/]+\/?$/, acceptedInvite);
// The GET /realm/filters: Zulip's legacy list, [pattern, url_template, id] per linkifier.
declareNewerOperation('GET', /^\/realm\/filters$/, (body) => {
  const problem = exactKeys(body, ['filters']);
  if (problem) return problem;
  const filters = body.filters as unknown[];
  const wellFormed =
    Array.isArray(filters) &&
    filters.every(
      (f) =>
        Array.isArray(f) &&
        f.length === 3 &&
        typeof f[0] === 'string' &&
        typeof f[1] === 'string' &&
        typeof f[2] === 'number',
    );
  return wellFormed ? null : 'filters must be [pattern, url_template, id] triples';
});
// Avatars, the organisation's icon and logos: Zulip 10.2 serves them (the web app uploads with
// them), zulip.yaml leaves them out. {avatar_url} and {icon_url} as Zulip answers.
const urlAnswer = (key: string) => (body: Record<string, unknown>) =>
  exactKeys(body, [key]) ?? (typeof body[key] === 'string' ? null : `${key} is not a string`);
for (const method of ['POST', 'DELETE']) {
  declareNewerOperation(method, /^\/users\/me\/avatar$/, urlAnswer('avatar_url'));
  declareNewerOperation(method, /^\/realm\/icon$/, urlAnswer('icon_url'));
  declareNewerOperation(method, /^\/realm\/logo$/, (body) => exactKeys(body, []));
}

// ---- channels (spec: Update a channel; Events → subscription; Versioning)
// folder_id (feature level 389), topics_policy (392), channel-level delete permissions (407)
// on every channel object; partial_subscribers (412) where include_subscribers="partial".
const NEWER_CHANNEL_FIELDS = [
  'folder_id',
  'topics_policy',
  'can_delete_any_message_group',
  'can_delete_own_message_group',
];
const channelFields = (prefix: string) => NEWER_CHANNEL_FIELDS.map((field) => `${prefix}.${field}`);
declareNewerFields('GET /streams', channelFields('streams.*'));
declareNewerFields('GET /streams/{stream_id}', channelFields('stream'));
declareNewerFields('GET /users/me/subscriptions', [
  ...channelFields('subscriptions.*'),
  'subscriptions.*.partial_subscribers',
]);
declareNewerFields('POST /register', [
  ...channelFields('subscriptions.*'),
  ...channelFields('unsubscribed.*'),
  ...channelFields('never_subscribed.*'),
  ...channelFields('streams.*'),
  'subscriptions.*.partial_subscribers',
  'unsubscribed.*.partial_subscribers',
  'never_subscribed.*.partial_subscribers',
  // channel folders (feature level 389)
  'channel_folders',
]);
declareNewerFields('GET /events', [
  ...channelFields('events.*.streams.*'),
  ...channelFields('events.*.subscriptions.*'),
]);
// Local echo (spec "Send a message": queue_id, local_id): the message event reaching the sender's
// queue carries local_message_id. Zulip has always sent it; zulip.yaml's message event omits it.
declareNewerFields('GET /events', ['events.*.local_message_id']);

// Channel folders (feature level 389): create, list, update.
const isChannelFolder = (folder: unknown): boolean => {
  const f = folder as Record<string, unknown>;
  return (
    typeof f?.id === 'number' &&
    typeof f.name === 'string' &&
    typeof f.description === 'string' &&
    typeof f.rendered_description === 'string' &&
    (f.creator_id === null || typeof f.creator_id === 'number') &&
    typeof f.date_created === 'number' &&
    typeof f.is_archived === 'boolean' &&
    typeof f.order === 'number'
  );
};
const successEnvelope = (body: Record<string, unknown>) => body.result === 'success' && body.msg === '';
declareNewerOperation('POST', /^\/channel_folders(\/create)?$/, (body) =>
  successEnvelope(body) && typeof body.channel_folder_id === 'number' ? null : 'expected {channel_folder_id: integer}',
);
declareNewerOperation('GET', /^\/channel_folders$/, (body) =>
  successEnvelope(body) && Array.isArray(body.channel_folders) && body.channel_folders.every(isChannelFolder)
    ? null
    : 'expected {channel_folders: [channel folder]}',
);
declareNewerOperation('PATCH', /^\/channel_folders\/\d+$/, (body) =>
  successEnvelope(body) ? null : 'expected the success envelope',
);
// The channel_folder event (feature level 389; spec "Events"): add {channel_folder}, update {channel_folder_id, data}.
declareNewerEventType('channel_folder', (event) => {
  const keys = Object.keys(event)
    .filter((key) => !['id', 'type', 'op'].includes(key))
    .sort()
    .join(',');
  if (event.op === 'add')
    return keys === 'channel_folder' && isChannelFolder(event.channel_folder) ? null : `add carries ${keys}`;
  if (event.op === 'update') {
    return keys === 'channel_folder_id,data' &&
      typeof event.channel_folder_id === 'number' &&
      typeof event.data === 'object' &&
      event.data !== null
      ? null
      : `update carries ${keys}`;
  }
  return `unknown op ${String(event.op)}`;
});

// Event tier (services/events): the realm's topics policy is sent with the server limits
// (interface spec "Queue registration"; feature level 392).
declareNewerFields('POST /register', ['realm_topics_policy']);
// Setting one's own custom profile field values: Zulip's PATCH/DELETE /users/me/profile_data,
// which zulip.yaml 10.2 does not document (the issue asks for it so profile_data is real).
declareNewerOperation('PATCH', /^\/users\/me\/profile_data$/, (body) => exactKeys(body, []));
declareNewerOperation('DELETE', /^\/users\/me\/profile_data$/, (body) => exactKeys(body, []));
// Bot storage: Zulip 10.2 serves it (zproject/urls.py's bot_storage, zerver/views/storage.py),
// zulip.yaml leaves it out. GET answers {storage: {key: value}} with string values.
declareNewerOperation('GET', /^\/bot_storage$/, (body) => {
  const problem = exactKeys(body, ['storage']);
  if (problem) return problem;
  const storage = body.storage as Record<string, unknown>;
  if (typeof storage !== 'object' || storage === null || Array.isArray(storage)) return 'storage is not an object';
  return Object.values(storage).every((value) => typeof value === 'string') ? null : 'storage has a non-string value';
});
declareNewerOperation('PUT', /^\/bot_storage$/, (body) => exactKeys(body, []));
declareNewerOperation('DELETE', /^\/bot_storage$/, (body) => exactKeys(body, []));
// Register keys of the users domain newer than 10.2: navigation_views (feature level 390) and
// the realm permissions governing topics_policy (392) and channel delete policies (407).
declareNewerFields('POST /register', [
  'navigation_views',
  'realm_can_set_topics_policy_group',
  'realm_can_set_delete_message_policy_group',
]);
// The navigation_view event (feature level 390): add {navigation_view}, update {fragment, data}, remove {fragment}.
declareNewerEventType('navigation_view', (event) => {
  const keys = Object.keys(event)
    .filter((key) => !['id', 'type', 'op'].includes(key))
    .sort()
    .join(',');
  if (event.op === 'add')
    return keys === 'navigation_view' ? navigationViewProblem(event.navigation_view) : `add carries ${keys}`;
  if (event.op === 'update')
    return keys === 'data,fragment' && typeof event.fragment === 'string' ? null : `update carries ${keys}`;
  if (event.op === 'remove')
    return keys === 'fragment' && typeof event.fragment === 'string' ? null : `remove carries ${keys}`;
  return `unknown op ${String(event.op)}`;
});

// ---- messages service: widgets and zcommands, which Zulip 10.2 serves but zulip.yaml leaves out
// (the web app's POST /json/submessage and /json/zcommand; Zulip's process_submessage and
// zcommand_backend).
declareNewerOperation('POST', /^\/submessage$/, (body) => exactKeys(body, []));
declareNewerOperation('POST', /^\/zcommand$/, (body) => {
  if (body.result !== 'success' || typeof body.msg !== 'string') return 'not a success envelope';
  const extra = Object.keys(body).filter((key) => !['result', 'msg', 'ignored_parameters_unsupported'].includes(key));
  return extra.length ? `unexpected keys ${extra.join(', ')}` : null;
});

// Organisation administration, which zulip.yaml 10.2 does not document: PATCH /realm (Zulip's
// update_realm answers with the settings it changed), the allowed email domains (Zulip's
// /realm/domains) and marking an onboarding step seen (Zulip's /users/me/onboarding_steps).
declareNewerOperation('PATCH', /^\/realm$/, (body) => (successEnvelope(body) ? null : 'expected the success envelope'));
const isRealmDomain = (domain: unknown): boolean => {
  const d = domain as Record<string, unknown>;
  return (
    typeof d?.domain === 'string' &&
    typeof d.allow_subdomains === 'boolean' &&
    Object.keys(d).every((key) => ['domain', 'allow_subdomains'].includes(key))
  );
};
declareNewerOperation(
  'GET',
  /^\/realm\/domains$/,
  (body) =>
    exactKeys(body, ['domains']) ??
    (Array.isArray(body.domains) && body.domains.every(isRealmDomain) ? null : 'expected {domains: [realm domain]}'),
);
declareNewerOperation('POST', /^\/realm\/domains$/, (body) => {
  const problem = exactKeys(body, ['new_domain']);
  if (problem) return problem;
  const created = body.new_domain as unknown[];
  return Array.isArray(created) && typeof created[0] === 'number' && typeof created[1] === 'string'
    ? null
    : 'expected {new_domain: [id, domain]}';
});
declareNewerOperation('PATCH', /^\/realm\/domains\/[^/]+$/, (body) => exactKeys(body, []));
declareNewerOperation('DELETE', /^\/realm\/domains\/[^/]+$/, (body) => exactKeys(body, []));
declareNewerOperation('POST', /^\/users\/me\/onboarding_steps$/, (body) => exactKeys(body, []));
// realm/update_dict carries the realm permissions newer than 10.2 (feature levels 392 and 407).
declareNewerFields('GET /events', [
  'events.*.data.can_set_topics_policy_group',
  'events.*.data.can_set_delete_message_policy_group',
]);

// ---- users service: bots, which Zulip 10.2 serves but zulip.yaml leaves out (the web app's
// /json/bots; Zulip's add_bot_backend, get_bots_backend, patch_bot_backend,
// regenerate_bot_api_key, deactivate_bot_backend).
const hasTypes = (value: Record<string, unknown>, types: Record<string, string>): string | null => {
  for (const [key, type] of Object.entries(types)) {
    const actual = value[key] === null ? 'null' : typeof value[key];
    if (!type.split('|').includes(actual)) return `${key} is ${actual}, not ${type}`;
  }
  return null;
};
const botDefaults = {
  avatar_url: 'string',
  default_sending_stream: 'string|null',
  default_events_register_stream: 'string|null',
  default_all_public_streams: 'boolean',
};
declareNewerOperation(
  'POST',
  /^\/bots$/,
  (body) =>
    exactKeys(body, ['user_id', 'api_key', ...Object.keys(botDefaults)]) ??
    hasTypes(body, { user_id: 'number', api_key: 'string', ...botDefaults }),
);
declareNewerOperation('GET', /^\/bots$/, (body) => {
  const problem = exactKeys(body, ['bots']);
  if (problem) return problem;
  if (!Array.isArray(body.bots)) return 'bots is not an array';
  const fields = { username: 'string', full_name: 'string', api_key: 'string', ...botDefaults };
  for (const bot of body.bots as Record<string, unknown>[]) {
    const extra = Object.keys(bot).filter((key) => !(key in fields));
    if (extra.length) return `unexpected bot keys ${extra.join(', ')}`;
    const wrong = hasTypes(bot, fields);
    if (wrong) return wrong;
  }
  return null;
});
declareNewerOperation('PATCH', /^\/bots\/\d+$/, (body) => {
  const keys = ['full_name', 'service_interface', 'service_payload_url', 'config_data', ...Object.keys(botDefaults)];
  const problem = exactKeys(body, 'bot_owner' in body ? [...keys, 'bot_owner'] : keys);
  if (problem) return problem;
  return hasTypes(body, {
    full_name: 'string',
    service_interface: 'number',
    service_payload_url: 'string|null',
    config_data: 'object|null',
    ...botDefaults,
    ...('bot_owner' in body ? { bot_owner: 'string' } : {}),
  });
});
declareNewerOperation('DELETE', /^\/bots\/\d+$/, (body) => exactKeys(body, []));
declareNewerOperation(
  'POST',
  /^\/bots\/\d+\/api_key\/regenerate$/,
  (body) => exactKeys(body, ['api_key']) ?? hasTypes(body, { api_key: 'string' }),
);
