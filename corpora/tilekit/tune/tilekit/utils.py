import torch
import cuda.tile as ct


def next_power_of_2(n: int) -> int:
    return 1 << (int(n) - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def num_sms(device=None) -> int:
    dev = torch.cuda.current_device() if device is None else device
    return torch.cuda.get_device_properties(dev).multi_processor_count


def launch(kernel, grid, *args):
    """Launch on torch's current stream (every op goes through here)."""
    ct.launch(torch.cuda.current_stream(), grid, kernel, args)
