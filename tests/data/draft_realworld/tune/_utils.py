"""Device helpers and module-level aliases shared by the tune ops (the way libraries keep a utils module)."""
import cuda.tile as ct

PAD_ZERO = ct.PaddingMode.ZERO
PAD_NEG_INF = ct.PaddingMode.NEG_INF
CONST_TYPE = ct.Constant[int]


def swizzle_2d(M, N, TILE_M, TILE_N, GROUP_SIZE_M):
    """Grouped block order for L2 reuse: returns the (row, col) tile this block computes."""
    bid = ct.bid(0)
    num_bid_m = ct.cdiv(M, TILE_M)
    num_bid_n = ct.cdiv(N, TILE_N)
    num_bid_in_group = GROUP_SIZE_M * num_bid_n
    group_id = bid // num_bid_in_group
    first_bid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_bid_m - first_bid_m, GROUP_SIZE_M)
    bid_m = first_bid_m + (bid % group_size_m)
    bid_n = (bid % num_bid_in_group) // group_size_m
    return bid_m, bid_n


def tile_coords(tile_id, num_bid_m, num_bid_n, GROUP_SIZE_M):
    """The swizzle of a persistent kernel: tile id -> (row, col)."""
    num_bid_in_group = GROUP_SIZE_M * num_bid_n
    group_id = tile_id // num_bid_in_group
    first_bid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_bid_m - first_bid_m, GROUP_SIZE_M)
    bid_m = first_bid_m + (tile_id % group_size_m)
    bid_n = (tile_id % num_bid_in_group) // group_size_m
    return bid_m, bid_n
