// The one parameter parser for the Zulip wire format.
//
// - Parameters come from the body (urlencoded, multipart or JSON) and from the query string,
//   for every method: zulip-js sends GET/PATCH/DELETE parameters in the query string,
//   python-zulip-api sends urlencoded bodies for PATCH and DELETE too. The body wins.
// - String parameters are taken as sent; every other type is JSON-encoded text in one field
//   (python-zulip-api json.dumps()es every non-string value), decoded here.
// - A repeated parameter counts once, with its last value (as Django's QueryDict does).
// - Parameters no parser asked for are reported in `ignored_parameters_unsupported`.

import type { Request } from 'express';
import { InvalidArgumentError, MissingArgumentError, ResourceNotFoundError } from './errors';
import * as v from './validators';
import type { Validator } from './validators';

/** How one parameter is read from its raw text. */
export interface ParamType<T> {
  decode(raw: string, varName: string): T;
}

const { LONE_SURROGATE } = v;

/** No real parameter nests deeper; deeper values would only strain every recursive walk after us. */
const MAX_JSON_DEPTH = 100;

export interface TextOptions {
  /**
   * Let NUL characters through, for a parameter whose action refuses them in Zulip's own words
   * ("Message must not contain null bytes"). PostgreSQL text cannot hold them: every other
   * string is refused here, before it can reach a query.
   */
  allowNullBytes?: boolean;
}

/**
 * Checks every string and key of a decoded JSON value without recursion (a value nested
 * thousands deep must not overflow the stack): "not valid Unicode" for a lone surrogate, "contains
 * NULL (0x00) characters." for a NUL (both named by their place, as `narrow[0]["operand"]`),
 * "not valid JSON" past MAX_JSON_DEPTH levels.
 */
function checkDecodedJson(value: unknown, varName: string, options: TextOptions): void {
  const pending: [unknown, number, string][] = [[value, 0, varName]];
  while (pending.length) {
    const [item, depth, name] = pending.pop()!;
    if (typeof item === 'string') {
      checkText(item, name, options);
    } else if (item && typeof item === 'object') {
      if (depth >= MAX_JSON_DEPTH) throw new InvalidArgumentError(`${varName} is not valid JSON`);
      // Pushed last to first, so the first bad string in the text is the one reported.
      if (Array.isArray(item)) {
        for (let index = item.length - 1; index >= 0; index--) {
          pending.push([item[index], depth + 1, `${name}[${index}]`]);
        }
      } else {
        const entries = Object.entries(item);
        for (const [key] of entries) checkText(key, name, options);
        for (const [key, child] of entries.reverse()) {
          pending.push([child, depth + 1, `${name}[${JSON.stringify(key)}]`]);
        }
      }
    }
  }
}

/** Text PostgreSQL can store: valid Unicode (a JSON "\udfff" escape is not), and no NUL unless allowed. */
function checkText(raw: string, varName: string, options: TextOptions): void {
  if (LONE_SURROGATE.test(raw)) throw new InvalidArgumentError(`${varName} is not valid Unicode`);
  if (!options.allowNullBytes && raw.includes('\u0000')) {
    throw new InvalidArgumentError(`${varName} contains NULL (0x00) characters.`);
  }
}

export const param = {
  /** Taken as sent, then checked. */
  string(options: v.StrOptions = {}): ParamType<string> {
    const check = v.str(options);
    return {
      decode: (raw, varName) => {
        checkText(raw, varName, { allowNullBytes: true });
        return check(raw, varName);
      },
    };
  },
  /** A string from a fixed set, taken as sent: "Invalid X" otherwise. */
  enumString<const T extends readonly string[]>(...allowed: T): ParamType<T[number]> {
    const check = v.literal(...allowed);
    return { decode: (raw, varName) => check(raw, varName) };
  },
  /** JSON-encoded text, decoded then checked by `validator`; its strings are checked as text first. */
  json<T>(validator: Validator<T>, options: TextOptions = {}): ParamType<T> {
    return {
      decode(raw, varName) {
        let decoded: unknown;
        try {
          decoded = JSON.parse(raw);
        } catch {
          throw new InvalidArgumentError(`${varName} is not valid JSON`);
        }
        checkDecodedJson(decoded, varName, options);
        return validator(decoded, varName);
      },
    };
  },
  int(options: v.IntOptions = {}): ParamType<number> {
    return param.json(v.int(options));
  },
  bool(): ParamType<boolean> {
    return param.json(v.bool());
  },
  /** A Unix time in seconds (an integer) that every store here holds (v.timestamp). */
  timestamp(): ParamType<number> {
    return param.json(v.timestamp());
  },
};

