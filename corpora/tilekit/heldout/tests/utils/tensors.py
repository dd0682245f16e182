import torch


def make_pair(shape, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, generator=g, device="cuda", dtype=torch.float32).to(dtype),
            torch.randn(shape, generator=g, device="cuda", dtype=torch.float32).to(dtype))
