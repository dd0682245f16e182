"""An op module's `if __name__ == "__main__":` block(s), the one reading: stage A runs them as a launch source
(`testrun`), a pack carries an op that has one (`validators.gpu.carry`), and the GPU host's test child runs them as
the op's own check. Standard library only: it travels to the GPU host as `tp_mainblock.py`."""

from __future__ import annotations

import ast
from pathlib import Path


def main_block(tree: ast.Module) -> ast.Module | None:
    """The body of the module's `if __name__ == "__main__":` block(s), as a module of its own (None: no block)."""
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 and \
                isinstance(node.test.ops[0], ast.Eq):
            sides = [node.test.left, *node.test.comparators]
            if any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and \
                    any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides):
                body.extend(node.body)
    return ast.Module(body=body, type_ignores=[]) if body else None


def read_main_block(path: str | Path) -> ast.Module | None:
    """The main block of the module at `path`; None when it has none or cannot be read or parsed."""
    try:
        return main_block(ast.parse(Path(path).read_text(encoding="utf-8-sig")))
    except (OSError, SyntaxError, ValueError):
        return None


def has_main_block(path: str | Path) -> bool:
    """The module has an `if __name__ == "__main__":` block (its own check harness, as in many examples)."""
    return read_main_block(path) is not None
