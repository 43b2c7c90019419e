"""Generates the torch.export programs the jit tests load: each exported with torch.export.export
and saved with torch.export.save (`<name>.pt2`), with two input sets (of different batch sizes
where the batch dimension is dynamic) and PyTorch's outputs for each from `ep.module()`
(`<name>.io.safetensors`: `a.input0`, ..., `a.output0`, ..., `b.input0`, ...). Programs with
buffers the forward mutates also hold the buffers after each set (`a.buffer.<fqn>`), the sets
run in order on one module.

Run by hand from the repository root: python3 jit/tests/jit/gen_export.py [name ...] (no names:
every program). Needs only PyTorch.
"""
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import OUT, ResBlock, save_file  # noqa: E402

warnings.filterwarnings("ignore")


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class BNTrain(nn.Module):
    """BatchNorm in training mode: the forward updates its running statistics."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 5)
        self.bn = nn.BatchNorm1d(5)

    def forward(self, x):
        return torch.relu(self.bn(self.fc(x))) * 2


class Flatten(nn.Module):
    """Sizes read at run time (`x.size(0)`), two outputs."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        y = F.max_pool2d(torch.tanh(self.conv(x)), 1)
        flat = y.reshape(x.size(0), -1)
        return self.fc(flat), flat.mean(dim=1)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def main():
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=2, max=64)
    # name: (module, example inputs, dynamic shapes, input sets, decompose to the ATen IR).
    programs = {
        "e_mlp": (MLP(), {"x": {0: batch}}, [[torch.randn(3, 8)], [torch.randn(17, 8)]], False),
        "e_bn_train": (BNTrain().train(), {"x": {0: batch}}, [[torch.randn(4, 6)], [torch.randn(9, 6) + 1]], False),
        "e_bn_decomposed": (BNTrain().train(), None, [[torch.randn(4, 6)], [torch.randn(4, 6) * 3]], True),
        "e_resblock": (ResBlock(8), {"x": {0: batch}}, [[torch.randn(2, 8, 6, 6)], [torch.randn(5, 8, 6, 6)]], False),
        "e_flatten": (Flatten(), {"x": {0: batch}}, [[torch.randn(2, 1, 6, 6)], [torch.randn(7, 1, 6, 6)]], False),
        "e_encoder": (Encoder(), {"x": {0: batch}}, [[torch.randn(2, 5, 16)], [torch.randn(3, 5, 16)]], False),
        # The W7.export_resnet_block bench row's program: batch 8, 32 channels, 28 x 28.
        # Exported from a batch of 2 (the archive keeps its example input); no io file (2 MB).
        "w7_resblock": (ResBlock(32), {"x": {0: batch}}, [[torch.randn(2, 32, 28, 28)], [torch.randn(8, 32, 28, 28)]], False),
    }
    wanted = sys.argv[1:] or list(programs)
    for name, (model, dynamic, sets, decompose) in programs.items():
        if name not in wanted:
            continue
        if not any(isinstance(m, nn.BatchNorm1d) for m in model.modules()):
            # Running statistics other than their initial values, then inference.
            if isinstance(model, ResBlock):
                model.train()
                with torch.no_grad():
                    for _ in range(3):
                        model(torch.randn_like(sets[0][0]))
            model.eval()
        example = tuple(sets[0])
        ep = torch.export.export(model, example, dynamic_shapes=dynamic)
        if decompose:
            ep = ep.run_decompositions()
        torch.export.save(ep, os.path.join(OUT, f"{name}.pt2"))
        module = ep.module()
        io = {}
        shapes = []
        mutated = [n for n, _ in model.named_buffers()] if model.training else []
        for tag, inputs in zip("ab", sets):
            with torch.no_grad():
                outputs = module(*inputs)
            if not isinstance(outputs, tuple):
                outputs = (outputs,)
            for i, v in enumerate(inputs):
                io[f"{tag}.input{i}"] = v.contiguous()
            for i, v in enumerate(outputs):
                io[f"{tag}.output{i}"] = v.contiguous()
            state = dict(module.named_buffers())
            for fqn in mutated:
                io[f"{tag}.buffer.{fqn}"] = state[fqn].contiguous().clone()
            shapes.append([tuple(v.shape) for v in outputs])
        if not name.startswith("w7_"):
            save_file(io, os.path.join(OUT, f"{name}.io.safetensors"))
        print(name, "->", shapes, "decomposed" if decompose else "", mutated)


if __name__ == "__main__":
    main()
