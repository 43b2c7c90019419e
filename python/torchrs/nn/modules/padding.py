"""Padding layers over ``F.pad``."""

from .. import functional as F
from .module import Module


def _ntuple(value, n):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


class _PadNd(Module):
    _mode = "constant"
    _n = 0

    def __init__(self, padding, value=None):
        super().__init__()
        self.padding = _ntuple(padding, 2 * type(self)._n)
        if value is not None:
            self.value = value

    def forward(self, input):
        if type(self)._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, type(self)._mode)

    def extra_repr(self):
        if type(self)._mode == "constant":
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_class(name, mode, n, doc):
    if mode == "constant" and name.startswith("Zero"):
        def __init__(self, padding):
            _PadNd.__init__(self, padding, 0.0)

        def extra_repr(self):
            return f"{self.padding}"

        attrs = {"__init__": __init__, "extra_repr": extra_repr}
    elif mode == "constant":
        def __init__(self, padding, value):
            _PadNd.__init__(self, padding, value)

        attrs = {"__init__": __init__}
    else:
        def __init__(self, padding):
            _PadNd.__init__(self, padding)

        attrs = {"__init__": __init__}
    attrs.update({"_mode": mode, "_n": n, "__doc__": doc, "__module__": __name__})
    return type(name, (_PadNd,), attrs)


ConstantPad1d = _pad_class("ConstantPad1d", "constant", 1, "Pads the last dim with ``value``.")
ConstantPad2d = _pad_class("ConstantPad2d", "constant", 2, "Pads the last 2 dims with ``value``.")
ConstantPad3d = _pad_class("ConstantPad3d", "constant", 3, "Pads the last 3 dims with ``value``.")
ZeroPad1d = _pad_class("ZeroPad1d", "constant", 1, "Pads the last dim with zeros.")
ZeroPad2d = _pad_class("ZeroPad2d", "constant", 2, "Pads the last 2 dims with zeros.")
ZeroPad3d = _pad_class("ZeroPad3d", "constant", 3, "Pads the last 3 dims with zeros.")
ReflectionPad1d = _pad_class("ReflectionPad1d", "reflect", 1, "Pads the last dim with its reflection.")
ReflectionPad2d = _pad_class("ReflectionPad2d", "reflect", 2, "Pads the last 2 dims with their reflection.")
ReflectionPad3d = _pad_class("ReflectionPad3d", "reflect", 3, "Pads the last 3 dims with their reflection.")
ReplicationPad1d = _pad_class("ReplicationPad1d", "replicate", 1, "Pads the last dim with its edge values.")
ReplicationPad2d = _pad_class("ReplicationPad2d", "replicate", 2, "Pads the last 2 dims with their edge values.")
ReplicationPad3d = _pad_class("ReplicationPad3d", "replicate", 3, "Pads the last 3 dims with their edge values.")
CircularPad1d = _pad_class("CircularPad1d", "circular", 1, "Pads the last dim circularly.")
CircularPad2d = _pad_class("CircularPad2d", "circular", 2, "Pads the last 2 dims circularly.")
CircularPad3d = _pad_class("CircularPad3d", "circular", 3, "Pads the last 3 dims circularly.")
