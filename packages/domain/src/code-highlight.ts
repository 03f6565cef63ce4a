// Code blocks highlighted as Zulip highlights them: Pygments' regex lexers (their state tables,
// generated into code-lexers.ts) run by a JavaScript port of RegexLexer, and Pygments'
// HtmlFormatter's markup (<span class="k">, short token classes, spans closed at line ends).
// Languages without a table here render as Pygments' text lexer does: escaped, no spans.

import { LEXER_BY_ALIAS, LEXERS, type LexerAction } from './code-lexers';

type NewState = number | string | string[] | null;
interface Rule {
  regex: RegExp;
  action: LexerAction | null;
  next: NewState;
}
type States = Record<string, Rule[]>;

/** A token: its CSS classes ('' for plain text) and text. */
type Token = [string, string];

const compiled = new Map<string, States | null>();

/** A lexer's compiled states; null when one of its patterns does not compile here. */
function lexerStates(name: string): States | null {
  if (compiled.has(name)) return compiled.get(name)!;
  let states: States | null = {};
  try {
    for (const [state, rules] of Object.entries(LEXERS[name].states)) {
      states[state] = rules.map(([pattern, flags, action, next]) => ({
        regex: new RegExp(pattern, `${flags}uy`),
        action,
        next,
      }));
    }
  } catch {
    states = null;
  }
  compiled.set(name, states);
  return states;
}

const setCache = new Map<string, Set<string>>();
function nameSet(name: string, key: 'builtinNames' | 'typeNames'): Set<string> | null {
  const names = LEXERS[name][key];
  if (!names) return null;
  const cacheKey = `${name}:${key}`;
  let set = setCache.get(cacheKey);
  if (!set) setCache.set(cacheKey, (set = new Set(names)));
  return set;
}

/** RegexLexer.get_tokens_unprocessed, with the overrides of the C family (types) and PHP (builtins). */
function lex(name: string, states: States, text: string, start: readonly string[] | undefined, out: Token[]): void {
  const builtins = nameSet(name, 'builtinNames');
  const types = nameSet(name, 'typeNames');
  const stack = [...(start ?? (builtins ? ['root', 'php'] : ['root']))];
  const emit = (cls: string, value: string) => {
    if (value === '') return;
    if (cls === 'n' && types?.has(value)) cls = 'kt';
    else if (cls === 'nx' && builtins?.has(value)) cls = 'nb';
    out.push([cls, value]);
  };
  const apply = (action: LexerAction, value: string) => {
    if (typeof action === 'string') emit(action, value);
    else if ('using' in action) {
      const other = action.using === 'this' ? name : action.using;
      const otherStates = lexerStates(other);
      if (otherStates) {
        const sub: Token[] = [];
        lex(other, otherStates, value, action.stack, sub);
        for (const [cls, part] of sub) emit(cls, part);
      } else emit('', value);
    }
  };
  let pos = 0;
  let rules = states[stack[stack.length - 1]];
  while (pos < text.length) {
    let matched = false;
    for (const rule of rules) {
      rule.regex.lastIndex = pos;
      const match = rule.regex.exec(text);
      if (!match) continue;
      const end = pos + match[0].length;
      if (rule.action !== null) {
        if (typeof rule.action === 'object' && 'groups' in rule.action) {
          rule.action.groups.forEach((action, index) => {
            const value = match[index + 1];
            if (action !== null && value !== undefined) apply(action, value);
          });
        } else apply(rule.action, match[0]);
      }
      const next = rule.next;
      if (next === null && end === pos) continue; // an empty match that changes nothing: no progress
      pos = end;
      if (next !== null) {
        if (typeof next === 'number') {
          if (-next >= stack.length) stack.length = 1;
          else stack.length += next;
        } else if (next === '#push') stack.push(stack[stack.length - 1]);
        else
          for (const state of next as string[]) {
            if (state === '#pop') {
              if (stack.length > 1) stack.pop();
            } else if (state === '#push') stack.push(stack[stack.length - 1]);
            else stack.push(state);
          }
        rules = states[stack[stack.length - 1]];
      }
      matched = true;
      break;
    }
    if (matched) continue;
    if (text[pos] === '\n') {
      stack.length = 1;
      stack[0] = 'root';
      rules = states.root;
      emit('w', '\n');
      pos += 1;
    } else {
      const char = String.fromCodePoint(text.codePointAt(pos)!);
      emit('err', char);
      pos += char.length;
    }
  }
}

