"""Deterministic cuTile Python -> cutile-rs draft translator (no model).

    from tileport.draft import draft_port
    draft = draft_port(analysis, kernel=None)  # analysis: tileport.analysis.schema.Analysis
    draft.kernel_rs        # the kernel.rs text: one `#[cutile::module]` with one entry per kernel x branch choice
    draft.spec             # tileport.validators.rust.spec.DumpSpec (spec.json): variants naming their references
    draft.host_contract    # HostContract: entries, generics order, params (outputs marked), grid, assumptions
    draft.holes            # list[Hole]; str(hole) == "unsupported: ct.X at op.py:L:C"; empty when complete
    draft.write(dir)       # kernel.rs + spec.json + host_contract.json

What it translates (the rest becomes a hole, never guessed code): block ids and counts; `ct.load`/`ct.store` and
`Array.tiled_view` loads/stores with index, tile shape, padding and `order` (view loads stay view loads);
elementwise arithmetic with explicit broadcasting; `exp`, `exp2`/`rsqrt` (flush-to-zero kept), `log`, `tanh`, ...;
`ct.add/sub/mul/truediv` with rounding modes; `maximum`/`minimum` (nan/ftz flags kept); `where`; comparisons and
boolean `&`/`|`; reductions with axis and keepdims; `ct.mma` with its accumulator; `astype`; `full`/`zeros`/
`ones`/`arange`; `reshape`/`expand_dims`/`transpose`; `for ... in range(...)` with loop-carried values; constant
branches (folded: each branch choice is its own entry, as the analysis' variants say); `ct.Constant` ints as const
generics; `num_tiles`/`cdiv`/`//` on scalars; scalar parameters; occupancy / num_cta_in_cga hints per target
(`ct.ByTarget` read from the decorator, per-launch hints per entry).

Issue #35: values static per variant fold first (dtype switches such as `ct.tfloat32 if A.dtype == ct.float32 else
A.dtype` specialise the entry per dtype; `x is None` of an array parameter; int constants that tile extents or float
arithmetic compute with, `.ndim`); `if` on run-time scalars is a Rust `if` (reassigned values carried as `let mut`
copies); tuple-returning helpers unpack; module-level enum/dtype aliases; `t[:, None]`; 0-d loads; store
`latency=` / `allow_tma=False`; gather/scatter `latency=`; `exp`/`tanh` `rounding_mode=`; shifts, `bitcast`, `cat`,
`extract`, `matmul` / `@`; implicit store casts and mixed-dtype promotion; rank > 3 outputs as `&Tensor` written
through an unsafe PartitionMut (`shared_output` in the contract; every view of them, whatever comes first). After a
hole, the hole's output is a typed placeholder (placeholder.py), so the statements after it still translate.

Values that start as None: `for ... in ct.static_iter(...)` is unrolled as cuTile unrolls it (unroll.py), so
`acc = t if acc is None else acc + t` is the first item's tile, then one `+` per later item; a value None before a
run-time `if` that every path through it sets is a `let mut` before the `if` with a typed zero no path reads. In a
run-time loop cuTile Python itself rejects such a value (cuda-tile 1.7: "Type of `acc` depends on path taken").
"""

from tileport.draft.schema import Draft, Hole, HostContract, HostEntry, HostParam, HostVariant
from tileport.draft.port import draft_port

__all__ = ["Draft", "Hole", "HostContract", "HostEntry", "HostParam", "HostVariant", "draft_port"]
