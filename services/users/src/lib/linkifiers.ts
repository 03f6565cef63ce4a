// Checking linkifiers as Zulip's RealmFilter.full_clean does: the pattern must compile (Zulip
// compiles with re2, so look-arounds and back-references are refused here too) and its named
// groups must be exactly the variables of the RFC 6570 URL template.

import { JsonableError } from '@teamchat/core';

/**
 * A re2-style pattern as a JavaScript RegExp: (?P<name>...) becomes (?<name>...). Without the
 * "u" flag, which would refuse escaped punctuation such as \# that re2 accepts.
 */
export function linkifierRegExp(pattern: string): RegExp {
  return new RegExp(pattern.replace(/\(\?P</g, '(?<'));
}

/** The operators re2 lacks, with re2's own wording. */
function re2Unsupported(pattern: string): string | null {
  const lookaround = /\(\?(<[=!]|[=!])/.exec(pattern);
  if (lookaround) return `invalid perl operator: ${lookaround[0]}`;
  const backReference = /\\([1-9]|k<)/.exec(pattern.replace(/\\\\/g, ''));
  if (backReference) return `invalid escape sequence: ${backReference[0]}`;
  return null;
}

/** The named groups of a pattern, or Zulip's "Bad regular expression" error. */
export function patternGroupNames(pattern: string): Set<string> {
  const unsupported = re2Unsupported(pattern);
  if (unsupported) throw new LinkifierError(`Bad regular expression: ${unsupported}`, '__all__');
  let regexp: RegExp;
  try {
    regexp = linkifierRegExp(pattern);
  } catch (error) {
    const detail = String((error as Error).message).replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '');
    throw new LinkifierError(`Bad regular expression: ${detail}`, '__all__');
  }
  // Every named group shows up in `groups` of a match of the empty alternative.
  const match = new RegExp(`${regexp.source}|`, regexp.flags).exec('');
  return new Set(Object.keys(match?.groups ?? {}));
}

const OPERATORS = new Set(['+', '#', '.', '/', ';', '?', '&']);
const VARNAME = /^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+(?:\.(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+)*$/;

/** The variable names of an RFC 6570 template, or null if it is not a valid template. */
export function templateVariables(template: string): Set<string> | null {
  const names = new Set<string>();
  let index = 0;
  while (index < template.length) {
    const character = template[index];
    if (character === '}') return null;
    if (character !== '{') {
      index++;
      continue;
    }
    const end = template.indexOf('}', index + 1);
    if (end < 0) return null;
    let expression = template.slice(index + 1, end);
    if (expression.includes('{')) return null;
    if (OPERATORS.has(expression[0])) expression = expression.slice(1);
    if (!expression) return null;
    for (const varspec of expression.split(',')) {
      const modifier = /(\*|:[1-9][0-9]{0,3})$/.exec(varspec);
      const name = modifier ? varspec.slice(0, -modifier[0].length) : varspec;
      if (!VARNAME.test(name)) return null;
      names.add(name);
    }
    index = end + 1;
  }
  return names;
}

/** A validation failure with the field it concerns (Zulip answers with {errors: {field: [msg]}}). */
export class LinkifierError extends JsonableError {
  constructor(msg: string, field: string) {
    super(msg, { data: { errors: { [field]: [msg] } } });
  }
}

/** Zulip's clean_fields + clean for a linkifier. */
export function checkLinkifier(pattern: string, urlTemplate: string): void {
  if (pattern === '') throw new LinkifierError('This field cannot be blank.', 'pattern');
  if (urlTemplate === '') throw new LinkifierError('This field cannot be blank.', 'url_template');
  const variables = templateVariables(urlTemplate);
  if (variables === null) throw new LinkifierError('Invalid URL template.', 'url_template');
  const groups = patternGroupNames(pattern);
  const missingInPattern = [...variables].filter((name) => !groups.has(name)).sort();
  if (missingInPattern.length) throw new LinkifierError(`Group '${missingInPattern[0]}' in URL template is not present in linkifier pattern.`, '__all__');
  const missingInTemplate = [...groups].filter((name) => !variables.has(name)).sort();
  if (missingInTemplate.length) throw new LinkifierError(`Group '${missingInTemplate[0]}' in linkifier pattern is not present in URL template.`, '__all__');
}
