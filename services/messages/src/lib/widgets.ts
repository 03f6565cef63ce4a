// Widgets (Zulip's zerver/lib/widget.py and the poll/todo validators of zerver/lib/validator.py):
// a message whose content starts with /poll or /todo becomes a widget when it is sent, its
// first submessage carrying the state the command sets up; the web app then draws the widget
// from the message's submessages, and each vote, option or task is one more submessage.

import { JsonableError } from '@teamchat/core';
import type { TxClient } from '@teamchat/db';

export type WidgetType = 'poll' | 'todo';

const WIDGET_TYPES: readonly string[] = ['poll', 'todo'];

/** The widget submessage's content: `{widget_type, extra_data}`. */
export interface WidgetContent {
  widget_type: WidgetType;
  extra_data: PollExtraData | TodoExtraData;
}

/** A widget a bot sends as a message's widget_content (a zform: buttons with canned replies). */
export interface BotWidgetContent {
  widget_type: string;
  extra_data: Record<string, unknown>;
}

export interface PollExtraData {
  question: string;
  options: string[];
}

export interface TodoExtraData {
  task_list_title: string;
  tasks: { task: string; desc: string }[];
}

// Python's str.splitlines boundaries (the file, group and record separators among them).
// eslint-disable-next-line no-control-regex
const LINE_BREAK = /\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/;
// A list item's marker ("- ", "* "), which the command's lines may use.
const LIST_MARKER = /^\s*[-*]?\s*/;

/** The first line is the title (a poll's question); the others, stripped of list markers, items. */
function titleAndItems(text: string): { title: string; items: string[] } {
  const lines = text.split(LINE_BREAK);
  const title = lines.length > 0 && lines[0] !== '' ? lines.shift()!.trim() : '';
  const items = lines.map((line) => line.trim().replace(LIST_MARKER, '')).filter((item) => item.length > 0);
  return { title, items };
}

/**
 * The widget a message's content sets up (Zulip's get_widget_data), or null: its first word is
 * /poll or /todo; `/poll Question` then one option per line; `/todo Title` then one task per
 * line, a task's description after its first ": ".
 */
export function widgetOfContent(content: string): WidgetContent | null {
  const command = content.split(/\s/, 1)[0];
  if (!command.startsWith('/')) return null;
  const widgetType = command.slice(1);
  if (!WIDGET_TYPES.includes(widgetType)) return null;
  const { title, items } = titleAndItems(content.slice(command.length));
  if (widgetType === 'poll') return { widget_type: 'poll', extra_data: { question: title, options: items } };
  const tasks = items.map((item) => {
    const separator = item.indexOf(': ');
    return separator === -1
      ? { task: item.trim(), desc: '' }
      : { task: item.slice(0, separator).trim(), desc: item.slice(separator + 2).trim() };
  });
  return { widget_type: 'todo', extra_data: { task_list_title: title, tasks } };
}

/** The widget type of a message, from its first widget submessage (Zulip's get_widget_type). */
export async function widgetTypeOf(db: Pick<TxClient, 'subMessage'>, messageId: number): Promise<string | null> {
  const submessage = await db.subMessage.findFirst({
    where: { message_id: messageId, msg_type: 'widget' },
    orderBy: { id: 'asc' },
    select: { content: true },
  });
  if (!submessage) return null;
  try {
    const data = JSON.parse(submessage.content) as unknown;
    const widgetType = (data as { widget_type?: unknown } | null)?.widget_type;
    return typeof widgetType === 'string' ? widgetType : null;
  } catch {
    return null;
  }
}

/** Whether the message has submessages, as every widget has (Zulip's is_widget_message). */
export async function isWidgetMessage(db: Pick<TxClient, 'subMessage'>, messageId: number): Promise<boolean> {
  return (await db.subMessage.findFirst({ where: { message_id: messageId }, select: { id: true } })) !== null;
}

// ---------------------------------------------------------------- validating submessages

// Zulip's client widgets cap option and task indexes at this (MAX_IDX).
const MAX_IDX = 1000;

/** Throws the reason a value is wrong, in Zulip's words (its validator.py). */
type Check = (name: string, value: unknown) => void;

const isDict = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const checkString: Check = (name, value) => {
  if (typeof value !== 'string') throw new JsonableError(`${name} is not a string`);
};

// Python's bool is an int, so Zulip's check_int takes true and false (as 1 and 0).
const intValue = (name: string, value: unknown): number => {
  if (typeof value === 'boolean') return Number(value);
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new JsonableError(`${name} is not an integer`);
  return value;
};

const checkIntIn =
  (allowed: number[]): Check =>
  (name, value) => {
    if (!allowed.includes(intValue(name, value))) throw new JsonableError(`Invalid ${name}`);
  };

const checkIntRange =
  (low: number, high: number): Check =>
  (name, value) => {
    const n = intValue(name, value);
    if (n < low) throw new JsonableError(`${name} is too small`);
    if (n > high) throw new JsonableError(`${name} is too large`);
  };