/**
 * Pygments' JsonLexer (a hand-written scanner there, not a regex lexer): a string followed by ":"
 * is a key (nt), numbers are integers (mi) unless they hold . e E + (mf), true/false/null are
 * constants, and // and /* comments are allowed.
 */
const JSON_TOKEN =
  /("(?:\\.|[^"\\])*"?)(?=([ \n\r\t]*:)?)|([-0-9][-0-9.eE+]*)|([fnt][truefalsn]*)|([{}[\],:]+)|([ \n\r\t]+)|(\/\/[^\n]*)|(\/\*[\s\S]*?(?:\*\/|$))|([\s\S])/gy;
function lexJson(text: string, out: Token[]): void {
  JSON_TOKEN.lastIndex = 0;
  for (let match = JSON_TOKEN.exec(text); match && match[0] !== ''; match = JSON_TOKEN.exec(text)) {
    const [, string, key, number, constant, punctuation, space, line, block] = match;
    if (string !== undefined) out.push([key !== undefined ? 'nt' : 's2', string]);
    else if (number !== undefined) out.push([/[.eE+]/.test(number) ? 'mf' : 'mi', number]);
    else if (constant !== undefined) out.push(['kc', constant]);
    else if (punctuation !== undefined) out.push(['p', punctuation]);
    else if (space !== undefined) out.push(['w', space]);
    else if (line !== undefined) out.push(['c1', line]);
    else if (block !== undefined) out.push(['cm', block]);
    else out.push(['err', match[0]]);
  }
}

/** Pygments' HTML escaping. */
function escape(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** HtmlFormatter's lines: a span per run of one class, closed at each line's end. */
function formatTokens(tokens: Token[]): string {
  let html = '';
  let open = ''; // the class of the span open on this line
  for (const [cls, value] of tokens) {
    const parts = value.split('\n');
    parts.forEach((part, index) => {
      if (index > 0) {
        if (open) html += '</span>';
        html += '\n';
        open = '';
      }
      if (part === '') return;
      if (cls !== open) {
        if (open) html += '</span>';
        if (cls) html += `<span class="${cls}">`;
        open = cls;
      }
      html += escape(part);
    });
  }
  if (open) html += '</span>';
  return html;
}

/** The lexer Pygments' get_lexer_by_name would find for `language`, if we have its table. */
export function lexerFor(language: string): string | null {
  const alias = language.toLowerCase();
  // Pygments' "css+php" and the like lex PHP inside another language; Zulip starts them inside
  // <?php (startinline), so a snippet is all PHP.
  if (alias === 'json' || alias === 'json-object') return 'JsonLexer';
  const name = LEXER_BY_ALIAS[alias] ?? (alias.endsWith('+php') ? LEXER_BY_ALIAS.php : undefined);
  return name !== undefined && lexerStates(name) ? name : null;
}

/**
 * Python-Markdown's CodeHilite with Zulip's options: the code without its leading and trailing
 * blank lines (Pygments' stripnl) and ending in a newline, highlighted by `language`'s lexer or
 * left as text. Returns the <div class="codehilite"> without a data-code-language.
 */
export function highlightCode(code: string, language: string | null): string {
  let text = code.replace(/\r\n?/g, '\n').replace(/^\n+|\n+$/g, '');
  const name = language ? lexerFor(language) : null;
  let body: string;
  if (name) {
    if (!text.endsWith('\n')) text += '\n';
    const tokens: Token[] = [];
    if (name === 'JsonLexer') lexJson(text, tokens);
    else lex(name, lexerStates(name)!, text, undefined, tokens);
    body = formatTokens(tokens);
  } else {
    body = escape(text.endsWith('\n') ? text : `${text}\n`);
  }
  return `<div class="codehilite"><pre><span></span><code>${body}</code></pre></div>`;
}
