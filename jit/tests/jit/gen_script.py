"""Generates the scripted models the jit tests load: each compiled with torch.jit.script and saved
with torch.jit.save (`<name>.pt`, TorchScript with control flow in its `code/`), with two input
sets that take different branches or sizes and PyTorch's outputs for each
(`<name>.io.safetensors`: `a.input0`, ..., `a.output0`, ..., `b.input0`, ...). An `int` input or
output is a 0-dim int64 tensor; an Optional input left out of a set has no entry (it is None).

Run by hand from the repository root: python3 jit/tests/jit/gen_script.py [name ...] (no names:
every model). Needs only PyTorch.
"""
import os
import sys
import warnings
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import OUT, save_file  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)


class Branch(nn.Module):
    """A data-dependent `if`."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 4)
        self.fc2 = nn.Linear(6, 4)

    def forward(self, x):
        if x.sum() > 0:
            y = self.fc1(x)
        else:
            y = torch.relu(self.fc2(x)) - 1.0
        return y


class RnnLoop(nn.Module):
    """A `for` over time steps."""

    def __init__(self):
        super().__init__()
        self.ih = nn.Linear(5, 8)
        self.hh = nn.Linear(8, 8)

    def forward(self, x):
        h = torch.zeros(x.size(1), 8)
        for t in range(x.size(0)):
            h = torch.tanh(self.ih(x[t]) + self.hh(h))
        return h


class WhileBreak(nn.Module):
    """A `while` with a `break`, and an int output."""

    def forward(self, x, limit: float):
        k = 0
        while k < 50:
            x = x * 0.5 + 0.01
            k += 1
            if float(x.abs().max()) < limit:
                break
        return x, k


class Layers(nn.Module):
    """Loops over a ModuleList (with enumerate) and a Sequential."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(6, 6) for _ in range(3)])
        self.head = nn.Sequential(nn.Linear(6, 4), nn.Tanh())

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i % 2 == 0:
                x = torch.relu(x)
        for m in self.head:
            x = m(x)
        return x


class OptionalArg(nn.Module):
    """An Optional argument: left out in one input set."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, h: Optional[torch.Tensor] = None):
        if h is None:
            h = torch.ones_like(x)
        else:
            h = h * 2.0
        return self.fc(x) * h


class TupleReturn(nn.Module):
    """A tuple of a tensor, a reduction and an int."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x) -> Tuple[torch.Tensor, torch.Tensor, int]:
        y = self.fc(x)
        n = y.size(0) * 10 + y.dim()
        return y, y.sum(dim=1), n


class ListStack(nn.Module):
    """A list built with append, then torch.stack."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        outs: List[torch.Tensor] = []
        for t in range(x.size(1)):
            if t % 2 == 1:
                continue
            outs.append(self.fc(x[:, t]))
        return torch.stack(outs, 1)


class Greedy(nn.Module):
    """Greedy decoding with an early exit on the end token."""

    def __init__(self, eos: int = -1):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.cell = nn.GRUCell(8, 8)
        self.out = nn.Linear(8, 10)
        self.eos = eos

    def forward(self, h, start: int, max_len: int):
        tok = torch.full([h.size(0)], start, dtype=torch.long)
        tokens: List[torch.Tensor] = []
        for _ in range(max_len):
            h = self.cell(self.emb(tok), h)
            tok = self.out(h).argmax(dim=1)
            tokens.append(tok)
            if int(tok[0]) == self.eos:
                break
        return torch.stack(tokens, 1), h


class ScriptLoop(nn.Module):
    """The W7.script_loop bench row's model: a GRU cell over the time steps of its input."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(32, 64)

    def forward(self, x):
        h = torch.zeros(x.size(1), 64)
        for t in range(x.size(0)):
            h = self.cell(x[t], h)
        return h


