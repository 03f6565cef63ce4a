// Linkifier patterns on a linear-time engine. Zulip compiles linkifiers with re2, whose matching
// time grows linearly with the text; JavaScript's RegExp backtracks, and a pattern such as
// (?P<id>(a+)+) takes exponential time on "aaaa…ab", so one organisation's linkifier could stall
// rendering for every organisation served by the same process. re2js is a pure-JavaScript port
// of RE2 (same syntax, same guarantees), so patterns are checked, compiled and matched as Zulip's
// are. A render-time budget (LINKIFIER_RENDER_BUDGET_MS) is the second line of defence.

import { RE2JS, RE2JSSyntaxException, type Matcher } from 're2js';
import { sanitizeUrl } from './url-sanitizer';

// uri-template-lite (RFC 6570 expansion) ships no type declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { expand: expandUriTemplate } = require('uri-template-lite') as {
  expand(template: string, data: Record<string, unknown>): string;
};

/**
 * Milliseconds of linkifier matching one rendering (a message body or a topic) may spend; past
 * it, the rest of the text is left without linkifier links. It is checked between searches, and
 * one search is bounded by MAX_LINKIFIER_PROGRAM_SIZE. With a linear-time engine an ordinary message
 * takes a millisecond or two, and 10,000 characters of nothing but matches of 20 linkifiers take
 * 50–250 ms in a warm process, so this only bounds the unforeseen (docs/operations.md, Limits).
 */
export const LINKIFIER_RENDER_BUDGET_MS = 500;

/**
 * The largest compiled program accepted, in RE2 instructions. When no literal rules a text out,
 * a search costs up to (text length × program size) steps: at this size, about 300 ms for a
 * 10,000-character message, which bounds the one search a render budget check cannot interrupt.
 * RE2 refuses patterns past its memory budget with "pattern too large - compile failed"; this
 * limit is lower than RE2's, yet (?P<id>[0-9]{1,1000}) (2,003 instructions) still fits.
 */
export const MAX_LINKIFIER_PROGRAM_SIZE = 5_000;

/** A pattern re2 refuses, with re2's own message (Zulip shows "Bad regular expression: <message>"). */
export class Re2PatternError extends Error {}

// re2js reports errors in RE2/J's (Go's) words; Zulip shows C++ re2's.
const RE2_ERROR_TEXT: Record<string, string> = {
  'missing closing )': 'missing )',
  'missing closing ]': 'missing ]',
  'trailing backslash at end of expression': 'trailing \\',
  'missing argument to repetition operator': 'no argument for repetition operator',
  'invalid nested repetition operator': 'bad repetition operator',
  'invalid repeat count': 'invalid repetition size',
  'invalid or unsupported Perl syntax': 'invalid perl operator',
  'invalid named capture': 'invalid named capture group',
  'duplicate capture group name': 'invalid named capture group',
};

