"""The Python front end's tensors: identity, attributes, operators, indexing, autograd, numpy
and the argument parser. Expected values are closed forms or PyTorch's documented behaviour."""

import gc
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import torchrs as torch


def test_one_object_per_tensor():
    x = torch.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad is x.grad
    g = x.grad
    g.note = "kept"
    assert x.grad.note == "kept"  # the same object while Python holds it
    y = x.view(3)
    assert y is not x  # a view is a tensor of its own
    assert torch.Tensor is type(x) and isinstance(x, torch.Tensor)


def test_attributes_and_repr():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert x.shape == (2, 2) and isinstance(x.shape, torch.Size) and repr(x.shape) == "torch.Size([2, 2])"
    assert x.size() == (2, 2) and x.size(1) == 2 and x.size(-1) == 2
    assert x.dtype is torch.float32 and x.device == torch.device("cpu")
    assert x.is_leaf and x.requires_grad and x.grad is None and x.grad_fn is None
    y = (x * 2).sum()
    assert repr(y) == "tensor(20., grad_fn=<SumBackward0>)"
    assert repr(x) == "tensor([[1., 2.],\n        [3., 4.]], requires_grad=True)"
    assert y.grad_fn.name() == "SumBackward0"
    (nxt, nr), = y.grad_fn.next_functions
    assert nxt.name() == "MulBackward0" and nr == 0
    assert x.T.tolist() == [[1.0, 3.0], [2.0, 4.0]] and x.mT.shape == (2, 2)
    assert y.item() == 20.0 and float(y) == 20.0 and len(x) == 2 and x.ndim == 2
    assert int(torch.tensor(7)) == 7 and [1, 2][torch.tensor(1)] == 2
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)


def test_dtypes_are_singletons_and_inferred():
    assert torch.tensor([1, 2]).dtype is torch.int64
    assert torch.tensor([1.0, 2]).dtype is torch.float32
    assert torch.tensor([True]).dtype is torch.bool
    assert torch.tensor([1 + 2j]).dtype is torch.complex64
    assert torch.zeros(2, dtype=torch.float64).dtype is torch.float64
    assert torch.zeros(2, dtype=float).dtype is torch.float64
    assert torch.tensor([0.1], dtype=torch.float64).item() == 0.1  # not rounded through float32
    assert torch.ones(2).requires_grad_().requires_grad
    assert repr(torch.float32) == "torch.float32" and torch.float is torch.float32
    assert torch.float16.itemsize == 2 and torch.float32.is_floating_point
    with pytest.raises(ValueError, match="expected sequence of length 2"):
        torch.tensor([[1, 2], [3]])