interface ParamSpec<T> {
  type: ParamType<T>;
  required: boolean;
  defaultValue?: T;
  /** Older names accepted for the same parameter (e.g. "subject" for "topic"). */
  aliases?: string[];
}

export function required<T>(type: ParamType<T>, options: { aliases?: string[] } = {}): ParamSpec<T> {
  return { type, required: true, aliases: options.aliases };
}

export function optional<T>(type: ParamType<T>): ParamSpec<T | undefined>;
export function optional<T>(type: ParamType<T>, defaultValue: T, options?: { aliases?: string[] }): ParamSpec<T>;
export function optional<T>(
  type: ParamType<T>,
  defaultValue?: T,
  options: { aliases?: string[] } = {},
): ParamSpec<T | undefined> {
  return { type, required: false, defaultValue, aliases: options.aliases };
}

type Specs = Record<string, ParamSpec<unknown>>;
export type Parsed<S extends Specs> = { [K in keyof S]: S[K] extends ParamSpec<infer T> ? T : never };

/** The raw parameters of one request, and which of them a parser has read. */
export class RequestParams {
  private readonly used = new Set<string>();

  constructor(readonly raw: ReadonlyMap<string, string>) {}

  static fromRequest(req: Request): RequestParams {
    const raw = new Map<string, string>();
    addAll(raw, req.query, false);
    addAll(raw, req.body, Boolean(req.is('application/json')));
    return new RequestParams(raw);
  }

  has(name: string): boolean {
    return this.raw.has(name);
  }

  /** Parses the parameters described by `specs`, throwing Zulip's errors. */
  parse<S extends Specs>(specs: S): Parsed<S> {
    const out: Record<string, unknown> = {};
    for (const [name, spec] of Object.entries(specs)) {
      const present = [name, ...(spec.aliases ?? [])].find((candidate) => this.raw.has(candidate));
      if (present === undefined) {
        if (spec.required) throw new MissingArgumentError(name);
        out[name] = spec.defaultValue;
        continue;
      }
      this.used.add(present);
      out[name] = spec.type.decode(this.raw.get(present)!, present);
    }
    return out as Parsed<S>;
  }

  /** Marks parameters as handled without parsing them (e.g. read by a library). */
  markUsed(...names: string[]): void {
    for (const name of names) this.used.add(name);
  }

  /** Parameters sent but never read, sorted: Zulip's `ignored_parameters_unsupported`. */
  ignored(): string[] {
    return [...this.raw.keys()].filter((name) => !this.used.has(name)).sort();
  }
}

/**
 * Form fields and query parameters are strings, and a repeated one arrives as an array of
 * strings: its last value counts. A JSON body carries typed values: re-encoded, they parse
 * like the form fields a Zulip client would have sent.
 */
function addAll(target: Map<string, string>, source: unknown, typedValues: boolean): void {
  if (!source || typeof source !== 'object' || Array.isArray(source)) return;
  for (const [name, value] of Object.entries(source as Record<string, unknown>)) {
    const single = !typedValues && Array.isArray(value) ? value[value.length - 1] : value;
    if (single === undefined) continue;
    if (typeof single === 'string') {
      target.set(name, single);
      continue;
    }
    try {
      target.set(name, JSON.stringify(single));
    } catch {
      // Nested too deep to re-encode (JSON.parse takes more depth than JSON.stringify).
      throw new InvalidArgumentError(`${name} is not valid JSON`);
    }
  }
}

/** A numeric path segment (Zulip's URL patterns only match digits: anything else is a 404). */
export function pathInt(req: Request, name: string): number {
  const raw = req.params[name];
  if (typeof raw !== 'string' || !/^[0-9]{1,10}$/.test(raw) || Number(raw) > 2 ** 31 - 1) {
    throw new ResourceNotFoundError();
  }
  return Number(raw);
}
