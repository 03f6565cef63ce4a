// Parameter types of the channel endpoints beyond @teamchat/core's.
import { JsonableError, LIST_LIMITS, param, v, type ParamType } from '@teamchat/core';
import { groupSettingUpdate, groupSettingValue } from './group-settings';

/** A value clients send either JSON-encoded or as plain text (python-zulip-api sends strings as they are). */
function jsonOrText(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export const TOPICS_POLICIES = ['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only'] as const;

export const topicsPolicyParam: ParamType<string> = {
  decode(raw, varName) {
    const value = jsonOrText(raw);
    if (typeof value !== 'string' || !(TOPICS_POLICIES as readonly string[]).includes(value))
      throw new JsonableError(`Invalid ${varName}`);
    return value;
  },
};

/**
 * message_retention_days: a positive number of days, "realm_default" (null: the
 * organisation's setting) or "unlimited" (-1; "forever" before feature level 91).
 */
export const retentionDaysParam: ParamType<number | null> = {
  decode(raw, varName) {
    const value = jsonOrText(raw);
    if (value === 'realm_default') return null;
    if (value === 'unlimited' || value === 'forever') return -1;
    if (typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= 2 ** 31 - 1) return value;
    throw new JsonableError(`Bad value for '${varName}': ${typeof value === 'string' ? value : raw}`, {
      code: 'REQUEST_VARIABLE_INVALID',
    });
  },
};

/** include_subscribers: true, false or "partial" (feature level 412). */
export const includeSubscribersParam: ParamType<boolean | 'partial'> = {
  decode(raw, varName) {
    const value = jsonOrText(raw);
    if (value === true || value === false || value === 'partial') return value;
    throw new JsonableError(`Invalid ${varName}`);
  },
};

export const groupSettingValueParam = param.json(groupSettingValue);
export const groupSettingUpdateParam = param.json(groupSettingUpdate);

/** principals: all user ids or all emails. */
const principalsLimit = { maxLength: LIST_LIMITS.principalsPerRequest };
export const principalsParam = param.json<(string | number)[]>(
  v.union(v.list(v.id(), principalsLimit), v.list(v.str(), principalsLimit)),
);
