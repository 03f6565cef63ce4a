// Narrows of event queues: which message events a queue registered with a `narrow` receives
// (Zulip's zerver/lib/narrow_predicate.py). Only the operators Zulip supports for events are
// accepted; matching works on the message dict of a `message` event and the user's flags.
//
// A narrow arrives in either form Zulip accepts at /register: the legacy list of
// [operator, operand] pairs, or the modern list of {operator, operand, negated} objects.

import { InvalidArgumentError, JsonableError, type Validator } from '@teamchat/core';

export interface EventNarrowTerm {
  operator: string;
  /** A channel or sender may be named by id (number) or by name/email (string). */
  operand: string | number;
  negated?: boolean;
}

/** "stream" is the legacy name of "channel". */
const CHANNEL_OPERATORS = ['channel', 'stream'];
const SUPPORTED_OPERATORS = [...CHANNEL_OPERATORS, 'topic', 'sender', 'is'];
const UNSUPPORTED_IS_OPERANDS = ['followed'];
/** Zulip's prefix of resolved topics. */
export const RESOLVED_TOPIC_PREFIX = '✔ ';

/**
 * Whether a topic change only marks the topic resolved or unresolved (Zulip's topic_resolved /
 * topic_unresolved, with Python's lstrip of the prefix's characters): such a change notifies
 * as (un)resolving and does not count as a move.
 */
export function resolveChange(before: string, after: string): 'resolved' | 'unresolved' | null {
  const unmarked = (topic: string) => topic.replace(/^[✔ ]+/u, '');
  const marked = (topic: string) => topic.startsWith(RESOLVED_TOPIC_PREFIX);
  if (marked(after) && !marked(before) && unmarked(after) === before) return 'resolved';
  if (marked(before) && !marked(after) && unmarked(before) === after) return 'unresolved';
  return null;
}

function fail(msg: string): never {
  throw new InvalidArgumentError(msg);
}

/** Validates a `narrow` parameter (either form) and returns it in the object form. */
export const eventNarrow: Validator<EventNarrowTerm[]> = (value, varName) => {
  if (!Array.isArray(value)) return fail(`${varName} is not a list`);
  return value.map((element, index) => narrowTerm(element, `${varName}[${index}]`));
};

function narrowTerm(value: unknown, varName: string): EventNarrowTerm {
  if (Array.isArray(value)) {
    if (value.length !== 2) return fail(`${varName} should have exactly 2 items`);
    value.forEach((item, i) => {
      if (typeof item !== 'string') fail(`${varName}[${i}] is not a string`);
    });
    return { operator: value[0] as string, operand: value[1] as string };
  }
  if (typeof value !== 'object' || value === null) return fail(`${varName} is not a dict`);
  const term = value as Record<string, unknown>;
  for (const key of Object.keys(term)) {
    if (!['operator', 'operand', 'negated'].includes(key)) fail(`Argument "${key}" at ${varName} is unexpected`);
  }
  if (!('operator' in term)) fail(`${varName} is missing the 'operator' key`);
  if (!('operand' in term)) fail(`${varName} is missing the 'operand' key`);
  if (typeof term.operator !== 'string') fail(`${varName}["operator"] is not a string`);
  const operand = term.operand;
  if (typeof operand !== 'string' && !(typeof operand === 'number' && Number.isInteger(operand))) {
    fail(`${varName}["operand"] is not a string or an integer`);
  }
  if (term.negated !== undefined && typeof term.negated !== 'boolean') fail(`${varName}["negated"] is not a boolean`);
  return { operator: term.operator as string, operand: operand as string | number, negated: term.negated === true };
}

/** Refuses narrows the event system cannot apply (Zulip's check_narrow_for_events). */
export function checkNarrowForEvents(narrow: EventNarrowTerm[]): void {
  for (const term of narrow) {
    if (!SUPPORTED_OPERATORS.includes(term.operator))
      throw new JsonableError(`Operator ${term.operator} not supported.`);
    if (term.operator === 'is' && UNSUPPORTED_IS_OPERANDS.includes(String(term.operand))) {
      throw new JsonableError(`Operand ${term.operand} not supported.`);
    }
  }
}

/** The fields of a message dict a narrow looks at. */
export interface NarrowableMessage {
  type: string;
  stream_id?: number;
  display_recipient?: unknown;
  subject?: string;
  topic?: string;
  sender_id?: number;
  sender_email?: string;
}

function topicOf(message: NarrowableMessage): string {
  return message.subject ?? message.topic ?? '';
}

function satisfies(term: EventNarrowTerm, message: NarrowableMessage, flags: readonly string[]): boolean {
  const { operator, operand } = term;
  if (CHANNEL_OPERATORS.includes(operator)) {
    if (message.type !== 'stream') return false;
    if (typeof operand === 'number') return message.stream_id === operand;
    return (
      typeof message.display_recipient === 'string' && operand.toLowerCase() === message.display_recipient.toLowerCase()
    );
  }
  if (operator === 'topic') {
    if (message.type !== 'stream') return false;
    const topic = topicOf(message).toLowerCase();
    const wanted = String(operand).toLowerCase();
    // Zulip's rule: the whole topic, or one of its words.
    return wanted === topic || topic.split(/\s+/).includes(wanted);
  }
  if (operator === 'sender') {
    if (typeof operand === 'number') return message.sender_id === operand;
    return operand.toLowerCase() === (message.sender_email ?? '').toLowerCase();
  }
  if (operator === 'is') {
    switch (operand) {
      case 'dm':
      case 'private':
        return message.type === 'private';
      case 'starred':
        return flags.includes('starred');
      case 'unread':
        return !flags.includes('read');
      case 'alerted':
      case 'mentioned':
        return flags.includes('mentioned');
      case 'resolved':
        return message.type === 'stream' && topicOf(message).startsWith(RESOLVED_TOPIC_PREFIX);
      default:
        return true;
    }
  }
  return true;
}

/** Whether a message event (its message dict and the recipient's flags) belongs to the narrow. */
export function narrowMatchesMessage(
  narrow: readonly EventNarrowTerm[],
  message: NarrowableMessage,
  flags: readonly string[],
): boolean {
  return narrow.every((term) => satisfies(term, message, flags) !== (term.negated === true));
}
