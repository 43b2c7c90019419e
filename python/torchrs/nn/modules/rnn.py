"""Recurrent layers: RNN, LSTM, GRU (over the framework's ``rnn_tanh``/``rnn_relu``, ``lstm``
and ``gru`` operators) and the cells RNNCell, LSTMCell, GRUCell."""

import math
import numbers
import warnings

from ... import _C
from .. import init
from ..parameter import Parameter
from .module import Module

_f = _C._torch_functions


class RNNBase(Module):
    """Parameters ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``
    (``_reverse`` for the backward direction; ``weight_hr_l{k}`` with ``proj_size``), all
    initialised from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    _gates = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be an integer greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        gate_size = self._gates[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input_size)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                for kind, shape in shapes:
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(_f["empty"](shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _prepare(self, input, hx, state_size):
        """Batches an unbatched input and checks it; zero states when ``hx`` is None."""
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D tensor "
                             "instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1 if not self.batch_first else 0)
        if input.size(-1) != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.size(-1)}")
        return input, batched

    def _zeros(self, input, size):
        batch = input.size(0 if self.batch_first else 1)
        layers = self.num_layers * (2 if self.bidirectional else 1)
        return _f["zeros"]((layers, batch, size), dtype=input.dtype, device=input.device)

    def _args(self):
        return (self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional,
                self.batch_first)


class RNN(RNNBase):
    """An Elman RNN: h_t = tanh (or relu)(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)

    def forward(self, input, hx=None):
        input, batched = self._prepare(input, hx, self.hidden_size)
        if hx is None:
            hx = self._zeros(input, self.hidden_size)
        elif not batched:
            hx = hx.unsqueeze(1)
        op = _f["rnn_tanh"] if self.mode == "RNN_TANH" else _f["rnn_relu"]
        output, hidden = op(input, hx, *self._args())
        if not batched:
            output, hidden = output.squeeze(1 if not self.batch_first else 0), hidden.squeeze(1)
        return output, hidden


class LSTM(RNNBase):
    """Long short-term memory; ``forward(input, (h_0, c_0))`` returns ``output, (h_n, c_n)``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        input, batched = self._prepare(input, hx, self.hidden_size)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = (self._zeros(input, real_hidden), self._zeros(input, self.hidden_size))
        elif not batched:
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        output, h, c = _f["lstm"](input, list(hx), *self._args())
        if not batched:
            output, h, c = output.squeeze(1 if not self.batch_first else 0), h.squeeze(1), c.squeeze(1)
        return output, (h, c)


class GRU(RNNBase):
    """Gated recurrent unit; ``forward(input, h_0)`` returns ``output, h_n``."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        input, batched = self._prepare(input, hx, self.hidden_size)
        if hx is None:
            hx = self._zeros(input, self.hidden_size)
        elif not batched:
            hx = hx.unsqueeze(1)
        output, hidden = _f["gru"](input, hx, *self._args())
        if not batched:
            output, hidden = output.squeeze(1 if not self.batch_first else 0), hidden.squeeze(1)
        return output, hidden


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_f["empty"]((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(_f["empty"]((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_f["empty"](num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(_f["empty"](num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _gates(self, input, hx):
        gi = _f["linear"](input, self.weight_ih, self.bias_ih)
        gh = _f["linear"](hx, self.weight_hh, self.bias_hh)
        return gi, gh

    def _batch(self, input, hx, n_states):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = _f["zeros"]((input.size(0), self.hidden_size), dtype=input.dtype, device=input.device)
            hx = zeros if n_states == 1 else (zeros, zeros)
        elif not batched:
            hx = hx.unsqueeze(0) if n_states == 1 else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        return input, hx, batched


class RNNCell(RNNCellBase):
    """h' = tanh (or relu)(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, hx, batched = self._batch(input, hx, 1)
        gi, gh = self._gates(input, hx)
        if self.nonlinearity == "tanh":
            h = (gi + gh).tanh()
        elif self.nonlinearity == "relu":
            h = (gi + gh).relu()
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """Gates i, f, g, o from x W_ih^T + b_ih + h W_hh^T + b_hh; c' = f c + i g, h' = o tanh(c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, (h, c), batched = self._batch(input, hx, 2)
        gi, gh = self._gates(input, h)
        i, f, g, o = (gi + gh).chunk(4, 1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """r, z from the summed gates; n = tanh(x_n + r h_n); h' = (1 - z) n + z h."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, h, batched = self._batch(input, hx, 1)
        gi, gh = self._gates(input, h)
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r = (i_r + h_r).sigmoid()
        z = (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        h = (1 - z) * n + z * h
        return h if batched else h.squeeze(0)
