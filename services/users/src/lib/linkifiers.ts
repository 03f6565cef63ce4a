// Checking linkifiers as Zulip's RealmFilter.full_clean does: the pattern must compile with re2
// (the linear-time engine rendering uses, linkifier-engine.ts in @teamchat/domain; its error text is
// re2's) and its named groups must be exactly the variables of the RFC 6570 URL template.

import { JsonableError } from '@teamchat/core';
import { re2GroupNames, Re2PatternError, urlTemplateHasSafeScheme } from '@teamchat/domain';

/** The named groups of a pattern, or Zulip's "Bad regular expression" error. */
export function patternGroupNames(pattern: string): Set<string> {
  try {
    return re2GroupNames(pattern);
  } catch (error) {
    if (!(error instanceof Re2PatternError)) throw error;
    throw new LinkifierError(`Bad regular expression: ${error.message}`, '__all__');
  }
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

/**
 * Zulip's clean_fields + clean for a linkifier. A template whose own text gives an unsafe scheme
 * (`javascript:alert({id})`) is refused too, where Zulip accepts it and renders its matches as text.
 */
export function checkLinkifier(pattern: string, urlTemplate: string): void {
  if (pattern === '') throw new LinkifierError('This field cannot be blank.', 'pattern');
  if (urlTemplate === '') throw new LinkifierError('This field cannot be blank.', 'url_template');
  const variables = templateVariables(urlTemplate);
  if (variables === null || !urlTemplateHasSafeScheme(urlTemplate, variables)) {
    throw new LinkifierError('Invalid URL template.', 'url_template');
  }
  const groups = patternGroupNames(pattern);
  const missingInPattern = [...variables].filter((name) => !groups.has(name)).sort();
  if (missingInPattern.length)
    throw new LinkifierError(
      `Group '${missingInPattern[0]}' in URL template is not present in linkifier pattern.`,
      '__all__',
    );
  const missingInTemplate = [...groups].filter((name) => !variables.has(name)).sort();
  if (missingInTemplate.length)
    throw new LinkifierError(
      `Group '${missingInTemplate[0]}' in linkifier pattern is not present in URL template.`,
      '__all__',
    );
}