class DictRoute(nn.Module):
    """Dicts: an annotated empty one filled by `d[k] = v`, literals keyed by strings and ints,
    `in`, `get` with and without a default, iteration over items and keys, `pop`, `del`,
    `update`, `len`, `keys()` and `values()`; which heads run depends on the input's sign."""

    def __init__(self):
        super().__init__()
        self.fa = nn.Linear(4, 3)
        self.fb = nn.Linear(4, 3)

    def forward(self, x, scale: float):
        feats: Dict[str, torch.Tensor] = {}
        feats["a"] = self.fa(x)
        feats["b"] = self.fb(x)
        weights = {"a": 1.0, "b": -0.5}
        if float(x.sum()) > 0:
            feats["pos"] = torch.relu(x[:, :3])
            weights["pos"] = scale
        out = torch.zeros(x.size(0), 3)
        for k, v in feats.items():
            out = out + v * weights.get(k, 0.0)
        n = len(feats)
        extra = feats.get("pos")
        if extra is not None:
            out = out - extra
        first = feats.pop("a")
        del weights["b"]
        counts = {0: 1}
        for i in range(x.size(0)):
            counts[i % 2] = counts.get(i % 2, 0) + 1
        total = 0
        for k in counts:
            total += counts[k] * (k + 1)
        feats.update({"z": first * 2.0})
        names = list(feats.keys())
        rest = torch.stack(list(feats.values())).sum(0)
        return out, first + feats["z"], n, len(names), total, len(weights), rest


def scalar(v):
    return torch.tensor(v, dtype=torch.int64 if isinstance(v, int) else torch.float64)


def main():
    torch.manual_seed(0)
    greedy = Greedy()
    h0 = torch.randn(1, 8)
    with torch.no_grad():
        # The end token: one the undecided model first emits at step 2 or later from h0.
        toks, _ = greedy(h0, 1, 12)
        seen = toks[0].tolist()
        greedy.eos = next(t for i, t in enumerate(seen) if i >= 2 and t not in seen[:i])
    models = {
        "s_branch": (Branch(), [[torch.rand(3, 6)], [-torch.rand(3, 6)]]),
        "s_rnn_loop": (RnnLoop(), [[torch.randn(5, 2, 5)], [torch.randn(2, 3, 5)]]),
        "s_while_break": (WhileBreak(), [[torch.randn(3, 4), 0.05], [torch.randn(3, 4) * 100, 1e-9]]),
        "s_layers": (Layers(), [[torch.randn(2, 6)], [torch.randn(5, 6)]]),
        "s_optional": (OptionalArg(), [[torch.randn(2, 4), torch.randn(2, 4)], [torch.randn(3, 4)]]),
        "s_tuple": (TupleReturn(), [[torch.randn(2, 4)], [torch.randn(7, 4)]]),
        "s_list_stack": (ListStack(), [[torch.randn(2, 5, 3)], [torch.randn(4, 2, 3)]]),
        "s_greedy": (greedy, [[h0, 1, 12], [torch.randn(1, 8), 3, 6]]),
        "s_dict": (DictRoute(), [[torch.rand(3, 4), 0.7], [-torch.rand(2, 4), 2.0]]),
        # 50 steps of batch 8, as the bench row runs it.
        "w7_script_loop": (ScriptLoop(), [[torch.randn(50, 8, 32)], [torch.randn(3, 2, 32)]]),
    }
    wanted = sys.argv[1:] or list(models)
    for name, (model, sets) in models.items():
        if name not in wanted:
            continue
        model.eval()
        scripted = torch.jit.script(model)
        torch.jit.save(scripted, os.path.join(OUT, f"{name}.pt"))
        io = {}
        shapes = []
        for tag, inputs in zip("ab", sets):
            with torch.no_grad():
                outputs = model(*inputs)
            if not isinstance(outputs, tuple):
                outputs = (outputs,)
            for i, v in enumerate(inputs):
                io[f"{tag}.input{i}"] = v.contiguous() if isinstance(v, torch.Tensor) else scalar(v)
            for i, v in enumerate(outputs):
                io[f"{tag}.output{i}"] = v.contiguous() if isinstance(v, torch.Tensor) else scalar(v)
            shapes.append([tuple(v.shape) if isinstance(v, torch.Tensor) else v for v in outputs])
        save_file(io, os.path.join(OUT, f"{name}.io.safetensors"))
        print(name, "->", shapes)


if __name__ == "__main__":
    main()
