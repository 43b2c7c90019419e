"""The Python-level methods of ``torch.Tensor`` that PyTorch writes in Python
(``torch/_tensor.py``): the operators and their reflected and in-place forms, ``to``,
``numpy``, ``T``/``mT``. The class itself is ``torchrs._C.Tensor``; these are set on it."""

import collections as _collections

from . import _C

Tensor = _C.Tensor
_f = _C._torch_functions


def _as_operand(other):
    """A Python number on the left of an operator becomes a wrapped number (it does not take
    part in type promotion as a tensor would), as PyTorch's reflected operators do."""
    if isinstance(other, Tensor):
        return other
    return _C._wrapped_number(other)


def _binary(name):
    op = _f[name]

    def method(self, other):
        try:
            return op(self, other)
        except TypeError:
            if not isinstance(other, (int, float, bool)):
                if isinstance(other, Tensor):
                    raise
                return NotImplemented
        # An operator without a Scalar overload takes the number as a wrapped number.
        return op(self, _C._wrapped_number(other))

    method.__name__ = name
    return method


def _reflected(name):
    op = _f[name]

    def method(self, other):
        if not isinstance(other, (Tensor, int, float, bool)):
            return NotImplemented
        return op(_as_operand(other), self)

    method.__name__ = name
    return method


def _inplace(name):
    def method(self, other):
        if not isinstance(other, Tensor) and isinstance(other, (int, float, bool)):
            try:
                return getattr(self, name)(other)
            except TypeError:
                other = _C._wrapped_number(other)
        return getattr(self, name)(other)

    method.__name__ = name
    return method


_BINARY = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "matmul": "matmul", "and": "bitwise_and",
    "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift",
}
# + - * / @ (and unary -) are slots written in Rust (Note [Operators in Rust] in
# python/src/tensor.rs); the others are set here.
_IN_RUST = {"add", "sub", "mul", "truediv", "matmul"}
for _py, _op in _BINARY.items():
    if _py not in _IN_RUST:
        setattr(Tensor, f"__{_py}__", _binary(_op))
        setattr(Tensor, f"__r{_py}__", _reflected(_op))
    setattr(Tensor, f"__i{_py}__", _inplace(_op + "_"))
# Commutative reflected forms keep the tensor first, as PyTorch's do.
Tensor.__rand__ = _binary("bitwise_and")
Tensor.__ror__ = _binary("bitwise_or")
Tensor.__rxor__ = _binary("bitwise_xor")
Tensor.__imatmul__ = None
Tensor.__itruediv__ = _inplace("div_")
Tensor.__ifloordiv__ = _inplace("floor_divide_")
Tensor.__imod__ = _inplace("remainder_")

for _py, _op in {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}.items():
    setattr(Tensor, f"__{_py}__", _binary(_op))
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: _f["abs"](self)
Tensor.__invert__ = lambda self: _f["bitwise_not"](self)


def _numpy(self, *, force=False):
    """A numpy array sharing this tensor's memory."""
    if force:
        return self.detach().cpu().resolve_conj()._numpy_shared()
    return self._numpy_shared()


Tensor.numpy = _numpy
Tensor.__array__ = lambda self, dtype=None, copy=None: (
    self.numpy() if dtype is None else self.numpy().astype(dtype, copy=False)
)
Tensor.T = property(lambda self: self.permute(list(range(self.dim() - 1, -1, -1))))
Tensor.mT = property(lambda self: self.transpose(-2, -1))
Tensor.H = property(lambda self: self.T.conj())
Tensor.mH = property(lambda self: self.mT.conj())


def _to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``, with ``non_blocking``,
    ``copy`` and ``memory_format`` keywords, as PyTorch's."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    non_blocking = kwargs.pop("non_blocking", False)
    copy = kwargs.pop("copy", False)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):
        other = rest.pop(0)
        dtype, device = other.dtype, other.device
    elif rest and isinstance(rest[0], _C.dtype):
        dtype = rest.pop(0)
    elif rest and isinstance(rest[0], (str, int, _C.device)):
        device = _C.device(rest.pop(0)) if not isinstance(rest[0], _C.device) else rest.pop(0)
        if rest and isinstance(rest[0], _C.dtype):
            dtype = rest.pop(0)
    if rest:
        non_blocking = rest.pop(0)
    if rest:
        copy = rest.pop(0)
    if rest:
        raise TypeError("to() received an invalid combination of arguments")
    if device is not None and not isinstance(device, _C.device):
        device = _C.device(device)
    if device is None:
        if dtype is None:
            return self.clone() if copy else self
        return _to_op(self, dtype, non_blocking, copy, memory_format=memory_format)
    dtype = self.dtype if dtype is None else dtype
    return _to_op(self, device, dtype, non_blocking, copy, memory_format=memory_format)


