"""Traces and scripts every module torch.nn ships, for the jit tests' coverage check
(`modules.rs`, `pytorch_traced_and_scripted_nn_modules_load_and_match`).

For each class of `torch.nn.modules.__all__` (listed in SPECS with constructor arguments and
inputs, or in SKIPPED with the reason), in eval mode and, where the module behaves differently
in training (batch statistics, dropout of probability 0 in attention), in train mode too:
`torch.jit.trace` and `torch.jit.script` of a fresh copy are saved as
`<Class>.<mode>.traced.pt` / `.scripted.pt` (when PyTorch loads and runs it back), and `<Class>.<mode>.io.pt` (`torch.save` of a
dict) holds the inputs `input0`, ..., the outputs of one eager call `output0`, ... (tuples
flattened; numbers as 0-dim tensors) and, in train mode, the buffers after it
(`buffer.<name>`). A module PyTorch itself cannot trace, script, or load and run again is
listed in `pytorch_failed.txt` with PyTorch's error, and not counted against us.

Run by the Rust test with PyTorch installed: python3 gen_modules.py OUT_DIR. Deterministic: one
seed per module.
"""
import copy
import os
import sys
import warnings

import torch
import torch.nn as nn

warnings.filterwarnings("ignore")


def r(*shape):
    return torch.randn(*shape)


def pos(*shape):
    return torch.rand(*shape) + 0.1


def labels(n, c):
    return torch.randint(0, c, (n,))


def sign(n):
    return torch.randint(0, 2, (n,)).float() * 2 - 1


