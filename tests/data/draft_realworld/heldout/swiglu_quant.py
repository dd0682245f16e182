"""SwiGLU on a packed (tokens, 2*D) input, then a per-row absmax int8 quantisation; bit-level sign extraction."""
import torch
import cuda.tile as ct


@ct.kernel
def swiglu_kernel(X, Y, D: ct.Constant[int], TILE_T: ct.Constant[int]):
    t = ct.bid(0)
    xy = ct.load(X, index=(t, 0), shape=(TILE_T, 2 * D)).astype(ct.float32)
    gate = ct.extract(xy, index=(0, 0), shape=(TILE_T, D))
    up = ct.extract(xy, index=(0, 1), shape=(TILE_T, D))
    act = gate / (1.0 + ct.exp(-gate)) * up
    ct.store(Y, index=(t, 0), tile=act.astype(Y.dtype))


@ct.kernel
def quant_kernel(X, Q, Scale, D: ct.Constant[int]):
    row = ct.bid(0)
    x = ct.load(X, index=(row, 0), shape=(1, D)).astype(ct.float32)
    amax = ct.max(ct.abs(x), axis=1, keepdims=True)
    scale = ct.maximum(amax, 1e-8) / 127.0
    q = ct.astype(x / scale, ct.int8)
    ct.store(Q, index=(row, 0), tile=q)
    ct.store(Scale, index=(row,), tile=ct.reshape(scale, (1,)))


@ct.kernel
def sign_bits_kernel(X, S, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(X, index=(bid,), shape=(TILE,))
    bits = ct.bitcast(x, ct.int32)
    sign = ct.bitwise_and(ct.bitwise_rshift(bits, 31), 1)
    ct.store(S, index=(bid,), tile=sign)


def swiglu_quant(x: torch.Tensor):
    T, D2 = x.shape
    D = D2 // 2
    y = torch.empty((T, D), device=x.device, dtype=x.dtype)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(T, 16), 1, 1), swiglu_kernel, (x, y, D, 16))
    q = torch.empty((T, D), device=x.device, dtype=torch.int8)
    scale = torch.empty((T,), device=x.device, dtype=torch.float32)
    ct.launch(torch.cuda.current_stream(), (T, 1, 1), quant_kernel, (y, q, scale, D))
    return q, scale


def sign_bits(x: torch.Tensor) -> torch.Tensor:
    s = torch.empty(x.shape, device=x.device, dtype=torch.int32)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.numel(), 256), 1, 1), sign_bits_kernel, (x, s, 256))
    return s


if __name__ == "__main__":
    x = torch.randn(64, 2 * 256, device="cuda", dtype=torch.bfloat16)
    swiglu_quant(x)
    sign_bits(torch.randn(4096, device="cuda", dtype=torch.float32))
