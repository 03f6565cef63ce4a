// Block structure as Zulip's Python-Markdown builds it, where CommonMark (markdown-it) differs:
// - lists nest by 2 spaces whatever the marker (CommonMark wants the parent's content column, 3
//   for "1."), and an ordered item of any number may interrupt a paragraph;
// - a quote takes every following line of its block (up to a blank line), not only paragraph
//   continuations, so ">" lines followed by text are a quote of that text;
// - a ``` or ~~~ fence line is one only as Zulip's FENCE_RE reads it, and a quote or spoiler
//   fence ends at the first line that is exactly its fence, nested fences counted.
// Lists and quotes are rewritten in the source before markdown-it parses it; fences by a rule.

import type MarkdownIt from 'markdown-it';

const FENCE_START = /^ {0,3}(`{3,}|~{3,})/;
const LIST_ITEM = /^( *)([*+-]|\d+\.)( +)\S/;
const QUOTE_LINE = /^ {0,3}>/;
const EMPTY_QUOTE_LINE = /^ {0,3}>\s*$/;

/** Zulip's FENCE_RE: the fence, then an optional {, ., language, header, }. (`+-.` is a range.) */
export const ZULIP_FENCE = /^(`{3,}|~{3,})[ ]*(?:\{?\.?([a-zA-Z0-9_+,\-./#]+)[ ]*([^ ~`][^~`]*)?\}?)?$/;

const indentOf = (line: string) => line.length - line.trimStart().length;

/** Whether the quote starting at `start` holds something other than empty ">" lines in its block. */
function quoteHasContent(lines: string[], start: number): boolean {
  for (let index = start; index < lines.length && lines[index].trim() !== ''; index++)
    if (!EMPTY_QUOTE_LINE.test(lines[index])) return true;
  return false;
}

/** The source with lists re-indented to CommonMark's columns and quotes' lazy lines marked. */
export function zulipBlockSource(source: string): string {
  const lines = source.split('\n');
  let fence: string | null = null;
  let inQuote = false;
  // The open list items: Zulip's level (indent / 2) and the column of their content here.
  let items: { level: number; content: number }[] = [];
  let previousBlank = true;
  for (const [index, line] of lines.entries()) {
    const blank = line.trim() === '';
    if (fence !== null) {
      const trimmed = line.trim();
      if (trimmed.length >= fence.length && trimmed === fence[0].repeat(trimmed.length)) fence = null;
      previousBlank = blank;
      continue;
    }
    const fenceMatch = FENCE_START.exec(line);
    if (fenceMatch) {
      fence = fenceMatch[1];
      inQuote = false;
      items = [];
    } else if (blank) {
      inQuote = false;
    } else if (QUOTE_LINE.test(line)) {
      // (Quotes inside list items are left to markdown-it: marking their lines would end the item.)
      inQuote ||= items.length === 0 && quoteHasContent(lines, index);
    } else if (inQuote) {
      lines[index] = `> ${line}`;
    } else {
      const item = LIST_ITEM.exec(line);
      if (item) {
        const indent = item[1].length;
        const level = Math.floor(indent / 2);
        const width = item[2].length + (item[3].length > 4 ? 1 : item[3].length);
        while (items.length && items[items.length - 1].level >= level) items.pop();
        const parent = items[items.length - 1];
        if (parent) {
          lines[index] = ' '.repeat(parent.content) + line.slice(indent);
          items.push({ level, content: parent.content + width });
        } else if (level === 0) {
          items = [{ level, content: indent + width }];
        }
      } else if (previousBlank && indentOf(line) < 2) {
        items = [];
      }
    }
    previousBlank = blank;
  }
  return lines.join('\n');
}

type BlockRule = MarkdownIt.ParserBlock.RuleBlock;
/** A block rule's function and the rules it may interrupt (replacing a rule keeps them only if given). */
const blockRule = (md: MarkdownIt, name: string) =>
  (md.block.ruler as unknown as { __rules__: { name: string; fn: BlockRule; alt: string[] }[] }).__rules__.find(
    (rule) => rule.name === name,
  )!;

export function zulipBlocks(md: MarkdownIt): void {
  md.core.ruler.after('normalize', 'zulip_block_source', (state) => {
    state.src = zulipBlockSource(state.src);
  });
  // Python-Markdown starts a list after any paragraph line (Zulip's MarkdownListPreprocessor), so an
  // ordered item numbered other than 1 may interrupt a paragraph too.
  const { fn: list, alt: listAlt } = blockRule(md, 'list');
  md.block.ruler.at(
    'list',
    (state, startLine, endLine, silent) => {
      if (!(silent && state.parentType === 'paragraph')) return list(state, startLine, endLine, silent);
      const parentType = state.parentType;
      state.parentType = 'zulip_list' as typeof parentType;
      try {
        return list(state, startLine, endLine, silent);
      } finally {
        state.parentType = parentType;
      }
    },
    { alt: listAlt },
  );
  // A line that is not Zulip's fence is no fence (e.g. "~~~text~~~" is text).
  const { fn: fence, alt: fenceAlt } = blockRule(md, 'fence');
  md.block.ruler.at(
    'fence',
    (state, startLine, endLine, silent) => {
      const line = state.src.slice(state.bMarks[startLine] + state.tShift[startLine], state.eMarks[startLine]);
      if (!ZULIP_FENCE.test(line)) return false;
      const quoteLike = /^(quote|quoted|spoiler)$/i.test(ZULIP_FENCE.exec(line)![2] ?? '');
      if (!quoteLike) return fence(state, startLine, endLine, silent);
      if (silent) return true;
      return quoteFence(state, startLine, endLine);
    },
    { alt: fenceAlt },
  );
}

/** A quote or spoiler fence: it ends at a line that is exactly its fence, nested fences skipped. */
function quoteFence(state: MarkdownIt.StateBlock, startLine: number, endLine: number): boolean {
  const lineText = (line: number) => state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]);
  const opening = lineText(startLine);
  const open = ZULIP_FENCE.exec(opening)!;
  // Each open fence and whether its content can hold more fences (quotes and spoilers can).
  const stack: { fence: string; nests: boolean }[] = [{ fence: open[1], nests: true }];
  let nextLine = startLine + 1;
  for (; nextLine < endLine; nextLine++) {
    const text = lineText(nextLine);
    if (text !== '' && state.sCount[nextLine] < state.blkIndent) break;
    const top = stack[stack.length - 1];
    if (state.sCount[nextLine] === state.blkIndent && text.trimEnd() === top.fence) {
      stack.pop();
      if (stack.length === 0) break;
      continue;
    }
    const nested = top.nests && state.sCount[nextLine] === state.blkIndent ? ZULIP_FENCE.exec(text) : null;
    if (nested) stack.push({ fence: nested[1], nests: /^(quote|quoted|spoiler)$/i.test(nested[2] ?? '') });
  }
  const token = state.push('fence', 'code', 0);
  token.info = opening.slice(open[1].length);
  token.content = state.getLines(startLine + 1, nextLine, state.sCount[startLine], true);
  token.markup = open[1];
  token.map = [startLine, Math.min(nextLine + 1, endLine)];
  state.line = Math.min(nextLine + 1, endLine);
  return true;
}