# Class name -> (constructor, inputs, train mode too).
SPECS = {
    "AdaptiveAvgPool1d": (lambda: nn.AdaptiveAvgPool1d(3), lambda: [r(2, 4, 7)], False),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((3, 2)), lambda: [r(2, 4, 7, 5)], False),
    "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d(2), lambda: [r(2, 3, 5, 4, 6)], False),
    "AdaptiveLogSoftmaxWithLoss": (
        lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 8]),
        lambda: [r(5, 8), labels(5, 10)],
        False,
    ),
    "AdaptiveMaxPool1d": (lambda: nn.AdaptiveMaxPool1d(3), lambda: [r(2, 4, 7)], False),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d((3, 2)), lambda: [r(2, 4, 7, 5)], False),
    "AdaptiveMaxPool3d": (lambda: nn.AdaptiveMaxPool3d(2), lambda: [r(2, 3, 5, 4, 6)], False),
    "AlphaDropout": (lambda: nn.AlphaDropout(0.3), lambda: [r(4, 5)], False),
    "AvgPool1d": (lambda: nn.AvgPool1d(3, stride=2, padding=1), lambda: [r(2, 4, 9)], False),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), lambda: [r(2, 3, 7, 6)], False),
    "AvgPool3d": (lambda: nn.AvgPool3d(2, ceil_mode=True), lambda: [r(2, 3, 5, 4, 5)], False),
    "BCELoss": (lambda: nn.BCELoss(), lambda: [torch.rand(4, 3) * 0.9 + 0.05, torch.rand(4, 3)], False),
    "BCEWithLogitsLoss": (lambda: nn.BCEWithLogitsLoss(pos_weight=torch.rand(3) + 0.5), lambda: [r(4, 3), torch.rand(4, 3)], False),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4), lambda: [r(6, 4, 3)], True),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), lambda: [r(4, 3, 5, 5)], True),
    "BatchNorm3d": (lambda: nn.BatchNorm3d(3), lambda: [r(2, 3, 3, 4, 2)], True),
    "Bilinear": (lambda: nn.Bilinear(4, 5, 3), lambda: [r(6, 4), r(6, 5)], False),
    "CELU": (lambda: nn.CELU(0.7), lambda: [r(4, 5)], False),
    "CTCLoss": (
        lambda: nn.CTCLoss(),
        lambda: [
            r(12, 2, 5).log_softmax(2),
            torch.randint(1, 5, (2, 4)),
            torch.tensor([12, 10]),
            torch.tensor([4, 3]),
        ],
        False,
    ),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), lambda: [r(2, 4, 3, 3)], False),
    "CircularPad1d": (lambda: nn.CircularPad1d((1, 2)), lambda: [r(2, 3, 5)], False),
    "CircularPad2d": (lambda: nn.CircularPad2d((1, 2, 0, 1)), lambda: [r(2, 3, 5, 4)], False),
    "CircularPad3d": (lambda: nn.CircularPad3d(1), lambda: [r(1, 2, 3, 4, 3)], False),
    "ConstantPad1d": (lambda: nn.ConstantPad1d((1, 2), 0.5), lambda: [r(2, 3, 5)], False),
    "ConstantPad2d": (lambda: nn.ConstantPad2d((1, 2, 0, 1), -1.0), lambda: [r(2, 3, 5, 4)], False),
    "ConstantPad3d": (lambda: nn.ConstantPad3d(1, 2.0), lambda: [r(1, 2, 3, 4, 3)], False),
    "Conv1d": (lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2), lambda: [r(2, 4, 9)], False),
    "Conv2d": (lambda: nn.Conv2d(3, 4, (3, 2), stride=(1, 2), padding=1, dilation=(2, 1)), lambda: [r(2, 3, 8, 7)], False),
    "Conv3d": (lambda: nn.Conv3d(2, 3, 2, padding=1), lambda: [r(1, 2, 4, 3, 4)], False),
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1), lambda: [r(2, 4, 5)], False),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, groups=1), lambda: [r(2, 3, 4, 5)], False),
    "ConvTranspose3d": (lambda: nn.ConvTranspose3d(2, 3, 2, stride=2), lambda: [r(1, 2, 3, 2, 3)], False),
    "CosineEmbeddingLoss": (lambda: nn.CosineEmbeddingLoss(margin=0.2), lambda: [r(5, 4), r(5, 4), sign(5)], False),
    "CosineSimilarity": (lambda: nn.CosineSimilarity(dim=1), lambda: [r(5, 4), r(5, 4)], False),
    "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(label_smoothing=0.1), lambda: [r(5, 4), labels(5, 4)], False),
    "Dropout": (lambda: nn.Dropout(0.4), lambda: [r(4, 5)], False),
    "Dropout1d": (lambda: nn.Dropout1d(0.4), lambda: [r(2, 4, 5)], False),
    "Dropout2d": (lambda: nn.Dropout2d(0.4), lambda: [r(2, 4, 5, 3)], False),
    "Dropout3d": (lambda: nn.Dropout3d(0.4), lambda: [r(2, 4, 2, 5, 3)], False),
    "ELU": (lambda: nn.ELU(1.5), lambda: [r(4, 5)], False),
    "Embedding": (lambda: nn.Embedding(10, 4, padding_idx=0), lambda: [torch.randint(0, 10, (3, 5))], False),
    "EmbeddingBag": (
        lambda: nn.EmbeddingBag(10, 4, mode="mean"),
        lambda: [torch.randint(0, 10, (8,)), torch.tensor([0, 3, 5])],
        False,
    ),
    "FeatureAlphaDropout": (lambda: nn.FeatureAlphaDropout(0.3), lambda: [r(2, 4, 5)], False),
    "Flatten": (lambda: nn.Flatten(1, 2), lambda: [r(2, 3, 4, 5)], False),
    "Fold": (lambda: nn.Fold((4, 5), (2, 2)), lambda: [r(2, 12, 12)], False),
    "GELU": (lambda: nn.GELU("tanh"), lambda: [r(4, 5)], False),
    "GLU": (lambda: nn.GLU(1), lambda: [r(4, 6)], False),
    "GRU": (lambda: nn.GRU(4, 5, num_layers=2, batch_first=True), lambda: [r(2, 3, 4)], False),
    "GRUCell": (lambda: nn.GRUCell(4, 5), lambda: [r(3, 4), r(3, 5)], False),
    "GaussianNLLLoss": (lambda: nn.GaussianNLLLoss(), lambda: [r(5, 3), r(5, 3), pos(5, 3)], False),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: [r(3, 4, 5)], False),
    "Hardshrink": (lambda: nn.Hardshrink(0.3), lambda: [r(4, 5)], False),
    "Hardsigmoid": (lambda: nn.Hardsigmoid(), lambda: [r(4, 5) * 4], False),
    "Hardswish": (lambda: nn.Hardswish(), lambda: [r(4, 5) * 4], False),
    "Hardtanh": (lambda: nn.Hardtanh(-0.5, 0.7), lambda: [r(4, 5)], False),
    "HingeEmbeddingLoss": (lambda: nn.HingeEmbeddingLoss(margin=0.5), lambda: [r(5, 3), sign(15).view(5, 3)], False),
    "HuberLoss": (lambda: nn.HuberLoss(delta=0.5), lambda: [r(5, 3), r(5, 3)], False),
    "Identity": (lambda: nn.Identity(), lambda: [r(4, 5)], False),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(4, affine=True, track_running_stats=True), lambda: [r(3, 4, 6)], True),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3, affine=True), lambda: [r(2, 3, 4, 5)], False),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(2), lambda: [r(2, 2, 3, 4, 3)], False),
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean"), lambda: [r(5, 3).log_softmax(1), r(5, 3).softmax(1)], False),
    "L1Loss": (lambda: nn.L1Loss(), lambda: [r(5, 3), r(5, 3)], False),
    "LPPool1d": (lambda: nn.LPPool1d(2, 3, stride=2), lambda: [r(2, 3, 9)], False),
    "LPPool2d": (lambda: nn.LPPool2d(3, 2), lambda: [r(2, 3, 6, 4)], False),
    "LPPool3d": (lambda: nn.LPPool3d(2, 2), lambda: [r(1, 2, 4, 4, 2)], False),
    "LSTM": (lambda: nn.LSTM(4, 5, num_layers=2, bidirectional=True), lambda: [r(3, 2, 4)], False),
    "LSTMCell": (lambda: nn.LSTMCell(4, 5), lambda: [r(3, 4)], False),
    "LayerNorm": (lambda: nn.LayerNorm([4, 5]), lambda: [r(3, 4, 5)], False),
    "LazyBatchNorm1d": (lambda: nn.LazyBatchNorm1d(), lambda: [r(6, 4)], True),
    "LazyBatchNorm2d": (lambda: nn.LazyBatchNorm2d(), lambda: [r(4, 3, 2, 2)], True),
    "LazyBatchNorm3d": (lambda: nn.LazyBatchNorm3d(), lambda: [r(2, 3, 2, 2, 2)], True),
    "LazyConv1d": (lambda: nn.LazyConv1d(4, 3), lambda: [r(2, 3, 7)], False),
    "LazyConv2d": (lambda: nn.LazyConv2d(4, 3), lambda: [r(2, 3, 5, 6)], False),
    "LazyConv3d": (lambda: nn.LazyConv3d(2, 2), lambda: [r(1, 2, 3, 4, 3)], False),
    "LazyConvTranspose1d": (lambda: nn.LazyConvTranspose1d(2, 3), lambda: [r(2, 3, 5)], False),
    "LazyConvTranspose2d": (lambda: nn.LazyConvTranspose2d(2, 3), lambda: [r(2, 3, 4, 3)], False),
    "LazyConvTranspose3d": (lambda: nn.LazyConvTranspose3d(2, 2), lambda: [r(1, 2, 2, 3, 2)], False),
    "LazyInstanceNorm1d": (lambda: nn.LazyInstanceNorm1d(), lambda: [r(3, 4, 6)], False),
    "LazyInstanceNorm2d": (lambda: nn.LazyInstanceNorm2d(), lambda: [r(2, 3, 4, 5)], False),
    "LazyInstanceNorm3d": (lambda: nn.LazyInstanceNorm3d(), lambda: [r(2, 2, 3, 4, 3)], False),
    "LazyLinear": (lambda: nn.LazyLinear(3), lambda: [r(4, 5)], False),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.2), lambda: [r(4, 5)], False),
    "Linear": (lambda: nn.Linear(5, 3), lambda: [r(2, 4, 5)], False),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(3), lambda: [r(2, 5, 4, 3)], False),
    "LogSigmoid": (lambda: nn.LogSigmoid(), lambda: [r(4, 5)], False),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=1), lambda: [r(4, 5)], False),
    "MSELoss": (lambda: nn.MSELoss(reduction="sum"), lambda: [r(5, 3), r(5, 3)], False),
    "MarginRankingLoss": (lambda: nn.MarginRankingLoss(margin=0.1), lambda: [r(6), r(6), sign(6)], False),
    "MaxPool1d": (lambda: nn.MaxPool1d(3, stride=2, padding=1), lambda: [r(2, 4, 9)], False),
    "MaxPool2d": (lambda: nn.MaxPool2d(2, dilation=2, ceil_mode=True), lambda: [r(2, 3, 7, 6)], False),
    "MaxPool3d": (lambda: nn.MaxPool3d(2), lambda: [r(1, 2, 4, 4, 4)], False),
    "MaxUnpool1d": (lambda: nn.MaxUnpool1d(2), lambda: list(nn.MaxPool1d(2, return_indices=True)(r(2, 3, 8))), False),
    "MaxUnpool2d": (lambda: nn.MaxUnpool2d(2), lambda: list(nn.MaxPool2d(2, return_indices=True)(r(2, 3, 4, 6))), False),
    "MaxUnpool3d": (lambda: nn.MaxUnpool3d(2), lambda: list(nn.MaxPool3d(2, return_indices=True)(r(1, 2, 4, 4, 2))), False),
    "Mish": (lambda: nn.Mish(), lambda: [r(4, 5)], False),
    "MultiLabelMarginLoss": (
        lambda: nn.MultiLabelMarginLoss(),
        lambda: [r(3, 4), torch.tensor([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0]])],
        False,
    ),
    "MultiLabelSoftMarginLoss": (lambda: nn.MultiLabelSoftMarginLoss(), lambda: [r(3, 4), torch.randint(0, 2, (3, 4)).float()], False),
    "MultiMarginLoss": (lambda: nn.MultiMarginLoss(p=2, margin=0.5), lambda: [r(5, 4), labels(5, 4)], False),
    "MultiheadAttention": (
        lambda: nn.MultiheadAttention(8, 2, dropout=0.0, batch_first=True),
        lambda: [r(2, 5, 8), r(2, 6, 8), r(2, 6, 8)],
        True,
    ),
    "NLLLoss": (lambda: nn.NLLLoss(weight=torch.rand(4) + 0.5), lambda: [r(5, 4).log_softmax(1), labels(5, 4)], False),
    "NLLLoss2d": (lambda: nn.NLLLoss2d(), lambda: [r(2, 4, 3, 3).log_softmax(1), torch.randint(0, 4, (2, 3, 3))], False),
    "PReLU": (lambda: nn.PReLU(3), lambda: [r(2, 3, 4)], False),
    "PairwiseDistance": (lambda: nn.PairwiseDistance(p=1.5), lambda: [r(5, 4), r(5, 4)], False),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), lambda: [r(2, 8, 3, 3)], False),
    "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), lambda: [r(2, 2, 4, 6)], False),
    "PoissonNLLLoss": (lambda: nn.PoissonNLLLoss(), lambda: [r(5, 3), pos(5, 3)], False),
    "RMSNorm": (lambda: nn.RMSNorm([5]), lambda: [r(3, 4, 5)], False),
    "RNN": (lambda: nn.RNN(4, 5, nonlinearity="relu"), lambda: [r(3, 2, 4)], False),
    "RNNCell": (lambda: nn.RNNCell(4, 5, nonlinearity="tanh"), lambda: [r(3, 4), r(3, 5)], False),
    "RReLU": (lambda: nn.RReLU(0.1, 0.3), lambda: [r(4, 5)], False),
    "ReLU": (lambda: nn.ReLU(), lambda: [r(4, 5)], False),
    "ReLU6": (lambda: nn.ReLU6(), lambda: [r(4, 5) * 5], False),
    "ReflectionPad1d": (lambda: nn.ReflectionPad1d((1, 2)), lambda: [r(2, 3, 5)], False),
    "ReflectionPad2d": (lambda: nn.ReflectionPad2d((1, 2, 0, 1)), lambda: [r(2, 3, 5, 4)], False),
    "ReflectionPad3d": (lambda: nn.ReflectionPad3d(1), lambda: [r(1, 2, 3, 4, 3)], False),
    "ReplicationPad1d": (lambda: nn.ReplicationPad1d((1, 2)), lambda: [r(2, 3, 5)], False),
    "ReplicationPad2d": (lambda: nn.ReplicationPad2d((1, 2, 0, 1)), lambda: [r(2, 3, 5, 4)], False),
    "ReplicationPad3d": (lambda: nn.ReplicationPad3d(1), lambda: [r(1, 2, 3, 4, 3)], False),
    "SELU": (lambda: nn.SELU(), lambda: [r(4, 5)], False),
    "Sequential": (lambda: nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2)), lambda: [r(3, 5)], False),
    "SiLU": (lambda: nn.SiLU(), lambda: [r(4, 5)], False),
    "Sigmoid": (lambda: nn.Sigmoid(), lambda: [r(4, 5)], False),
    "SmoothL1Loss": (lambda: nn.SmoothL1Loss(beta=0.5), lambda: [r(5, 3), r(5, 3)], False),
    "SoftMarginLoss": (lambda: nn.SoftMarginLoss(), lambda: [r(5, 3), sign(15).view(5, 3)], False),
    "Softmax": (lambda: nn.Softmax(dim=0), lambda: [r(4, 5)], False),
    "Softmax2d": (lambda: nn.Softmax2d(), lambda: [r(2, 3, 4, 5)], False),
    "Softmin": (lambda: nn.Softmin(dim=1), lambda: [r(4, 5)], False),
    "Softplus": (lambda: nn.Softplus(beta=2.0, threshold=5.0), lambda: [r(4, 5) * 4], False),
    "Softshrink": (lambda: nn.Softshrink(0.3), lambda: [r(4, 5)], False),
    "Softsign": (lambda: nn.Softsign(), lambda: [r(4, 5)], False),
    "Tanh": (lambda: nn.Tanh(), lambda: [r(4, 5)], False),
    "Tanhshrink": (lambda: nn.Tanhshrink(), lambda: [r(4, 5)], False),
    "Threshold": (lambda: nn.Threshold(0.1, -2.0), lambda: [r(4, 5)], False),
    "Transformer": (
        lambda: nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True),
        lambda: [r(2, 5, 8), r(2, 4, 8)],
        True,
    ),
    "TransformerDecoder": (
        lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2),
        lambda: [r(4, 2, 8), r(5, 2, 8)],
        True,
    ),
    "TransformerDecoderLayer": (
        lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True),
        lambda: [r(2, 4, 8), r(2, 5, 8)],
        True,
    ),
    "TransformerEncoder": (
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, enable_nested_tensor=False),
        lambda: [r(5, 2, 8)],
        True,
    ),
    "TransformerEncoderLayer": (
        lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True),
        lambda: [r(2, 5, 8)],
        True,
    ),
    "TripletMarginLoss": (lambda: nn.TripletMarginLoss(margin=0.5, swap=True), lambda: [r(5, 4), r(5, 4), r(5, 4)], False),
    "TripletMarginWithDistanceLoss": (lambda: nn.TripletMarginWithDistanceLoss(margin=0.5), lambda: [r(5, 4), r(5, 4), r(5, 4)], False),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 3)), lambda: [r(4, 6, 2)], False),
    "Unfold": (lambda: nn.Unfold((2, 3), padding=1, stride=2), lambda: [r(2, 3, 5, 6)], False),
    "Upsample": (lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False), lambda: [r(2, 3, 4, 5)], False),
    "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d(size=(6, 7)), lambda: [r(2, 3, 4, 5)], False),
    "UpsamplingNearest2d": (lambda: nn.UpsamplingNearest2d(scale_factor=2), lambda: [r(2, 3, 4, 5)], False),
    "ZeroPad1d": (lambda: nn.ZeroPad1d((1, 2)), lambda: [r(2, 3, 5)], False),
    "ZeroPad2d": (lambda: nn.ZeroPad2d((1, 2, 0, 1)), lambda: [r(2, 3, 5, 4)], False),
    "ZeroPad3d": (lambda: nn.ZeroPad3d(1), lambda: [r(1, 2, 3, 4, 3)], False),
}

