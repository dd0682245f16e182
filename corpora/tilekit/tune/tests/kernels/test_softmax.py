import pytest
import torch
import cuda.tile as ct

from tilekit.kernels.softmax import log_softmax_rows, softmax_rows
from tilekit.utils import next_power_of_2


def run(kernel, x):
    y = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (x.shape[0], 1, 1), kernel, (x, y, next_power_of_2(x.shape[1])))
    return y


@pytest.mark.parametrize("M,N", [(1024, 1024), (100, 3000)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_softmax(M, N, dtype):
    x = torch.randn(M, N, dtype=dtype, device="cuda")
    torch.testing.assert_close(run(softmax_rows, x), torch.softmax(x.float(), -1).to(dtype), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", [torch.float32])
def test_log_softmax(dtype):
    x = torch.randn(64, 512, dtype=dtype, device="cuda")
    torch.testing.assert_close(run(log_softmax_rows, x), torch.log_softmax(x, -1), rtol=1e-4, atol=1e-4)