function re2ErrorMessage(error: RE2JSSyntaxException): string {
  const description = error.getDescription() ?? error.message;
  const argument = error.getPattern();
  // re2 names look-behinds as the unsupported operators they are, not as bad group names.
  const lookBehind = /^\(\?<[=!]/.exec(argument ?? '');
  if (description === 'invalid named capture' && lookBehind) return `invalid perl operator: ${lookBehind[0]}`;
  const text = RE2_ERROR_TEXT[description] ?? description;
  return argument ? `${text}: ${argument}` : text;
}

/**
 * An upper estimate of the program a pattern compiles to, read from its text, so that a pattern
 * like (?:…long alternation…){1000} is refused before compiling it (compiling is itself linear
 * in the program size, and such a program runs to millions of instructions).
 */
function estimatedProgramSize(pattern: string): number {
  // Sticky expressions read at `index` without slicing, so a long pattern is read in linear time.
  const bracedEscape = /\\[pPx]\{[^}]{0,64}\}/y;
  const repeat = /\{(\d{1,9})(?:(,)(\d{0,9}))?\}/y;
  const stack: number[] = [0];
  let lastAtom = 0;
  let index = 0;
  const addAtom = (size: number) => {
    stack[stack.length - 1] += size;
    lastAtom = size;
  };
  while (index < pattern.length) {
    const character = pattern[index];
    if (pattern.startsWith('\\Q', index)) {
      const quoteEnd = pattern.indexOf('\\E', index + 2);
      const end = quoteEnd < 0 ? pattern.length : quoteEnd;
      for (let n = index + 2; n < end; n++) addAtom(1);
      index = quoteEnd < 0 ? pattern.length : quoteEnd + 2;
    } else if (character === '\\') {
      bracedEscape.lastIndex = index;
      const braced = bracedEscape.exec(pattern);
      index += braced ? braced[0].length : pattern[index + 1] === 'p' || pattern[index + 1] === 'P' ? 3 : 2;
      addAtom(1);
    } else if (character === '[') {
      let end = index + 1;
      if (pattern[end] === '^') end++;
      if (pattern[end] === ']') end++;
      while (end < pattern.length && pattern[end] !== ']') {
        end += pattern[end] === '\\' || pattern.startsWith('[:', end) ? 2 : 1;
      }
      index = end + 1;
      addAtom(1);
    } else if (character === '(') {
      stack.push(0);
      index++;
    } else if (character === ')') {
      addAtom((stack.length > 1 ? stack.pop()! : 0) + 2);
      index++;
    } else if (character === '{') {
      repeat.lastIndex = index;
      const counted = repeat.exec(pattern);
      if (counted) {
        const min = Number(counted[1]);
        const max = counted[2] ? (counted[3] ? Number(counted[3]) : min + 1) : min;
        const copies = Math.max(min, max, 1);
        stack[stack.length - 1] += lastAtom * (copies - 1) + 1;
        lastAtom *= copies;
        index += counted[0].length;
      } else {
        addAtom(1);
        index++;
      }
    } else {
      addAtom(1);
      index++;
    }
  }
  return stack.reduce((total, size) => total + size, 0);
}

/** Compiles a pattern as re2 would (Python-style (?P<name>…) groups), or throws Re2PatternError. */
export function compileRe2(pattern: string, maxProgramSize = MAX_LINKIFIER_PROGRAM_SIZE): RE2JS {
  const tooLarge = 'pattern too large - compile failed';
  if (estimatedProgramSize(pattern) > maxProgramSize * 4) throw new Re2PatternError(tooLarge);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch (error) {
    if (error instanceof RE2JSSyntaxException) throw new Re2PatternError(re2ErrorMessage(error));
    throw new Re2PatternError(tooLarge);
  }
  if (compiled.programSize() > maxProgramSize) throw new Re2PatternError(tooLarge);
  return compiled;
}

/** The named groups of a linkifier pattern, checked as re2 checks it (throws Re2PatternError). */
export function re2GroupNames(pattern: string): Set<string> {
  return new Set(Object.keys(compileRe2(pattern).namedGroups()));
}

// Zulip's prepare_linkifier_pattern: a match starts after the start of the text, whitespace
// (re2's \s is ASCII only, so NEL and \pZ are added) or an opening delimiter, and must not run
// into a letter or digit. re2 has no look-arounds, so the delimiters are matched as groups.
const BEFORE_GROUP = 'linkifier_before_match';
const MATCH_GROUP = 'linkifier_actual_match';
const AFTER_GROUP = 'linkifier_after_match';

function prepareLinkifierPattern(source: string): string {
  const before = `(?P<${BEFORE_GROUP}>^|\\s|\u0085|\\pZ|['"\\(,:<])`;
  return `${before}(?P<${MATCH_GROUP}>${source})(?P<${AFTER_GROUP}>$|[^\\pL\\pN])`;
}

export interface CompiledLinkifier {
  pattern: RE2JS;
  /** The pattern's own named groups: the URL template's variables. */
  groupNames: string[];
  urlTemplate: string;
}

// Compiled patterns by source, so a messages process compiles each realm's linkifiers once
// rather than on every fetch. Bounded: the least recently used is dropped first.
const compiledPatterns = new Map<string, RE2JS | null>();
const COMPILED_PATTERN_CACHE_SIZE = 1000;

function cachedLinkifierPattern(source: string): RE2JS | null {
  if (compiledPatterns.has(source)) {
    const cached = compiledPatterns.get(source)!;
    compiledPatterns.delete(source);
    compiledPatterns.set(source, cached);
    return cached;
  }
  let compiled: RE2JS | null = null;
  try {
    compileRe2(source);
    // The delimiter groups add a few instructions to a pattern that passed the size check.
    compiled = compileRe2(prepareLinkifierPattern(source), MAX_LINKIFIER_PROGRAM_SIZE + 100);
  } catch {
    // A stored pattern re2 refuses (saved before this check existed) links nothing, as in Zulip.
  }
  compiledPatterns.set(source, compiled);
  const oldest = compiledPatterns.keys().next().value!;
  if (compiledPatterns.size > COMPILED_PATTERN_CACHE_SIZE) compiledPatterns.delete(oldest);
  return compiled;
}

