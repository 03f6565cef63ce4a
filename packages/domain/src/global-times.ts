// Global times in messages: <time:…> (Zulip's Timestamp pattern). Zulip reads the text with
// dateutil's parser, then as a Unix timestamp; this reads the forms people and Zulip's own
// composer write: ISO 8601 (what the composer's time picker inserts), Unix seconds, and dates
// such as "Jun 5th 2017, 10:30PM" or "31 Dec 2017 5:30 am IST". Anything else renders as
// Zulip's "Invalid time format" error, as unreadable text does in Zulip.

/** Zulip's common_timezones: abbreviations people write, with their offsets in seconds. */
const TIMEZONE_OFFSETS: Record<string, number> = {
  SST: -39600,
  HST: -36000,
  AKST: -32400,
  HDT: -32400,
  AKDT: -28800,
  PST: -28800,
  MST: -25200,
  PDT: -25200,
  CST: -21600,
  MDT: -21600,
  CDT: -18000,
  EST: -18000,
  AST: -14400,
  EDT: -14400,
  NST: -12600,
  ADT: -10800,
  NDT: -9000,
  GMT: 0,
  UTC: 0,
  WET: 0,
  Z: 0,
  BST: 3600,
  CET: 3600,
  MET: 3600,
  WAT: 3600,
  WEST: 3600,
  CAT: 7200,
  CEST: 7200,
  EET: 7200,
  MEST: 7200,
  SAST: 7200,
  EAT: 10800,
  EEST: 10800,
  IDT: 10800,
  MSK: 10800,
  PKT: 18000,
  IST: 19800,
  WIB: 25200,
  AWST: 28800,
  HKT: 28800,
  WITA: 28800,
  JST: 32400,
  KST: 32400,
  WIT: 32400,
  ACST: 34200,
  AEST: 36000,
  ChST: 36000,
  ACDT: 37800,
  AEDT: 39600,
  NZST: 43200,
  NZDT: 46800,
};

const MONTH_NAMES = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
/** A month's full name, its first three letters, or "sept", with or without a dot. */
function monthOf(word: string): number {
  const name = word.toLowerCase().replace(/\.$/, '');
  if (name === 'sept') return 8;
  return MONTH_NAMES.findIndex((month) => name === month || name === month.slice(0, 3));
}
const WEEKDAYS = /^(mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?$/i;
/** Words dateutil skips between the parts of a date. */
const FILLER = new Set(['at', 'on', 'and', 'of', 't']);
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
function utc(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}

// Python's datetime reaches from year 1 to year 9999.
const MIN_TIME = utc(1, 0, 1);
const MAX_TIME = utc(9999, 11, 31, 23, 59, 59, 999);

function validDate(year: number, month: number, day: number): boolean {
  return month >= 0 && month < 12 && day >= 1 && new Date(utc(year, month, day)).getUTCDate() === day;
}

/** Milliseconds since the epoch of an ISO 8601 time, or null (bad fields, offset of a day or more). */
function parseIso(match: RegExpExecArray): number | null {
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction = '', zone] = match;
  if (!validDate(Number(year), Number(month) - 1, Number(day))) return null;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return null;
  let offset = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    offset = (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || 0)) * 60;
    if (offset >= 86_400) return null;
    if (zone[0] === '-') offset = -offset;
  }
  const ms = Number(fraction.padEnd(3, '0').slice(0, 3));
  return (
    utc(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second), ms) - offset * 1000
  );
}

/** Milliseconds since the epoch of a written date ("Jun 5th 2017, 10:30PM"), or null. */
function parseWritten(text: string, now: number): number | null {
  let year: number | undefined;
  let month: number | undefined;
  let day: number | undefined;
  let time: { hour: number; minute: number; second: number } | undefined;
  let meridiem: 'am' | 'pm' | undefined;
  let offset: number | undefined;
  let fields = 0;
  for (const word of text.split(/[\s,;]+/).filter(Boolean)) {
    const lower = word.toLowerCase();
    const clock = /^(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]\.?m\.?)?$/i.exec(word);
    const number = /^(\d{1,4})(st|nd|rd|th)?$/i.exec(word);
    const monthIndex = monthOf(word);
    if (clock && time === undefined) {
      time = { hour: Number(clock[1]), minute: Number(clock[2]), second: Number(clock[3] ?? 0) };
      if (clock[4]) meridiem = clock[4][0].toLowerCase() === 'a' ? 'am' : 'pm';
    } else if (/^[ap]\.?m\.?$/i.test(word) && time !== undefined && meridiem === undefined) {
      meridiem = lower[0] === 'a' ? 'am' : 'pm';
    } else if (number && number[1].length === 4 && !number[2] && year === undefined) {
      year = Number(number[1]);
    } else if (number && number[1].length <= 2 && day === undefined) {
      day = Number(number[1]);
    } else if (monthIndex >= 0 && month === undefined) {
      month = monthIndex;
    } else if (word in TIMEZONE_OFFSETS && offset === undefined) {
      offset = TIMEZONE_OFFSETS[word];
    } else if (WEEKDAYS.test(word) || FILLER.has(lower)) {
      continue;
    } else {
      return null;
    }
    fields++;
  }
  if (fields === 0 || (day === undefined && month === undefined && year === undefined && time === undefined))
    return null;
  // Like dateutil, what is not written is today's (UTC) date, at midnight.
  const today = new Date(now);
  year ??= today.getUTCFullYear();
  month ??= today.getUTCMonth();
  day ??= today.getUTCDate();
  if (!validDate(year, month, day)) return null;
  let hour = time?.hour ?? 0;
  if (meridiem) {
    if (hour < 1 || hour > 12) return null;
    hour = (hour % 12) + (meridiem === 'pm' ? 12 : 0);
  }
  if (hour > 23 || (time && (time.minute > 59 || time.second > 59))) return null;
  return utc(year, month, day, hour, time?.minute ?? 0, time?.second ?? 0) - (offset ?? 0) * 1000;
}

/** The UTC instant `text` names, as Zulip's datetime attribute (ISO 8601, Z), or null when unreadable. */
export function globalTimeDatetime(text: string, now = Date.now()): string | null {
  const trimmed = text.trim();
  let time: number | null;
  const iso = ISO.exec(trimmed);
  if (iso) time = parseIso(iso);
  else if (/^[+-]?\d+(\.\d+)?$/.test(trimmed)) time = Number(trimmed) * 1000;
  else time = parseWritten(trimmed, now);
  if (time === null || !Number.isFinite(time) || time < MIN_TIME || time > MAX_TIME) return null;
  const date = new Date(Math.round(time));
  const year = date.getUTCFullYear().toString().padStart(4, '0');
  const rest = date.toISOString().slice(-20, -5); // -MM-DDTHH:MM:SS
  const ms = date.getUTCMilliseconds();
  return `${year}${rest}${ms ? `.${String(ms).padStart(3, '0')}000` : ''}Z`;
}
