// Math in messages as Zulip renders it: $$…$$ inline (the Tex pattern and TEX_RE in Zulip's
// zerver/lib/markdown/__init__.py) and ```math blocks in display mode, one per paragraph
// (TexHandler and format_tex in zerver/lib/markdown/fenced_code.py), both through KaTeX
// (zerver/lib/tex.py; the katex version is Zulip 10.2's, pinned in packages/domain/package.json).
// TeX that KaTeX refuses shows as written in Zulip's <span class="tex-error">.

import type MarkdownIt from 'markdown-it';
// The types katex ships (its package.json names them only under "exports", which this project's
// "node" module resolution does not read).
import type * as Katex from 'katex/types/katex';
import { escapeHtml, escapeHtmlText } from './html';

let katex: typeof Katex | undefined;

/** KaTeX is loaded by the first math a process renders (most processes never do), then kept. */
function loadedKatex(): typeof Katex {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  katex ??= require('katex') as typeof Katex;
  return katex;
}

const ignore = () => undefined;

/**
 * Runs `render` with the console silenced. KaTeX writes to it on its own (a character without
 * metrics, \message{…} and \errmessage{…} print whatever the sender wrote), and a service's
 * output is its JSON log, not a channel for message content. Rendering is synchronous, so
 * nothing else runs meanwhile.
 */
function withConsoleSilenced<T>(render: () => T): T {
  const { log, warn, error } = console;
  console.log = console.warn = console.error = ignore;
  try {
    return render();
  } finally {
    Object.assign(console, { log, warn, error });
  }
}

/**
 * TeX as KaTeX's HTML with MathML beside it, or null when KaTeX refuses it (Zulip's render_tex).
 * The options are what Zulip's `katex/cli.js` call uses: KaTeX's defaults, with strict off (the
 * same output as "warn", without the warning).
 */
export function renderTex(tex: string, displayMode: boolean): string | null {
  const katexModule = loadedKatex();
  try {
    return withConsoleSilenced(() =>
      katexModule.renderToString(tex, { displayMode, output: 'htmlAndMathml', throwOnError: true, strict: false }),
    ).trim();
  } catch {
    // A ParseError, or anything else KaTeX throws: Zulip's render_tex answers None for both.
    return null;
  }
}

/** TEX_RE from the opening $$ on; the \B and (?<!\$) before it are checked by the rule. */
const INLINE_TEX = /\$\$([^\n_$](?:\\\$|[^$\n])*)\$\$(?!\$)(?![\p{L}\p{N}_])/uy;
/** Python's \w, which decides where TEX_RE's \B allows the opening $$. */
const WORD_CHARACTER = /[\p{L}\p{N}_]/u;

function inlineTexRule(state: MarkdownIt.StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x24 /* $ */) return false;
  const before = state.pos === 0 ? '' : state.src[state.pos - 1];
  if (before === '$' || WORD_CHARACTER.test(before)) return false;
  INLINE_TEX.lastIndex = state.pos;
  const match = INLINE_TEX.exec(state.src);
  if (!match || state.pos + match[0].length > state.posMax) return false;
  if (!silent) state.push('zulip_tex_inline', '', 0).content = match[1];
  state.pos += match[0].length;
  return true;
}

/** Zulip's FENCE_RE: a ``` or ~~~ fence, its language, and a header after it. */
const FENCE_LINE = /^(~{3,}|`{3,})[ ]*(?:\{?\.?([a-zA-Z0-9_+,\-./#]+)[ ]*(?:[^ ~`][^~`]*)?\}?)?$/;

/**
 * A ```math (or ~~~math) block, read as Zulip's fenced-code preprocessor reads it: it ends only at
 * a line that is exactly its opening fence (a longer fence inside is TeX), or where its container
 * or the message ends. Fences in other languages are left to markdown-it's fence rule.
 */
function mathFenceRule(state: MarkdownIt.StateBlock, startLine: number, endLine: number, silent: boolean): boolean {
  if (state.sCount[startLine] !== state.blkIndent) return false;
  const lineText = (line: number) => state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]);
  const opening = FENCE_LINE.exec(lineText(startLine));
  if (!opening || opening[2]?.toLowerCase() !== 'math') return false;
  if (silent) return true;
  const fence = opening[1];
  let nextLine = startLine + 1;
  let closed = false;
  for (; nextLine < endLine; nextLine++) {
    const text = lineText(nextLine);
    if (text !== '' && state.sCount[nextLine] < state.blkIndent) break;
    if (state.sCount[nextLine] === state.blkIndent && text.trimEnd() === fence) {
      closed = true;
      break;
    }
  }
  const token = state.push('zulip_tex_block', 'math', 0);
  token.content = state.getLines(startLine + 1, nextLine, state.blkIndent, false);
  token.meta = { lineCount: nextLine - startLine - 1 };
  token.markup = fence;
  token.map = [startLine, closed ? nextLine + 1 : nextLine];
  state.line = closed ? nextLine + 1 : nextLine;
  return true;
}

/** A math block's paragraphs in display mode, each one KaTeX's or a tex-error (format_tex). */
function renderTexBlock(content: string, lineCount: number): string {
  // A block without lines is nothing; one empty line is (empty) TeX.
  if (lineCount === 0) return '';
  const paragraphs = content
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .split('\n\n')
    .map((paragraph) => renderTex(paragraph, true) ?? `<span class="tex-error">${escapeHtml(paragraph)}</span>`);
  // Zulip stashes the block as one piece of inline HTML, so its paragraph stays around it.
  return `<p>${paragraphs.join('\n\n')}</p>\n`;
}

export function zulipMath(md: MarkdownIt): void {
  md.block.ruler.before('fence', 'zulip_math_fence', mathFenceRule, {
    alt: ['paragraph', 'reference', 'blockquote', 'list'],
  });
  md.inline.ruler.before('emphasis', 'zulip_tex', inlineTexRule);
  md.renderer.rules.zulip_tex_block = (tokens, idx) =>
    renderTexBlock(tokens[idx].content, (tokens[idx].meta as { lineCount: number }).lineCount);
  md.renderer.rules.zulip_tex_inline = (tokens, idx) => {
    const tex = tokens[idx].content;
    return renderTex(tex, false) ?? `<span class="tex-error">${escapeHtmlText(`$$${tex}$$`)}</span>`;
  };
}
