"""Writes the expected values of nn/tests/nn/layers.rs to layers_expected.txt
(PyTorch 2.15: python3 gen_layers.py > layers_expected.txt).

Inputs are deterministic: `wave(shape, a, b)` is sin(a * arange(n) + b) in float64, reshaped.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_printoptions(precision=17)


def wave(shape, a=0.7, b=0.3):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(a * torch.arange(n, dtype=torch.float64) + b).reshape(shape)


def show(name, t):
    vals = ", ".join(repr(float(v)) for v in t.detach().reshape(-1))
    print(f"// {name} {list(t.shape)}\n[{vals}]")


def interp(name, shape, **kw):
    x = wave(shape).requires_grad_(True)
    y = F.interpolate(x, **kw)
    show(name, y)
    (y * wave(list(y.shape), 0.3, 0.1)).sum().backward()
    show(name + " grad", x.grad)


interp("linear size 8", [1, 2, 5], size=8, mode="linear")
interp("linear size 8 align", [1, 2, 5], size=8, mode="linear", align_corners=True)
interp("linear scale 1.7", [1, 2, 5], scale_factor=1.7, mode="linear")
interp("bicubic size (7,3)", [1, 1, 4, 5], size=(7, 3), mode="bicubic")
interp("bicubic scale 2 align", [1, 1, 3, 4], scale_factor=2.0, mode="bicubic", align_corners=True)
interp("trilinear scale 1.5", [1, 1, 3, 4, 2], scale_factor=1.5, mode="trilinear")
interp("nearest-exact size (5,7)", [1, 1, 3, 5], size=(5, 7), mode="nearest-exact")
interp("nearest-exact scale 2.3", [1, 2, 3], scale_factor=2.3, mode="nearest-exact")
interp("area size (2,3)", [1, 1, 5, 4], size=(2, 3), mode="area")

# Embedding(max_norm=1): the looked-up rows are renormalised in place.
w = wave([5, 3], 1.3, 0.2) * 2
e = nn.Embedding.from_pretrained(w.clone(), freeze=False, max_norm=1.0)
out = e(torch.tensor([[0, 2], [2, 3]]))
show("embedding max_norm out", out)
show("embedding max_norm weight", e.weight)
e1 = nn.Embedding.from_pretrained(w.clone(), freeze=False, max_norm=1.5, norm_type=1.0)
e1(torch.tensor([1, 4]))
show("embedding max_norm p=1 weight", e1.weight)

# Embedding's weight gradient with padding_idx and scale_grad_by_freq
ids = torch.tensor([[1, 3, 3, 0], [9, 1, 3, 3]])
go = wave([2, 4, 4], 0.9, 0.1)
for pad, scale in [(None, False), (3, False), (1, True), (None, True)]:
    w = wave([10, 4], 1.1, 0.5).requires_grad_()
    F.embedding(ids, w, padding_idx=pad, scale_grad_by_freq=scale).backward(go)
    show(f"embedding grad padding {pad} scale {scale}", w.grad)

# EmbeddingBag with include_last_offset (an empty bag) and padding_idx.
wb = wave([10, 3], 0.9, 0.4)
idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
offs = torch.tensor([0, 2, 2, 5, 8])
for mode in ["sum", "mean", "max"]:
    bag = nn.EmbeddingBag.from_pretrained(wb.clone(), freeze=False, mode=mode, include_last_offset=True, padding_idx=4)
    o = bag(idx, offs)
    show(f"bag {mode}", o)
    (o * wave(list(o.shape), 0.3, 0.1)).sum().backward()
    show(f"bag {mode} grad", bag.weight.grad)
bag = nn.EmbeddingBag.from_pretrained(wb.clone(), freeze=False, mode="sum")
psw = wave([8], 0.5, 0.2)
show("bag sum psw", bag(idx, torch.tensor([0, 3]), per_sample_weights=psw))

# MaxPool2d(return_indices=True)
mp = nn.MaxPool2d(2, stride=1, return_indices=True)
o, i = mp(wave([1, 1, 3, 4], 2.1, 0.0))
show("maxpool out", o)
show("maxpool idx", i)

# Bilinear
bl = nn.Bilinear(2, 3, 2).double()
with torch.no_grad():
    bl.weight.copy_(wave([2, 2, 3], 0.4, 0.1))
    bl.bias.copy_(torch.tensor([0.1, -0.2], dtype=torch.float64))
x1 = wave([4, 2], 0.8, 0.5)
x2 = wave([4, 3], 0.6, 0.9)
show("bilinear", bl(x1, x2))

# Conv3d
c3 = nn.Conv3d(2, 2, (2, 2, 1), stride=(1, 2, 1), padding=(1, 0, 0)).double()
with torch.no_grad():
    c3.weight.copy_(wave([2, 2, 2, 2, 1], 0.45, 0.2))
    c3.bias.copy_(torch.tensor([0.05, -0.05], dtype=torch.float64))
show("conv3d", c3(wave([1, 2, 2, 4, 2], 0.35, 0.0)))

# InstanceNorm2d affine, track_running_stats
inn = nn.InstanceNorm2d(2, affine=True, track_running_stats=True).double()
with torch.no_grad():
    inn.weight.copy_(torch.tensor([1.5, 0.5], dtype=torch.float64))
    inn.bias.copy_(torch.tensor([0.1, -0.1], dtype=torch.float64))
xi = wave([2, 2, 3, 3], 0.9, 0.1)
show("instancenorm train", inn(xi))
show("instancenorm running_mean", inn.running_mean)
show("instancenorm running_var", inn.running_var)
inn.eval()
show("instancenorm eval", inn(xi))

# PixelShuffle / PixelUnshuffle
ps = wave([1, 8, 2, 3], 0.3, 0.0)
show("pixel_shuffle", nn.PixelShuffle(2)(ps))

# Activations on one input
xa = wave([7], 1.7, 0.2) * 3
acts = [
    ("ReLU6", nn.ReLU6()), ("Hardsigmoid", nn.Hardsigmoid()), ("Hardswish", nn.Hardswish()),
    ("SELU", nn.SELU()), ("LogSigmoid", nn.LogSigmoid()), ("Softsign", nn.Softsign()),
    ("Tanhshrink", nn.Tanhshrink()), ("Mish", nn.Mish()), ("SiLU", nn.SiLU()),
    ("LeakyReLU", nn.LeakyReLU(0.2)), ("ELU", nn.ELU(0.7)), ("CELU", nn.CELU(1.3)),
    ("Softplus", nn.Softplus(2.0, 3.0)), ("Hardtanh", nn.Hardtanh(-0.5, 1.5)),
    ("Threshold", nn.Threshold(0.3, -1.0)), ("Softmin", nn.Softmin(0)),
    ("Hardshrink", nn.Hardshrink(0.7)), ("Softshrink", nn.Softshrink(0.7)),
    ("GELU tanh", nn.GELU("tanh")), ("PReLU", nn.PReLU(1, 0.3).double()),
]
for name, m in acts:
    show("act " + name, m(xa))
show("act GLU", nn.GLU(0)(wave([6], 1.7, 0.2)))