def test_operators_and_reflected_forms():
    a = torch.tensor([1.0, 2.0, 4.0])
    b = torch.tensor([2.0, 2.0, 2.0])
    assert (a + b).tolist() == [3.0, 4.0, 6.0]
    assert (a - 1).tolist() == [0.0, 1.0, 3.0] and (1 - a).tolist() == [0.0, -1.0, -3.0]
    assert (2 * a).tolist() == [2.0, 4.0, 8.0] and (a / b).tolist() == [0.5, 1.0, 2.0]
    assert (8 / a).tolist() == [8.0, 4.0, 2.0] and (a // b).tolist() == [0.0, 1.0, 2.0]
    assert (a % 3).tolist() == [1.0, 2.0, 1.0] and (a ** 2).tolist() == [1.0, 4.0, 16.0]
    assert (2 ** a).tolist() == [2.0, 4.0, 16.0] and (-a).tolist() == [-1.0, -2.0, -4.0]
    assert abs(-a).tolist() == [1.0, 2.0, 4.0]
    assert (a == b).tolist() == [False, True, False] and (a > b).tolist() == [False, False, True]
    m = torch.arange(6).view(2, 3)
    assert (m @ torch.ones(3, dtype=torch.int64)).tolist() == [3, 12]
    i = torch.tensor([0b1100])
    assert (i & 0b1010).tolist() == [8] and (i | 1).tolist() == [13] and (i ^ 4).tolist() == [8]
    assert (~i).tolist() == [-13] and (i << 1).tolist() == [24] and (i >> 2).tolist() == [3]
    # Python ints do not promote a float32 tensor (wrapped numbers), a float64 tensor would.
    assert (1 - a).dtype is torch.float32 and (torch.tensor([1, 2]) / 2).dtype is torch.float32
    with pytest.raises(TypeError, match="unsupported operand"):
        a + "x"  # NotImplemented from both sides: Python's own TypeError
    with pytest.raises(TypeError, match="unsupported operand"):
        None * a
    assert (True + a).tolist() == [2.0, 3.0, 5.0] and (a @ a).item() == 21.0
    c = a.clone()
    c += 1
    c *= 2
    assert c.tolist() == [4.0, 6.0, 10.0] and a.tolist() == [1.0, 2.0, 4.0]


def test_indexing_views_and_assignment():
    z = torch.arange(12).view(3, 4)
    assert z[1:, ::2].tolist() == [[4, 6], [8, 10]]
    assert z[-1].tolist() == [8, 9, 10, 11] and z[1, 2].item() == 6
    assert z[None, ..., 0].shape == (1, 3)
    assert z[z > 8].tolist() == [9, 10, 11]
    assert z[[0, 2]].tolist() == [[0, 1, 2, 3], [8, 9, 10, 11]]
    assert z[torch.tensor([2, 0]), 1].tolist() == [9, 1]
    v = z[0]
    v[0] = 100  # a basic index is a view
    assert z[0, 0].item() == 100
    z[:, 1] += 10
    assert z[:, 1].tolist() == [11, 15, 19]
    z[z > 50] = 0
    assert z[0, 0].item() == 0
    z[torch.tensor([1])] = -1
    assert z[1].tolist() == [-1, -1, -1, -1]
    with pytest.raises(IndexError):
        z[5]
    assert [t.tolist() for t in torch.arange(4).view(2, 2)] == [[0, 1], [2, 3]]


def test_autograd():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert g.tolist() == [3.0, 12.0, 27.0]
    (gg,) = torch.autograd.grad(g.sum(), x)  # double backward: 6x
    assert gg.tolist() == [6.0, 12.0, 18.0]
    x.grad = None
    assert x.grad is None
    with torch.no_grad():
        assert not (x * 2).requires_grad
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()

    @torch.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    w = torch.ones(2, 2, requires_grad=True)
    out = w.sum(1)
    out.backward(torch.tensor([1.0, 2.0]))
    assert w.grad.tolist() == [[1.0, 1.0], [2.0, 2.0]]
    with pytest.raises(RuntimeError):
        torch.ones(2).backward()  # does not require grad


def test_argument_parser():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert torch.sum(x).item() == 10.0
    assert torch.sum(x, 1).tolist() == [3.0, 7.0]
    assert x.sum(dim=0, keepdim=True).shape == (1, 2)
    assert x.sum((0, 1)).item() == 10.0
    assert torch.add(x, x, alpha=2).tolist() == [[3.0, 6.0], [9.0, 12.0]]
    assert torch.add(x, 1).tolist() == [[2.0, 3.0], [4.0, 5.0]]
    v, i = torch.max(x, 1)
    assert v.tolist() == [2.0, 4.0] and i.tolist() == [1, 1]
    assert torch.max(x).item() == 4.0
    assert torch.zeros(2, 3).shape == (2, 3) and torch.zeros((2, 3)).shape == (2, 3)
    assert torch.zeros([4]).shape == (4,) and x.view(4).shape == (4,) and x.view(-1, 1).shape == (4, 1)
    out = torch.empty(2, 2)
    r = torch.add(x, 1, out=out)
    assert r is out and out.tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert torch.softmax(x, 1, dtype=torch.float64).dtype is torch.float64
    assert torch.linalg.norm(torch.tensor([3.0, 4.0])).item() == 5.0
    with pytest.raises(TypeError, match=r"^exp\(\) takes 1 positional argument but 2 were given$"):
        torch.exp(x, 2)
    with pytest.raises(TypeError, match=r"^exp\(\) got an unexpected keyword argument 'foo'$"):
        torch.exp(x, foo=1)
    with pytest.raises(TypeError, match=r'^exp\(\) missing 1 required positional argument: "input"$'):
        torch.exp()
    with pytest.raises(TypeError) as e:
        torch.sum(x, "a")
    assert str(e.value).startswith("sum() received an invalid combination of arguments - got (Tensor, str), but expected one of:\n * (Tensor input, *, torch.dtype dtype = None)\n")
    with pytest.raises(TypeError, match=r"^argmax\(\): argument 'keepdim' \(position 3\) must be bool, not int$"):
        torch.argmax(x, 0, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sum(5)


def test_generators_and_seeds():
    torch.manual_seed(0)
    assert torch.rand(3).tolist() == pytest.approx([0.4963, 0.7682, 0.0885], abs=1e-4)
    g = torch.Generator().manual_seed(0)
    assert torch.randn(2, generator=g).tolist() == pytest.approx([1.5410, -0.2934], abs=1e-4)


@pytest.mark.parametrize(
    "np_dtype,dtype",
    [
        (np.float64, torch.float64), (np.float32, torch.float32), (np.float16, torch.float16),
        (np.complex64, torch.complex64), (np.complex128, torch.complex128), (np.int64, torch.int64),
        (np.int32, torch.int32), (np.int16, torch.int16), (np.int8, torch.int8), (np.uint8, torch.uint8),
        (np.bool_, torch.bool),
    ],
)
def test_numpy_both_ways_share_memory(np_dtype, dtype):
    a = np.arange(6).astype(np_dtype).reshape(2, 3)
    t = torch.from_numpy(a)
    assert t.dtype is dtype and t.shape == (2, 3)
    assert t.tolist() == a.tolist()
    b = t.numpy()
    assert b.dtype == a.dtype and np.shares_memory(a, b)
    one = np.ones((), dtype=np_dtype)
    a[1, 2] = one
    assert t[1, 2].item() == one.item()


def test_numpy_lifetimes_and_errors():
    a = np.arange(4, dtype=np.float32)
    t = torch.from_numpy(a)
    del a
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]  # the tensor keeps the array alive
    n = torch.arange(3, dtype=torch.float32).numpy()
    gc.collect()
    assert n.tolist() == [0.0, 1.0, 2.0]  # the array keeps the tensor alive
    s = torch.from_numpy(np.arange(10, dtype=np.int64)[::2])
    assert s.stride() == (2,) and s.tolist() == [0, 2, 4, 6, 8]
    with pytest.raises(ValueError, match="negative"):
        torch.from_numpy(np.arange(3)[::-1])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.object_"):
        torch.from_numpy(np.array([object()]))
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\) instead"):
        torch.ones(2, requires_grad=True).numpy()
    assert np.asarray(torch.ones(2)).tolist() == [1.0, 1.0]