/** A stored linkifier ready to match, or null when its pattern does not compile. */
export function compileLinkifier(pattern: string, urlTemplate: string): CompiledLinkifier | null {
  const compiled = cachedLinkifierPattern(pattern);
  if (!compiled) return null;
  const delimiterGroups = [BEFORE_GROUP, MATCH_GROUP, AFTER_GROUP];
  const groupNames = Object.keys(compiled.namedGroups()).filter((name) => !delimiterGroups.includes(name));
  return { pattern: compiled, groupNames, urlTemplate };
}

/**
 * Whether the scheme a URL template writes itself (`javascript:` in `javascript:alert({id})`) is
 * one the URL sanitizer allows: the template is expanded with a harmless value for each variable.
 * A scheme that comes from a variable, as in `{+url}`, is checked on every rendered link instead.
 */
export function urlTemplateHasSafeScheme(urlTemplate: string, variables: Iterable<string>): boolean {
  const sample = Object.fromEntries([...variables].map((name) => [name, '1']));
  // Trimmed: browsers ignore the spaces around an href, so " javascript:" is javascript: too.
  return sanitizeUrl(expandUriTemplate(urlTemplate, sample).trim()) !== null;
}

/** Linkifier time left for one rendering; once spent, the rest of the text stays plain. */
export class LinkifierBudget {
  private readonly deadline: number;
  exhausted = false;

  constructor(milliseconds = LINKIFIER_RENDER_BUDGET_MS) {
    this.deadline = performance.now() + milliseconds;
  }

  /** False (for good) once the time is spent. */
  allows(): boolean {
    if (!this.exhausted && performance.now() >= this.deadline) this.exhausted = true;
    return !this.exhausted;
  }
}

export interface LinkifierMatch {
  index: number;
  text: string;
  url: string;
}

interface PendingMatch {
  index: number;
  end: number;
  /** Where the next search of this linkifier may start: the delimiter after the match. */
  resume: number;
  text: string;
  url: string | null;
}

function nextMatch(matcher: Matcher, linkifier: CompiledLinkifier, text: string, from: number): PendingMatch | null {
  let position = from;
  while (position <= text.length && matcher.find(position)) {
    const index = matcher.start(MATCH_GROUP);
    const end = matcher.end(MATCH_GROUP);
    if (end > index) {
      const values: Record<string, string> = {};
      for (const name of linkifier.groupNames) {
        const value = matcher.group(name);
        if (value !== null) values[name] = value;
      }
      const url = sanitizeUrl(expandUriTemplate(linkifier.urlTemplate, values));
      return { index, end, resume: end, text: text.slice(index, end), url };
    }
    position = Math.max(matcher.end(), position + 1);
  }
  return null;
}

/**
 * Linkifier matches in `text`: earliest first, the first linkifier winning ties. A match whose
 * URL the sanitizer refuses stays plain text. Each linkifier keeps its next match until the
 * text before it is consumed, so every pattern scans the text about once.
 */
export function linkifierMatches(
  text: string,
  linkifiers: CompiledLinkifier[],
  budget = new LinkifierBudget(),
): LinkifierMatch[] {
  const matchers = linkifiers.map((linkifier) => linkifier.pattern.matcher(text));
  const pending: (PendingMatch | null | undefined)[] = linkifiers.map(() => undefined);
  const matches: LinkifierMatch[] = [];
  let position = 0;
  while (position < text.length) {
    let best: PendingMatch | null = null;
    for (const [n, linkifier] of linkifiers.entries()) {
      let candidate = pending[n];
      if (candidate === undefined || (candidate !== null && candidate.index < position)) {
        if (!budget.allows()) return matches;
        candidate = pending[n] = nextMatch(matchers[n], linkifier, text, position);
      }
      if (candidate && (best === null || candidate.index < best.index)) best = candidate;
    }
    if (!best) break;
    if (best.url !== null) matches.push({ index: best.index, text: best.text, url: best.url });
    position = best.resume;
  }
  return matches;
}
