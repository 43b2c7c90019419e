"""torchrs.nn: Module's registration, state dict, hooks and conversions as PyTorch documents
them; layers against numpy written out here; initialisation against its formulas and
PyTorch's printed values; clipping against PyTorch 2.15's numbers (nn/tests/nn/optim.rs)."""

import copy
import math
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

import torchrs as torch
import torchrs.nn as nn
import torchrs.nn.functional as F
from torchrs.nn import init


def f64(values):
    """Exact float64 values (through numpy; see test_optim.f64)."""
    return torch.from_numpy(np.array(values, dtype=np.float64))


def rand_np(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2, bias=False))
        self.register_buffer("scale", torch.ones(2))
        self.register_buffer("cache", torch.zeros(1), persistent=False)

    def forward(self, x):
        return self.head(self.bn(self.fc(x))) * self.scale


# ---- Parameter ----------------------------------------------------------------------------------

def test_parameter_is_a_tensor_alias_that_requires_grad():
    data = torch.zeros(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, torch.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    data[0, 0] = 5.0  # the same storage
    assert p[0, 0].item() == 5.0
    assert not nn.Parameter(torch.zeros(1), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor([[5., 0., 0.],")
    assert type(p * 2) is torch.Tensor  # results of operators are plain tensors


# ---- registration ---------------------------------------------------------------------------------

def test_attributes_register_parameters_buffers_and_modules():
    m = Net()
    assert list(m._parameters) == [] and list(m._modules) == ["fc", "bn", "head"]
    assert list(m._buffers) == ["scale", "cache"]
    assert [n for n, _ in m.named_parameters()] == ["fc.weight", "fc.bias", "bn.weight", "bn.bias", "head.1.weight"]
    # A module's own members come before its children's.
    assert [n for n, _ in m.named_buffers()] == ["scale", "cache", "bn.running_mean", "bn.running_var",
                                                 "bn.num_batches_tracked"]
    assert [n for n, _ in m.named_children()] == ["fc", "bn", "head"]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "bn", "head", "head.0", "head.1"]
    assert len(list(m.parameters())) == 5 and len(list(m.parameters(recurse=False))) == 0
    assert list(m.named_parameters(prefix="net", recurse=True))[0][0] == "net.fc.weight"
    assert m.get_submodule("head.1") is m.head[1]
    m.extra = nn.Parameter(torch.ones(1))
    assert "extra" in m._parameters and m.extra is m._parameters["extra"]
    del m.extra
    assert "extra" not in m._parameters
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'extra'"):
        m.extra


def test_buffer_marker_and_setattr_on_a_buffer_name():
    m = nn.Module()
    m.stats = nn.Buffer(torch.zeros(2), persistent=False)
    assert "stats" in m._buffers and type(m.stats) is torch.Tensor
    assert list(m.state_dict()) == []  # not persistent
    m.stats = torch.ones(3)  # assigning a tensor to a buffer's name replaces the buffer, still not persistent
    assert m._buffers["stats"].tolist() == [1.0, 1.0, 1.0] and list(m.state_dict()) == []
    with pytest.raises(TypeError, match=r"cannot assign 'int' as buffer 'stats' \(torch.Tensor or None expected\)"):
        m.stats = 1


def test_shared_parameters_come_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]


def test_registration_errors_are_pytorchs():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' as parameter 'weight' "
                                        r"\(torch.nn.Parameter or None expected\)"):
        m.weight = torch.zeros(2, 2)
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.register_buffer("weight", torch.zeros(1))
    with pytest.raises(KeyError) as e:
        m.register_buffer("a.b", torch.zeros(1))
    assert e.value.args[0] == 'buffer name can\'t contain "."'
    with pytest.raises(TypeError, match=r"cannot assign 'int' object to buffer 'b' \(torch Tensor or None required\)"):
        m.register_buffer("b", 3)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(torch.zeros(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(1)
    m.weight = None  # None is allowed, and keeps the name a parameter
    assert "weight" in m._parameters and m.weight is None


# ---- state dict ---------------------------------------------------------------------------------

def test_state_dict_keys_values_and_detach():
    m = Net()
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    # The module's own entries first, then each child's; "cache" is not persistent.
    assert list(sd) == ["scale", "fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                        "bn.num_batches_tracked", "head.1.weight"]
    assert not sd["fc.weight"].requires_grad
    assert np.array_equal(sd["fc.weight"].numpy(), m.fc.weight.detach().numpy())
    with torch.no_grad():
        m.fc.weight.fill_(3.0)  # detached aliases: the same memory
    assert sd["fc.weight"][0, 0].item() == 3.0
    assert m.state_dict(keep_vars=True)["fc.weight"] is m.fc.weight
    assert sd["bn.num_batches_tracked"].dtype == torch.int64


def test_load_state_dict_copies_and_reports_keys():
    a, b = Net(), Net()
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert np.array_equal(pa.detach().numpy(), pb.detach().numpy()), name
    weight = b.fc.weight
    b.load_state_dict(Net().state_dict())
    assert b.fc.weight is weight  # copied in place

    sd = a.state_dict()
    del sd["fc.bias"]
    sd["extra.weight"] = torch.zeros(1)
    sd["fc.nope"] = torch.zeros(1)
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(sd)
    # Unexpected keys are found module by module: the root's ("extra.weight") before fc's.
    assert str(e.value) == ('Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc.bias". '
                            '\n\tUnexpected key(s) in state_dict: "extra.weight", "fc.nope". ')
    missing, unexpected = b.load_state_dict(sd, strict=False)  # reported, not raised
    assert (missing, unexpected) == (["fc.bias"], ["extra.weight", "fc.nope"])
    keys = b.load_state_dict(sd, strict=False)
    assert keys._fields == ("missing_keys", "unexpected_keys")

    sd = a.state_dict()
    sd["fc.weight"] = torch.zeros(5, 3)
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(sd)
    assert str(e.value) == ("Error(s) in loading state_dict for Net:\n\tsize mismatch for fc.weight: copying a param "
                            "with shape torch.Size([5, 3]) from checkpoint, the shape in current model is "
                            "torch.Size([4, 3]).")


def test_batchnorm_loads_a_checkpoint_without_num_batches_tracked():
    bn = nn.BatchNorm1d(3)
    sd = dict(bn.state_dict())
    del sd["num_batches_tracked"]  # a plain dict: no version metadata, as from old PyTorch
    assert bn.load_state_dict(sd).missing_keys == []


# ---- calling, hooks, modes --------------------------------------------------------------------------

def test_hooks_run_in_pytorchs_order_and_can_be_removed():
    m = nn.Identity()
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre1"))
    m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    m.register_forward_pre_hook(lambda mod, args: calls.append("pre0"), prepend=True)
    m.register_forward_hook(lambda mod, args, out: calls.append(("fwd", args[0].item(), out.item())))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 10)
    m.register_forward_hook(lambda mod, args, kwargs, out: calls.append(("kw", sorted(kwargs))), with_kwargs=True)
    out = m(torch.tensor(1.0))
    assert out.item() == 20.0
    assert calls == ["pre0", "pre1", ("fwd", 2.0, 2.0), ("kw", [])]
    h1.remove()
    h2.remove()
    h1.remove()  # removing twice is harmless
    calls.clear()
    assert m(torch.tensor(1.0)).item() == 2.0
    assert calls == ["pre0", ("fwd", 2.0, 2.0), ("kw", [])]


def test_pre_hook_with_kwargs_replaces_args_and_kwargs():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] + 1,), {"factor": 3.0}), with_kwargs=True)
    assert m(torch.tensor(1.0)).item() == 6.0
    bad = Scale()
    bad.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, new_kwargs\)"):
        bad(torch.tensor(1.0))


