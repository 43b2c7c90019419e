"""Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d."""

import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

_f = _C._torch_functions


def _ntuple(n):
    def parse(x):
        if isinstance(x, (list, tuple)):
            return tuple(x)
        return (x,) * n

    return parse


_single, _pair, _triple = _ntuple(1), _ntuple(2), _ntuple(3)


def _reverse_repeat_tuple(t, n):
    return tuple(x for x in reversed(t) for _ in range(n))


class _ConvNd(Module):
    """What the convolutions share: their arguments, weight and bias and their initialisation
    (kaiming_uniform_(a=sqrt(5)) and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias)."""


    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed, output_padding,
                 groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(_f["empty"](shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_f["empty"](out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class _Conv(_ConvNd):
    _tuple = None
    _op = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        t = type(self)._tuple
        kernel_size_ = t(kernel_size)
        stride_ = t(stride)
        padding_ = padding if isinstance(padding, str) else t(padding)
        dilation_ = t(dilation)
        super().__init__(in_channels, out_channels, kernel_size_, stride_, padding_, dilation_, False, t(0), groups,
                         bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        op = getattr(F, type(self)._op)
        if self.padding_mode != "zeros":
            mode = "constant" if self.padding_mode == "zeros" else self.padding_mode
            return op(F.pad(input, self._reversed_padding_repeated_twice, mode=mode), weight, bias, self.stride,
                      type(self)._tuple(0), self.dilation, self.groups)
        return op(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) input."""

    _tuple = staticmethod(_single)
    _op = "conv1d"


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) input; weight (out, in/groups, kH, kW)."""

    _tuple = staticmethod(_pair)
    _op = "conv2d"


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) input."""

    _tuple = staticmethod(_triple)
    _op = "conv3d"


class _ConvTransposeNd(_ConvNd):
    _tuple = None
    _op = None
    _dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        t = type(self)._tuple
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), t(padding), t(dilation), True,
                         t(output_padding), groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        if output_size is None:
            return type(self)._tuple(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {tuple(input.size())[2:]})")
        return tuple(output_size[d] - min_sizes[d] for d in range(num_spatial_dims))

    def forward(self, input, output_size=None):
        n = type(self)._dims
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, n,
                                              self.dilation)
        return getattr(F, type(self)._op)(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                          self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """The gradient of Conv1d with respect to its input, as a layer; weight (in, out/groups, k)."""

    _tuple = staticmethod(_single)
    _op = "conv_transpose1d"
    _dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """The gradient of Conv2d with respect to its input, as a layer; weight (in, out/groups, kH, kW)."""

    _tuple = staticmethod(_pair)
    _op = "conv_transpose2d"
    _dims = 2


class ConvTranspose3d(_ConvTransposeNd):
    _tuple = staticmethod(_triple)
    _op = "conv_transpose3d"
    _dims = 3