const checkBool: Check = (name, value) => {
  if (typeof value !== 'boolean') throw new JsonableError(`${name} is not a boolean`);
};

/** Zulip's check_dict (`only`: check_dict_only, no other keys). */
function checkDict(name: string, value: unknown, keys: [string, Check][], only = false): Record<string, unknown> {
  if (!isDict(value)) throw new JsonableError(`${name} is not a dict`);
  for (const [key, check] of keys) {
    if (!Object.hasOwn(value, key)) throw new JsonableError(`${key} key is missing from ${name}`);
    check(`${name}["${key}"]`, value[key]);
  }
  if (only) {
    const listed = new Set(keys.map(([key]) => key));
    const unexpected = Object.keys(value).filter((key) => !listed.has(key));
    if (unexpected.length > 0) throw new JsonableError(`Unexpected arguments: ${unexpected.join(', ')}`);
  }
  return value;
}

/** A poll's vote, new option or (its author's) new question (Zulip's validate_poll_data). */
export function checkPollData(data: unknown, isWidgetAuthor: boolean): void {
  const name = 'poll data';
  const { type } = checkDict(name, data, [['type', checkString]]);
  if (type === 'vote') {
    checkDict(
      name,
      data,
      [
        ['type', checkString],
        ['key', checkString],
        ['vote', checkIntIn([1, -1])],
      ],
      true,
    );
  } else if (type === 'question') {
    if (!isWidgetAuthor) throw new JsonableError("You can't edit a question unless you are the author.");
    checkDict(
      name,
      data,
      [
        ['type', checkString],
        ['question', checkString],
      ],
      true,
    );
  } else if (type === 'new_option') {
    checkDict(
      name,
      data,
      [
        ['type', checkString],
        ['option', checkString],
        ['idx', checkIntRange(0, MAX_IDX)],
      ],
      true,
    );
  } else {
    throw new JsonableError(`Unknown type for poll data: ${String(type)}`);
  }
}

/** A to-do list's new task, (un)checked task or (its author's) new title (Zulip's validate_todo_data). */
export function checkTodoData(data: unknown, isWidgetAuthor: boolean): void {
  const name = 'todo data';
  const { type } = checkDict(name, data, [['type', checkString]]);
  if (type === 'new_task') {
    checkDict(
      name,
      data,
      [
        ['type', checkString],
        ['key', checkIntRange(0, MAX_IDX)],
        ['task', checkString],
        ['desc', checkString],
        ['completed', checkBool],
      ],
      true,
    );
  } else if (type === 'strike') {
    checkDict(
      name,
      data,
      [
        ['type', checkString],
        ['key', checkString],
      ],
      true,
    );
  } else if (type === 'new_task_list_title') {
    if (!isWidgetAuthor) throw new JsonableError("You can't edit the task list title unless you are the author.");
    checkDict(
      name,
      data,
      [
        ['type', checkString],
        ['title', checkString],
      ],
      true,
    );
  } else {
    throw new JsonableError(`Unknown type for todo data: ${String(type)}`);
  }
}

const checkList =
  (item: Check): Check =>
  (name, value) => {
    if (!Array.isArray(value)) throw new JsonableError(`${name} is not a list`);
    value.forEach((element, index) => item(`${name}[${index}]`, element));
  };

const checkZformChoice: Check = (name, value) => {
  checkDict(name, value, [
    ['short_name', checkString],
    ['long_name', checkString],
    ['reply', checkString],
  ]);
};

/**
 * A message's widget_content (Zulip's check_widget_content): only zforms of choices are
 * accepted from clients; a poll or to-do list comes from the message's content.
 */
export function checkWidgetContent(text: string): BotWidgetContent {
  let widgetContent: unknown;
  try {
    widgetContent = JSON.parse(text);
  } catch {
    throw new JsonableError('Widgets: API programmer sent invalid JSON content');
  }
  const refuse = (reason: string) => new JsonableError(`Widgets: ${reason}`);
  if (!isDict(widgetContent)) throw refuse('widget_content is not a dict');
  if (!Object.hasOwn(widgetContent, 'widget_type')) throw refuse('widget_type is not in widget_content');
  if (!Object.hasOwn(widgetContent, 'extra_data')) throw refuse('extra_data is not in widget_content');
  const { widget_type: widgetType, extra_data: extraData } = widgetContent;
  if (!isDict(extraData)) throw refuse('extra_data is not a dict');
  if (widgetType !== 'zform') throw refuse(`unknown widget type: ${String(widgetType)}`);
  if (!Object.hasOwn(extraData, 'type')) throw refuse('zform is missing type field');
  if (extraData.type !== 'choices') throw refuse(`unknown zform type: ${String(extraData.type)}`);
  try {
    checkDict('extra_data', extraData, [
      ['type', checkString],
      ['heading', checkString],
      ['choices', checkList(checkZformChoice)],
    ]);
  } catch (error) {
    throw error instanceof JsonableError ? refuse(error.message) : error;
  }
  return { widget_type: widgetType, extra_data: extraData };
}
