import numpy as np

from coreops.device import DeviceArray, PackedWeights
from coreops.ops.scale_dlpack import row_scale


def test_row_scale():
    x = DeviceArray.from_host(np.random.randn(64, 3000).astype(np.float32))
    s = PackedWeights(DeviceArray.from_host(np.random.rand(64).astype(np.float32)))
    y = row_scale(x, s).to_host()
    assert y.shape == (64, 3000)
