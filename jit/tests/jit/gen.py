"""Generates the PyTorch models the jit tests load: each traced with torch.jit.trace and saved
with torch.jit.save (`<name>.pt`), its state_dict saved with torch.save (`<name>.state.pt`), and
its inputs and PyTorch's outputs (`<name>.io.safetensors`: input0, input1, ..., output0, ...).

Run by hand from the repository root: python3 jit/tests/jit/gen.py [name ...] (no names: every
model). Every model is built either way, in one order from one seed, so regenerating some leaves
the others' weights as they were. Needs only PyTorch (the safetensors files are written here).
"""
import json
import os
import struct
import sys
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F

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


class SelfAttention(nn.Module):
    """`nn.MultiheadAttention` called as `mha(x, x, x)`: in eval mode under no_grad it takes
    PyTorch's fast path, one `aten::_native_multi_head_attention` call (query is key is value,
    batch_first, an even number of heads). Returns the output and the head-averaged weights."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x)


class GeluMLP(nn.Module):
    """`gelu` has an operator upgrader, so its archive's version is 10, kept in `.data/version`
    rather than `version`."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


SAFETENSORS_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.bool: "BOOL"}


def save_file(tensors, path):
    """Writes `tensors` (a dict of contiguous CPU tensors) in the safetensors format: an 8-byte
    little-endian header length, the JSON header (padded with spaces to 8 bytes), the data."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = bytes(t.contiguous().reshape(-1).view(torch.uint8).tolist())
        header[name] = {
            "dtype": SAFETENSORS_DTYPES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def version_record(path):
    """The archive's version record: `.data/version` or `version`."""
    names = zipfile.ZipFile(path).namelist()
    return [n.split("/", 1)[1] for n in names if n.endswith("/version")]


def mha_variants():
    """`aten::_native_multi_head_attention` called directly (`mha_variants.safetensors`): per-head
    weights, a key padding mask (mask_type 1) with one batch entry fully masked (NaN rows), a
    causal attention mask (mask_type 0), and need_weights=False."""
    torch.manual_seed(1)
    b, l, e, h = 2, 5, 8, 2
    t = {
        "x": torch.randn(b, l, e),
        "qkv_weight": torch.randn(3 * e, e) * 0.3,
        "qkv_bias": torch.randn(3 * e) * 0.1,
        "proj_weight": torch.randn(e, e) * 0.3,
        "proj_bias": torch.randn(e) * 0.1,
    }
    padding = torch.zeros(b, l, dtype=torch.bool)
    padding[0, 3:] = True
    padding[1, :] = True
    t["padding_mask"] = padding
    t["causal_mask"] = torch.triu(torch.ones(l, l, dtype=torch.bool), 1)
    x = t["x"]
    args = (x, x, x, e, h, t["qkv_weight"], t["qkv_bias"], t["proj_weight"], t["proj_bias"])
    f = torch._native_multi_head_attention
    t["per_head.out"], t["per_head.weights"] = f(*args, None, True, False)
    t["padding.out"], t["padding.weights"] = f(*args, padding, True, True, 1)
    t["causal.out"], t["causal.weights"] = f(*args, t["causal_mask"], True, True, 0)
    out, none = f(*args, None, False)
    assert none is None
    t["no_weights.out"] = out
    save_file(t, os.path.join(OUT, "mha_variants.safetensors"))


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    models = {
        "mlp": (MLP(), [torch.randn(3, 8)]),
        "lenet": (LeNet(), [torch.randn(2, 1, 28, 28)]),
        "resblock": (ResBlock(), [torch.randn(2, 4, 6, 6)]),
        "gru": (GRUNet(), [torch.randn(2, 5, 6)]),
        "encoder": (Encoder(), [torch.randn(2, 5, 8)]),
        # Children named "0", "1", "2", read with getattr(self, "0").
        "sequential": (nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)), [torch.randn(3, 8)]),
        "mha": (SelfAttention(), [torch.randn(2, 5, 8)]),
        "gelu": (GeluMLP(), [torch.randn(3, 8)]),
    }
    # Traced under no_grad, where PyTorch takes its inference fast paths.
    no_grad_trace = {"mha"}
    wanted = sys.argv[1:] or list(models) + ["mha_variants"]
    unknown = set(wanted) - set(models) - {"mha_variants"}
    if unknown:
        sys.exit(f"unknown models {sorted(unknown)}; known: {list(models) + ['mha_variants']}")
    for name, (model, inputs) in models.items():
        if name not in wanted:
            continue
        # Buffers with values other than their initial ones (BatchNorm's running statistics).
        if any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
            model.train()
            with torch.no_grad():
                for _ in range(3):
                    model(torch.randn_like(inputs[0]))
        model.eval()
        # Traced with gradients enabled: under no_grad, PyTorch's TransformerEncoderLayer takes
        # its fused inference path (one `_transformer_encoder_layer_fwd` call).
        # check_trace=False: a check would run the trace again, and for "mha" the fast path
        # is only taken while its three inputs are one tensor, which the check's clones are not.
        with torch.set_grad_enabled(name not in no_grad_trace):
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
        print(name, "->", [tuple(t.shape) for t in outputs], version_record(os.path.join(OUT, f"{name}.pt")))
    # Last: it seeds the generator again.
    if "mha_variants" in wanted:
        mha_variants()
    if "gelu" in wanted:
        assert version_record(os.path.join(OUT, "gelu.pt")) == [".data/version"]
    if "mha" in wanted:
        with zipfile.ZipFile(os.path.join(OUT, "mha.pt")) as z:
            code = z.read("mha/code/__torch__/torch/nn/modules/activation.py").decode()
        assert "torch._native_multi_head_attention" in code, code


if __name__ == "__main__":
    main()
