"""torchrs: PyTorch's Python API on the Rust framework of this repository.

``import torchrs as torch`` is the one line a PyTorch program changes. Tensors are
``torchrs.Tensor`` objects (one per tensor, cached in the tensor itself); every operator of
the framework's ``native_functions.yaml`` is a function here and, where the schema says so, a
method of ``Tensor``, bound by one generated argument parser (python/src/parser.rs).
"""

import builtins as _builtins
import sys as _sys
import types as _types

from . import _C
from ._C import (  # noqa: F401
    Generator,
    Tensor,
    bfloat16,
    bool,
    channels_last,
    channels_last_3d,
    complex64,
    complex128,
    contiguous_format,
    device,
    dtype,
    float16,
    float32,
    float64,
    from_dlpack,
    from_numpy,
    get_num_threads,
    int8,
    int16,
    int32,
    int64,
    is_grad_enabled,
    layout,
    manual_seed,
    memory_format,
    preserve_format,
    set_num_threads,
    sparse_coo,
    sparse_csr,
    strided,
    tensor,
    uint8,
)
from . import _tensor  # noqa: F401  (the operators of Tensor)

# PyTorch's aliases of dtypes.
half, float, double = float16, float32, float64
cfloat, cdouble = complex64, complex128
short, int, long = int16, int32, int64


class Size(tuple):
    """``torch.Size``: the shape of a tensor, a tuple of ints."""

    def __repr__(self):
        return f"torch.Size({list(self)!r})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, k):
        r = tuple.__getitem__(self, k)
        return Size(r) if isinstance(k, _builtins.slice) else r


_C._set_size_class(Size)
__version__ = _C.__version__

# Every operator that is a function of the torch namespace. Some shadow Python's builtins here
# (`all`, `max`, `sum`, `abs`, ...), as in PyTorch's own module: code below uses `_builtins`.
globals().update({k: v for k, v in _C._torch_functions.items() if k not in globals()})


_schema_where = where
_schema_einsum = einsum
_schema_tensordot = tensordot


def split(tensor, split_size_or_sections, dim=0):
    """``torch.split``: pieces of one size (an int) or of the sizes listed."""
    return tensor.split(split_size_or_sections, dim)


def where(condition, input=None, other=None, *, out=None):
    """``torch.where(condition, input, other)``; ``torch.where(condition)`` is
    ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        return tuple(_C._torch_functions["nonzero"](condition).unbind(1))
    if out is not None:
        return _schema_where(condition, input, other, out=out)
    return _schema_where(condition, input, other)


def einsum(equation, *operands):
    """``torch.einsum(equation, *operands)`` (or a list of operands)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _schema_einsum(equation, list(operands))


def tensordot(a, b, dims=2, out=None):
    """``torch.tensordot``: ``dims`` an int (the last dims of ``a`` with the first of ``b``) or
    two lists of dimensions."""
    if isinstance(dims, _builtins.int):
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, _builtins.int) else list(da)
        db = [db] if isinstance(db, _builtins.int) else list(db)
    return _schema_tensordot(a, b, da, db)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """``torch.unique``: the distinct values (sorted), with the inverse indices and counts when
    asked for."""
    if dim is not None:
        raise NotImplementedError("torchrs.unique with dim= is not supported yet")
    values, inverse, counts = _C._torch_functions["_unique2"](input, sorted, return_inverse, return_counts)
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


def _submodule(name, functions, doc):
    m = _types.ModuleType(f"{__name__}.{name}", doc)
    m.__dict__.update(functions)
    _sys.modules[m.__name__] = m
    return m


linalg = _submodule("linalg", _C._linalg_functions, "torch.linalg: the linalg_* operators.")
linalg.LinAlgError = _C._LinAlgError
fft = _submodule("fft", _C._fft_functions, "torch.fft: the fft_* operators.")
special = _submodule("special", _C._special_functions, "torch.special: the special_* operators.")


def _sparse_sum(input, dim=None, dtype=None):
    """``torch.sparse.sum``: over every element (a 0-dim tensor) or over ``dim`` (sparse while
    sparse dimensions are left, strided once every sparse dimension is summed)."""
    if dim is None:
        out = _C._torch_functions["_sparse_sum"](input)
    else:
        out = _C._torch_functions["_sparse_sum"](input, [dim] if isinstance(dim, _builtins.int) else _builtins.list(dim))
    return out if dtype is None else out.to(dtype)


