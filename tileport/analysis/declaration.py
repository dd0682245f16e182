"""The optional `TILEPORT` dict an op module declares: what static analysis cannot infer.

An op module may define, at top level, a literal dict (read from the source, never executed)::

    TILEPORT = {
        # Element dtypes the op supports; each becomes one instance of every variant.
        "dtypes": ["float16", "bfloat16", "float32"],
        # Named problem sizes for the correctness and performance stages.
        "shapes": [{"m": 4096, "n": 4096}, {"m": 1000, "n": 1000}],
        # Per-dtype tolerances; dtypes left out use tileport.toml's [tolerances].
        "tolerances": {"float16": {"atol": 2e-3, "rtol": 2e-3}},
        # Values to analyse for constants the wrapper computes at run time,
        # keyed "PARAM" (any kernel) or "kernel.PARAM".
        "constants": {"softmax_kernel.TILE_N": [1024, 4096]},
        # Parameters whose dtype is not the op dtype (or that static analysis cannot classify):
        # a dtype name, a map from op dtype to dtype, or {"dtype": ..., "ndim": ..., "kind": ...}.
        "params": {"row_ids": "int32", "scale": "float32", "acc": {"float16": "float32"}},
        # Full control: exactly these constant sets for a kernel (unnamed constants still
        # follow the rules below).
        "variants": [{"kernel": "matmul_kernel", "constants": {"TILE_M": 128, "TILE_N": 128}}],
    }

Every key is optional, and so is the dict. Without it: dtypes float16 and float32, no shapes,
tolerances from the config, constants from the `ct.launch` calls tileport can read statically;
a `ct.Constant[bool]` whose value is only known at run time is analysed both ways, and any
other run-time constant must be declared (the error says so).
"""

from __future__ import annotations

import ast
import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tileport.analysis.schema import ConstantValue, ToleranceSpec
from tileport.errors import UserError
from tileport.limits import MAX_DECLARED_INT

DECLARATION_NAME = "TILEPORT"
DEFAULT_DTYPES = ("float16", "float32")

# Element dtypes cuda-tile arrays and scalars can have (names as `cuda.tile` spells them).
DTYPES = (
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
)
_ALIASES = {"bool": "bool_", "half": "float16", "float": "float32", "double": "float64", "bf16": "bfloat16",
            "fp16": "float16", "fp32": "float32", "f16": "float16", "f32": "float32"}


def normalize_dtype(name: str) -> str:
    name = _ALIASES.get(name, name)
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}; use one of {', '.join(DTYPES)}")
    return name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParamDecl(_Strict):
    kind: Literal["array", "scalar"] | None = None
    dtype: str | dict[str, str] | None = None  # fixed, or op dtype -> dtype
    ndim: int | None = Field(None, ge=0, le=8)

    @field_validator("dtype")
    @classmethod
    def _dt(cls, v):
        if isinstance(v, str):
            return normalize_dtype(v)
        if isinstance(v, dict):
            return {normalize_dtype(k): normalize_dtype(x) for k, x in v.items()}
        return v

    def dtype_for(self, op_dtype: str) -> str | None:
        if isinstance(self.dtype, dict):
            return self.dtype.get(op_dtype, op_dtype)
        return self.dtype


class VariantDecl(_Strict):
    kernel: str
    constants: dict[str, ConstantValue] = Field(default_factory=dict)


class OpDeclaration(_Strict):
    dtypes: list[str] = Field(default_factory=lambda: list(DEFAULT_DTYPES), min_length=1)
    shapes: list[dict[str, Annotated[int, Field(gt=0, le=MAX_DECLARED_INT, strict=True)]]] = \
        Field(default_factory=list)
    tolerances: dict[str, ToleranceSpec] = Field(default_factory=dict)
    constants: dict[str, list[ConstantValue]] = Field(default_factory=dict)
    params: dict[str, ParamDecl] = Field(default_factory=dict)
    variants: list[VariantDecl] = Field(default_factory=list)
    present: bool = Field(False, exclude=True)  # set by the reader, not by the user

    @field_validator("dtypes")
    @classmethod
    def _dtypes(cls, v: list[str]) -> list[str]:
        out = [normalize_dtype(d) for d in v]
        if len(set(out)) != len(out):
            raise ValueError("lists a dtype twice")
        return out

    @field_validator("tolerances")
    @classmethod
    def _tol(cls, v: dict[str, ToleranceSpec]) -> dict[str, ToleranceSpec]:
        return {normalize_dtype(k): t for k, t in v.items()}

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: ({"dtype": x} if isinstance(x, str) else x) for k, x in v.items()}
        return v

    @field_validator("constants")
    @classmethod
    def _consts(cls, v: dict[str, list[ConstantValue]]) -> dict[str, list[ConstantValue]]:
        for key, values in v.items():
            if not values:
                raise ValueError(f"'{key}' has an empty list of values")
        return v

    def param(self, kernel: str, name: str) -> ParamDecl | None:
        return self.params.get(f"{kernel}.{name}") or self.params.get(name)

    def constant_values(self, kernel: str, name: str) -> list[ConstantValue] | None:
        return self.constants.get(f"{kernel}.{name}") or self.constants.get(name)


_BINOPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b,
    ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
}


class _OutOfRange(ValueError):
    """A number in the declaration beyond what any size, count or tolerance can be (names where)."""


def _bounded(x: Any, where: str) -> Any:
    if isinstance(x, bool):
        return x
    if isinstance(x, int) and abs(x) > MAX_DECLARED_INT:
        raise _OutOfRange(f"{where}: integer out of range (at most 2**62 in magnitude)")
    if isinstance(x, float) and not math.isfinite(x):
        raise _OutOfRange(f"{where}: {x} is not a finite number")
    if isinstance(x, complex):
        raise _OutOfRange(f"{where}: complex numbers are not allowed")
    return x


def _literal(node: ast.AST, where: str = DECLARATION_NAME) -> Any:
    """ast.literal_eval plus integer arithmetic (`1 << 20`, `4 * 1024`), every value and intermediate bounded."""
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("** in a dict")
        out = {}
        for k, v in zip(node.keys, node.values):
            key = _literal(k, where)
            out[key] = _literal(v, f"{where}[{str(key)[:40]!r}]")
        return out
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e, f"{where}[{i}]") for i, e in enumerate(node.elts)]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _literal(node.left, where), _literal(node.right, where)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
            raise _OutOfRange(f"{where}: arithmetic on non-numbers; write the value out")
        if isinstance(node.op, (ast.Pow, ast.LShift)) and abs(b) > 256:
            raise _OutOfRange(f"{where}: number too large (exponent or shift over 256)")
        try:
            return _bounded(_BINOPS[type(node.op)](a, b), where)
        except OverflowError:
            raise _OutOfRange(f"{where}: number too large") from None
        except ZeroDivisionError:
            raise _OutOfRange(f"{where}: division by zero") from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand, where)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ValueError("sign on a non-number")
        return _bounded(-v if isinstance(node.op, ast.USub) else v, where)
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 4096:
        raise _OutOfRange(f"{where}: string longer than 4096 characters")
    return _bounded(ast.literal_eval(node), where)


def find_declaration_node(tree: ast.Module) -> ast.expr | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == DECLARATION_NAME for t in stmt.targets):
            return stmt.value
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                and stmt.target.id == DECLARATION_NAME and stmt.value is not None:
            return stmt.value
    return None


def read_declaration(tree: ast.Module, filename: str) -> OpDeclaration:
    """The module's TILEPORT dict, validated; defaults when it has none."""
    node = find_declaration_node(tree)
    if node is None:
        return OpDeclaration()
    where = f"{filename}:{node.lineno}"
    try:
        raw = _literal(node)
    except _OutOfRange as e:
        raise UserError(f"{where}: {e}") from None
    except (ValueError, TypeError, SyntaxError, ZeroDivisionError, RecursionError, MemoryError):
        raise UserError(f"{where}: {DECLARATION_NAME} must be a literal dict (numbers, strings, lists, "
                        f"dicts); tileport reads it without running the module") from None
    if not isinstance(raw, dict):
        raise UserError(f"{where}: {DECLARATION_NAME} must be a dict, got {type(raw).__name__}")
    try:
        decl = OpDeclaration.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        if first["type"] == "extra_forbidden":
            raise UserError(f"{where}: {DECLARATION_NAME} has unknown key '{key}'; allowed keys: dtypes, shapes, "
                            f"tolerances, constants, params, variants (see tileport.analysis.declaration)") from None
        msg = first["msg"].removeprefix("Value error, ")
        raise UserError(f"{where}: {DECLARATION_NAME}['{key}']: {msg}") from None
    decl.present = True
    return decl
