// Validators for decoded values (JSON or plain strings), producing Zulip's error texts
// (zerver/lib/typed_endpoint.py ERROR_TEMPLATES). A validator gets the value and the
// variable's display name (e.g. `narrow[0]["operand"]`) and returns the typed value or throws.

import { InvalidArgumentError } from './errors';

export type Validator<T> = (value: unknown, varName: string) => T;
export type Infer<V> = V extends Validator<infer T> ? T : never;

const fail = (msg: string): never => {
  throw new InvalidArgumentError(msg);
};

export interface IntOptions {
  min?: number;
  max?: number;
}

/**
 * An integer (not a float, not a numeric string) that JSON carries exactly. Not bounded
 * further by default (some are millisecond times): a parameter that names a row or is stored in
 * an integer column needs `id()` or an explicit `max`, or PostgreSQL refuses it with a 500.
 */
export function int(options: IntOptions = {}): Validator<number> {
  return (value, varName) => {
    if (typeof value !== 'number' || !Number.isInteger(value)) return fail(`${varName} is not an integer`);
    if (!Number.isSafeInteger(value)) return fail(`${varName} is too large`);
    if (options.min !== undefined && value < options.min) return fail(`${varName} is too small`);
    if (options.max !== undefined && value > options.max) return fail(`${varName} is too large`);
    return value;
  };
}

/** The largest value of an `integer` (int32) column, which every id column here is. */
export const MAX_DATABASE_ID = 2 ** 31 - 1;

/**
 * Whether `value` fits an id column. A larger one can name nothing, and PostgreSQL refuses it
 * as a parameter of an integer column ("value out of range"), so it must not get that far.
 */
export const isDatabaseId = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_DATABASE_ID;

/**
 * Database ids: 32-bit integers. 0 and below name nothing (no sequence hands them out); 0 is
 * let through to get the endpoint's own "no such thing" answer, as Zulip gives.
 */
export const id = (): Validator<number> => int({ min: 0, max: MAX_DATABASE_ID });

/**
 * Unix times (seconds) every store here holds: years 1 to 9999. Prisma writes a Date as
 * four-digit-year ISO text, which PostgreSQL reads, and Python's datetime (Zulip's) stops there too;
 * a JavaScript Date goes further, so a later time would pass here and fail in the database.
 */
export const MIN_TIMESTAMP_SECONDS = -62_135_596_800; // 0001-01-01T00:00:00Z
export const MAX_TIMESTAMP_SECONDS = 253_402_300_799; // 9999-12-31T23:59:59Z

/**
 * A Unix time in seconds within MIN/MAX_TIMESTAMP_SECONDS: "X is too large" / "is too small"
 * past them. `fractional`: a float is accepted too (a draft's timestamp); otherwise an integer.
 */
export function timestamp(options: { fractional?: boolean } = {}): Validator<number> {
  const integer = int({ min: MIN_TIMESTAMP_SECONDS, max: MAX_TIMESTAMP_SECONDS });
  return (value, varName) => {
    if (!options.fractional || typeof value !== 'number' || Number.isInteger(value) || !Number.isFinite(value))
      return integer(value, varName);
    if (value > MAX_TIMESTAMP_SECONDS) return fail(`${varName} is too large`);
    if (value < MIN_TIMESTAMP_SECONDS) return fail(`${varName} is too small`);
    return value;
  };
}

export function bool(): Validator<boolean> {
  return (value, varName) => (typeof value === 'boolean' ? value : fail(`${varName} is not a boolean`));
}

export interface StrOptions {
  maxLength?: number;
  /** Strip surrounding whitespace before the checks. */
  strip?: boolean;
  /** Refuse "" (after stripping): "X cannot be blank". */
  nonEmpty?: boolean;
  /** Refuse NUL characters, which PostgreSQL text cannot store. */
  allowNullBytes?: boolean;
}

