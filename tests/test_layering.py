"""The one-way layout (README "Layout"): cli -> tui -> service -> agents -> validators / local_models /
worktrees -> exec -> the contract (records/, store/, config, errors, limits). A lower floor never imports a higher one; read from the source's import statements."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "tileport"
CONTRACT = {"records", "config", "errors", "limits", "store"}
# floor -> the floors it may import (besides itself)
ALLOWED = {
    "contract": CONTRACT,
    "exec": CONTRACT,
    "validators": CONTRACT | {"exec"},
    "local_models": CONTRACT | {"exec"},
    "worktrees": CONTRACT | {"exec"},
    "agents": CONTRACT | {"exec", "validators", "local_models", "worktrees"},
    "offline": CONTRACT | {"exec"},
    # what the CLI and the dashboard both call: above the agents, below tui and cli
    "service": CONTRACT | {"exec", "validators", "local_models", "worktrees", "agents", "offline"},
    "tui": CONTRACT | {"exec", "validators", "local_models", "worktrees", "agents", "offline", "service"},
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



def test_service_sits_above_the_agents_and_below_tui_and_cli():
    assert "service" not in ALLOWED["agents"] and "tui" not in ALLOWED["service"] and "cli" not in ALLOWED["service"]
    assert (PKG / "service.py").is_file() or (PKG / "service").is_dir()


def _store_internals(path: Path) -> list[str]:
    """Where a module reaches past the store's methods: the connection (`<anything>.db`) or SQLite itself."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "db":
            found.append(f"line {node.lineno}: .db")
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
                   "        pass\n")
    assert sorted(_store_internals(bad)) == ["line 1: imports sqlite_utils", "line 2: imports sqlite3", "line 4: .db"]
