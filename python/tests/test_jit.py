"""torch.jit from Python: PyTorch's traced archives (jit/tests/jit/models, saved by PyTorch
2.15 with their inputs and outputs) load and give PyTorch's outputs; a Python function traces,
runs, saves and loads back."""

import pathlib

import numpy as np
import pytest

import torchrs as torch

MODELS = pathlib.Path(__file__).resolve().parents[2] / "jit" / "tests" / "jit" / "models"


@pytest.mark.parametrize("name", ["mlp", "lenet", "resblock", "gru", "encoder", "sequential", "mha", "gelu"])
def test_pytorch_traced_models_match_pytorch(name):
    m = torch.jit.load(MODELS / f"{name}.pt")
    io = torch.load(MODELS / f"{name}.io.safetensors")
    inputs = [io[f"input{i}"] for i in range(len(io)) if f"input{i}" in io]
    expected = [io[f"output{i}"] for i in range(len(io)) if f"output{i}" in io]
    with torch.no_grad():
        out = m(*inputs)
    outs = list(out) if isinstance(out, tuple) else [out]
    assert len(outs) == len(expected)
    for o, e in zip(outs, expected):
        np.testing.assert_allclose(o.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def test_trace_a_python_function_and_round_trip(tmp_path):
    def f(x, y):
        return (x * y).sin() + 1

    x, y = torch.tensor([0.5, 1.0]), torch.tensor([2.0, 3.0])
    m = torch.jit.trace(f, (x, y))
    assert "aten::mul" in m.graph and "aten::sin" in m.graph
    a, b = torch.tensor([1.0, -2.0]), torch.tensor([0.25, 0.5])
    assert m(a, b).tolist() == pytest.approx([np.sin(0.25) + 1, np.sin(-1.0) + 1])
    p = tmp_path / "f.zip"
    torch.jit.save(m, p)
    back = torch.jit.load(p)
    assert back(a, b).tolist() == m(a, b).tolist()

    def bad(x):
        raise ValueError("inside the trace")

    with pytest.raises(ValueError, match="inside the trace"):
        torch.jit.trace(bad, x)
