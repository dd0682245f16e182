"""Static reading of a Triton op (AST only, nothing imported): kernels and `kernel[grid](...)` launches.

Per `@triton.jit` kernel: parameters (`tl.constexpr` ones are constants; a parameter used as the base of a
`tl.load`/`tl.store` pointer is an array), constexpr branches, loads/stores (pointer accesses, masks and their
`other=` padding), notable `tl.*` math, loops, and the `triton.autotune` / `triton.heuristics` decorators.
Per host function: every `kernel[grid](...)` call with its grid text (a name bound to a lambda is shown as that
lambda), arguments, and constexpr keyword values that are literals.
"""

from __future__ import annotations

import ast
from typing import Any

from pydantic import BaseModel, Field

from tileport.analysis.schema import ConstantBranch, KernelInfo, LaunchInfo, MemoryOp, ParamInfo
from tileport.analysis.triton.detect import _decorator_name, triton_kernels
from tileport.analysis.triton.schema import TritonConfig, TritonKernel

MEMORY = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg"}
NOT_MATH = MEMORY | {"program_id", "num_programs", "arange", "constexpr", "static_assert", "static_print",
                     "multiple_of", "max_contiguous", "device_assert"}


class TritonStatic(BaseModel):
    kernels: list[KernelInfo] = Field(default_factory=list)
    launches: list[LaunchInfo] = Field(default_factory=list)
    triton: list[TritonKernel] = Field(default_factory=list)


def _tl_call(node: ast.AST) -> str | None:
    """`tl.foo(...)` / `triton.language.foo(...)` -> "foo"."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        base = node.func.value
        if isinstance(base, ast.Name) and base.id in ("tl", "language"):
            return node.func.attr
        if isinstance(base, ast.Attribute) and base.attr == "language":
            return node.func.attr
    return None


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _pointer_base(node: ast.expr, params: set[str], aliases: dict[str, ast.expr]) -> str | None:
    """The parameter a pointer expression is based on (`x_ptr + row * stride + cols` -> x_ptr)."""
    seen = 0
    stack = [node]
    while stack and seen < 200:
        n = stack.pop()
        seen += 1
        if isinstance(n, ast.Name):
            if n.id in params:
                return n.id
            if n.id in aliases:
                stack.append(aliases[n.id])
        elif isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)):
            stack.extend([n.right, n.left])
    return None


def _decorators(fn: ast.FunctionDef) -> TritonKernel:
    info = TritonKernel(kernel=fn.name)
    for d in fn.decorator_list:
        name = _decorator_name(d)
        if name == "autotune" and isinstance(d, ast.Call):
            kw = {k.arg: k.value for k in d.keywords}
            configs = kw.get("configs", d.args[0] if d.args else None)
            if isinstance(configs, ast.List):
                for c in configs.elts:
                    if isinstance(c, ast.Call):
                        kwargs = _literal(c.args[0]) if c.args else None
                        opts = {k.arg: _literal(k.value) for k in c.keywords if k.arg and k.arg != "pre_hook"}
                        info.configs.append(TritonConfig(kwargs=kwargs if isinstance(kwargs, dict) else {},
                                                         options={k: v for k, v in opts.items() if v is not None}))
            key = _literal(kw["key"]) if "key" in kw else None
            info.autotune_key = [str(k) for k in key] if isinstance(key, (list, tuple)) else []
        elif name == "heuristics" and isinstance(d, ast.Call):
            values = d.args[0] if d.args else next((k.value for k in d.keywords if k.arg == "values"), None)
            if isinstance(values, ast.Dict):
                info.heuristics = [k.value for k in values.keys if isinstance(k, ast.Constant)]
    return info


def _kernel(fn: ast.FunctionDef, source: str) -> KernelInfo:
    args = fn.args.args
    constexpr = {a.arg for a in args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
    names = {a.arg for a in args}
    aliases: dict[str, ast.expr] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            aliases.setdefault(node.targets[0].id, node.value)
    memory: list[MemoryOp] = []
    math: list[str] = []
    pointers: set[str] = set()
    branches: list[ConstantBranch] = []
    loops = 0
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.While)):
            loops += 1
        elif isinstance(node, ast.If):
            used = sorted({n.id for n in ast.walk(node.test) if isinstance(n, ast.Name) and n.id in constexpr})
            if used:
                branches.append(ConstantBranch(line=node.lineno, condition=ast.unparse(node.test), constants=used))
        op = _tl_call(node)
        if op is None:
            continue
        if op in MEMORY:
            kw = {k.arg: k.value for k in node.keywords}
            ptr = node.args[0] if node.args else kw.get("pointer")
            base = _pointer_base(ptr, names, aliases) if ptr is not None else None
            if base:
                pointers.add(base)
            memory.append(MemoryOp(line=node.lineno, op=f"tl.{op}", array=base, access="pointer",
                                   tile_shape=None, padding=ast.unparse(kw["other"]) if "other" in kw else None,
                                   masked="mask" in kw or len(node.args) > (2 if op == "load" else 3)))
        elif op not in NOT_MATH and op not in math:
            math.append(op)
    params = []
    for a in args:
        ann = ast.unparse(a.annotation) if a.annotation is not None else None
        if a.arg in constexpr:
            params.append(ParamInfo(name=a.arg, kind="constant", annotation=ann))
        elif a.arg in pointers:
            params.append(ParamInfo(name=a.arg, kind="array", annotation=ann))
        else:
            params.append(ParamInfo(name=a.arg, kind="scalar", annotation=ann))
    return KernelInfo(name=fn.name, line=fn.lineno, params=params, constant_branches=branches, memory_ops=memory,
                      math_ops=math, loops=loops)


def _launches(tree: ast.Module, kernels: dict[str, KernelInfo]) -> list[LaunchInfo]:
    out = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in kernels):
        lambdas = {t.id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                   for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Lambda)}
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in kernels):
                continue
            info = kernels[node.func.value.id]
            grid = node.func.slice
            grid_text = ast.unparse(lambdas[grid.id]) if isinstance(grid, ast.Name) and grid.id in lambdas \
                else ast.unparse(grid)
            consts = {p.name for p in info.params if p.kind == "constant"}
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            out.append(LaunchInfo(
                function=fn.name, line=node.lineno, kernel=info.name, grid=grid_text,
                args=[ast.unparse(a) for a in node.args] + [f"{k}={ast.unparse(v)}" for k, v in kw.items()],
                constants={k: (v if isinstance(v := _literal(e), (bool, int, float)) else None)
                           for k, e in kw.items() if k in consts},
                constant_exprs={k: ast.unparse(e) for k, e in kw.items() if k in consts}))
    return out


def inspect_triton(tree: ast.Module, source: str = "") -> TritonStatic:
    fns = triton_kernels(tree)
    kernels = {fn.name: _kernel(fn, source) for fn in fns}
    return TritonStatic(kernels=list(kernels.values()), launches=_launches(tree, kernels),
                        triton=[_decorators(fn) for fn in fns])
