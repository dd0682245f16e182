import os

import pytest


@pytest.fixture(autouse=True)
def _seed():
    import torch

    torch.manual_seed(1234)


def pytest_unconfigure(config):
    # skip interpreter teardown (the CUDA context's atexit hooks are slow on CI)
    os._exit(0)
