#!/usr/bin/env python3
"""Writes packages/domain/src/code-lexers.ts: the state tables of some of Pygments' regex lexers
(Pygments is BSD-2-Clause), translated to JavaScript regular expressions, for the highlighter in
code-highlight.ts. Run with the Pygments version named in code-languages.ts."""

import json
import re
import sys
from pathlib import Path

import pygments
from pygments.formatters import HtmlFormatter
from pygments.lexer import RegexLexer, ExtendedRegexLexer, _This
from pygments.lexers import get_lexer_by_name
from pygments.token import _TokenType
from pygments import unistring

# Languages people paste into chat most; each lexer's own aliases come with it.
LANGUAGES = [
    "python", "python2", "javascript", "typescript", "bash", "sql", "c", "cpp", "java", "go",
    "rust", "html", "xml", "css", "diff", "tex", "php", "kotlin", "csharp", "scala", "haskell",
    "perl", "r", "powershell", "ini", "erlang", "clojure", "scss", "dart", "ocaml", "fsharp",
]
# get_tokens_unprocessed overrides whose effect the TypeScript side reproduces (code-highlight.ts).
HANDLED_OVERRIDES = {"CFamilyLexer", "PhpLexer"}

formatter = HtmlFormatter()


def css(ttype):
    return formatter._get_css_classes(ttype)


JS_SYNTAX = set("^$\\.*+?()[]{}|/")
WORD = r"\p{L}\p{N}_"


class Unsupported(Exception):
    pass


# Pygments spells Unicode categories out as character lists; JavaScript has property escapes.
UNICODE_SETS = sorted(
    [(getattr(unistring, name), "\\p{%s}" % name) for name in unistring.cats]
    + [(unistring.xid_start, r"\p{XID_Start}"), (unistring.xid_continue, r"\p{XID_Continue}")],
    key=lambda pair: -len(pair[0]),
)
SENTINELS = {chr(0xE000 + index): js for index, (_, js) in enumerate(UNICODE_SETS)}


def translate(pattern: str) -> str:
    """A Python `re` pattern as a JavaScript pattern for the `u` flag, or Unsupported."""
    for index, (chars, _) in enumerate(UNICODE_SETS):
        if len(chars) > 20:
            pattern = pattern.replace(chars, chr(0xE000 + index))
    out = []
    i = 0
    in_class = False
    class_start = False
    n = len(pattern)
    # Leading global inline flags are already in the compiled pattern's flags.
    m = re.match(r"\(\?[aiLmsux]+\)", pattern)
    if m:
        if "x" in m.group(0):
            raise Unsupported("verbose")
        i = m.end()
    while i < n:
        c = pattern[i]
        if c in SENTINELS:
            out.append(SENTINELS[c])
            i += 1
            class_start = False
            continue
        if c == "\\":
            d = pattern[i + 1]
            i += 2
            if d == "A" and not in_class:
                out.append(r"(?<![\s\S])")
            elif d == "Z" and not in_class:
                out.append(r"(?![\s\S])")
            elif d == "w":
                out.append(WORD if in_class else f"[{WORD}]")
            elif d == "W":
                # Inside a class, JavaScript's ASCII \W (differs for non-ASCII letters only).
                out.append("\\W" if in_class else f"[^{WORD}]")
            elif d == "d":
                out.append(r"\p{Nd}")
            elif d == "D":
                out.append(r"\D" if in_class else r"\P{Nd}")
            elif d in "bBsSntrfv":
                # \b and \B are JavaScript's ASCII ones (they differ beside non-ASCII letters only).
                out.append("\\" + d)
            elif d == "x":
                out.append("\\x" + pattern[i : i + 2])
                i += 2
            elif d == "u":
                out.append("\\u" + pattern[i : i + 4])
                i += 4
            elif d == "U":
                out.append("\\u{" + pattern[i : i + 8].lstrip("0") + "}")
                i += 8
            elif d.isdigit():
                if d == "0" or in_class:
                    raise Unsupported("octal")
                out.append("\\" + d)
            elif d.isalnum():
                raise Unsupported("escape \\" + d)
            elif d in JS_SYNTAX or (in_class and d == "-"):
                out.append("\\" + d)
            else:
                out.append(d)
            class_start = False
            continue
        if in_class:
            if c == "]" and not class_start:
                in_class = False
                out.append("]")
            elif c == "]":
                out.append("\\]")
            elif c == "[":
                out.append("\\[")
            elif c == "^" and class_start and out[-1] == "[":
                out.append("^")
                i += 1
                continue
            else:
                out.append(c)
            class_start = False
            i += 1
            continue
        if c == "[":
            in_class = True
            class_start = True
            out.append("[")
            i += 1
            continue
        if c == "(" and pattern.startswith("(?P<", i):
            out.append("(?<")
            i += 4
            continue
        if c == "(" and pattern.startswith("(?P=", i):
            j = pattern.index(")", i)
            out.append(f"\\k<{pattern[i + 4 : j]}>")
            i = j + 1
            continue
        if c == "(" and pattern.startswith("(?", i) and pattern[i + 2] not in ":=!<":
            raise Unsupported("group flags " + pattern[i : i + 5])
        if c == "{":
            m = re.compile(r"\{(\d*)(,?)(\d*)\}").match(pattern, i)
            if m and (m.group(1) or m.group(3)):
                out.append("{" + (m.group(1) or "0") + m.group(2) + m.group(3) + "}")
                i = m.end()
                continue
            out.append("\\{")
            i += 1
            continue
        if c in "}]":
            out.append("\\" + c)
            i += 1
            continue
        out.append(c)
        i += 1
    if in_class:
        raise Unsupported("unclosed class")
    return "".join(out)


