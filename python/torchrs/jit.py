"""torch.jit: ``trace``, ``load`` and ``save`` (the Rust JIT underneath: docs/src/jit.md)."""

import os as _os

from . import _C

ScriptModule = _C.ScriptModule


def trace(func, example_inputs, *args, **kwargs):
    """Runs ``func`` (a function or a module) once on ``example_inputs`` and records the
    operators it calls; a module's parameters and buffers become the traced module's."""
    inputs = (example_inputs,) if isinstance(example_inputs, _C.Tensor) else tuple(example_inputs)
    params, buffers = [], []
    if hasattr(func, "named_parameters") and hasattr(func, "named_buffers"):
        params = [(n, p) for n, p in func.named_parameters()]
        buffers = [(n, b) for n, b in func.named_buffers()]
    return _C._jit_trace(func, list(inputs), params, buffers)


def load(f, map_location=None, _extra_files=None):
    """Loads an archive written by ``save`` here or by PyTorch's ``torch.jit.save`` (traced
    models)."""
    return _C._jit_load(_os.fspath(f))


def save(m, f, _extra_files=None):
    m.save(_os.fspath(f))
