// Zulip's Jinja2 templates, rendered from the operator's installed folder (ZULIP_WEB_DIR/templates)
// with nunjucks. Nunjucks reads Jinja2's syntax; what it lacks is Python: the templates call
// str.endswith and str.format, dict.copy and dict.update, Jinja's `tojson` filter and its i18n
// `{% trans %}` blocks. Those are given here as small objects with Python's method names, so the
// templates run as they are. English only: Zulip's translations are not installed.
import nunjucks from 'nunjucks';
import { JsonText } from '@teamchat/core';

/** A template string ("Hello {name}") with Python's str.format for keyword arguments. */
export class PythonStr {
  constructor(readonly text: string) {}

  format(...args: unknown[]): string {
    const keywords = (args.at(-1) ?? {}) as Record<string, unknown>;
    return this.text.replace(/\{(\w+)\}/g, (whole, name: string) =>
      name in keywords ? String(keywords[name] ?? '') : whole,
    );
  }

  endswith(suffix: string): boolean {
    return this.text.endsWith(suffix);
  }

  toString(): string {
    return this.text;
  }
}

/** A dict with the methods Zulip's base.html calls (copy, update); its values may be JsonText. */
export class PythonDict {
  constructor(readonly entries: Map<string, unknown> = new Map()) {}

  static of(values: Record<string, unknown>): PythonDict {
    return new PythonDict(new Map(Object.entries(values)));
  }

  copy(): PythonDict {
    return new PythonDict(new Map(this.entries));
  }

  update(other: unknown): void {
    const pairs = other instanceof PythonDict ? other.entries : Object.entries((other ?? {}) as object);
    for (const [key, value] of pairs) this.entries.set(key, value);
  }
}

/**
 * JSON of a template value, JsonText written as it is (register's answer: megabytes not parsed
 * again), PythonDict as an object.
 */
export function jsonOf(value: unknown): string {
  if (value instanceof JsonText) return value.text;
  if (value instanceof PythonDict) {
    const parts: string[] = [];
    for (const [key, item] of value.entries) {
      if (item !== undefined) parts.push(`${JSON.stringify(key)}:${jsonOf(item)}`);
    }
    return `{${parts.join(',')}}`;
  }
  if (value instanceof PythonStr) return JSON.stringify(value.text);
  return JSON.stringify(value ?? null);
}

const HTML_UNSAFE_IN_JSON = /[<>&']/g;
const JSON_ESCAPES: Record<string, string> = { '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', "'": '\\u0027' };

/**
 * Jinja's `tojson` (htmlsafe_json_dumps): JSON whose <, >, & and ' are \u escapes, so it can sit
 * in a single-quoted attribute or a script element and still parse to the same value. One pass
 * of one regular expression over the text.
 */
export function htmlSafeJson(value: unknown): string {
  return jsonOf(value).replace(HTML_UNSAFE_IN_JSON, (character) => JSON_ESCAPES[character]);
}

/** The part of nunjucks' (undocumented) parser API an extension's parse uses. */
interface TemplateParser {
  nextToken(): { value: string };
  parseSignature(throwErrors: null, noParens: boolean): unknown;
  advanceAfterBlockEnd(name?: string): void;
  parseUntilBlocks(...names: string[]): unknown;
}
interface TemplateNodes {
  CallExtension: new (extension: object, method: string, args: unknown, contentArgs: unknown[]) => unknown;
}

/** `{% trans %}...{% endtrans %}`: the English text as it is (arguments, if any, are ignored). */
class TransExtension implements nunjucks.Extension {
  tags = ['trans'];

  parse(parser: TemplateParser, nodes: TemplateNodes) {
    const token = parser.nextToken();
    const args = parser.parseSignature(null, true);
    parser.advanceAfterBlockEnd(token.value);
    const body = parser.parseUntilBlocks('endtrans');
    parser.advanceAfterBlockEnd();
    return new nodes.CallExtension(this, 'run', args, [body]);
  }

  run(_context: unknown, ...rest: unknown[]) {
    const body = rest.at(-1) as () => string;
    return new nunjucks.runtime.SafeString(body());
  }
}

/** The URL of a file under Zulip's static folder, as Zulip's `static()` gives it. */
export function staticUrl(file: string): string {
  return `/static/${file}`;
}

/** A nunjucks environment over `templatesDir` with the Python Zulip's templates expect. */
export function createTemplateEnvironment(
  templatesDir: string,
  webpackEntry: (entry: string) => string[],
): nunjucks.Environment {
  const environment = new nunjucks.Environment(new nunjucks.FileSystemLoader(templatesDir), {
    autoescape: true,
    throwOnUndefined: false,
  });
  environment.addExtension('trans', new TransExtension());
  environment.addFilter('tojson', (value: unknown) => new nunjucks.runtime.SafeString(htmlSafeJson(value)));
  const gettext = (text: string) => new PythonStr(text);
  environment.addGlobal('_', gettext);
  environment.addGlobal('gettext', gettext);
  environment.addGlobal('static', staticUrl);
  environment.addGlobal('webpack_entry', (entry: string) => webpackEntry(entry).map((url) => new PythonStr(url)));
  return environment;
}
