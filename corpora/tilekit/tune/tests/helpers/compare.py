"""Per-dtype tolerances shared by the op tests."""
import torch

TOLERANCES = {torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2), torch.float32: (1e-5, 1e-5)}


def assert_matches(out: torch.Tensor, ref: torch.Tensor) -> None:
    rtol, atol = TOLERANCES[out.dtype]
    torch.testing.assert_close(out, ref, rtol=rtol, atol=atol)
