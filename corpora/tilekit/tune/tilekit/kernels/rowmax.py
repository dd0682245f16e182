"""Row maximum as a bare kernel: callers allocate the output and launch it themselves (see tests/kernels)."""
import cuda.tile as ct


@ct.kernel
def rowmax_kernel(x, out, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
    ct.store(out, index=(row,), tile=ct.reshape(ct.max(t, axis=1), (1,)))