def test_train_eval_apply_and_requires_grad():
    m = Net()
    assert m.training and m.head[0].training
    m.eval()
    assert not m.training and not m.bn.training and not m.head[1].training
    m.train()
    assert m.bn.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(1)
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "BatchNorm1d", "ReLU", "Linear", "Sequential", "Net"]  # children first
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_zero_grad():
    m = nn.Linear(2, 1)
    m(torch.ones(3, 2)).sum().backward()
    assert m.weight.grad.tolist() == [[3.0, 3.0]] and m.bias.grad.tolist() == [3.0]
    m.zero_grad(set_to_none=False)
    assert m.weight.grad.tolist() == [[0.0, 0.0]]
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None


def test_to_and_float_double_keep_parameters_registered():
    m = Net()
    w = m.fc.weight
    assert m.to("cpu") is m and m.fc.weight is w  # a conversion that changes nothing keeps the objects
    assert m.to(torch.float32).fc.weight is w
    m.double()
    assert m.fc.weight.dtype == torch.float64 and isinstance(m.fc.weight, nn.Parameter)
    assert m.fc.weight.requires_grad
    assert np.allclose(m.fc.weight.detach().numpy(), w.detach().numpy())
    assert m.bn.running_mean.dtype == torch.float64
    assert m.bn.num_batches_tracked.dtype == torch.int64  # integer buffers keep their dtype
    assert list(m.state_dict()) == list(Net().state_dict())
    assert m(torch.ones(2, 3, dtype=torch.float64)).dtype == torch.float64
    m.to(dtype=torch.float32)
    assert m.fc.weight.dtype == torch.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                        "dtype=torch.int32"):
        m.to(torch.int32)


def test_deepcopy_makes_independent_parameters():
    m = Net()
    c = copy.deepcopy(m)
    assert c.fc.weight is not m.fc.weight and isinstance(c.fc.weight, nn.Parameter)
    with torch.no_grad():
        c.fc.weight.fill_(1.0)
    assert m.fc.weight[0, 0].item() != 1.0  # |w| <= 1/sqrt(3) at initialisation


def test_repr_is_pytorchs():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Conv2d(1, 4, 3, padding=1, bias=False),
                      nn.ModuleList([nn.Dropout(0.1)] * 2 + [nn.LeakyReLU(0.2)]))
    assert repr(m) == """Sequential(
  (0): Linear(in_features=2, out_features=3, bias=True)
  (1): ReLU()
  (2): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
  (3): ModuleList(
    (0-1): 2 x Dropout(p=0.1, inplace=False)
    (2): LeakyReLU(negative_slope=0.2)
  )
)"""
    assert repr(nn.BatchNorm2d(8)) == "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == "Embedding(10, 3, padding_idx=0)"
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True)"
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


# ---- containers -----------------------------------------------------------------------------------

def test_sequential_indexing_len_append_and_slices():
    a, b, c = nn.Linear(1, 2), nn.ReLU(), nn.Linear(2, 1)
    s = nn.Sequential(a, b)
    assert len(s) == 2 and s[0] is a and s[-1] is b
    s.append(c)
    assert len(s) == 3 and s[2] is c and list(s) == [a, b, c]
    assert isinstance(s[1:], nn.Sequential) and list(s[1:]) == [b, c]
    del s[0]
    assert list(s._modules) == ["0", "1"] and s[0] is b
    with pytest.raises(IndexError, match="index 5 is out of range"):
        s[5]
    named = nn.Sequential(OrderedDict([("first", a), ("act", b)]))
    assert named.first is a and list(named._modules) == ["first", "act"]
    x = torch.tensor([[2.0]])
    np.testing.assert_allclose(nn.Sequential(a, b, c)(x).detach().numpy(), c(b(a(x))).detach().numpy())


