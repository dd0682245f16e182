"""The one-way layout (README "Layout"): cli -> tui -> service -> pipeline -> agents -> draft -> validators /
local_models / worktrees -> analysis -> exec -> the contract (records/, store/, config, errors, limits). A lower
floor never imports a higher one; read from the source's import statements."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "tileport"
CONTRACT = {"records", "config", "errors", "limits", "store"}
# floor -> the floors it may import (besides itself)
ALLOWED = {
    "contract": CONTRACT,
    "exec": CONTRACT,
    "analysis": CONTRACT | {"exec"},  # stage A's engine: the reference, judged by nothing
    "validators": CONTRACT | {"exec", "analysis"},
    "local_models": CONTRACT | {"exec"},
    "worktrees": CONTRACT | {"exec"},
    "draft": CONTRACT | {"exec", "analysis", "validators"},  # the deterministic translator: no model
    "agents": CONTRACT | {"exec", "analysis", "validators", "draft", "local_models", "worktrees"},  # model-side
    "pipeline": CONTRACT | {"exec", "analysis", "validators", "draft", "local_models", "worktrees", "agents"},
    "offline": CONTRACT | {"exec"},
    # what the CLI and the dashboard both call: above the pipeline, below tui and cli
    "service": CONTRACT | {"exec", "analysis", "validators", "draft", "local_models", "worktrees", "agents",
                           "pipeline", "offline"},
    "tui": CONTRACT | {"exec", "analysis", "validators", "draft", "local_models", "worktrees", "agents", "pipeline",
                       "offline", "service"},
}


def floor_of(top: str) -> str:
    return "contract" if top in CONTRACT else top


def imports_of(path: Path) -> set[str]:
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            parts = name.split(".")
            if parts[0] == "tileport" and len(parts) > 1:
                tops.add(parts[1])
    return tops


def test_no_floor_imports_a_higher_one():
    wrong = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        top = rel.parts[0].removesuffix(".py")
        floor = floor_of(top)
        if floor not in ALLOWED:
            continue  # cli, __main__: the top floor
        for target in imports_of(path):
            if floor_of(target) != floor and floor_of(target) not in ALLOWED[floor] and target not in ALLOWED[floor]:
                wrong.append(f"{rel} ({floor}) imports tileport.{target}")
    assert not wrong, "\n".join(wrong)


def test_the_contract_imports_only_the_contract():
    files = [*(PKG / "records").rglob("*.py"), PKG / "config.py", PKG / "errors.py", PKG / "limits.py"]
    for path in files:
        assert imports_of(path) <= {"errors", "records", "config"}, path
    for path in (PKG / "store").rglob("*.py"):  # the store knows the records and its limits, nothing above
        assert imports_of(path) <= {"errors", "records", "config", "limits", "store"}, path



def test_service_sits_above_the_pipeline_and_below_tui_and_cli():
    assert "service" not in ALLOWED["pipeline"] and "tui" not in ALLOWED["service"] and "cli" not in ALLOWED["service"]
    assert "pipeline" not in ALLOWED["agents"] and "agents" not in ALLOWED["draft"]  # the model side: below the spine
    assert (PKG / "service").is_dir() and (PKG / "pipeline").is_dir()


def test_every_package_has_a_floor():
    """A new top-level package names its floor here (else the layering check would skip it silently)."""
    tops = {p.name.removesuffix(".py") for p in PKG.iterdir() if p.name != "__pycache__" and not p.name.startswith(".")
            and (p.is_dir() or p.suffix == ".py")}
    unplaced = {t for t in tops if floor_of(t) not in ALLOWED} - {"cli", "__main__", "__init__"}
    assert not unplaced, f"top-level modules with no floor in ALLOWED: {sorted(unplaced)}"


def _store_internals(path: Path) -> list[str]:
    """Where a module reaches past the store's methods: the connection (`<anything>.db`), its private transaction
    (`._write`: the public one is `Store.transaction`) or SQLite itself."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and (node.attr == "db" or (
                node.attr == "_write" and not (isinstance(node.value, ast.Name) and node.value.id == "self"))):
            found.append(f"line {node.lineno}: .{node.attr}")  # (a class's own self._write is its own business)
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found += [f"line {node.lineno}: imports {n}" for n in names if n.split(".")[0] in ("sqlite3", "sqlite_utils")]
    return found


