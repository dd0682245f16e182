"""Generate the writer's shipped reference data.

    python -m tileport.agents.reference.generate [--crate DIR] [--ports DIR --examples DIR] [--check]

- `cutile_api.json`: every public function and inherent method of `cutile::core` (src/_core.rs of the pinned cutile
  crate, found in the cargo registry), its declaration and the first sentence of its doc comment; and, for each
  `ct.*` the draft translator knows, the cutile names its translation writes (read from the draft's tables and the
  source of its handler, so the map follows the translator).
- `worked_ports.json`: the repository's hand-written ports (ports/NAME/kernel.rs) with the Python they port
  (examples/NAME.py) and the ct.* functions that source calls.

`--check` compares instead of writing (exit 1 when the shipped files are stale).
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from pathlib import Path

from tileport.agents.reference.data import (API_FILE, PORTS_FILE, ApiFn, ApiReference, WorkedPort, WorkedPorts,
                                             ct_functions)
from tileport.errors import UserError

HERE = Path(__file__).parent
CUTILE_VERSION = "0.5.0"
_FN = re.compile(r"^\s*pub fn ([A-Za-z_][A-Za-z0-9_]*)")
_IMPL = re.compile(r"^(?P<indent>\s*)impl\b(?P<head>.*)$")
_SKIP = re.compile(r"^(__|check_|validate_|get_tensor_|get_partition_|cast_|dim_|coord[23]_|partition_with_bounds|"
                   r"partition_index_)")


def find_crate() -> Path:
    import os

    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    hits = sorted(home.glob(f"registry/src/*/cutile-{CUTILE_VERSION}"))
    if not hits:
        raise UserError(f"cutile {CUTILE_VERSION} sources are not in {home}/registry/src; build any port once "
                        "(`tileport doctor` then `tileport run`) or pass --crate DIR")
    return hits[0]


def _doc(lines: list[str], i: int) -> str:
    """The first sentence of the `///` block above line i (attributes between are skipped)."""
    j = i - 1
    while j >= 0 and lines[j].strip().startswith("#["):
        j -= 1
    doc: list[str] = []
    while j >= 0 and lines[j].strip().startswith("///"):
        doc.insert(0, lines[j].strip()[3:].strip())
        j -= 1
    text = " ".join(d for d in doc if d)
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    return (m.group(1) if m else text)[:200]


def parse_core(source: str) -> list[ApiFn]:
    lines = source.splitlines()
    out: list[ApiFn] = []
    owner_stack: list[tuple[str, str]] = []  # (indent, owner)
    in_core = False
    for i, line in enumerate(lines):
        if line.startswith("pub mod core"):
            in_core = True
        if not in_core:
            continue
        if owner_stack and line.rstrip() == owner_stack[-1][0] + "}":
            owner_stack.pop()
            continue
        m = _IMPL.match(line)
        if m and line.rstrip().endswith("{"):
            head = m.group("head")
            if head.startswith("<"):  # strip `impl<...>` generics with nesting
                depth = 0
                for k, ch in enumerate(head):
                    depth += ch == "<"
                    depth -= ch == ">"
                    if depth == 0:
                        head = head[k + 1:]
                        break
            owner_stack.append((m.group("indent"), "" if re.search(r"\bfor\b", head) else
                                (re.match(r"\s*([A-Z][A-Za-z0-9_]*)", head) or [None, ""])[1] or ""))
            continue
        fm = _FN.match(line)
        if not fm or _SKIP.match(fm.group(1)):
            continue
        sig = [line.strip()]
        k = i
        while not re.search(r"[{;]\s*$", sig[-1]) and k + 1 < len(lines):
            k += 1
            sig.append(lines[k].strip())
        text = re.sub(r"\s+", " ", " ".join(sig)).rstrip("{; ").replace("( ", "(").replace(", )", ")")
        if "unsafe" in text:
            continue
        owner = owner_stack[-1][1] if owner_stack else ""
        if owner_stack and not owner:
            continue  # a trait impl's method: the operators, documented in the prompt
        out.append(ApiFn(name=fm.group(1), owner=owner, signature=text, doc=_doc(lines, i)))
    return out


def ct_map(api_names: set[str]) -> dict[str, list[str]]:
    """ct.X -> cutile names the draft translator writes for it (its tables, then its handlers' source)."""
    from tileport.draft import syntax
    from tileport.draft import values as draft_values
    from tileport.draft.body import BodyTranslator

    out: dict[str, list[str]] = {}
    for py, rs in syntax.UNARY_MATH.items():
        out[py] = [rs]
    for py, rs in syntax.REDUCTIONS.items():
        out[py] = [rs]
    for attr in dir(BodyTranslator):
        if not attr.startswith("ct_"):
            continue
        fn = getattr(BodyTranslator, attr)
        src = inspect.getsource(fn)
        # one level down: the helpers the handler delegates to (self._minmax, self.reduce, ...)
        for helper in re.findall(r"self\.([a-z_][a-z0-9_]*)\(", src):
            h = getattr(BodyTranslator, helper, None)
            if callable(h) and not helper.startswith("ct_"):
                try:
                    src += inspect.getsource(h)
                except (OSError, TypeError):
                    pass
        # and the draft's own spelling helpers it calls (values.constant_tile, ...)
        for helper in dict.fromkeys(re.findall(r"\b([a-z_][a-z0-9_]*)\(", src)):
            h = getattr(draft_values, helper, None)
            if inspect.isfunction(h):
                src += inspect.getsource(h)
        names: dict[str, None] = {}
        for lit in re.findall(r"\"([^\"]*)\"|'([^']*)'", src):
            text = lit[0] or lit[1]
            # a call written in a template (`reduce_sum(...)`, `convert_tile::<...>`), or a table value ("addf")
            words = re.findall(r"([a-z_][a-z0-9_]*)\s*(?:\(|::<)", text)
            if re.fullmatch(r"[a-z_][a-z0-9_]*", text):
                words.append(text)
            for word in words:
                if word in api_names:
                    names.setdefault(word, None)
        out.setdefault(attr[3:], [])
        out[attr[3:]] = list(dict.fromkeys(out[attr[3:]] + list(names)))
    return dict(sorted(out.items()))


def build_api(crate: Path) -> ApiReference:
    core = crate / "src" / "_core.rs"
    if not core.is_file():
        raise UserError(f"{core} is missing: pass --crate DIR of the cutile {CUTILE_VERSION} sources")
    fns = parse_core(core.read_text(encoding="utf-8"))
    return ApiReference(crate="cutile", version=CUTILE_VERSION, functions=fns, ct_map=ct_map({f.name for f in fns}))


def build_ports(ports: Path, examples: Path) -> WorkedPorts:
    out = []
    for d in sorted(p for p in ports.iterdir() if (p / "kernel.rs").is_file()):
        py = examples / f"{d.name}.py"
        if not py.is_file():
            continue
        python = py.read_text(encoding="utf-8")
        out.append(WorkedPort(name=d.name, ct_functions=ct_functions(python), python=python,
                              kernel_rs=(d / "kernel.rs").read_text(encoding="utf-8")))
    return WorkedPorts(ports=out)


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[3]
    ap = argparse.ArgumentParser(prog="python -m tileport.agents.reference.generate", description=__doc__)
    ap.add_argument("--crate", type=Path, default=None)
    ap.add_argument("--ports", type=Path, default=root / "ports")
    ap.add_argument("--examples", type=Path, default=root / "examples")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    try:
        api = build_api(a.crate or find_crate())
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    texts = {API_FILE: api.model_dump_json(indent=1) + "\n",
             PORTS_FILE: build_ports(a.ports, a.examples).model_dump_json(indent=1) + "\n"}
    stale = [n for n, t in texts.items() if not (HERE / n).is_file() or (HERE / n).read_text(encoding="utf-8") != t]
    if a.check:
        for n in stale:
            print(f"{HERE / n} is stale: run python -m tileport.agents.reference.generate")
        return 1 if stale else 0
    for n, t in texts.items():
        (HERE / n).write_text(t, encoding="utf-8")
    print(f"{len(api.functions)} cutile functions, {len(api.ct_map)} ct.* mappings; "
          f"{len(texts)} files in {HERE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
