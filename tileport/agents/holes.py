"""Hole regions in a draft's kernel.rs: find them, fill one (the writer's edit tool), and edit by search/replace.

The contract shared with the draft translator (`tileport.draft`):

        // TILEPORT-HOLE h3 BEGIN unsupported: ct.cumsum at op.py:42:8 (<reason>)
        // python: acc = ct.cumsum(x, axis=1)
        <placeholder that fails to compile, naming h3>
        // TILEPORT-HOLE h3 END

Ids are `h1`, `h2`, ... in order of appearance; BEGIN/END lines stand alone (leading whitespace allowed); the region
a writer replaces is everything between them. A region whose markers are gone is filled. Drafts of the older
format (`// TODO(tileport): unsupported: ... at op.py:L:C` followed by `//     <python source>`) are read too: each
such pair is a hole numbered in order, its region the two comment lines.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from tileport.errors import UserError

_BEGIN = re.compile(r"^(?P<indent>[ \t]*)//\s*TILEPORT-HOLE\s+(?P<id>h\d+)\s+BEGIN\b[ \t]*(?P<reason>.*)$")
_END = re.compile(r"^[ \t]*//\s*TILEPORT-HOLE\s+(?P<id>h\d+)\s+END\b")
_PYTHON = re.compile(r"^[ \t]*//\s*python:\s?(?P<src>.*)$")
_LEGACY = re.compile(r"^(?P<indent>[ \t]*)//\s*TODO\(tileport\):\s*(?P<reason>unsupported:.*)$")
_NUMBERED = re.compile(r"^\s*\d+ \| ?")
_LEGACY_SRC = re.compile(r"^[ \t]*//\s{2,}(?P<src>\S.*)$")


class HoleRegion(BaseModel):
    """One unfilled place in kernel.rs. Lines are 1-based and inclusive of the marker lines."""

    model_config = ConfigDict(frozen=True)

    id: str
    reason: str  # "unsupported: ct.cumsum at op.py:42:8 (...)"
    python: str  # the Python source line(s) the region stands for
    start_line: int  # the BEGIN line (legacy: the TODO line)
    end_line: int  # the END line (legacy: the python comment line)
    body: str  # the lines between the markers (the placeholder), "" for a legacy hole
    indent: str = ""

    def render(self) -> str:
        """What the model reads about this hole."""
        return (f"- {self.id} (kernel.rs lines {self.start_line}-{self.end_line}): {self.reason}\n"
                f"  python: {self.python}")


def find_holes(text: str) -> list[HoleRegion]:
    """Every unfilled region, in order of appearance. A BEGIN without its END is not a region (it is reported
    by the build, whose placeholder still fails)."""
    lines = text.splitlines()
    holes: list[HoleRegion] = []
    i = 0
    while i < len(lines):
        m = _BEGIN.match(lines[i])
        if m:
            hid = m.group("id")
            end = next((j for j in range(i + 1, len(lines)) if (e := _END.match(lines[j])) and e.group("id") == hid),
                       None)
            if end is not None:
                inner = lines[i + 1:end]
                python = " ".join(pm.group("src").strip() for ln in inner if (pm := _PYTHON.match(ln)))
                holes.append(HoleRegion(id=hid, reason=m.group("reason").strip(), python=python,
                                        start_line=i + 1, end_line=end + 1, body="\n".join(inner),
                                        indent=m.group("indent")))
                i = end + 1
                continue
        lm = _LEGACY.match(lines[i])
        if lm:
            src = _LEGACY_SRC.match(lines[i + 1]) if i + 1 < len(lines) else None
            end = i + 1 if src else i
            holes.append(HoleRegion(id=f"h{len(holes) + 1}", reason=lm.group("reason").strip(),
                                    python=src.group("src").strip() if src else "", start_line=i + 1,
                                    end_line=end + 1, body="", indent=lm.group("indent")))
            i = end + 1
            continue
        i += 1
    return holes


def _reindent(code: str, indent: str) -> list[str]:
    """`code` as lines at `indent`, keeping its own relative indentation."""
    lines = code.strip("\n").splitlines()
    body = [ln for ln in lines if ln.strip()]
    common = min((len(ln) - len(ln.lstrip()) for ln in body), default=0)
    return [indent + ln[common:] if ln.strip() else "" for ln in lines]


def fill_hole(text: str, hole_id: str, code: str) -> str:
    """`text` with region `hole_id` (markers included) replaced by `code`, indented like the region."""
    holes = find_holes(text)
    hole = next((h for h in holes if h.id == hole_id), None)
    if hole is None:
        known = ", ".join(h.id for h in holes) or "none: the kernel has no unfilled holes"
        raise UserError(f"no hole {hole_id!r} in kernel.rs; the unfilled holes are: {known}")
    lines = text.splitlines()
    out = lines[:hole.start_line - 1] + _reindent(code, hole.indent) + lines[hole.end_line:]
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def search_replace(text: str, search: str, replace: str) -> str:
    """Aider-style edit: the one occurrence of `search` becomes `replace`. An exact match first, then one that
    ignores each line's leading and trailing whitespace (small models re-indent); none, or several, is a
    UserError saying so. Lines copied with the prompt's line numbers (`  12 | ...`) are read without them."""
    if not search.strip():
        raise UserError("search is empty: copy the exact lines of kernel.rs to change into `search`")
    n = text.count(search)
    if n == 1:
        return text.replace(search, replace, 1)
    if n > 1:
        raise UserError(f"search matches {n} places in kernel.rs; include more surrounding lines so it matches one")
    lines = text.splitlines()
    want = [ln.strip() for ln in search.strip("\n").splitlines()]
    if all(_NUMBERED.match(ln) for ln in want):  # copied from the prompt's numbered listing, numbers and all
        want = [_NUMBERED.sub("", ln).strip() for ln in want]
        replace = "\n".join(_NUMBERED.sub("", ln) for ln in replace.splitlines())
    hits = [i for i in range(len(lines) - len(want) + 1)
            if [ln.strip() for ln in lines[i:i + len(want)]] == want]
    if len(hits) != 1:
        what = "matches no lines" if not hits else f"matches {len(hits)} places"
        raise UserError(f"search {what} in kernel.rs; copy the lines exactly as the current kernel.rs has them")
    i = hits[0]
    indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
    out = lines[:i] + _reindent(replace, indent) + lines[i + len(want):]
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")
