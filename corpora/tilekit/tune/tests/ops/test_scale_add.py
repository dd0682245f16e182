import pytest
import torch

from helpers.compare import assert_matches
from tilekit.config import TileConfig
from tilekit.ops.scale_add import scale_add


@pytest.mark.parametrize("shape", [(8, 4096), (3, 5, 1000), (1024, 1024)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_scale_add(shape, dtype):
    x = torch.randn(shape, dtype=dtype, device="cuda")
    y = torch.randn(shape, dtype=dtype, device="cuda")
    assert_matches(scale_add(x, y, alpha=0.5), (0.5 * x.float() + y.float()).to(dtype))


@pytest.mark.parametrize("tile_n", [128, 512])
def test_scale_add_tile_config(tile_n):
    x = torch.randn(64, 3000, dtype=torch.float16, device="cuda")
    y = torch.randn_like(x)
    assert_matches(scale_add(x, y, alpha=-2.0, config=TileConfig(tile_n=tile_n)), (-2.0 * x.float() + y.float()).half())


def test_scale_add_rejects_mismatched_shapes():
    x = torch.randn(4, 8, device="cuda")
    with pytest.raises(ValueError):
        scale_add(x, torch.randn(4, 9, device="cuda"))


@pytest.mark.skip(reason="float64 is not supported by the kernel yet")
def test_scale_add_float64():
    x = torch.randn(16, 16, dtype=torch.float64, device="cuda")
    scale_add(x, x)