def test_module_list_dict_and_parameter_list():
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    assert len(ml) == 3 and isinstance(ml[-1], nn.Tanh)
    assert [n for n, _ in ml.named_parameters()] == ["0.weight", "0.bias"]
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    pl = nn.ParameterList([torch.ones(2), nn.Parameter(torch.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(torch.ones(1))
    assert len(list(pl.parameters())) == 3


# ---- initialisation -------------------------------------------------------------------------------

def test_linear_initial_weights_are_pytorchs():
    # torch.manual_seed(0); nn.Linear(3, 2) in PyTorch:
    torch.manual_seed(0)
    m = nn.Linear(3, 2)
    np.testing.assert_allclose(m.weight.detach().numpy(), [[-0.0043, 0.3097, -0.4752], [-0.4249, -0.2224, 0.1548]],
                               atol=1e-4)
    np.testing.assert_allclose(m.bias.detach().numpy(), [-0.0114, 0.4578], atol=1e-4)
    # The same from the formula: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) of the generator's next numbers.
    torch.manual_seed(0)
    u = torch.rand(8).numpy()
    bound = 1 / math.sqrt(3)
    np.testing.assert_allclose(m.weight.detach().numpy().reshape(-1), -bound + 2 * bound * u[:6], atol=1e-6)
    np.testing.assert_allclose(m.bias.detach().numpy(), -bound + 2 * bound * u[6:], atol=1e-6)


def test_conv_initial_bounds():
    torch.manual_seed(1)
    c = nn.Conv2d(4, 16, (3, 5))
    fan_in = 4 * 3 * 5
    assert c.weight.shape == torch.Size([16, 4, 3, 5])
    w = c.weight.detach().numpy()
    assert np.abs(w).max() <= 1 / math.sqrt(fan_in) and np.abs(w).max() > 0.9 / math.sqrt(fan_in)
    assert np.abs(c.bias.detach().numpy()).max() <= 1 / math.sqrt(fan_in)
    t = nn.ConvTranspose2d(4, 6, 3, groups=2)
    assert t.weight.shape == torch.Size([4, 3, 3, 3])


def test_init_functions_follow_their_formulas():
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / (1 + 0.04))
    assert init.calculate_gain("conv2d") == 1 and init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    assert init._calculate_fan_in_and_fan_out(torch.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 dim"):
        init._calculate_fan_in_and_fan_out(torch.empty(3))

    torch.manual_seed(0)
    w = torch.empty(200, 300)
    init.xavier_uniform_(w)
    a = math.sqrt(6 / 500)
    assert w.abs().max().item() <= a and w.abs().max().item() > 0.99 * a
    init.xavier_normal_(w, gain=2.0)
    assert w.std().item() == pytest.approx(2 * math.sqrt(2 / 500), rel=0.02)
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.std().item() == pytest.approx(math.sqrt(2) / math.sqrt(200), rel=0.02)
    init.kaiming_uniform_(w, nonlinearity="relu")
    bound = math.sqrt(3) * math.sqrt(2) / math.sqrt(300)
    assert w.abs().max().item() <= bound and w.abs().max().item() > 0.99 * bound
    init.trunc_normal_(w, mean=1.0, std=2.0, a=-1.0, b=2.0)
    assert w.min().item() >= -1.0 and w.max().item() <= 2.0
    init.normal_(w, 3.0, 0.5)
    assert w.mean().item() == pytest.approx(3.0, abs=0.01) and w.std().item() == pytest.approx(0.5, rel=0.02)
    init.uniform_(w, -2.0, -1.0)
    assert -2.0 <= w.min().item() and w.max().item() <= -1.0
    assert init.constant_(w, 0.25).detach().numpy().tolist()[0][:2] == [0.25, 0.25]
    assert init.ones_(torch.empty(2)).tolist() == [1.0, 1.0] and init.zeros_(torch.empty(2)).tolist() == [0, 0]
    assert init.eye_(torch.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    q = init.orthogonal_(torch.empty(4, 6)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    d = init.dirac_(torch.empty(2, 2, 3)).numpy()
    assert d[0, 0, 1] == 1 and d[1, 1, 1] == 1 and d.sum() == 2
    p = nn.Parameter(torch.empty(3, 3))
    init.normal_(p)
    assert p.grad_fn is None and p.is_leaf  # under no_grad


# ---- layers against numpy -------------------------------------------------------------------------

def test_linear_forward_is_x_wt_plus_b():
    m = nn.Linear(5, 3)
    x = rand_np(4, 5)
    out = m(torch.from_numpy(x).float()).detach().numpy()
    want = x @ m.weight.detach().numpy().T.astype(np.float64) + m.bias.detach().numpy()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    assert nn.Linear(5, 3, bias=False).bias is None
    bl = nn.Bilinear(2, 3, 4)
    x1, x2 = rand_np(5, 2, seed=1), rand_np(5, 3, seed=2)
    w = bl.weight.detach().numpy()
    want = np.einsum("ni,kij,nj->nk", x1, w, x2) + bl.bias.detach().numpy()
    np.testing.assert_allclose(bl(torch.from_numpy(x1).float(), torch.from_numpy(x2).float()).detach().numpy(), want,
                               rtol=1e-4, atol=1e-5)


def _conv2d_np(x, w, b, stride=1, padding=0):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + b[None, :, None, None]


def test_conv2d_forward_matches_a_direct_convolution():
    torch.manual_seed(3)
    m = nn.Conv2d(2, 3, 3, stride=2, padding=1).double()
    x = rand_np(2, 2, 7, 6)
    want = _conv2d_np(x, m.weight.detach().numpy(), m.bias.detach().numpy(), stride=2, padding=1)
    np.testing.assert_allclose(m(torch.from_numpy(x)).detach().numpy(), want, rtol=1e-10, atol=1e-12)
    same = nn.Conv2d(2, 2, 3, padding="same").double()
    assert same(torch.from_numpy(x)).shape == torch.Size([2, 2, 7, 6])
    c1 = nn.Conv1d(2, 4, 3).double()
    x1 = rand_np(1, 2, 8)
    want1 = _conv2d_np(x1[:, :, None, :], c1.weight.detach().numpy()[:, :, None, :], c1.bias.detach().numpy())[:, :, 0]
    np.testing.assert_allclose(c1(torch.from_numpy(x1)).detach().numpy(), want1, rtol=1e-10, atol=1e-12)


def test_conv_transpose2d_is_the_adjoint_of_conv2d():
    # <conv(x), y> == <x, conv_transpose(y)> with the same weight and no bias.
    conv = nn.Conv2d(2, 3, 3, stride=2, bias=False).double()
    tconv = nn.ConvTranspose2d(3, 2, 3, stride=2, bias=False).double()
    with torch.no_grad():
        tconv.weight.copy_(conv.weight)
    x, y = rand_np(1, 2, 7, 7), rand_np(1, 3, 3, 3, seed=5)
    lhs = (conv(torch.from_numpy(x)).detach().numpy() * y).sum()
    ty = tconv(torch.from_numpy(y), output_size=[7, 7]).detach().numpy()
    assert ty.shape == (1, 2, 7, 7)
    assert lhs == pytest.approx((x * ty).sum(), rel=1e-10)


def test_pooling_matches_numpy():
    x = rand_np(2, 3, 4, 6)
    t = torch.from_numpy(x)
    want = x.reshape(2, 3, 2, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_allclose(nn.MaxPool2d(2)(t).numpy(), want)
    np.testing.assert_allclose(F.max_pool2d(t, 2).numpy(), want)
    np.testing.assert_allclose(nn.AvgPool2d(2)(t).numpy(), x.reshape(2, 3, 2, 2, 3, 2).mean(axis=(3, 5)))
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d((1, 1))(t).numpy(), x.mean(axis=(2, 3), keepdims=True))
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d((None, 3))(t).numpy(), x.reshape(2, 3, 4, 3, 2).mean(axis=4))
    np.testing.assert_allclose(nn.MaxPool1d(3)(t[0]).numpy(), x[0].reshape(3, 4, 2, 3).max(axis=3))
    np.testing.assert_allclose(nn.AvgPool1d(2)(t[0]).numpy(), x[0].reshape(3, 4, 3, 2).mean(axis=3))
    np.testing.assert_allclose(nn.AdaptiveAvgPool1d(1)(t[0]).numpy(), x[0].mean(axis=2, keepdims=True))
    out, idx = nn.MaxPool2d(2, return_indices=True)(t)
    assert idx.dtype == torch.int64 and out.shape == idx.shape


def test_batchnorm_normalises_with_batch_statistics_and_tracks_running_ones():
    bn = nn.BatchNorm2d(3).double()
    with torch.no_grad():
        bn.weight.copy_(f64([1.0, 2.0, 0.5]))
        bn.bias.copy_(f64([0.0, -1.0, 3.0]))
    x = rand_np(4, 3, 2, 5) * 3 + 1
    out = bn(torch.from_numpy(x)).detach().numpy()
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    w, b = np.array([1.0, 2.0, 0.5]), np.array([0.0, -1.0, 3.0])
    want = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5) * w[None, :, None, None] \
        + b[None, :, None, None]
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-10)
    n = 4 * 2 * 5
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.9 * 0 + 0.1 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 * 1 + 0.1 * var * n / (n - 1), rtol=1e-12)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    rm, rv = bn.running_mean.numpy().copy(), bn.running_var.numpy().copy()
    out = bn(torch.from_numpy(x)).detach().numpy()
    want = (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5) * w[None, :, None, None] \
        + b[None, :, None, None]
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-10)
    assert bn.num_batches_tracked.item() == 1  # eval leaves the statistics alone
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        bn(torch.zeros(2, 3, 4, dtype=torch.float64))


