"""``torch.nn.Parameter`` and ``torch.nn.Buffer``."""

from .. import _C

Tensor = _C.Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a ``Module`` attribute registers
    it. ``requires_grad`` defaults to True. The object is a detached alias of ``data``."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C._torch_functions["empty"](0)
        return Tensor._make_subclass(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        """A Parameter over a copy of the data, with the same ``requires_grad`` (no gradient)."""
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result


class Buffer(Tensor):
    """A tensor that is a module buffer: assigning one to a ``Module`` attribute registers it
    (``persistent=False`` leaves it out of the state dict)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C._torch_functions["empty"](0)
        t = Tensor._make_subclass(cls, data, data.requires_grad)
        t.persistent = persistent
        return t
