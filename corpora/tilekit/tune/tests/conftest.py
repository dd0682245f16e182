import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def pytest_collection_modifyitems(config, items):
    if not torch.cuda.is_available():
        for it in items:
            it.add_marker(pytest.mark.skip(reason="needs a CUDA device"))