def test_only_the_store_touches_the_database():
    """The store is the typed boundary: outside tileport/store/ nothing opens SQLite or uses a store's connection
    (a transaction that spans several writes is a store method, e.g. `Store.deciding`)."""
    wrong = [f"{path.relative_to(PKG)} {what}" for path in sorted(PKG.rglob("*.py"))
             if path.relative_to(PKG).parts[0] != "store" for what in _store_internals(path)]
    assert not wrong, "\n".join(wrong)


def test_the_store_internals_check_sees_a_connection_and_an_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import sqlite_utils\nfrom sqlite3 import connect\ndef f(store):\n    with store.db.atomic():\n"
                   "        pass\n    with store._write():\n        self._write()\n")
    assert sorted(_store_internals(bad)) == ["line 1: imports sqlite_utils", "line 2: imports sqlite3", "line 4: .db",
                                             "line 6: ._write"]


# --- the faces: cli/ and tui/ call the service, read the store's read model and render ---------------------------
FACES = ("cli", "tui")
# what a face may import besides `tileport.service`, `tileport.store.queries`, records/, the contract's config,
# errors and limits, and the faces themselves: read-only renderers, by name (they format or read, decide nothing)
RENDERERS = {
    "tileport.validators.rust.diagnostics": {"render_text", "live_line"},
    "tileport.validators.rust.selfcheck": {"format_self_check"},
    "tileport.validators.tileir.report": {"format_report"},
    "tileport.analysis.triton.record": {"reference_summary"},
    "tileport.validators.gpu.reports": {"launch_summary", "host_summary"},
    "tileport.exec.sandbox": {"tool_argv"},
    "tileport.agents.transcripts": {"load_transcript", "tool_arguments"},
}
# (face file, what it imports) pairs still to route through the service; only ever shrinks
NOT_YET: set[tuple[str, str]] = set()


def _face_may_import(module: str, name: str | None) -> bool:
    parts = module.split(".")
    if parts[0] != "tileport":
        return True
    if parts == ["tileport"] and name is None:
        return True  # `import tileport`: the package itself (its path), no floor
    top = parts[1] if len(parts) > 1 else name
    if top in ("service", "records", "config", "errors", "limits", *FACES, "__version__"):
        return True
    if module == "tileport.store.queries" or (module == "tileport.store" and name == "queries"):
        return True
    return name is not None and name in RENDERERS.get(module, ())


def face_imports(path: Path) -> list[str]:
    """What a face module imports that it may not: 'module' or 'module.name', one per import."""
    wrong = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            wrong += [f"{node.module}.{a.name}" for a in node.names if not _face_may_import(node.module, a.name)]
        elif isinstance(node, ast.Import):
            wrong += [a.name for a in node.names if not _face_may_import(a.name, None)]
    return wrong


def test_the_faces_import_only_the_service_the_read_model_records_and_renderers():
    """`cli/` and `tui/` decide nothing: every verb is `tileport.service`'s (one door), the store is read through
    `store.queries`, and what else they import is a read-only renderer named in RENDERERS."""
    found = {(str(path.relative_to(PKG)), what) for face in FACES for path in sorted((PKG / face).rglob("*.py"))
             for what in face_imports(path)}
    assert found <= NOT_YET, "\n".join(f"{f} imports {w} (route it through tileport.service)"
                                       for f, w in sorted(found - NOT_YET))
    assert not NOT_YET - found, f"routed meanwhile: drop from NOT_YET: {sorted(NOT_YET - found)}"


def test_the_face_check_sees_a_verb_reached_past_the_service(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from tileport.worktrees.merge import merge\nimport tileport.pipeline.runner\n"
                   "from tileport.store import Store, queries\nfrom tileport import service\n"
                   "from tileport.validators.rust.selfcheck import format_self_check, self_check\n")
    assert face_imports(bad) == ["tileport.worktrees.merge.merge", "tileport.pipeline.runner", "tileport.store.Store",
                                 "tileport.validators.rust.selfcheck.self_check"]


def test_the_service_face_is_lazy():
    """`from tileport import service` costs nothing at start-up: the verbs' modules load when first asked for."""
    import subprocess
    import sys

    code = ("import sys; from tileport import service; assert not [m for m in sys.modules if m.startswith("
            "('tileport.agents', 'tileport.pipeline', 'tileport.draft', 'tileport.analysis', 'tileport.service.'))], "
            "sorted(sys.modules); service.store_path; "
            "assert 'tileport.service.conversions' in sys.modules and 'tileport.pipeline.runner' not in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], cwd=PKG.parent, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
