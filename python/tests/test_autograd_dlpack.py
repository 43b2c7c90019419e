"""Python code inside the engine (hooks, custom Functions), named-tuple returns, and DLPack
with numpy in both directions. Expected values are closed forms."""

import numpy as np
import pytest

import torchrs as torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x ** 3 * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return g * 3 * x ** 2 * ctx.scale, None


def test_custom_function_forward_backward_and_double_backward():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x, 2.0)
    assert y.tolist() == [2.0, 16.0]
    assert y.grad_fn.name() == "CubeBackward"
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 24.0]  # 3 x^2 * 2
    # backward written with differentiable ops gives second derivatives: 6 x * 2.
    x2 = torch.tensor([1.0, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad(Cube.apply(x2, 2.0).sum(), x2, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x2)
    assert gg.tolist() == [12.0, 24.0]


def test_custom_function_exceptions_come_out_unchanged():
    class Boom(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise KeyError("from backward")

    x = torch.ones(2, requires_grad=True)
    with pytest.raises(KeyError, match="from backward"):
        Boom.apply(x).sum().backward()

    class BadCount(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        BadCount.apply(x).sum().backward()


def test_tensor_hooks_replace_gradients_and_are_removable():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h1 = x.register_hook(lambda g: seen.append(g.tolist()))
    h2 = x.register_hook(lambda g: g * 10)
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]] and x.grad.tolist() == [30.0, 30.0]
    h1.remove()
    h2.remove()
    x.grad = None
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]] and x.grad.tolist() == [3.0, 3.0]
    y = x * 2  # a hook on a non-leaf sees its gradient
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.sum().backward()
    assert seen[-1] == [1.0, 1.0]

    def bad(g):
        raise ValueError("from a hook")

    z = torch.ones(1, requires_grad=True)
    z.register_hook(bad)
    with pytest.raises(ValueError, match="from a hook"):
        (z * 2).sum().backward()
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        torch.ones(1).register_hook(lambda g: g)


def test_named_tuple_returns():
    x = torch.tensor([[1.0, 5.0], [7.0, 3.0]])
    r = torch.max(x, 1)
    assert type(r).__name__ == "max" and r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    v, i = x.sort(1)
    assert v.tolist() == [[1.0, 5.0], [3.0, 7.0]] and i.tolist() == [[0, 1], [1, 0]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_, np.complex64])
def test_dlpack_with_numpy_both_ways_without_copy(dtype):
    a = np.arange(6).astype(dtype).reshape(2, 3)
    t = torch.from_dlpack(a)
    assert t.shape == (2, 3) and t.tolist() == a.tolist()
    assert t.data_ptr() == a.ctypes.data  # the same memory
    b = np.from_dlpack(t)
    assert b.ctypes.data == a.ctypes.data and b.tolist() == a.tolist()
    # Strided: a transposed tensor keeps its strides through DLPack.
    tt = torch.arange(6).view(2, 3).T
    n = np.from_dlpack(tt)
    assert n.tolist() == [[0, 3], [1, 4], [2, 5]] and n.ctypes.data == tt.data_ptr()
    assert tt.__dlpack_device__() == (1, 0)


def test_dlpack_lifetimes_and_refusals():
    t = torch.arange(4, dtype=torch.float32)
    n = np.from_dlpack(t)
    del t
    assert n.tolist() == [0.0, 1.0, 2.0, 3.0]  # the capsule's context keeps the tensor alive
    a = np.arange(3.0)
    u = torch.from_dlpack(a)
    del a
    assert u.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(BufferError, match="require gradient"):
        torch.ones(2, requires_grad=True).__dlpack__()
    cap = torch.ones(2).__dlpack__()
    assert torch.from_dlpack(cap).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError):
        torch.from_dlpack(cap)  # a capsule is consumed once


def test_unaligned_or_dataless_memory_is_refused():
    # numpy can make arrays whose data is not aligned to their elements; our kernels read
    # through typed pointers, so such an array is refused instead of read unaligned.
    buf = np.zeros(9 * 8 + 1, dtype=np.uint8)
    odd = np.frombuffer(buf.data, dtype=np.float64, count=9, offset=1)
    with pytest.raises(ValueError, match="not aligned"):
        torch.from_numpy(odd)
    assert torch.from_numpy(np.require(odd, requirements="A")).tolist() == [0.0] * 9
    if not odd.flags.aligned:
        with pytest.raises((BufferError, ValueError, TypeError)):
            torch.from_dlpack(odd)


def test_inference_mode_and_anomaly_mode():
    x = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled() and not torch.is_grad_enabled()
        y = x * 2
    assert not y.requires_grad and not torch.is_inference_mode_enabled() and torch.is_grad_enabled()
    with pytest.raises(RuntimeError):
        (y * x).sum().backward()  # an inference tensor cannot be saved for backward
    with torch.inference_mode(False):
        assert not torch.is_inference_mode_enabled()

    @torch.inference_mode()
    def f(t):
        return t * 3

    assert not f(x).requires_grad
    with torch.autograd.detect_anomaly():
        assert torch.is_anomaly_enabled()
        z = torch.tensor([0.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="nan|NaN"):
            (z / z).sum().backward()
    assert not torch.is_anomaly_enabled()