def test_errors_are_pytorchs_classes():
    # PyTorch 2.15's messages for the same calls.
    with pytest.raises(RuntimeError) as e:
        torch.ones(2) + torch.ones(3)
    assert str(e.value) == "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    with pytest.raises(IndexError) as e:
        torch.ones(2, 2).sum(5)
    assert str(e.value) == "Dimension out of range (expected to be in range of [-2, 1], but got 5)"
    with pytest.raises(IndexError):
        torch.ones(2, 2).select(0, 5)


def test_another_thread_runs_python_while_a_kernel_runs():
    # With a switch interval of 100 s, a thread holding the interpreter lock keeps it until it
    # releases it itself. The main thread sleeps (releasing the lock) while the worker enters a
    # long matrix product; if the product kept the lock, the main thread could only wake after
    # it returned.
    a = torch.randn(1500, 1500)
    times = {}

    def work():
        times["start"] = time.perf_counter()
        a @ a
        times["end"] = time.perf_counter()

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        t = threading.Thread(target=work)
        t.start()
        time.sleep(0.02)
        woke = time.perf_counter()
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert times["start"] < woke < times["end"], (times, woke)


def test_the_interpreter_lock_is_released_around_kernels():
    a = torch.randn(400, 400)
    done = []

    def work():
        for _ in range(20):
            a @ a
        done.append(1)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 2


