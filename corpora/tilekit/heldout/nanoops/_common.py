import torch
import cuda.tile as ct

WARP_TILE = 32
DEVICE = "cuda"


def ceil_div(a, b):
    return -(-a // b)


def pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def sm_count():
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return props.multi_processor_count


def run_kernel(kernel, grid, args, stream=None):
    stream = torch.cuda.current_stream() if stream is None else stream
    ct.launch(stream, grid, kernel, tuple(args))
