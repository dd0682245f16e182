"""Parser for the text `tileirdisasm` prints (CUDA Tile IR, MLIR-like custom syntax).

Pure Python, no MLIR build. The parser knows the *shape* of the syntax, not the op set:

    %a, %b = opname <operands and attributes> [: in-types [-> out-types]] [loc(...)] [{ region } [else { region }]]

so an op it has never seen becomes a generic `Op` (name, results, operands, attributes, types,
regions) instead of a crash. A few ops print their region arguments in special places and get
a small amount of extra handling: `entry @f(%a: T, ...)`, `for %i in (...) : T iter_values(%x = %init)`,
`loop iter_values(%x = %init) : T...`, and `reduce`/`scan`, whose region header
`(%lhs: T, %rhs: T) {` follows on the next line.

Debug information (`loc(...)`, `#loc = ...` alias lines, `-g` output) is accepted and kept
apart from the structure so that it never influences a diff.

A malformed file raises `TileIRParseError`, a `UserError` whose message names file, line and column.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from tileport.errors import UserError


class TileIRParseError(UserError):
    """Malformed Tile IR text; the message is `path:line:col: what`."""

    def __init__(self, message: str, *, path: str | None = None, line: int = 0, col: int = 0):
        self.path = path
        self.line = line
        self.col = col
        self.reason = message
        where = f"{path or '<text>'}:{line}:{col}"
        super().__init__(f"{where}: malformed Tile IR: {message}")


# ---------------------------------------------------------------------------------------------
# Syntax tree
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Region:
    """One region (single block): its arguments and ops. `close_line` is the line of its `}`."""

    args: list[tuple[str, str]] = field(default_factory=list)  # (ssa name, type)
    ops: list["Op"] = field(default_factory=list)
    line: int = 0
    close_line: int = 0


@dataclass(slots=True, eq=False)
class Op:
    """One operation, generic. `skeleton` is the op's operand/attribute text with every SSA name
    replaced by `%`, whitespace-normalised: it carries all attribute and syntax information in a
    form that does not depend on value names."""

    name: str
    results: list[str]
    operands: list[str]
    attrs: dict[str, str]
    skeleton: str
    in_types: list[str]
    out_types: list[str]
    result_types: list[str]
    regions: list[Region]
    line: int
    col: int
    text: str  # the op's first source line, stripped
    loc: str | None = None
    # block arguments declared on the op line itself (entry, for, loop), before types are known
    _decls: list[tuple[str, str | None, str]] = field(default_factory=list, repr=False)

    @property
    def flags(self) -> list[str]:
        return [k for k, v in self.attrs.items() if v == ""]


@dataclass(slots=True, eq=False)
class Entry:
    """A kernel entry: `entry @name(args) optimization_hints=<...> { body }`."""

    name: str
    args: list[tuple[str, str]]
    hints: dict[str, dict[str, str]]  # target ("default", "sm_90") -> {key: value}
    hints_text: str
    body: Region
    line: int
    col: int
    text: str
    op: Op  # the generic op the entry was parsed from


@dataclass(slots=True, eq=False)
class Module:
    entries: list[Entry]
    top_ops: list[Op]  # anything at top level that is not an entry (globals, unknown ops)
    aliases: dict[str, str]  # `#name = ...` lines (debug info)
    has_debug_info: bool
    path: str | None
    n_lines: int

    def entry(self, name: str) -> Entry:
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# Lexer
# ---------------------------------------------------------------------------------------------

# token kinds
NL, SSA, SYM, ALIAS, STR, NUM, WORD, ARROW, PUNCT, TYPE = range(10)

# One regex alternation, scanned with finditer (C speed); the kind of a token follows from its
# first character. A whole type such as `tile<128x64xf16>` or `partition_view<tile=(1x1024), ...,
# tensor_view<...>>` is one TYPE token: types are most of the text and nothing inside them is
# structure the parser needs. The last alternative catches a character nothing else accepts; the
# pieces cover the text without gaps, so positions are running sums of their lengths.
_TOKEN_RE = re.compile(
    r"""
     \n
    |[ \t\r\f]+
    |//[^\n]*
    |(?:tile|partition_view|tensor_view|ptr)<(?:[^<>\n]|<(?:[^<>\n]|<[^<>\n]*>)*>)*>
    |"(?:[^"\\\n]|\\.)*"
    |%[A-Za-z0-9_$.]+(?:-(?!>)[A-Za-z0-9_$.]*)*(?:\#[0-9]+)?
    |@(?:[A-Za-z0-9_$.]+(?:-(?!>)[A-Za-z0-9_$.]*)*|"(?:[^"\\\n]|\\.)*")
    |\#[A-Za-z0-9_$.]+
    |->
    |[-+]?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+
    |[-+]?\^?[A-Za-z0-9_$.]+
    |[()\[\]{}<>,=:?*!|]
    |.
    """,
    re.VERBOSE,
)
_PUNCT_CHARS = frozenset("()[]{}<>,=:?*!|")
_FIRST_KIND = {"%": 1, "@": 2, "#": 3, '"': 4}  # SSA, SYM, ALIAS, STR (see the kind numbers above)

_KIND = {"nl": NL, "ssa": SSA, "sym": SYM, "alias": ALIAS, "str": STR, "num": NUM, "word": WORD,
         "arrow": ARROW, "punct": PUNCT, "type": TYPE}
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {")", "]", "}", ">"}


class _Tok:
    __slots__ = ("kind", "text", "line", "col", "pos")

    def __init__(self, kind: int, text: str, line: int, col: int, pos: int):
        self.kind = kind
        self.text = text
        self.line = line
        self.col = col
        self.pos = pos

    def __repr__(self) -> str:  # debugging aid
        return f"<{self.text!r}@{self.line}:{self.col}>"


def _lex(text: str, path: str | None) -> list[_Tok]:
    toks: list[_Tok] = []
    append = toks.append
    line = 1
    line_start = 0
    pos = 0
    first_kind = _FIRST_KIND
    punct = _PUNCT_CHARS
    for t in _TOKEN_RE.findall(text):
        start = pos
        pos += len(t)
        c = t[0]
        if c == " ":
            continue
        if c == "\n":
            append(_Tok(NL, "\n", line, start - line_start + 1, start))
            line += 1
            line_start = pos
            continue
        if c in " \t\r\f" or (c == "/" and t.startswith("//")):
            continue
        k = first_kind.get(c)
        if k is None:
            if c in punct:
                k = PUNCT
            elif t == "->":
                k = ARROW
            elif t[-1] == ">":
                k = TYPE
            elif (c.isdigit() or (c in "+-" and len(t) > 1 and t[1].isdigit())) and (
                    "." in t or (("e" in t or "E" in t) and "x" not in t and "X" not in t)):
                k = NUM
            elif c.isalnum() or c in "_$.^" or (c in "+-" and len(t) > 1):
                k = WORD
            else:
                raise TileIRParseError(f"unexpected character {c!r}", path=path, line=line,
                                       col=start - line_start + 1)
        append(_Tok(k, t, line, start - line_start + 1, start))
    append(_Tok(NL, "\n", line, pos - line_start + 1, pos))
    return toks


# ---------------------------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------------------------

_WS_RE = re.compile(r"\s+")


# Bound of the memos on the pure type normalisations here and in canon.py: types repeat a lot within
# and across modules, but a long-running process (the dashboard) must not grow without limit.
MEMO_SIZE = 100_000


@functools.lru_cache(maxsize=MEMO_SIZE)
def normalize_type(text: str) -> str:
    """Collapse whitespace in a type so that printer spacing never matters."""
    t = _WS_RE.sub(" ", text.strip())
    t = t.replace("< ", "<").replace(" >", ">").replace("( ", "(").replace(" )", ")")
    t = t.replace(" = ", "=").replace(" =", "=").replace("= ", "=").replace(" ,", ",")
    return t


class _Parser:
    def __init__(self, text: str, path: str | None):
        self.text = text
        self.path = path
        self.lines = text.split("\n")
        self.toks = _lex(text, path)
        self.ntoks = len(self.toks)
        self.i = 0
        self.has_debug_info = False

    # -- helpers --------------------------------------------------------------------------------
    def error(self, msg: str, tok: _Tok | None = None) -> TileIRParseError:
        tok = tok or self.peek()
        return TileIRParseError(msg, path=self.path, line=tok.line, col=tok.col)

    def peek(self, k: int = 0) -> _Tok:
        try:
            return self.toks[self.i + k]
        except IndexError:
            return self.toks[-1]

    def at_end(self) -> bool:
        return self.i >= self.ntoks

    def skip_nl(self) -> None:
        toks = self.toks
        i = self.i
        n = self.ntoks
        while i < n and toks[i].kind == NL:
            i += 1
        self.i = i

    def src(self, a: _Tok, b: _Tok) -> str:
        """Source text from the start of token a to the end of token b."""
        return self.text[a.pos : b.pos + len(b.text)]

    # -- top level ------------------------------------------------------------------------------
    def parse_module(self) -> Module:
        entries: list[Entry] = []
        top_ops: list[Op] = []
        aliases: dict[str, str] = {}
        while True:
            self.skip_nl()
            if self.at_end():
                break
            tok = self.peek()
            if tok.kind == ALIAS:
                name, value = self.parse_alias_line()
                aliases[name] = value
                self.has_debug_info = True
                continue
            if tok.kind == WORD and tok.text in ("module", "cuda_tile.module"):
                # `module [@name] [attributes {...}] {` wrapper: descend into it
                self.i += 1
                while not (self.peek().kind == PUNCT and self.peek().text == "{"):
                    if self.peek().kind == NL or self.at_end():
                        raise self.error("expected '{' after 'module'")
                    self.i += 1
                self.i += 1
                continue
            if tok.kind == PUNCT and tok.text == "}":
                # closing brace of a module wrapper
                self.i += 1
                self.parse_trailing_loc()
                continue
            op = self.parse_op()
            if op.name == "entry":
                entries.append(self.make_entry(op))
            else:
                top_ops.append(op)
        if not entries and not top_ops:
            raise TileIRParseError("no entries found (is this tileirdisasm output?)", path=self.path, line=1, col=1)
        return Module(entries, top_ops, aliases, self.has_debug_info, self.path, len(self.lines))

    def parse_alias_line(self) -> tuple[str, str]:
        first = self.toks[self.i]
        self.i += 1
        if not (self.peek().kind == PUNCT and self.peek().text == "="):
            raise self.error(f"expected '=' after alias {first.text}")
        depth = 0
        last = first
        while not self.at_end():
            t = self.peek()
            if t.kind == NL and depth == 0:
                break
            if t.kind == PUNCT:
                if t.text in _OPEN:
                    depth += 1
                elif t.text in _CLOSE:
                    depth -= 1
            last = t
            self.i += 1
        return first.text, self.src(first, last).split("=", 1)[1].strip()

    def parse_trailing_loc(self) -> str | None:
        """Consume `loc(...)` if present (after `}` or at the end of an op)."""
        t = self.peek()
        if t.kind == WORD and t.text == "loc" and self.peek(1).kind == PUNCT and self.peek(1).text == "(":
            start = t
            self.i += 1
            end = self.skip_group()
            self.has_debug_info = True
            return self.src(start, end)
        return None

    def skip_group(self) -> _Tok:
        """At an opening bracket: skip to its matching close; return the closing token."""
        open_tok = self.peek()
        stack = [_OPEN[open_tok.text]]
        self.i += 1
        while stack:
            if self.at_end():
                raise self.error(f"unclosed {open_tok.text!r} opened at line {open_tok.line}:{open_tok.col}", open_tok)
            t = self.toks[self.i]
            if t.kind == PUNCT:
                if t.text in _OPEN:
                    stack.append(_OPEN[t.text])
                elif t.text in _CLOSE:
                    if t.text != stack[-1]:
                        raise self.error(f"expected {stack[-1]!r}, found {t.text!r}", t)
                    stack.pop()
            self.i += 1
        return self.toks[self.i - 1]

    # -- ops ------------------------------------------------------------------------------------
    def parse_op(self) -> Op:
        toks = self.toks
        start = self.peek()
        results: list[str] = []
        # results: %a, %b = ...   or   %a:3 = ...
        if start.kind == SSA:
            while True:
                t = self.peek()
                if t.kind != SSA:
                    raise self.error(f"expected a value name, found {t.text!r}", t)
                self.i += 1
                nxt = self.peek()
                if nxt.kind == PUNCT and nxt.text == ":":
                    cnt = self.peek(1)
                    if cnt.kind != WORD or not cnt.text.isdigit():
                        raise self.error("expected a result count after ':'", cnt)
                    results.extend(f"{t.text}#{k}" for k in range(int(cnt.text)))
                    self.i += 2
                    nxt = self.peek()
                else:
                    results.append(t.text)
                if nxt.kind == PUNCT and nxt.text == ",":
                    self.i += 1
                    continue
                if nxt.kind == PUNCT and nxt.text == "=":
                    self.i += 1
                    break
                raise self.error(f"expected ',' or '=' after result {t.text}, found {nxt.text!r}", nxt)
        name_tok = self.peek()
        if name_tok.kind != WORD or not (name_tok.text[0].isalpha() or name_tok.text[0] == "_"):
            if name_tok.kind == NL:
                raise self.error("expected an operation name at end of line", name_tok)
            raise self.error(f"expected an operation name, found {name_tok.text!r}", name_tok)
        self.i += 1
        name = name_tok.text
        if name.startswith("cuda_tile."):
            name = name[len("cuda_tile."):]

        # collect the op's tokens up to end of line (depth 0) or a region-opening '{'; note where
        # the first top-level ':' and '->' are (they split operands from types)
        body: list[_Tok] = []
        stack: list[str] = []
        opened: list[_Tok] = []
        region_open = False
        loc: str | None = None
        colon = arrow = -1
        i = self.i
        ntoks = len(toks)
        while True:
            if i >= ntoks:
                if stack:
                    raise self.error(f"{opened[-1].text!r} is never closed", opened[-1])
                break
            t = toks[i]
            kind = t.kind
            if kind == NL:
                if not stack:
                    break
                i += 1
                continue
            if kind == PUNCT:
                tx = t.text
                if tx == "{" and not stack and i + 1 < ntoks and toks[i + 1].kind == NL:
                    region_open = True  # a region opener ends the line
                    i += 1
                    break
                if tx in _OPEN:
                    stack.append(_OPEN[tx])
                    opened.append(t)
                elif tx in _CLOSE:
                    if not stack:
                        raise self.error(f"unbalanced {tx!r}", t)
                    if tx != stack[-1]:
                        o = opened[-1]
                        if o.line != t.line:
                            raise self.error(f"{o.text!r} is never closed: expected {stack[-1]!r} before "
                                             f"{tx!r} at line {t.line}", o)
                        raise self.error(f"expected {stack[-1]!r}, found {tx!r}", t)
                    stack.pop()
                    opened.pop()
                elif tx == ":" and colon < 0 and not stack:
                    colon = len(body)
            elif kind == ARROW:
                if arrow < 0 and not stack:
                    arrow = len(body)
            elif kind == WORD and t.text == "loc" and not stack and i + 1 < ntoks and toks[i + 1].text == "(":
                self.i = i
                loc = self.parse_trailing_loc()
                i = self.i
                continue
            body.append(t)
            i += 1
        self.i = i

        op = self.build_op(name, results, body, start, colon, arrow)
        op.loc = loc

        # regions
        if region_open:
            op.regions.append(self.parse_region_body(name_tok))
            while True:
                t = self.peek()
                if t.kind == WORD and t.text == "else" and self.peek(1).kind == PUNCT and self.peek(1).text == "{":
                    self.i += 2
                    if self.peek().kind != NL:
                        raise self.error("expected end of line after 'else {'")
                    op.regions.append(self.parse_region_body(t))
                    continue
                lc = self.parse_trailing_loc()
                if lc:
                    op.loc = op.loc or lc
                    continue
                break
            t = self.peek()
            if t.kind != NL:
                raise self.error(f"unexpected {t.text!r} after '}}'", t)
        else:
            # reduce/scan style: a region header `(%a: T, ...) {` on the following line(s)
            save = self.i
            self.skip_nl()
            t = self.peek()
            while t.kind == PUNCT and t.text == "(":
                hdr_start = t
                hdr_idx = self.i
                self.skip_group()
                if not (self.peek().kind == PUNCT and self.peek().text == "{" and self.peek(1).kind == NL):
                    raise self.error("expected '{' after region arguments", self.peek())
                self.i += 1
                args = self.parse_decls(self.toks[hdr_idx + 1 : self.i - 2], hdr_start)
                region = self.parse_region_body(hdr_start)
                region.args = args
                op.regions.append(region)
                lc = self.parse_trailing_loc()
                if lc:
                    op.loc = op.loc or lc
                save = self.i
                self.skip_nl()
                t = self.peek()
            self.i = save
        self.assign_block_arg_types(op)
        return op

    def parse_region_body(self, opener: _Tok) -> Region:
        region = Region(line=opener.line)
        while True:
            self.skip_nl()
            if self.at_end():
                raise self.error(f"region opened at line {opener.line} is not closed", opener)
            t = self.peek()
            if t.kind == PUNCT and t.text == "}":
                region.close_line = t.line
                self.i += 1
                return region
            if t.kind == WORD and t.text.startswith("^"):
                # generic MLIR block label: ^bb0(%a: T, %b: T):
                self.i += 1
                if self.peek().kind == PUNCT and self.peek().text == "(":
                    start = self.i
                    self.skip_group()
                    region.args.extend(self.parse_decls(self.toks[start + 1 : self.i - 1], t))
                if not (self.peek().kind == PUNCT and self.peek().text == ":"):
                    raise self.error("expected ':' after block label", self.peek())
                self.i += 1
                continue
            region.ops.append(self.parse_op())

    def parse_decls(self, toks: list[_Tok], where: _Tok) -> list[tuple[str, str]]:
        """`%a: T, %b: T` (a region header) -> [(name, type)]."""
        out: list[tuple[str, str]] = []
        for part in _split_top(toks, ","):
            if not part:
                continue
            if part[0].kind != SSA or len(part) < 3 or part[1].text != ":":
                raise self.error("expected '%name: type' in region arguments", part[0] if part else where)
            out.append((part[0].text, normalize_type(self.src(part[2], part[-1]))))
        return out

    def build_op(self, name: str, results: list[str], body: list[_Tok], start: _Tok, colon: int,
                 arrow: int) -> Op:
        # the first top-level ':' splits operands/attributes from types
        if colon >= 0:
            pre, types_part = body[:colon], body[colon + 1 :]
        elif arrow >= 0:  # `if %c -> (T) {`
            pre, types_part = body[:arrow], body[arrow:]
        else:
            pre, types_part = body, []

        operands: list[str] = []
        decls: list[tuple[str, str | None, str]] = []  # (name, explicit type or None, style)
        self.scan_values(pre, operands, decls)
        in_types, out_types, extra = self.parse_types(types_part)
        if extra:
            self.scan_values(extra, operands, decls)
        attrs, skeleton = self.parse_attrs(pre)
        if extra:
            sk2 = " ".join("%" if t.kind == SSA else t.text for t in extra)
            skeleton = f"{skeleton} {sk2}".strip()

        # result types: the list after '->' if it lines up, else a single type broadcast
        if len(results) == 0:
            rtypes: list[str] = []
        elif out_types and len(out_types) == len(results):
            rtypes = list(out_types)
        elif out_types and len(out_types) == 1:
            rtypes = out_types * len(results)
        elif not out_types and len(in_types) == 1:
            rtypes = in_types * len(results)
        elif not out_types and in_types and len(in_types) >= len(results):
            rtypes = in_types[-len(results):]
        else:
            rtypes = ["?"] * len(results)
        line_text = self.lines[start.line - 1].strip() if start.line - 1 < len(self.lines) else ""
        op = Op(name=name, results=results, operands=operands, attrs=attrs, skeleton=skeleton,
                in_types=in_types, out_types=out_types, result_types=rtypes, regions=[],
                line=start.line, col=start.col, text=line_text)
        op._decls = decls
        return op

    def scan_values(self, toks: list[_Tok], operands: list[str], decls: list) -> None:
        """Split SSA tokens into uses (operands) and declarations of region arguments:
        `%x: T` (entry args), `%x = %init` (iter_values), `%x in (...)` (for)."""
        n = len(toks)
        for k, t in enumerate(toks):
            if t.kind != SSA:
                continue
            nxt = toks[k + 1] if k + 1 < n else None
            if nxt is not None and nxt.kind == PUNCT and nxt.text == ":" and k > 0 and toks[k - 1].kind == PUNCT \
                    and toks[k - 1].text in ("(", ","):
                # %x: type   (up to the next top-level ',' or ')')
                depth = 0
                j = k + 2
                start = j
                while j < n:
                    tj = toks[j]
                    if tj.kind == PUNCT:
                        if tj.text in _OPEN:
                            depth += 1
                        elif tj.text in _CLOSE:
                            if depth == 0:
                                break
                            depth -= 1
                        elif tj.text == "," and depth == 0:
                            break
                    j += 1
                ty = normalize_type(self.src(toks[start], toks[j - 1])) if j > start else "?"
                decls.append((t.text, ty, "typed"))
            elif nxt is not None and nxt.kind == PUNCT and nxt.text == "=":
                decls.append((t.text, None, "iter"))
            elif nxt is not None and nxt.kind == WORD and nxt.text == "in":
                decls.append((t.text, None, "induction"))
            else:
                operands.append(t.text)

    def parse_types(self, toks: list[_Tok]) -> tuple[list[str], list[str], list[_Tok]]:
        """`T1, T2 -> T3, (T4, T5)` -> (in types, out types, non-type tokens such as iter_values(...))."""
        ins: list[str] = []
        outs: list[str] = []
        extra: list[_Tok] = []
        cur = ins
        k = 0
        n = len(toks)
        while k < n:
            t = toks[k]
            if t.kind == ARROW:
                cur = outs
                k += 1
                continue
            if t.kind == PUNCT and t.text == ",":
                k += 1
                continue
            if t.kind == PUNCT and t.text == "(":
                j = _match(toks, k)
                inner = toks[k + 1 : j]
                for part in _split_top(inner, ","):
                    if part:
                        cur.append(normalize_type(self.src(part[0], part[-1])))
                k = j + 1
                continue
            if t.kind == TYPE:
                cur.append(normalize_type(t.text))
                k += 1
                continue
            if t.kind == WORD:
                nxt = toks[k + 1] if k + 1 < n else None
                if nxt is not None and nxt.kind == PUNCT and nxt.text == "(":
                    # keyword group inside the type part: iter_values(%x = %y)
                    j = _match(toks, k + 1)
                    extra.extend(toks[k : j + 1])
                    k = j + 1
                    continue
                if nxt is not None and nxt.kind == PUNCT and nxt.text == "<":
                    j = _match(toks, k + 1)
                    cur.append(normalize_type(self.src(t, toks[j])))
                    k = j + 1
                    continue
                cur.append(t.text)
                k += 1
                continue
            # anything else inside the type part is kept as syntax
            extra.append(t)
            k += 1
        return ins, outs, extra

    def parse_attrs(self, toks: list[_Tok]) -> tuple[dict[str, str], str]:
        """Attributes from the operand part, and the name-free skeleton of that part."""
        attrs: dict[str, str] = {}
        n = len(toks)
        k = 0
        while k < n:
            t = toks[k]
            if t.kind == WORD and k + 1 < n and toks[k + 1].kind == PUNCT and toks[k + 1].text == "=":
                # key = value  (value: a group, or one token, or tok<...>)
                key = t.text
                j = k + 2
                if j < n:
                    v0 = toks[j]
                    if v0.kind == PUNCT and v0.text in _OPEN:
                        e = _match(toks, j)
                    elif j + 1 < n and toks[j + 1].kind == PUNCT and toks[j + 1].text == "<":
                        e = _match(toks, j + 1)
                    else:
                        e = j
                    value = " ".join("%" if x.kind == SSA else x.text for x in toks[j : e + 1])
                    attrs[key] = normalize_type(value)
                    k = e + 1
                else:
                    attrs[key] = ""
                    k = j
                continue
            if t.kind == WORD and k + 1 < n and toks[k + 1].kind == PUNCT and toks[k + 1].text == "<":
                e = _match(toks, k + 1)
                inner = self.src(toks[k + 2], toks[e - 1]) if e > k + 2 else ""
                attrs[t.text] = normalize_type(inner)
                k = e + 1
                continue
            if t.kind == PUNCT and t.text == "<" and (k == 0 or toks[k - 1].kind != WORD):
                # bare <...> attribute, e.g. `constant <i32: 1>`
                e = _match(toks, k)
                attrs["value"] = normalize_type(self.src(toks[k + 1], toks[e - 1])) if e > k + 1 else ""
                k = e + 1
                continue
            if t.kind == WORD and t.text not in ("in", "to", "step"):
                attrs.setdefault(t.text, "")
            elif t.kind == STR:
                attrs["string"] = t.text
            k += 1
        skeleton = " ".join("%" if t.kind == SSA else t.text for t in toks)
        return attrs, skeleton

    def assign_block_arg_types(self, op: Op) -> None:
        decls = op._decls
        if not decls:
            return
        if not op.regions:
            # entry without body or an op with stray declarations: keep as attributes only
            return
        args: list[tuple[str, str]] = []
        iter_types = op.result_types if op.name != "loop" else (op.in_types or op.result_types)
        it = 0
        for name, ty, style in decls:
            if style == "typed":
                args.append((name, ty or "?"))
            elif style == "induction":
                args.append((name, op.in_types[0] if op.in_types else "?"))
            else:
                args.append((name, iter_types[it] if it < len(iter_types) else "?"))
                it += 1
        op.regions[0].args = args + op.regions[0].args

    # -- entries --------------------------------------------------------------------------------
    def make_entry(self, op: Op) -> Entry:
        if not op.regions:
            raise TileIRParseError("entry without a body", path=self.path, line=op.line, col=op.col)
        sym = re.search(r"@(\"(?:[^\"\\]|\\.)*\"|[A-Za-z0-9_$.]+)", op.text)
        name = sym.group(1).strip('"') if sym else f"entry@{op.line}"
        hints_text = op.attrs.get("optimization_hints", "")
        return Entry(name=name, args=list(op.regions[0].args), hints=parse_hints(hints_text),
                     hints_text=hints_text, body=op.regions[0], line=op.line, col=op.col, text=op.text, op=op)


def _match(toks: list[_Tok], k: int) -> int:
    """Index of the bracket closing the one at toks[k] (within a token list)."""
    depth = 0
    for j in range(k, len(toks)):
        t = toks[j]
        if t.kind == PUNCT:
            if t.text in _OPEN:
                depth += 1
            elif t.text in _CLOSE:
                depth -= 1
                if depth == 0:
                    return j
    return len(toks) - 1


def _split_top(toks: list[_Tok], sep: str) -> list[list[_Tok]]:
    parts: list[list[_Tok]] = [[]]
    depth = 0
    for t in toks:
        if t.kind == PUNCT:
            if t.text in _OPEN:
                depth += 1
            elif t.text in _CLOSE:
                depth -= 1
            elif t.text == sep and depth == 0:
                parts.append([])
                continue
        parts[-1].append(t)
    return parts


_HINT_GROUP_RE = re.compile(r"([A-Za-z0-9_]+)\s*=\s*\{([^{}]*)\}")


def parse_hints(text: str) -> dict[str, dict[str, str]]:
    """`default = {num_cta_in_cga = 2, occupancy = 2}` -> {"default": {"num_cta_in_cga": "2", ...}}."""
    out: dict[str, dict[str, str]] = {}
    for m in _HINT_GROUP_RE.finditer(text or ""):
        kv: dict[str, str] = {}
        for item in m.group(2).split(","):
            if "=" in item:
                k, v = item.split("=", 1)
                kv[k.strip()] = v.strip()
            elif item.strip():
                kv[item.strip()] = ""
        if kv:
            out[m.group(1)] = kv
    return out


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TypeInfo:
    """What the checks need from a type string. kind: tile, partition_view, tensor_view, token, other."""

    kind: str
    shape: tuple[str, ...] = ()
    elem: str = ""
    padding: str | None = None  # partition_view padding_value
    dim_map: str | None = None
    tensor: str | None = None  # the tensor_view<...> inside a partition_view
    text: str = ""


_TILE_RE = re.compile(r"^tile<(.*)>$")
_PV_TILE_RE = re.compile(r"tile=\(([^)]*)\)")
_PAD_RE = re.compile(r"padding_value\s*=\s*([A-Za-z0-9_.+-]+)")
_DIM_MAP_RE = re.compile(r"dim_map\s*=\s*\[([^\]]*)\]")
_TV_RE = re.compile(r"(tensor_view<.*?>)(?:,|>$)")

def _split_shape(body: str) -> tuple[tuple[str, ...], str]:
    """`128x64xf16` -> (("128", "64"), "f16"); `ptr<f16>` -> ((), "ptr<f16>"); `?x?xf16` works too."""
    # the element type is what follows the last 'x' that separates a dimension
    parts: list[str] = []
    rest = body
    while True:
        m = re.match(r"^(\?|[0-9]+)x", rest)
        if not m:
            break
        parts.append(m.group(1))
        rest = rest[m.end():]
    return tuple(parts), rest


@functools.lru_cache(maxsize=MEMO_SIZE)
def type_info(text: str) -> TypeInfo:
    if text == "token":
        return TypeInfo("token", text=text)
    m = _TILE_RE.match(text)
    if m:
        shape, elem = _split_shape(m.group(1))
        return TypeInfo("tile", shape, elem, text=text)
    if text.startswith("partition_view<"):
        tile = _PV_TILE_RE.search(text)
        shape = tuple(tile.group(1).split("x")) if tile else ()
        pad = _PAD_RE.search(text)
        dm = _DIM_MAP_RE.search(text)
        tv_start = text.find("tensor_view<")
        tensor = None
        elem = ""
        if tv_start >= 0:
            depth = 0
            for j in range(tv_start, len(text)):
                if text[j] == "<":
                    depth += 1
                elif text[j] == ">":
                    depth -= 1
                    if depth == 0:
                        tensor = text[tv_start : j + 1]
                        break
            if tensor:
                elem = _split_shape(tensor[len("tensor_view<"):].split(",")[0].rstrip(">"))[1]
        return TypeInfo("partition_view", shape, elem, pad.group(1) if pad else None,
                        normalize_type(dm.group(1)) if dm else None, tensor, text=text)
    if text.startswith("tensor_view<"):
        shape, elem = _split_shape(text[len("tensor_view<"):].split(",")[0].rstrip(">"))
        return TypeInfo("tensor_view", shape, elem, text=text)
    return TypeInfo("other", text=text)


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def parse_text(text: str, path: str | None = None) -> Module:
    """Parse tileirdisasm text. Raises TileIRParseError (a UserError) with line and column."""
    if "\x00" in text[:4096]:
        raise TileIRParseError("this looks like binary data; pass tileirdisasm text or a .tileirbc file",
                               path=path, line=1, col=1)
    return _Parser(text, path).parse_module()


def parse_file(path: str | Path) -> Module:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{p}: no such file") from None
    except UnicodeDecodeError:
        raise TileIRParseError("not UTF-8 text; pass tileirdisasm text or a .tileirbc file", path=str(p),
                               line=1, col=1) from None
    return parse_text(text, str(p))


def walk_ops(ops: list[Op]):
    """All ops in program order, depth-first (an op before the ops of its regions)."""
    for op in ops:
        yield op
        for region in op.regions:
            yield from walk_ops(region.ops)
