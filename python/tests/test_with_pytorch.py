"""DLPack with PyTorch itself, in both directions, without a copy: the other library's tensor
has the same data pointer, shape, strides and dtype, writes on either side show on the other,
and either side outlives the other. Needs PyTorch (the `pytorch` fixture of conftest.py: CI
installs it and requires these tests to run)."""

import gc

import pytest

import torchrs as torch

# (our dtype, PyTorch's dtype name)
DTYPES = [
    ("float32", "float32"), ("float64", "float64"), ("float16", "float16"), ("bfloat16", "bfloat16"),
    ("int8", "int8"), ("uint8", "uint8"), ("int16", "int16"), ("int32", "int32"), ("int64", "int64"),
    ("bool", "bool"), ("complex64", "complex64"), ("complex128", "complex128"),
]


def _values(dt):
    if dt == "bool":
        return [[True, False, True], [False, True, True]]
    return [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("ours, theirs", DTYPES)
def test_ours_to_pytorch_without_a_copy(pytorch, ours, theirs):
    x = torch.tensor(_values(ours), dtype=getattr(torch, ours))
    p = pytorch.from_dlpack(x)
    assert p.data_ptr() == x.data_ptr()
    assert p.dtype == getattr(pytorch, theirs) and tuple(p.shape) == (2, 3) and p.stride() == x.stride()
    assert p.tolist() == x.tolist()
    # Strided: a transposed view keeps its strides.
    t = x.T
    pt = pytorch.from_dlpack(t)
    assert pt.data_ptr() == t.data_ptr() and pt.stride() == t.stride() == (1, 3)
    assert pt.tolist() == t.tolist()


@pytest.mark.parametrize("ours, theirs", DTYPES)
def test_pytorch_to_ours_without_a_copy(pytorch, ours, theirs):
    p = pytorch.tensor(_values(ours), dtype=getattr(pytorch, theirs))
    x = torch.from_dlpack(p)
    assert x.data_ptr() == p.data_ptr()
    assert x.dtype is getattr(torch, ours) and tuple(x.shape) == (2, 3) and x.stride() == p.stride()
    assert x.tolist() == p.tolist()
    pt = p.t()
    xt = torch.from_dlpack(pt)
    assert xt.data_ptr() == pt.data_ptr() and xt.stride() == pt.stride() and xt.tolist() == pt.tolist()


def test_writes_show_on_both_sides_and_either_side_outlives_the_other(pytorch):
    x = torch.zeros(4)
    p = pytorch.from_dlpack(x)
    p[1] = 5.0
    x[2] = 7.0
    assert x.tolist() == [0.0, 5.0, 7.0, 0.0] and p.tolist() == [0.0, 5.0, 7.0, 0.0]
    del x
    gc.collect()
    p += 1
    assert p.tolist() == [1.0, 6.0, 8.0, 1.0]  # our storage lives as long as PyTorch's tensor

    q = pytorch.arange(3.0)
    y = torch.from_dlpack(q)
    y.mul_(2)
    assert q.tolist() == [0.0, 2.0, 4.0]
    del q
    gc.collect()
    assert (y + 1).tolist() == [1.0, 3.0, 5.0]  # PyTorch's storage lives as long as ours


def test_capsules_and_protocol_details(pytorch):
    # Explicit capsules in both directions (the legacy, unversioned protocol).
    x = torch.arange(3, dtype=torch.int64)
    p = pytorch.utils.dlpack.from_dlpack(x.__dlpack__())
    assert p.data_ptr() == x.data_ptr() and p.tolist() == [0, 1, 2]
    q = pytorch.arange(3)
    y = torch.from_dlpack(pytorch.utils.dlpack.to_dlpack(q))
    assert y.data_ptr() == q.data_ptr() and y.tolist() == [0, 1, 2]
    # Both say where their memory is the same way.
    assert torch.ones(1).__dlpack_device__() == tuple(pytorch.ones(1).__dlpack_device__())
    # A tensor that requires grad is refused by both, with the same exception class.
    with pytest.raises(BufferError) as ours:
        torch.ones(2, requires_grad=True).__dlpack__()
    theirs = pytest.raises(Exception, pytorch.ones(2, requires_grad=True).__dlpack__)
    assert isinstance(ours.value, type(theirs.value)) or type(theirs.value).__name__ == "BufferError", theirs.value
    # A zero-element and a 0-dim tensor.
    assert tuple(pytorch.from_dlpack(torch.ones(0, 3)).shape) == (0, 3)
    assert pytorch.from_dlpack(torch.tensor(2.5)).item() == 2.5
    assert torch.from_dlpack(pytorch.tensor(7)).item() == 7


def test_a_tensor_without_data_is_refused(pytorch):
    # PyTorch's efficient zero tensors (sgn's gradient, for one) export a null data pointer
    # with elements: refused, not read.
    x = pytorch.tensor([2.0, -1.0], requires_grad=True)
    (g,) = pytorch.autograd.grad(pytorch.sgn(x).sum(), x)
    assert g._is_zerotensor() and g.data_ptr() == 0
    with pytest.raises(BufferError, match="null data pointer"):
        torch.from_dlpack(g)
    assert torch.from_dlpack(g.new_empty(2).copy_(g)).tolist() == [0.0, 0.0]


def test_numpy_inputs_give_pytorchs_results(pytorch):
    # The same numpy input through both libraries: a few everyday computations agree.
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 4)).astype(np.float32)
    b = rng.standard_normal((4, 3)).astype(np.float32)
    ours = (torch.from_numpy(a) @ torch.from_numpy(b)).relu().softmax(1).numpy()
    theirs = (pytorch.from_numpy(a) @ pytorch.from_numpy(b)).relu().softmax(1).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
