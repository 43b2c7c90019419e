"""Writes the `torch.save` fixtures that pt.rs loads, and PyTorch's expected values for them.

Run by hand from the workspace root: `python3 nn/tests/nn/gen_pt.py` (needs torch and
safetensors). It rewrites every file under `nn/tests/nn/pt/`:

  mlp.pt, cnn.pt, gru.pt, embedding.pt
      `torch.save(model.state_dict(), path)` of nn.Sequential(Linear, ReLU, Linear), a
      Conv2d + BatchNorm2d + ReLU + Conv2d net (running statistics updated by three training
      batches, so `num_batches_tracked` is 3), a two-layer GRU and an Embedding.
  tensors.pt
      a plain dict of loose tensors: every dtype (with infinities, NaN, -0.0 and subnormals
      where the dtype has them), a transpose and a strided slice (non-contiguous), two
      overlapping views of one base (one shared storage, non-zero offsets), a 0-dim and an
      empty tensor, an nn.Parameter and a leaf that requires grad.
  misc.pt
      a checkpoint-like dict written with pickle protocol 4 (FRAME, MEMOIZE, STACK_GLOBAL,
      SHORT_BINBYTES, EMPTY_SET/ADDITEMS): the MLP's state_dict under "model" and plain Python
      values (ints beyond 64 bits, bytes, a set, a device, a dtype, nested containers).
  legacy.pt
      a tensor saved in the pre-1.6 (non-zip) format, which the reader rejects.
  expected.safetensors
      the expected tensors, contiguous, named `<file>.<key>` (`mlp.state.0.weight`), plus each
      model's forward input and output (`mlp.input`, `mlp.output`, `gru.output`, `gru.h_n`).
      The metadata records, per loose tensor of tensors.pt, its stride, storage offset,
      requires_grad flag and storage (tensors with the same number share one):
      `tensors.<key>` -> `stride=1,4;offset=0;requires_grad=0;storage=3`.
"""
import os

import torch
import torch.nn as nn
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "pt")

torch.manual_seed(0)
os.makedirs(OUT, exist_ok=True)
expected = {}
metadata = {}


def expect(name, t):
    expected[name] = t.detach().clone().contiguous()


def save_state(name, model):
    sd = model.state_dict()
    torch.save(sd, os.path.join(OUT, name + ".pt"))
    for k, v in sd.items():
        expect(f"{name}.state.{k}", v)


# ---- models ---------------------------------------------------------------------------------
mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
save_state("mlp", mlp)
x = torch.randn(5, 4)
expect("mlp.input", x)
expect("mlp.output", mlp(x))

cnn = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 3, 3, stride=2))
with torch.no_grad():
    for _ in range(3):
        cnn(torch.randn(4, 2, 6, 6) * 2 + 0.5)
cnn.eval()
save_state("cnn", cnn)
x = torch.randn(2, 2, 6, 6)
expect("cnn.input", x)
expect("cnn.output", cnn(x))

gru = nn.GRU(3, 4, num_layers=2)
save_state("gru", gru)
x = torch.randn(5, 2, 3)
out, h_n = gru(x)
expect("gru.input", x)
expect("gru.output", out)
expect("gru.h_n", h_n)

emb = nn.Embedding(10, 4)
save_state("embedding", emb)
idx = torch.tensor([[1, 2, 3], [4, 5, 9]])
expect("embedding.input", idx)
expect("embedding.output", emb(idx))

# ---- loose tensors --------------------------------------------------------------------------
inf, nan = float("inf"), float("nan")
floats = [1.5, -0.0, inf, -inf, nan, -2.75, 0.1]
base = torch.arange(10, dtype=torch.float64) * 1.5
tensors = {
    "f32": torch.tensor(floats + [1e-40, 3.0e38], dtype=torch.float32),
    "f64": torch.tensor(floats + [5e-324, 1.7e308], dtype=torch.float64),
    "f16": torch.tensor(floats + [6e-8, 65504.0], dtype=torch.float16),
    "bf16": torch.tensor(floats + [1e-40, 3.0e38], dtype=torch.bfloat16),
    "i64": torch.tensor([-(2**63), 2**63 - 1, -1, 0, 1], dtype=torch.int64),
    "i32": torch.tensor([-(2**31), 2**31 - 1, -1, 0, 7], dtype=torch.int32),
    "i16": torch.tensor([-(2**15), 2**15 - 1, -1, 0, 7], dtype=torch.int16),
    "i8": torch.tensor([-128, 127, -1, 0, 7], dtype=torch.int8),
    "u8": torch.tensor([0, 255, 1, 128], dtype=torch.uint8),
    "bool": torch.tensor([True, False, False, True]),
    "transposed": torch.arange(12, dtype=torch.float32).reshape(3, 4).t(),
    "sliced": torch.arange(24, dtype=torch.int32).reshape(4, 6)[1:, ::2],
    "view_a": base[1:7].view(2, 3),
    "view_b": base[4:],
    "scalar": torch.tensor(3.25),
    "empty": torch.empty(0, 3),
    "param": nn.Parameter(torch.randn(2, 3)),
    "leaf_rg": torch.ones(2, requires_grad=True),
}
torch.save(tensors, os.path.join(OUT, "tensors.pt"))
groups = {}
for k, v in tensors.items():
    expect(f"tensors.{k}", v)
    ptr = v.untyped_storage().data_ptr()
    group = groups.setdefault(ptr, len(groups))
    stride = ",".join(str(s) for s in v.stride())
    metadata[f"tensors.{k}"] = (
        f"stride={stride};offset={v.storage_offset()};requires_grad={int(v.requires_grad)};storage={group}"
    )

# ---- protocol 4 and plain Python values -----------------------------------------------------
misc = {
    "model": mlp.state_dict(),
    "epoch": 3,
    "lr": 0.01,
    "name": "mlp",
    "seed": 2**64 - 1,
    "neg_big": -(2**70),
    "bytes": b"\x00\xffab",
    "tags": {"a"},
    "device": torch.device("cuda", 1),
    "dtype": torch.float16,
    "nested": [1, (2, 3.5), None, True, {"k": -7}],
}
torch.save(misc, os.path.join(OUT, "misc.pt"), pickle_protocol=4)

# ---- the pre-1.6 format ---------------------------------------------------------------------
torch.save(torch.ones(2), os.path.join(OUT, "legacy.pt"), _use_new_zipfile_serialization=False)

save_file(expected, os.path.join(OUT, "expected.safetensors"), metadata=metadata)
total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
print(f"wrote {len(os.listdir(OUT))} files under {OUT} ({total} bytes)")