/** An unpaired UTF-16 surrogate: text no UTF-8 store (PostgreSQL) can hold. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function str(options: StrOptions = {}): Validator<string> {
  return (value, varName) => {
    if (typeof value !== 'string') return fail(`${varName} is not a string`);
    if (LONE_SURROGATE.test(value)) return fail(`${varName} is not valid Unicode`);
    const text = options.strip ? value.trim() : value;
    if (!options.allowNullBytes && text.includes('\u0000')) return fail(`${varName} contains NULL (0x00) characters.`);
    if (options.nonEmpty && text.length === 0) return fail(`${varName} cannot be blank`);
    if (options.maxLength !== undefined && [...text].length > options.maxLength) {
      return fail(`${varName} is too long (limit: ${options.maxLength} characters)`);
    }
    return text;
  };
}

/** One of a fixed set of values: "Invalid X" otherwise. */
export function literal<const T extends readonly (string | number | boolean | null)[]>(
  ...allowed: T
): Validator<T[number]> {
  return (value, varName) => (allowed.includes(value as T[number]) ? (value as T[number]) : fail(`Invalid ${varName}`));
}

export interface ListOptions {
  /** Most items accepted; checked before any item is, so a huge list costs no more than its decoding. */
  maxLength?: number;
  /** The refusal of a longer list, where Zulip words it its own way. */
  tooLong?: (varName: string, maxLength: number) => string;
}

export function list<T>(item: Validator<T>, options: ListOptions = {}): Validator<T[]> {
  return (value, varName) => {
    if (!Array.isArray(value)) return fail(`${varName} is not a list`);
    const { maxLength } = options;
    if (maxLength !== undefined && value.length > maxLength) {
      return fail(options.tooLong?.(varName, maxLength) ?? `${varName} is too long (limit: ${maxLength} items)`);
    }
    return value.map((element, index) => item(element, `${varName}[${index}]`));
  };
}

type Shape = Record<string, Validator<unknown>>;
type ObjectOf<Required extends Shape, Optional extends Shape> = { [K in keyof Required]: Infer<Required[K]> } & {
  [K in keyof Optional]?: Infer<Optional[K]>;
};

/** A JSON object with known keys; unknown keys are refused as Zulip's pydantic models do. */
export function object<Required extends Shape, Optional extends Shape = Record<never, never>>(
  required: Required,
  optional?: Optional,
  options: { allowExtra?: boolean } = {},
): Validator<ObjectOf<Required, Optional>> {
  return (value, varName) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail(`${varName} is not a dict`);
    const input = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, validate] of Object.entries(required)) {
      if (!(key in input)) return fail(`${varName} is missing the '${key}' key`);
      out[key] = validate(input[key], `${varName}[${JSON.stringify(key)}]`);
    }
    for (const [key, validate] of Object.entries(optional ?? {})) {
      if (key in input && input[key] !== undefined)
        out[key] = validate(input[key], `${varName}[${JSON.stringify(key)}]`);
    }
    if (!options.allowExtra) {
      for (const key of Object.keys(input)) {
        if (!(key in required) && !(optional && key in optional)) {
          return fail(`Argument "${key}" at ${varName} is unexpected`);
        }
      }
    }
    return out as ObjectOf<Required, Optional>;
  };
}

/** A string-keyed dict whose values all pass `item`. */
export function dict<T>(item: Validator<T>): Validator<Record<string, T>> {
  return (value, varName) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail(`${varName} is not a dict`);
    const out: Record<string, T> = {};
    for (const [key, element] of Object.entries(value)) out[key] = item(element, `${varName}[${JSON.stringify(key)}]`);
    return out;
  };
}

export function nullable<T>(inner: Validator<T>): Validator<T | null> {
  return (value, varName) => (value === null ? null : inner(value, varName));
}

/**
 * The first alternative that accepts the value wins; if none does, the error of the
 * alternative matching the value's JSON type is reported (else the first one's).
 */
export function union<A, B>(a: Validator<A>, b: Validator<B>): Validator<A | B>;
export function union<A, B, C>(a: Validator<A>, b: Validator<B>, c: Validator<C>): Validator<A | B | C>;
export function union(...alternatives: Validator<unknown>[]): Validator<unknown> {
  return (value, varName) => {
    let firstError: unknown;
    for (const alternative of alternatives) {
      try {
        return alternative(value, varName);
      } catch (error) {
        firstError ??= error;
      }
    }
    throw firstError;
  };
}

/** Applies `check` to an already-validated value (for cross-field or domain rules). */
export function refine<T>(inner: Validator<T>, check: (value: T, varName: string) => void): Validator<T> {
  return (value, varName) => {
    const result = inner(value, varName);
    check(result, varName);
    return result;
  };
}
