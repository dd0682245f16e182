import pytest
import torch
import cuda.tile as ct

from tilekit.kernels.rowmax import rowmax_kernel
from tilekit.utils import next_power_of_2


@pytest.mark.parametrize("rows,cols", [(256, 1024), (100, 777)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_rowmax(rows, cols, dtype):
    x = torch.randn(rows, cols, dtype=dtype, device="cuda")
    out = torch.empty(rows, dtype=dtype, device="cuda")
    ct.launch(torch.cuda.current_stream(), (rows, 1, 1), rowmax_kernel, (x, out, next_power_of_2(cols)))
    torch.testing.assert_close(out, x.max(dim=1).values, rtol=0, atol=0)
