"""Time flash_attention against torch SDPA."""
import torch

from tilekit.ops.attention import flash_attention

if __name__ == "__main__":
    for B, H, S, D in [(8, 16, 2048, 64), (4, 32, 4096, 128)]:
        q, k, v = (torch.randn(B, H, S, D, dtype=torch.float16, device="cuda") for _ in range(3))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            flash_attention(q, k, v)
        end.record()
        torch.cuda.synchronize()
        print(B, H, S, D, start.elapsed_time(end) / 10, "ms")
