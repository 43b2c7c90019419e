"""Generates the PyTorch models the jit tests load: each traced with torch.jit.trace and saved
with torch.jit.save (`<name>.pt`), its state_dict saved with torch.save (`<name>.state.pt`), and
its inputs and PyTorch's outputs (`<name>.io.safetensors`: input0, input1, ..., output0, ...).

Run by hand from the repository root: python3 jit/tests/jit/gen.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 5)
        self.conv2 = nn.Conv2d(4, 8, 5)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


class ResBlock(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + x)


class GRUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        out, h = self.gru(x)
        return self.head(out[:, -1]), h


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    models = {
        "mlp": (MLP(), [torch.randn(3, 8)]),
        "lenet": (LeNet(), [torch.randn(2, 1, 28, 28)]),
        "resblock": (ResBlock(), [torch.randn(2, 4, 6, 6)]),
        "gru": (GRUNet(), [torch.randn(2, 5, 6)]),
        "encoder": (Encoder(), [torch.randn(2, 5, 8)]),
    }
    for name, (model, inputs) in models.items():
        # Buffers with values other than their initial ones (BatchNorm's running statistics).
        if any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
            model.train()
            with torch.no_grad():
                for _ in range(3):
                    model(torch.randn_like(inputs[0]))
        model.eval()
        # Traced with gradients enabled: under no_grad, PyTorch's TransformerEncoderLayer takes
        # its fused inference path (one `_transformer_encoder_layer_fwd` call).
        traced = torch.jit.trace(model, tuple(inputs), check_trace=False)
        with torch.no_grad():
            outputs = model(*inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        torch.jit.save(traced, os.path.join(OUT, f"{name}.pt"))
        torch.save(model.state_dict(), os.path.join(OUT, f"{name}.state.pt"))
        io = {f"input{i}": t.contiguous() for i, t in enumerate(inputs)}
        io.update({f"output{i}": t.contiguous() for i, t in enumerate(outputs)})
        save_file(io, os.path.join(OUT, f"{name}.io.safetensors"))
        print(name, "->", [tuple(t.shape) for t in outputs])


if __name__ == "__main__":
    main()
