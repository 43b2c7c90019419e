"""torch.nn.functional: PyTorch's names over the operators, with PyTorch's argument names and
defaults (PyTorch writes this module in Python too)."""

from .. import _C

_f = _C._torch_functions
_REDUCTION = {"none": 0, "mean": 1, "sum": 2}


def _reduction(reduction):
    try:
        return _REDUCTION[reduction]
    except KeyError:
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


# Functions whose name and arguments are the operator's.
for _name in ["relu", "relu_", "gelu", "silu", "mish", "hardtanh", "elu", "selu", "celu", "leaky_relu",
              "hardsigmoid", "hardswish", "softplus", "glu", "logsigmoid", "prelu", "rrelu",
              "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
              "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
              "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "linear", "bilinear",
              "pixel_shuffle", "pixel_unshuffle", "embedding", "layer_norm", "group_norm", "one_hot",
              "cosine_similarity", "pairwise_distance", "pdist", "grid_sampler", "affine_grid_generator",
              "scaled_dot_product_attention"]:
    if _name in _f:
        globals()[_name] = _f[_name]

tanh = _f["tanh"]
sigmoid = _f["sigmoid"]


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _f["softmax"](input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _f["log_softmax"](input, dim, dtype=dtype)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return (_f["dropout_"] if inplace else _f["dropout"])(input, p, training)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    return _f["cross_entropy_loss"](input, target, weight, _reduction(reduction), ignore_index, label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _f["nll_loss_nd"](input, target, weight, _reduction(reduction), ignore_index)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return _f["mse_loss"](input, target, _reduction(reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _f["l1_loss"](input, target, _reduction(reduction))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return _f["binary_cross_entropy"](input, target, weight, _reduction(reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    return _f["binary_cross_entropy_with_logits"](input, target, weight, pos_weight, _reduction(reduction))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom if out is None else _f["div"](input, denom, out=out)