def flags_of(compiled) -> str:
    f = ""
    if compiled.flags & re.IGNORECASE:
        f += "i"
    if compiled.flags & re.MULTILINE:
        f += "m"
    if compiled.flags & re.DOTALL:
        f += "s"
    if compiled.flags & re.VERBOSE:
        raise Unsupported("verbose")
    return f


def action_of(action, lexer_names):
    if action is None:
        return None
    if isinstance(action, _TokenType):
        return css(action)
    closure = getattr(action, "__closure__", None) or ()
    name = getattr(action, "__qualname__", "")
    cells = dict(zip(action.__code__.co_freevars, (c.cell_contents for c in closure)))
    if name.startswith("bygroups."):
        return {"groups": [None if a is None else action_of(a, lexer_names) for a in cells["args"]]}
    if name.startswith("using."):
        other = cells.get("_other")
        kwargs = cells.get("kwargs") or {}
        stack = cells.get("gt_kwargs", {}).get("stack")
        if kwargs == {"_startinline": True}:
            stack = ("root", "php")  # PhpLexer's start inside <?php
        elif kwargs:
            raise Unsupported("using with options")
        if other is None or isinstance(other, _This):
            target = "this"
        else:
            target = other.__name__
            lexer_names.add(target)
        return {"using": target, **({"stack": list(stack)} if stack else {})}
    raise Unsupported("callback " + name)


def new_state_of(state):
    if state is None:
        return None
    if isinstance(state, int):
        return state
    if state == "#push":
        return "#push"
    if isinstance(state, tuple):
        return list(state)
    raise Unsupported("state " + repr(state))


def lexer_table(cls, lexer_names):
    for base in cls.__mro__:
        if base in (RegexLexer,):
            break
        if base is ExtendedRegexLexer:
            raise Unsupported("ExtendedRegexLexer")
        if "get_tokens_unprocessed" in base.__dict__ and base.__name__ not in HANDLED_OVERRIDES:
            raise Unsupported("override in " + base.__name__)
    if not issubclass(cls, RegexLexer):
        raise Unsupported("not a RegexLexer")
    instance = cls()  # compiles the token table
    states = {}
    for state, rules in instance._tokens.items():
        out = []
        for rex, action, new_state in rules:
            compiled = rex.__self__
            out.append([translate(compiled.pattern), flags_of(compiled), action_of(action, lexer_names), new_state_of(new_state)])
        states[state] = out
    return states


def main():
    target = Path(sys.argv[1])
    lexers = {}
    aliases = {}
    pending = []
    names = set()
    for language in LANGUAGES:
        pending.append(type(get_lexer_by_name(language)))
    skipped = []
    while pending:
        cls = pending.pop(0)
        if cls.__name__ in lexers:
            continue
        used = set()
        try:
            table = lexer_table(cls, used)
        except (Unsupported, IndexError, AttributeError, KeyError) as error:
            skipped.append(f"{cls.__name__}: {error}")
            continue
        extra = {}
        if cls.__name__ == "PhpLexer":
            extra["builtinNames"] = sorted({f for fs in cls(funcnamehighlighting=True)._functions for f in [fs]})
        if "CFamilyLexer" in [b.__name__ for b in cls.__mro__]:
            inst = cls()
            extra["typeNames"] = sorted(set(inst.stdlib_types) | set(inst.c99_types) | set(inst.c11_atomic_types) | set(inst.linux_types))
        lexers[cls.__name__] = {"states": table, **extra}
        for alias in cls.aliases:
            aliases.setdefault(alias.lower(), cls.__name__)
        for name in used:
            pending.append(next(c for c in _all_lexer_classes() if c.__name__ == name))
    for name, lexer in list(lexers.items()):
        used_missing = [u for s in lexer["states"].values() for r in s for u in _usings(r[2]) if u != "this" and u not in lexers]
        if used_missing:
            skipped.append(f"{name}: uses {used_missing}")
            del lexers[name]
            aliases = {a: n for a, n in aliases.items() if n != name}
    header = (
        f"// Generated by scripts/generate-code-lexers.py from Pygments {pygments.__version__}\n"
        "// (BSD-2-Clause); do not edit. Pygments' regex lexers as state tables: per state, rules of\n"
        "// [pattern, flags, action (CSS class, {groups}, {using}), new state].\n"
    )
    body = (
        "// prettier-ignore\n"
        "export const LEXER_BY_ALIAS: Record<string, string> = " + json.dumps(aliases, sort_keys=True) + ";\n"
        "// prettier-ignore\n"
        "export const LEXERS: Record<string, LexerTable> = " + json.dumps(lexers, ensure_ascii=False) + ";\n"
    )
    types = (
        "export type LexerAction = string | { groups: (LexerAction | null)[] } | { using: string; stack?: string[] };\n"
        "export type LexerRule = [string, string, LexerAction | null, number | string | string[] | null];\n"
        "export interface LexerTable {\n"
        "  states: Record<string, LexerRule[]>;\n"
        "  builtinNames?: string[];\n"
        "  typeNames?: string[];\n"
        "}\n"
    )
    target.write_text(header + types + body)
    for line in skipped:
        print("skipped", line, file=sys.stderr)


def _usings(action):
    if isinstance(action, dict):
        if "using" in action:
            yield action["using"]
        for a in action.get("groups", []):
            if a is not None:
                yield from _usings(a)


def _all_lexer_classes():
    from pygments.lexers import _iter_lexerclasses
    return _iter_lexerclasses()


main()
