"""Deterministic cuTile Python -> cutile-rs draft translator (no model).

    from tileport.agents.draft import draft_port
    draft = draft_port(analysis, kernel=None)  # analysis: tileport.validators.analysis.schema.Analysis
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
generics; `num_tiles`/`cdiv`/`//` on scalars; scalar parameters; occupancy / num_cta_in_cga hints per target.
"""

from tileport.agents.draft.model import Draft, Hole, HostContract, HostEntry, HostParam, HostVariant
from tileport.agents.draft.port import draft_port

__all__ = ["Draft", "Hole", "HostContract", "HostEntry", "HostParam", "HostVariant", "draft_port"]
