"""torch.cuda: what the Rust side has (the emulated device counts as a device)."""

from . import _C


def is_available():
    return _C._cuda_is_available()


def device_count():
    return _C._cuda_device_count()
