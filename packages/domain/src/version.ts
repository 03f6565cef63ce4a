// What this server says it is. Clients gate features on the feature level; we implement
// the interface spec, which describes the API up to feature level 416.
export const ZULIP_VERSION = '11.0-teamchat';
export const ZULIP_MERGE_BASE = '11.0-teamchat';
export const ZULIP_FEATURE_LEVEL = 416;
