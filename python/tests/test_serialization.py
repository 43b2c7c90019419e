"""torch.load of PyTorch's own .pt files (the fixture nn/tests/nn/pt/tensors.pt, written by
PyTorch through nn/tests/nn/gen_pt.py) and torch.save / torch.load round trips."""

import pathlib

import pytest

import torchrs as torch

FIXTURE = pathlib.Path(__file__).resolve().parents[2] / "nn" / "tests" / "nn" / "pt" / "tensors.pt"


def test_load_reads_pytorchs_archive_with_views():
    d = torch.load(FIXTURE)
    # gen_pt.py: base = arange(10) * 1.5; view_a = base[1:7].view(2, 3); view_b = base[4:].
    a, b = d["view_a"], d["view_b"]
    assert a.tolist() == [[1.5, 3.0, 4.5], [6.0, 7.5, 9.0]] and a.dtype is torch.float64
    assert b.storage_offset() == 4
    b.zero_()
    assert a.tolist() == [[1.5, 3.0, 4.5], [0.0, 0.0, 0.0]]  # one storage, as saved
    t = d["transposed"]
    assert t.shape == (4, 3) and t.stride() == (1, 4)


def test_save_load_round_trip(tmp_path):
    sd = {"w": torch.arange(6, dtype=torch.float32).view(2, 3), "b": torch.tensor([1, 2])}
    p = tmp_path / "m.safetensors"
    torch.save(sd, p)
    back = torch.load(p)
    assert list(back) == ["w", "b"] or sorted(back) == ["b", "w"]
    assert back["w"].tolist() == sd["w"].tolist() and back["b"].dtype is torch.int64
    with pytest.raises(TypeError):
        torch.save([1, 2], p)
    with pytest.raises(FileNotFoundError):
        torch.load(tmp_path / "missing.pt")