def _sparse_addmm(mat, mat1, mat2, *, beta=1, alpha=1):
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)`` with a gradient for the
    sparse ``mat1`` masked to its pattern."""
    return _C._torch_functions["_sparse_addmm"](mat, mat1, mat2, beta=beta, alpha=alpha)


def _sparse_softmax(input, dim, dtype=None):
    """``torch.sparse.softmax``: over the stored elements only (an unstored one takes no share)."""
    return _C._torch_functions["_sparse_softmax"](input, dim, dtype=dtype)


def _sparse_log_softmax(input, dim, dtype=None):
    """``torch.sparse.log_softmax``: the logarithm of ``torch.sparse.softmax``."""
    return _C._torch_functions["_sparse_log_softmax"](input, dim, dtype=dtype)


sparse = _submodule("sparse", {"mm": _C._torch_functions["_sparse_mm"], "sum": _sparse_sum, "addmm": _sparse_addmm,
                               "softmax": _sparse_softmax, "log_softmax": _sparse_log_softmax},
                    "torch.sparse: products and sums that keep sparse gradients sparse.")
# torch.special's aliases of operators that live under their own names.
for _alias, _op in {
    "erf": "erf", "erfc": "erfc", "erfinv": "erfinv", "expit": "sigmoid", "exp2": "exp2", "expm1": "expm1",
    "log1p": "log1p", "logit": "logit", "logsumexp": "logsumexp", "i0": "i0", "round": "round", "sinc": "sinc",
    "softmax": "softmax", "log_softmax": "log_softmax", "xlogy": "xlogy", "digamma": "digamma", "psi": "digamma",
    "gammaln": "lgamma", "polygamma": "polygamma", "multigammaln": "mvlgamma",
}.items():
    if _op in _C._torch_functions and not hasattr(special, _alias):
        setattr(special, _alias, _C._torch_functions[_op])

from . import autograd  # noqa: E402
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: E402,F401
from ._C import is_anomaly_enabled, is_inference_mode_enabled  # noqa: E402,F401
from . import cuda  # noqa: E402,F401
from . import jit  # noqa: E402,F401
from . import nn  # noqa: E402,F401
from . import optim  # noqa: E402,F401
from . import utils  # noqa: E402,F401


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(t):
    return t.numel()


def as_tensor(data, dtype=None, device=None):
    """Shares memory with a numpy array or a tensor when no conversion is needed."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    try:
        import numpy as _np
    except ImportError:  # pragma: no cover
        _np = None
    if _np is not None and isinstance(data, _np.ndarray):
        t = from_numpy(data)
        return t.to(device=device, dtype=dtype) if (dtype or device) else t
    return tensor(data, dtype=dtype, device=device)


def save(obj, f):
    """``torch.save`` for what a training script saves most: a dict of tensors (a model's
    ``state_dict()``), written as safetensors (``torch.load`` reads it back). Other objects are
    not supported yet."""
    import os as _os

    items = list(obj.items()) if hasattr(obj, "items") else None
    if items is None or not _builtins.all(isinstance(k, str) and isinstance(v, Tensor) for k, v in items):
        raise TypeError("torchrs.save saves a dict of str to Tensor (a state_dict) for now")
    _C._save_tensors([(k, v.detach()) for k, v in items], _os.fspath(f))


def load(f, map_location=None, weights_only=True, **kwargs):
    """``torch.load`` of a dict of tensors: a ``.pt`` file PyTorch's ``torch.save`` wrote (read by
    our weights-only reader) or a file ``torchrs.save`` wrote. ``map_location`` moves the
    tensors (a device, a string, or a dict or callable as PyTorch's)."""
    import os as _os

    d = _C._load_tensors(_os.fspath(f))
    if map_location is not None:
        for k, v in d.items():
            if callable(map_location):
                d[k] = map_location(v, str(v.device))
            elif isinstance(map_location, dict):
                d[k] = v.to(map_location.get(str(v.device), str(v.device)))
            else:
                d[k] = v.to(map_location)
    return d