def test_pytorch_python_level_functions():
    # PyTorch's own results for the same calls (PyTorch 2.15, printed by hand).
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a, b = torch.split(x, [1, 2])
    assert type(torch.split(x, 2, dim=1)) is tuple and a.shape == (1, 4) and b.shape == (2, 4)
    assert type(torch.chunk(x, 2, 1)) is tuple
    rows, cols = torch.where(x > 9)
    assert rows.tolist() == [2, 2] and cols.tolist() == [2, 3]
    assert torch.einsum("ij,kj->ik", x, torch.ones(3, 4)).tolist() == [[6.0] * 3, [22.0] * 3, [38.0] * 3]
    assert torch.tensordot(x, torch.ones(3, 4), dims=([1], [1])).tolist() == [[6.0] * 3, [22.0] * 3, [38.0] * 3]
    assert x.roll(1, 1)[0].tolist() == [3.0, 0.0, 1.0, 2.0]  # two one-element lists, not varargs
    assert x.type() == "torch.FloatTensor" and x.type(torch.float64).dtype is torch.float64
    assert repr(torch.topk(torch.tensor([1.0, 3.0]), 1)).startswith("torch.return_types.topk(\nvalues=tensor([3.])")
    assert torch.unique(torch.tensor([3, 1, 3, 2])).tolist() == [1, 2, 3]
    assert torch.tensor([1, 2, 2, 3]).mode().values.item() == 2
    assert torch.special.erf(torch.tensor([0.0])).item() == 0.0
    assert repr(torch.abs(torch.tensor([-0.0]))) == "tensor([0.])"


def test_deprecated_signatures_warn_once_with_pytorchs_text():
    # PyTorch warns once per process (TORCH_WARN_ONCE), so this runs in a fresh interpreter.
    code = (
        "import warnings, torchrs as torch\n"
        "x, y = torch.ones(2), torch.ones(2)\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    a = torch.add(x, 2, y); b = x.add(3, y); c = torch.addcmul(x, 0.5, y, y)\n"
        "print(a.tolist(), b.tolist(), c.tolist(), len(w), w[0].category.__name__)\n"
        "print(w[0].message)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # PyTorch 2.15's text for the same calls (its "(Triggered internally at ...)" left out).
    assert out == (
        "[3.0, 3.0] [4.0, 4.0] [1.5, 1.5] 1 UserWarning\n"
        "This overload of add is deprecated:\n"
        "\tadd(Tensor input, Number alpha, Tensor other, *, Tensor out = None)\n"
        "Consider using one of the following signatures instead:\n"
        "\tadd(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)\n"
    )
    # Not in the error lists: a bad call lists only the current signature.
    with pytest.raises(TypeError, match=r"but expected \(Tensor input, Tensor other, \*"):
        torch.add(torch.ones(1))


def test_view_as_another_dtype():
    # PyTorch's Tensor.view(dtype): the same memory, the last dimension rescaled when the
    # element size changes (values: IEEE bit patterns).
    x = torch.tensor([1.0, -2.0], dtype=torch.float32)
    bits = x.view(torch.int32)
    assert bits.dtype is torch.int32 and bits.tolist() == [0x3F800000, -0x40000000]
    assert bits.data_ptr() == x.data_ptr()
    bits[0] = 0x40400000  # 3.0
    assert x.tolist() == [3.0, -2.0]
    halves = x.view(torch.int16)
    assert halves.shape == (4,) and halves.stride() == (1,)
    pairs = torch.zeros(2, 4, dtype=torch.int16).view(torch.float64)
    assert pairs.shape == (2, 1) and pairs.tolist() == [[0.0], [0.0]]
    assert torch.tensor([1.0, 2.0]).view(torch.complex64).tolist() == [complex(1.0, 2.0)]
    assert x.view(2, 1).shape == (2, 1) and x.view(-1).shape == (2,)  # the size overload still binds
    with pytest.raises(RuntimeError, match=r"self.size\(-1\) must be divisible by 2 to view Float as Double"):
        torch.ones(3).view(torch.float64)
    with pytest.raises(RuntimeError, match=r"self.stride\(-1\) must be 1 to view Float as Half"):
        torch.ones(2, 2).t().view(torch.float16)
    with pytest.raises(RuntimeError, match=r"self.dim\(\) cannot be 0 to view Float as Double"):
        torch.tensor(1.0).view(torch.float64)
    y = torch.ones(2, requires_grad=True).view(torch.int32)
    assert not y.requires_grad


def test_viewing_bytes_as_bool_is_refused():
    # A deliberate difference from PyTorch, which allows it: our kernels read Bool storage as
    # Rust's bool, for which a byte other than 0 or 1 is undefined behaviour.
    with pytest.raises(RuntimeError, match="viewing a Byte tensor as Bool is not supported"):
        torch.tensor([2], dtype=torch.uint8).view(torch.bool)
    assert torch.tensor([True, False]).view(torch.uint8).tolist() == [1, 0]
