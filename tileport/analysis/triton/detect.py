"""Which source kind a module is: Triton (`@triton.jit` kernels) or cuTile Python (`@ct.kernel`)."""

from __future__ import annotations

import ast

JIT_NAMES = {"jit"}  # @triton.jit, @jit (from triton import jit)


def _decorator_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def triton_kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    """Top-level functions decorated with triton's `jit` (possibly under autotune/heuristics)."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(_decorator_name(d) in JIT_NAMES and _is_triton(d)
                                                     for d in node.decorator_list):
            out.append(node)
    return out


def _is_triton(d: ast.expr) -> bool:
    node = d.func if isinstance(d, ast.Call) else d
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id == "triton"
    return isinstance(node, ast.Name)  # `from triton import jit`


def imports_triton(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "triton" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
            return True
    return False


def is_triton_source(tree: ast.Module) -> bool:
    """True for a module that imports triton and defines at least one `@triton.jit` kernel."""
    return imports_triton(tree) and bool(triton_kernels(tree))
