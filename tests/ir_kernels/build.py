"""Compile cuTile Python kernels to Tile IR bytecode and text, the way the analyze stage does.

`export_kernel(..., output_format="tileir_bytecode", bytecode_version="13.4")` is pure Python;
`tileirdisasm` (from the nvidia-cuda-tileiras wheel) turns the bytecode into text.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import cuda.tile as ct
from cuda.tile.compilation import ArrayConstraint, CallingConvention, KernelSignature, ScalarConstraint, export_kernel

from tileport.exec.proc import run_command
from tileport.exec.toolchain import resolve

GPU = "sm_90"
BYTECODE_VERSION = "13.4"


def tileirdisasm() -> Path | None:
    return resolve().tileirdisasm


def array(dtype, ndim: int, *, aligned: bool = True, index_dtype=ct.int32, **kw) -> ArrayConstraint:
    """What the JIT assumes for an ordinary torch tensor: 16-byte aligned base, contiguous last dim."""
    args = dict(
        index_dtype=index_dtype,
        stride_lower_bound_incl=0,
        alias_groups=(),
        may_alias_internally=False,
        stride_constant=(None,) * (ndim - 1) + (1,),
        base_addr_divisible_by=16 if aligned else 1,
    )
    args.update(kw)
    return ArrayConstraint(dtype, ndim, **args)


def scalar(dtype) -> ScalarConstraint:
    return ScalarConstraint(dtype)


def signature(*params, symbol: str | None = None) -> KernelSignature:
    return KernelSignature(list(params), CallingConvention.cutile_python_v2(), symbol=symbol)


def compile_bytecode(kernel, signatures, path: str | Path) -> Path:
    if isinstance(signatures, KernelSignature):
        signatures = [signatures]
    export_kernel(kernel, list(signatures), str(path), output_format="tileir_bytecode", gpu_code=GPU,
                  bytecode_version=BYTECODE_VERSION)
    return Path(path)


def disassemble(path: str | Path, debug_info: bool = False) -> str:
    tool = tileirdisasm()
    if tool is None:
        raise RuntimeError("tileirdisasm not found (pip install 'cuda-tile[tileiras]')")
    argv = [tool, *(["-g"] if debug_info else []), str(path)]
    res = run_command(argv, timeout=120)
    if not res.ok:
        raise RuntimeError(f"tileirdisasm failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout


def compile_text(kernel, signatures, *, debug_info: bool = False) -> str:
    with tempfile.TemporaryDirectory(prefix="tileport-ir-") as d:
        bc = compile_bytecode(kernel, signatures, Path(d) / "k.tileirbc")
        return disassemble(bc, debug_info=debug_info)
