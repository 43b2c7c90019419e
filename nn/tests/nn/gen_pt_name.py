"""Writes pt/mymodel_checkpoint_v1.pt: `torch.save({"w": arange(6).view(2, 3), "b": ...})` to a
file whose first record name, `mymodel_checkpoint_v1/data.pkl`, has 30 characters, so that its
first central directory entry is 76 bytes long, as long as the zip64 end records PyTorch writes
after the directory (Note [Zip archive offsets] in nn/src/pt.rs). Run by hand from the
workspace root: python3 nn/tests/nn/gen_pt_name.py (needs torch).
"""
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(HERE, "pt", "mymodel_checkpoint_v1.pt")
torch.save({"w": torch.arange(6.0).view(2, 3), "b": torch.tensor([1, -2], dtype=torch.int64)}, path)