# The schema's `to` overloads (to.dtype, to.device), kept for the Python-level `to` above.
_to_op = Tensor.__dict__["to"]
Tensor.to = _to
Tensor.cpu = lambda self: self.to("cpu")
Tensor.cuda = lambda self, device=None: self.to(_C.device("cuda" if device is None else device))
Tensor.float = lambda self: self.to(_C.float32)
Tensor.double = lambda self: self.to(_C.float64)
Tensor.half = lambda self: self.to(_C.float16)
Tensor.bfloat16 = lambda self: self.to(_C.bfloat16)
Tensor.long = lambda self: self.to(_C.int64)
Tensor.int = lambda self: self.to(_C.int32)
Tensor.bool = lambda self: self.to(_C.bool)
Tensor.type_as = lambda self, other: self.to(other.dtype)
Tensor.__format__ = lambda self, spec: self.item().__format__(spec) if self.dim() == 0 else object.__format__(self, spec)
Tensor.__contains__ = lambda self, v: bool((self == v).any())
Tensor.__reversed__ = lambda self: self.flip(0)
Tensor.__array_priority__ = 1000

# Methods PyTorch has whose Rust name would clash with Rust's own (`Clone::clone`): the YAML
# keeps them functions, Python gets them as methods here.
Tensor.clone = lambda self, *, memory_format=None: _f["clone"](self, memory_format=memory_format)


# Methods PyTorch has that the YAML does not make methods: `new_*` factories (functions here),
# `lerp_` (no in-place overload in the YAML) and `__deepcopy__` (for `copy.deepcopy(model)`).
def _new_factory(name):
    op = _f[name]

    def method(self, *args, dtype=None, device=None, requires_grad=False, **kwargs):
        if len(args) > 0 and name != "new_full" and not isinstance(args[0], (list, tuple)):
            args = (list(args),)
        out = op(self, *args, dtype=dtype if dtype is not None else self.dtype,
                 device=device if device is not None else self.device, **kwargs)
        return out.requires_grad_(True) if requires_grad else out

    method.__name__ = name
    return method


for _name in ("new_zeros", "new_ones", "new_empty", "new_full"):
    if _name in _f and _name not in Tensor.__dict__:
        setattr(Tensor, _name, _new_factory(_name))


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    if isinstance(data, Tensor):
        t = data.detach().clone().to(device=device or self.device, dtype=dtype or self.dtype)
    else:
        t = _C.tensor(data, dtype=dtype or self.dtype, device=device or self.device)
    return t.requires_grad_(True) if requires_grad else t


if "new_tensor" not in Tensor.__dict__:
    Tensor.new_tensor = _new_tensor


def _lerp_(self, end, weight):
    """self + weight * (end - self), in place."""
    return self.copy_(_f["lerp"](self, end, weight))


if "lerp_" not in Tensor.__dict__:
    Tensor.lerp_ = _lerp_


def _deepcopy(self, memo):
    """A copy with its own storage, keeping ``requires_grad``, the gradient and the class."""
    if id(self) in memo:
        return memo[id(self)]
    import copy

    new = self.detach().clone()
    if type(self) is not Tensor:
        new = Tensor._make_subclass(type(self), new, self.requires_grad)
    else:
        new.requires_grad_(self.requires_grad)
    memo[id(self)] = new
    if self.grad is not None:
        new.grad = copy.deepcopy(self.grad, memo)
    new.__dict__.update(copy.deepcopy(self.__dict__, memo))
    return new


if "__deepcopy__" not in Tensor.__dict__:
    Tensor.__deepcopy__ = _deepcopy


def _return_type(name, fields):
    """The named tuple of an operator with named returns, printed as PyTorch's
    ``torch.return_types.<name>``."""
    base = _collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
        return f"torch.return_types.{name}(\n{body})"

    return type(name, (base,), {"__repr__": __repr__, "__slots__": (), "__module__": "torch.return_types"})


def _split(self, split_size_or_sections, dim=0):
    """``split`` with an int (pieces of that size) or a list of sizes, as PyTorch's Python
    ``Tensor.split``."""
    if isinstance(split_size_or_sections, int):
        return _f["split"](self, split_size_or_sections, dim)
    return _f["split_with_sizes"](self, list(split_size_or_sections), dim)


Tensor.split = _split

_LEGACY_TYPES = {
    "torch.FloatTensor": _C.float32, "torch.DoubleTensor": _C.float64, "torch.HalfTensor": _C.float16,
    "torch.BFloat16Tensor": _C.bfloat16, "torch.LongTensor": _C.int64, "torch.IntTensor": _C.int32,
    "torch.ShortTensor": _C.int16, "torch.CharTensor": _C.int8, "torch.ByteTensor": _C.uint8,
    "torch.BoolTensor": _C.bool,
}


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """``x.type()`` is the legacy type name (``torch.FloatTensor``); ``x.type(dtype)`` (a dtype or
    such a name) converts."""
    if dtype is None:
        return self.type_name()
    if isinstance(dtype, str):
        dtype = _LEGACY_TYPES[dtype]
    return self.to(dtype, non_blocking=non_blocking)


Tensor.type = _type


# Operators the YAML has as functions only that PyTorch also has as methods.
Tensor.mode = lambda self, dim=-1, keepdim=False: _f["mode"](self, dim, keepdim)
Tensor.unique = lambda self, sorted=True, return_inverse=False, return_counts=False, dim=None: (
    __import__("torchrs").unique(self, sorted, return_inverse, return_counts, dim))