# Classes with no forward of their own, or whose results cannot be compared.
SKIPPED = {
    "Module": "the base class",
    "Container": "deprecated, no forward",
    "ModuleDict": "a container without a forward",
    "ModuleList": "a container without a forward",
    "ParameterDict": "a container without a forward",
    "ParameterList": "a container without a forward",
    "RNNBase": "the base of RNN/LSTM/GRU, covered by them",
    "RNNCellBase": "the base of the cells, covered by them",
    "SyncBatchNorm": "needs a process group and CUDA",
    "CrossMapLRN2d": "a legacy autograd Function: PyTorch cannot trace or script it",
    "FractionalMaxPool2d": "draws random sample points on every call",
    "FractionalMaxPool3d": "draws random sample points on every call",
    "LinearCrossEntropyLoss": "new in 2.15, takes a weight matrix and chunking options",
}


def flatten(v, out):
    if isinstance(v, (tuple, list)):
        for x in v:
            flatten(x, out)
    elif isinstance(v, torch.Tensor):
        out.append(v.detach().contiguous())
    elif v is None:
        pass
    else:
        out.append(torch.tensor(v))
    return out


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    names = [
        n
        for n in nn.modules.__all__
        if isinstance(getattr(nn, n, None), type) and issubclass(getattr(nn, n), nn.Module)
    ]
    missing = [n for n in names if n not in SPECS and n not in SKIPPED]
    assert not missing, f"torch.nn classes with neither a spec nor a reason: {missing}"
    failed = []
    written = 0
    for k, name in enumerate(sorted(SPECS)):
        make, inputs_of, train_too = SPECS[name]
        for mode in ["eval", "train"] if train_too else ["eval"]:
            torch.manual_seed(1000 + k)
            base = make()
            inputs = inputs_of()
            # Lazy modules take their shapes from a first call.
            if any(isinstance(m, nn.modules.lazy.LazyModuleMixin) for m in base.modules()):
                with torch.no_grad():
                    base.eval()
                    base(*inputs)
            # Buffers with values other than their initial ones.
            for m in base.modules():
                for b in m._buffers:
                    if b in ("running_mean", "running_var") and m._buffers[b] is not None:
                        m._buffers[b].copy_(torch.rand_like(m._buffers[b]) + (0.5 if b == "running_var" else 0.0))
            base.train(mode == "train")
            eager = copy.deepcopy(base)
            with torch.no_grad():
                outputs = flatten(eager(*inputs), [])
            io = {f"input{i}": t for i, t in enumerate(inputs)}
            io.update({f"output{i}": t for i, t in enumerate(outputs)})
            if mode == "train":
                io.update({f"buffer.{n}": b.detach().clone() for n, b in eager.named_buffers()})
            torch.save(io, os.path.join(out_dir, f"{name}.{mode}.io.pt"))
            for how in ["traced", "scripted"]:
                m = copy.deepcopy(base)
                try:
                    if how == "traced":
                        with torch.no_grad():
                            archive = torch.jit.trace(m, tuple(inputs), check_trace=False)
                        # Tracing ran the forward: in train mode it moved the statistics.
                        archive.load_state_dict(base.state_dict())
                    else:
                        archive = torch.jit.script(m)
                    archive.train(mode == "train")
                    path = os.path.join(out_dir, f"{name}.{mode}.{how}.pt")
                    torch.jit.save(archive, path)
                    # Only what PyTorch itself loads and runs counts (a scripted RNN's
                    # overloaded forward does not survive torch.jit.load).
                    with torch.no_grad():
                        loaded = torch.jit.load(path)
                        loaded.train(mode == "train")
                        loaded.load_state_dict(base.state_dict())
                        loaded(*inputs)
                    written += 1
                except Exception as e:  # noqa: BLE001 (PyTorch's own limits, recorded)
                    failed.append(f"{name}.{mode}.{how}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                    path = os.path.join(out_dir, f"{name}.{mode}.{how}.pt")
                    if os.path.exists(path):
                        os.remove(path)
    with open(os.path.join(out_dir, "pytorch_failed.txt"), "w") as f:
        f.write("\n".join(failed) + ("\n" if failed else ""))
    print(f"{written} archives of {len(SPECS)} classes ({len(SKIPPED)} skipped); PyTorch failed {len(failed)}")


if __name__ == "__main__":
    main()
