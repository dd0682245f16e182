"""RMSNorm over the last dimension of a tensor of any rank."""
import torch
import cuda.tile as ct

from ..config import DEFAULT_TILE_N
from ..utils import launch, next_power_of_2


@ct.kernel
def _rmsnorm_fwd(x, w, y, eps, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ms = ct.sum(t * t, axis=1, keepdims=True) / x.shape[1]
    wt = ct.reshape(ct.load(w, index=(0,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO), (1, TILE_N))
    ct.store(y, index=(row, 0), tile=(t * ct.rsqrt(ms + eps) * wt.astype(ct.float32)).astype(y.dtype))


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    assert x.dtype in (torch.float16, torch.bfloat16, torch.float32), f"unsupported dtype {x.dtype}"
    assert weight.shape[0] == x.size(-1), "weight must match the hidden size"
    hidden = x.size(-1)
    x2 = x.reshape(-1, hidden)
    y = torch.empty_like(x2)
    tile_n = min(next_power_of_2(hidden), DEFAULT_TILE_N * 8)
    launch(_rmsnorm_fwd, (x2.shape[0], 1, 1), x2, weight, y, eps, tile_n)
    return y.view(x.shape)