def test_batchnorm1d_cumulative_average_and_no_tracking():
    bn = nn.BatchNorm1d(2, momentum=None, affine=False).double()
    xs = [rand_np(5, 2, seed=s) for s in range(3)]
    for x in xs:
        bn(torch.from_numpy(x))
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([x.mean(0) for x in xs], axis=0), rtol=1e-12)
    free = nn.BatchNorm1d(2, track_running_stats=False)
    assert free.running_mean is None and list(free.state_dict()) == ["weight", "bias"]
    free.eval()
    x = rand_np(6, 2)
    np.testing.assert_allclose(free(torch.from_numpy(x).float()).detach().numpy(),
                               (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(2)(torch.zeros(1, 2))


def test_layer_norm_and_group_norm_match_numpy():
    x = rand_np(2, 6, 4)
    ln = nn.LayerNorm([6, 4]).double()
    flat = x.reshape(2, -1)
    want = ((flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(ln(torch.from_numpy(x)).detach().numpy(), want, rtol=1e-9, atol=1e-10)
    gn = nn.GroupNorm(3, 6).double()
    g = x.reshape(2, 3, 8)
    want = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(gn(torch.from_numpy(x)).detach().numpy(), want, rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(4, 6)


def test_embedding_lookup_and_padding_idx():
    torch.manual_seed(0)
    e = nn.Embedding(5, 3, padding_idx=1)
    w = e.weight.detach().numpy().copy()
    assert np.all(w[1] == 0)
    idx = torch.tensor([[0, 1], [4, 1]])
    out = e(idx)
    np.testing.assert_allclose(out.detach().numpy(), w[np.array([[0, 1], [4, 1]])])
    out.sum().backward()
    g = e.weight.grad.numpy()
    assert np.all(g[1] == 0) and np.all(g[0] == 1) and np.all(g[4] == 1) and np.all(g[2] == 0)
    pre = nn.Embedding.from_pretrained(torch.eye(3))
    assert not pre.weight.requires_grad and pre(torch.tensor([2])).tolist() == [[0.0, 0.0, 1.0]]
    capped = nn.Embedding.from_pretrained(f64([[3.0, 4.0], [0.3, 0.4]]), max_norm=1.0)
    capped(torch.tensor([0, 1]))
    np.testing.assert_allclose(capped.weight.numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


def test_embedding_bag_module_trains_and_refuses_what_it_lacks():
    # Values and errors are compared with PyTorch's in pytorch_calls.py; here the module's
    # parameter, state_dict, max_norm and the options without a kernel here.
    torch.manual_seed(0)
    bag = nn.EmbeddingBag(6, 2, mode="sum", padding_idx=0)
    assert [n for n, _ in bag.named_parameters()] == ["weight"] and list(bag.state_dict()) == ["weight"]
    assert np.all(bag.weight.detach().numpy()[0] == 0)
    idx, offsets = torch.tensor([0, 3, 3, 5]), torch.tensor([0, 1])
    out = bag(idx, offsets)
    w = bag.weight.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), [[0.0, 0.0], w[3] * 2 + w[5]], rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(bag.weight.grad.numpy(), [[0, 0], [0, 0], [0, 0], [2, 2], [0, 0], [1, 1]])
    capped = nn.EmbeddingBag.from_pretrained(f64([[3.0, 4.0], [0.3, 0.4]]), max_norm=1.0, mode="max")
    assert not capped.weight.requires_grad
    np.testing.assert_allclose(capped(torch.tensor([[0, 1]])).numpy(), [[0.6, 0.8]], rtol=1e-6)
    with pytest.raises(NotImplementedError, match="scale_grad_by_freq"):
        F.embedding_bag(idx, bag.weight, offsets, scale_grad_by_freq=True)
    # sparse=True now gives a sparse gradient holding the same rows (test_sparse.py checks
    # the values against PyTorch).
    sparse_bag = nn.EmbeddingBag(6, 2, mode="sum", padding_idx=0, sparse=True)
    sparse_bag(idx, offsets).sum().backward()
    assert sparse_bag.weight.grad.is_sparse
    np.testing.assert_allclose(sparse_bag.weight.grad.to_dense().numpy(), [[0, 0], [0, 0], [0, 0], [2, 2], [0, 0], [1, 1]])


def test_dropout_training_and_eval():
    torch.manual_seed(0)
    d = nn.Dropout(0.25)
    x = torch.ones(100000)
    y = d(x).numpy()
    kept = y != 0
    assert np.allclose(y[kept], 1 / 0.75)
    assert kept.mean() == pytest.approx(0.75, abs=0.01)
    d.eval()
    assert d(x) is x or np.array_equal(d(x).numpy(), x.numpy())
    d2 = nn.Dropout2d(0.5)
    y = d2(torch.ones(8, 50, 3, 3)).numpy()
    per_channel = y.reshape(8, 50, 9)
    assert np.all((per_channel == 0).all(2) | (per_channel == 2).all(2))  # whole channels
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


def test_activations_match_their_formulas():
    x = rand_np(50) * 3
    t = torch.from_numpy(x)
    erf = np.vectorize(math.erf)
    softplus = np.log1p(np.exp(x))
    cases = {
        nn.ReLU(): np.maximum(x, 0),
        nn.ReLU6(): np.clip(x, 0, 6),
        nn.LeakyReLU(0.2): np.where(x >= 0, x, 0.2 * x),
        nn.GELU(): 0.5 * x * (1 + erf(x / math.sqrt(2))),
        nn.GELU("tanh"): 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
        nn.SiLU(): x / (1 + np.exp(-x)),
        nn.Sigmoid(): 1 / (1 + np.exp(-x)),
        nn.Tanh(): np.tanh(x),
        nn.ELU(0.5): np.where(x > 0, x, 0.5 * (np.exp(x) - 1)),
        nn.Softplus(): softplus,
        nn.Softplus(beta=2.0, threshold=1.0): np.where(2 * x > 1.0, x, np.log1p(np.exp(2 * x)) / 2),
        nn.Hardtanh(-0.5, 2.0): np.clip(x, -0.5, 2.0),
        nn.Mish(): x * np.tanh(softplus),
        nn.Hardswish(): x * np.clip(x + 3, 0, 6) / 6,
        nn.Hardsigmoid(): np.clip(x + 3, 0, 6) / 6,
        nn.LogSigmoid(): -np.log1p(np.exp(-x)),
        nn.Softsign(): x / (1 + np.abs(x)),
        nn.Threshold(0.5, -1.0): np.where(x > 0.5, x, -1.0),
    }
    for module, want in cases.items():
        np.testing.assert_allclose(module(t).numpy(), want, rtol=1e-9, atol=1e-12, err_msg=repr(module))
    m = rand_np(4, 5)
    e = np.exp(m - m.max(1, keepdims=True))
    np.testing.assert_allclose(nn.Softmax(dim=1)(torch.from_numpy(m)).numpy(), e / e.sum(1, keepdims=True))
    np.testing.assert_allclose(nn.LogSoftmax(dim=1)(torch.from_numpy(m)).numpy(), np.log(e / e.sum(1, keepdims=True)))
    y = torch.from_numpy(x.copy())
    assert nn.ReLU(inplace=True)(y) is y and y.min().item() >= 0


def test_losses_match_their_formulas():
    logits = rand_np(6, 4)
    target = np.array([0, 3, 1, 1, 2, 0])
    lt, tt = torch.from_numpy(logits), torch.from_numpy(target)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    nll = -logp[np.arange(6), target]
    assert nn.CrossEntropyLoss()(lt, tt).item() == pytest.approx(nll.mean(), rel=1e-12)
    np.testing.assert_allclose(nn.CrossEntropyLoss(reduction="none")(lt, tt).numpy(), nll, rtol=1e-12)
    w = np.array([1.0, 2.0, 0.5, 3.0])
    weighted = nn.CrossEntropyLoss(weight=torch.from_numpy(w))(lt, tt).item()
    assert weighted == pytest.approx((w[target] * nll).sum() / w[target].sum(), rel=1e-12)
    assert nn.NLLLoss(reduction="sum")(torch.from_numpy(logp), tt).item() == pytest.approx(nll.sum(), rel=1e-12)
    assert nn.CrossEntropyLoss(ignore_index=1)(lt, tt).item() == pytest.approx(nll[target != 1].mean(), rel=1e-12)
    a, b = rand_np(10), rand_np(10, seed=1)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    assert nn.MSELoss()(ta, tb).item() == pytest.approx(((a - b) ** 2).mean(), rel=1e-12)
    assert nn.L1Loss(reduction="sum")(ta, tb).item() == pytest.approx(np.abs(a - b).sum(), rel=1e-12)
    d = np.abs(a - b)
    assert nn.SmoothL1Loss(beta=0.5)(ta, tb).item() == pytest.approx(
        np.where(d < 0.5, 0.5 * d ** 2 / 0.5, d - 0.25).mean(), rel=1e-12)
    assert nn.HuberLoss(delta=0.5)(ta, tb).item() == pytest.approx(
        np.where(d < 0.5, 0.5 * d ** 2, 0.5 * (d - 0.25)).mean(), rel=1e-12)
    p = 1 / (1 + np.exp(-a))
    y = (b > 0).astype(np.float64)
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert nn.BCELoss()(torch.from_numpy(p), torch.from_numpy(y)).item() == pytest.approx(bce.mean(), rel=1e-10)
    assert nn.BCEWithLogitsLoss()(ta, torch.from_numpy(y)).item() == pytest.approx(bce.mean(), rel=1e-10)
    pw = nn.BCEWithLogitsLoss(pos_weight=f64([3.0]))(ta, torch.from_numpy(y)).item()
    assert pw == pytest.approx((-(3 * y * np.log(p) + (1 - y) * np.log(1 - p))).mean(), rel=1e-10)
    assert nn.MSELoss(size_average=False)(ta, tb).item() == pytest.approx(((a - b) ** 2).sum(), rel=1e-12)
    assert F.cross_entropy(lt, tt, reduction="sum").item() == pytest.approx(nll.sum(), rel=1e-12)


def test_flatten_unflatten_identity():
    x = torch.zeros(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == torch.Size([2, 60])
    assert nn.Flatten(0, 2)(x).shape == torch.Size([24, 5])
    assert nn.Unflatten(1, (3, 20))(nn.Flatten()(x)).shape == torch.Size([2, 3, 20])
    assert nn.Identity(54, unused="x")(x) is x


# ---- gradient clipping: PyTorch 2.15's numbers (nn/tests/nn/optim.rs) ------------------------------
# a = Parameter(zeros(2, 3)); b = Parameter(zeros(4, dtype=float64)); c = Parameter(zeros(2))
# a.grad = tensor(G1); b.grad = tensor(G2, dtype=float64); total = clip_grad_norm_([a, b, c], max_norm, norm_type)

G1 = [0.3, -1.2, 2.0, 0.5, 0.0, -0.7]
G2 = [1.5, -0.25, 3.0, 0.1]
CLIP = {
    (1.0, 2.0): (4.194341452493193,
                 [0.07152491807937622, -0.2860996723175049, 0.476832777261734, 0.1192081943154335, 0.0,
                  -0.16689147055149078],
                 [0.3576245900256363, -0.05960409833760605, 0.7152491800512726, 0.023841639335042422]),
    (2.5, 1.0): (9.549999809265136,
                 [0.07853402942419052, -0.3141361176967621, 0.5235601663589478, 0.13089004158973694, 0.0,
                  -0.18324606120586395],
                 [0.39267012379327315, -0.06544502063221219, 0.7853402475865463, 0.02617800825288488]),
    (1.0, math.inf): (3.0,
                      [0.09999997168779373, -0.3999998867511749, 0.6666664481163025, 0.16666661202907562, 0.0,
                       -0.2333332598209381],
                      [0.4999998333333889, -0.08333330555556481, 0.9999996666667778, 0.033333322222225924]),
    (10.0, 3.0): (3.437379493599578, [0.30000001192092896, -1.2000000476837158, 2.0, 0.5, 0.0, -0.699999988079071],
                  [1.5, -0.25, 3.0, 0.1]),
}


def _clip_params():
    a = nn.Parameter(torch.zeros(2, 3))
    b = nn.Parameter(torch.zeros(4, dtype=torch.float64))
    c = nn.Parameter(torch.zeros(2))
    a.grad = torch.tensor(G1).view(2, 3)
    b.grad = f64(G2)
    return a, b, c


@pytest.mark.parametrize("max_norm,norm_type", sorted(CLIP))
def test_clip_grad_norm_matches_pytorch(max_norm, norm_type):
    total_want, a_want, b_want = CLIP[(max_norm, norm_type)]
    a, b, c = _clip_params()
    total = nn.utils.clip_grad_norm_([a, b, c], max_norm, norm_type)
    assert total.dim() == 0 and total.dtype == torch.float64  # promoted as torch.stack promotes
    assert total.item() == pytest.approx(total_want, abs=1e-12)
    np.testing.assert_allclose(a.grad.numpy().reshape(-1), a_want, atol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), b_want, atol=1e-6)
    assert c.grad is None


def test_clip_grad_norm_edge_cases_and_clip_grad_value():
    p = nn.Parameter(torch.tensor([1.0]))
    total = nn.utils.clip_grad_norm_([p], 1.0)
    assert total.dtype == torch.float32 and total.item() == 0.0
    p.grad = torch.tensor([math.inf])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped."):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    a, _, _ = _clip_params()
    nn.utils.clip_grad_value_([a], 0.6)
    np.testing.assert_allclose(a.grad.numpy().reshape(-1), [0.30000001192092896, -0.6000000238418579,
                                                            0.6000000238418579, 0.5, 0.0, -0.6000000238418579],
                               atol=1e-7)
    lin = nn.Linear(2, 2)
    vec = nn.utils.parameters_to_vector(lin.parameters())
    assert vec.shape == torch.Size([6])
    nn.utils.vector_to_parameters(torch.arange(6.0), lin.parameters())
    assert lin.weight.tolist() == [[0.0, 1.0], [2.0, 3.0]] and lin.bias.tolist() == [4.0, 5.0]


# ---- interpolation: PyTorch 2.15's values (nn/tests/nn/layers_expected.txt, by gen_layers.py) -------

def _wave(shape, a=0.7, b=0.3):
    """sin(a * arange(n) + b) in float64, reshaped: gen_layers.py's inputs."""
    n = int(np.prod(shape))
    return torch.from_numpy(np.sin(a * np.arange(n, dtype=np.float64) + b).reshape(shape))


def _pytorch_values(name):
    path = Path(__file__).resolve().parents[2] / "nn" / "tests" / "nn" / "layers_expected.txt"
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"// {name} ["):
            shape = [int(s) for s in line.rsplit("[", 1)[1].rstrip("]").split(",")]
            return np.array([float(v) for v in lines[i + 1].strip("[]").split(",")]).reshape(shape)
    raise KeyError(name)


@pytest.mark.parametrize("name,shape,kw", [
    ("linear size 8", [1, 2, 5], dict(size=8, mode="linear")),
    ("linear size 8 align", [1, 2, 5], dict(size=8, mode="linear", align_corners=True)),
    ("linear scale 1.7", [1, 2, 5], dict(scale_factor=1.7, mode="linear")),
    ("bicubic size (7,3)", [1, 1, 4, 5], dict(size=(7, 3), mode="bicubic")),
    ("bicubic scale 2 align", [1, 1, 3, 4], dict(scale_factor=2.0, mode="bicubic", align_corners=True)),
    ("trilinear scale 1.5", [1, 1, 3, 4, 2], dict(scale_factor=1.5, mode="trilinear")),
    ("nearest-exact size (5,7)", [1, 1, 3, 5], dict(size=(5, 7), mode="nearest-exact")),
    ("nearest-exact scale 2.3", [1, 2, 3], dict(scale_factor=2.3, mode="nearest-exact")),
    ("area size (2,3)", [1, 1, 5, 4], dict(size=(2, 3), mode="area")),
])
def test_interpolate_matches_pytorch(name, shape, kw):
    want = _pytorch_values(name)
    got = F.interpolate(_wave(shape), **kw).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_upsample_nearest_repeats_and_argument_errors():
    x = rand_np(1, 2, 3, 4)
    np.testing.assert_allclose(nn.Upsample(scale_factor=2)(torch.from_numpy(x)).numpy(),
                               x.repeat(2, axis=2).repeat(2, axis=3))
    assert repr(nn.Upsample(scale_factor=2, mode="bilinear")) == "Upsample(scale_factor=2.0, mode='bilinear')"
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(torch.from_numpy(x), size=4, scale_factor=2)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(torch.from_numpy(x), size=4, align_corners=True)


def test_instance_norm_normalises_each_sample_and_channel():
    x = rand_np(2, 3, 4, 5)
    want = (x - x.mean((2, 3), keepdims=True)) / np.sqrt(x.var((2, 3), keepdims=True) + 1e-5)
    m = nn.InstanceNorm2d(3)
    assert repr(m) == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)"
    np.testing.assert_allclose(m(torch.from_numpy(x)).numpy(), want, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(m(torch.from_numpy(x[0])).numpy(), want[0], rtol=1e-9, atol=1e-10)  # unbatched


def test_full_backward_hooks_see_and_replace_gradients():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2).double()
    w = lin.weight.detach().numpy().copy()
    seen = []
    lin.register_full_backward_pre_hook(lambda m, gout: seen.append(("pre", gout[0].numpy().copy())))
    lin.register_full_backward_hook(lambda m, gin, gout: seen.append(("full", gin[0].numpy().copy(),
                                                                      gout[0].numpy().copy())))
    x = torch.from_numpy(rand_np(4, 3)).requires_grad_(True)
    (lin(x) * 2).sum().backward()
    # d(sum(2 y))/dy = 2; dL/dx = 2 * ones @ W.
    assert [s[0] for s in seen] == ["pre", "full"]
    np.testing.assert_allclose(seen[0][1], np.full((4, 2), 2.0))
    np.testing.assert_allclose(seen[1][1], np.full((4, 2), 2.0) @ w)
    np.testing.assert_allclose(x.grad.numpy(), np.full((4, 2), 2.0) @ w)

    scaled = nn.Linear(3, 2).double()
    scaled.register_full_backward_pre_hook(lambda m, gout: (gout[0] * 3,))  # scales the parameters' grads too
    scaled.register_full_backward_hook(lambda m, gin, gout: (gin[0] * 10,))  # only the input's
    x = torch.from_numpy(rand_np(4, 3)).requires_grad_(True)
    scaled(x).sum().backward()
    np.testing.assert_allclose(scaled.bias.grad.numpy(), [12.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), 30 * np.ones((4, 2)) @ scaled.weight.detach().numpy())

    # An input that does not require grad: the hook runs with grad_input (None,).
    got = []
    frozen = nn.Linear(3, 2)
    frozen.register_full_backward_hook(lambda m, gin, gout: got.append((gin, gout[0].shape)))
    frozen(torch.ones(5, 3)).sum().backward()
    assert got == [((None,), torch.Size([5, 2]))]


def test_tensor_methods_added_for_nn():
    x = torch.ones(2, dtype=torch.float64)
    z = x.new_zeros(2, 3)
    assert z.shape == torch.Size([2, 3]) and z.dtype == torch.float64 and z.abs().sum().item() == 0
    assert x.new_ones((1, 2), requires_grad=True).requires_grad
    assert x.new_full((2,), 7.0).tolist() == [7.0, 7.0] and x.new_empty(4).shape == torch.Size([4])
    assert x.new_tensor([1, 2]).dtype == torch.float64
    a = f64([0.0, 10.0])
    assert a.lerp_(f64([10.0, 0.0]), 0.25) is a and a.tolist() == [2.5, 7.5]
    p = nn.Parameter(f64([1.0]))
    p.grad = f64([2.0])
    q = copy.deepcopy(p)
    # PyTorch's Parameter.__deepcopy__ copies data and requires_grad, not the gradient.
    assert type(q) is nn.Parameter and q.requires_grad and q.grad is None and q.tolist() == [1.0] and q is not p
    t = f64([1.0]).requires_grad_(True)
    t.grad = f64([2.0])
    assert copy.deepcopy(t).grad.tolist() == [2.0]  # a plain tensor's copy keeps its gradient


def test_padding_layers_match_numpy_pad():
    x = rand_np(1, 2, 3, 4)
    t = torch.from_numpy(x)
    pads = ((0, 0), (0, 0), (2, 1), (1, 2))  # F.pad's (left, right, top, bottom) = (1, 2, 2, 1)
    np.testing.assert_allclose(nn.ZeroPad2d((1, 2, 2, 1))(t).numpy(), np.pad(x, pads))
    np.testing.assert_allclose(nn.ConstantPad2d((1, 2, 2, 1), 3.5)(t).numpy(), np.pad(x, pads, constant_values=3.5))
    np.testing.assert_allclose(nn.ReflectionPad2d((1, 2, 2, 1))(t).numpy(), np.pad(x, pads, mode="reflect"))
    np.testing.assert_allclose(nn.ReplicationPad2d((1, 2, 2, 1))(t).numpy(), np.pad(x, pads, mode="edge"))
    np.testing.assert_allclose(nn.CircularPad2d((1, 2, 2, 1))(t).numpy(), np.pad(x, pads, mode="wrap"))
    np.testing.assert_allclose(nn.ReflectionPad1d(2)(t[0]).numpy(), np.pad(x[0], ((0, 0), (0, 0), (2, 2)),
                                                                          mode="reflect"))
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad1d(2, 0.5)) == "ConstantPad1d(padding=(2, 2), value=0.5)"


def test_pixel_shuffle_and_distances():
    x = rand_np(1, 8, 2, 3)
    y = nn.PixelShuffle(2)(torch.from_numpy(x)).numpy()
    # out[c, 2h + i, 2w + j] = in[4c + 2i + j, h, w]
    want = x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6)
    np.testing.assert_allclose(y, want)
    np.testing.assert_allclose(nn.PixelUnshuffle(2)(torch.from_numpy(y)).numpy(), x)
    a, b = rand_np(5, 3), rand_np(5, 3, seed=1)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(nn.CosineSimilarity()(torch.from_numpy(a), torch.from_numpy(b)).numpy(), cos,
                               rtol=1e-10)
    np.testing.assert_allclose(nn.PairwiseDistance()(torch.from_numpy(a), torch.from_numpy(b)).numpy(),
                               np.linalg.norm(a - b + 1e-6, axis=1), rtol=1e-10)


def test_pad_sequence():
    a, b = f64([1.0, 2.0, 3.0]), f64([4.0])
    out = nn.utils.rnn.pad_sequence([a, b])
    assert out.shape == torch.Size([3, 2]) and out.tolist() == [[1.0, 4.0], [2.0, 0.0], [3.0, 0.0]]
    out = nn.utils.rnn.pad_sequence([a, b], batch_first=True, padding_value=-1.0, padding_side="left")
    assert out.tolist() == [[1.0, 2.0, 3.0], [-1.0, -1.0, 4.0]]
    x = torch.ones(2, 1, requires_grad=True)
    nn.utils.rnn.pad_sequence([x, torch.zeros(3, 1)]).sum().backward()
    assert x.grad.tolist() == [[1.0], [1.0]]  # differentiable


def test_more_losses_match_their_formulas():
    x, y = rand_np(6), np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    assert nn.HingeEmbeddingLoss(margin=0.5)(torch.from_numpy(x), torch.from_numpy(y)).item() == pytest.approx(
        np.where(y == 1, x, np.maximum(0, 0.5 - x)).mean(), rel=1e-12)
    a, b, c = rand_np(6, 4), rand_np(6, 4, seed=1), rand_np(6, 4, seed=2)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    got = nn.CosineEmbeddingLoss(margin=0.1)(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(y)).item()
    assert got == pytest.approx(np.where(y == 1, 1 - cos, np.maximum(0, cos - 0.1)).mean(), rel=1e-6)
    d_ap = np.linalg.norm(a - b + 1e-6, axis=1)
    d_an = np.linalg.norm(a - c + 1e-6, axis=1)
    got = nn.TripletMarginLoss(margin=0.5)(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)).item()
    assert got == pytest.approx(np.maximum(d_ap - d_an + 0.5, 0).mean(), rel=1e-9)
    counts = np.abs(rand_np(6, seed=3)) * 3
    got = nn.PoissonNLLLoss()(torch.from_numpy(x), torch.from_numpy(counts)).item()
    assert got == pytest.approx((np.exp(x) - counts * x).mean(), rel=1e-12)
    var = np.abs(rand_np(6, seed=4)) + 0.1
    got = nn.GaussianNLLLoss(full=True)(torch.from_numpy(x), torch.from_numpy(counts), torch.from_numpy(var)).item()
    assert got == pytest.approx((0.5 * (np.log(var) + (x - counts) ** 2 / var) + 0.5 * math.log(2 * math.pi)).mean(),
                                rel=1e-12)
    logits, target = rand_np(5, 4), np.array([0, 3, 1, 2, 2])
    margins = np.maximum(0, 1.0 - logits[np.arange(5), target][:, None] + logits)
    margins[np.arange(5), target] = 0
    got = nn.MultiMarginLoss()(torch.from_numpy(logits), torch.from_numpy(target)).item()
    assert got == pytest.approx((margins.sum(1) / 4).mean(), rel=1e-12)
    # PyTorch's documented example of MultiLabelMarginLoss: 0.85.
    got = nn.MultiLabelMarginLoss()(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([[3, 0, -1, 1]])).item()
    assert got == pytest.approx(0.85, abs=1e-6)


def test_unfold_gives_the_sliding_blocks_as_columns():
    x = rand_np(2, 3, 5, 4)
    cols = nn.Unfold(kernel_size=(2, 3), padding=1, stride=2)(torch.from_numpy(x)).numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    blocks = [xp[:, :, i:i + 2, j:j + 3].reshape(2, -1) for i in range(0, 7 - 2 + 1, 2) for j in range(0, 6 - 3 + 1, 2)]
    np.testing.assert_allclose(cols, np.stack(blocks, axis=2))
    # Unfold then a matmul is a convolution.
    conv = nn.Conv2d(3, 4, (2, 3), padding=1, stride=2, bias=False).double()
    w = conv.weight.detach().numpy().reshape(4, -1)
    np.testing.assert_allclose((w @ cols).reshape(2, 4, 3, 2), conv(torch.from_numpy(x)).detach().numpy(), rtol=1e-10)
