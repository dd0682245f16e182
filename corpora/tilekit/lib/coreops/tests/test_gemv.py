import numpy as np
import pytest

from coreops.device import DeviceArray
from coreops.ops.gemv import Gemv


@pytest.mark.parametrize("M,K", [(256, 1024), (100, 384)])
def test_gemv(M, K):
    op = Gemv(M, K)
    xh = np.random.randn(K).astype(np.float16)
    y = op(DeviceArray.from_host(xh, op.stream)).to_host()
    np.testing.assert_allclose(y.astype(np.float32), (op.w.to_host().astype(np.float32) @ xh.astype(np.float32)),
                               rtol=2e-2, atol=2e-1)
