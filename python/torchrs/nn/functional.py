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
              "avg_pool1d", "avg_pool2d", "avg_pool3d", "linear", "bilinear",
              "pixel_shuffle", "pixel_unshuffle", "one_hot",
              "cosine_similarity", "pairwise_distance", "pdist", "grid_sampler", "affine_grid_generator",
              "scaled_dot_product_attention"]:
    if _name in _f:
        globals()[_name] = _f[_name]

tanh = _f["tanh"]
sigmoid = _f["sigmoid"]


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Log-softmax over dim 1 and the negative log likelihood of ``target`` (class indices or
    probabilities)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["cross_entropy_loss"](input, target, weight, _reduction(reduction), ignore_index, label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["nll_loss_nd"](input, target, weight, _reduction(reduction), ignore_index)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["mse_loss"](input, target, _reduction(reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["l1_loss"](input, target, _reduction(reduction))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["binary_cross_entropy"](input, target, weight, _reduction(reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["binary_cross_entropy_with_logits"](input, target, weight, pos_weight, _reduction(reduction))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom if out is None else _f["div"](input, denom, out=out)


# ---- activations with PyTorch's ``inplace`` flag ---------------------------------------------

def relu(input, inplace=False):
    """max(0, x)."""
    return _f["relu_"](input) if inplace else _f["relu"](input)


def relu6(input, inplace=False):
    """min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val]."""
    if inplace:
        return input.clamp_(min_val, max_val)
    return _f["hardtanh"](input, min_val, max_val)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = _f["leaky_relu"](input, negative_slope)
    return input.copy_(out) if inplace else out


def elu(input, alpha=1.0, inplace=False):
    out = _f["elu"](input, alpha)
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    return _f["celu_"](input, alpha) if inplace else _f["celu"](input, alpha)


def selu(input, inplace=False):
    return _f["selu_"](input) if inplace else _f["selu"](input)


def silu(input, inplace=False):
    return input.silu_() if inplace else _f["silu"](input)


def mish(input, inplace=False):
    return input.mish_() if inplace else _f["mish"](input)


def hardswish(input, inplace=False):
    return input.hardswish_() if inplace else _f["hardswish"](input)


def hardsigmoid(input, inplace=False):
    return input.hardsigmoid_() if inplace else _f["hardsigmoid"](input)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return (_f["threshold_"] if inplace else _f["threshold"])(input, threshold, value)


def gelu(input, approximate="none"):
    return _f["gelu"](input, approximate=approximate)


def softplus(input, beta=1.0, threshold=20.0):
    return _f["softplus"](input, beta, threshold)


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x)."""
    return -_f["softplus"](-input, 1.0, 20.0)


def softsign(input):
    return input / (input.abs() + 1)


def tanhshrink(input):
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    return _f["softshrink"](input, lambd)


def hardshrink(input, lambd=0.5):
    return _f["hardshrink"](input, lambd)


def glu(input, dim=-1):
    return _f["glu"](input, dim)


def prelu(input, weight):
    return _f["prelu"](input, weight)


def _get_softmax_dim(name, ndim):
    import warnings

    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim())
    return _f["softmax"](input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim())
    return _f["softmax"](-input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim())
    return _f["log_softmax"](input, dim, dtype=dtype)


# ---- dropout -----------------------------------------------------------------------------------

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability ``p`` and scales the rest by 1/(1-p) when training."""
    _check_p(p)
    return (_f["dropout_"] if inplace else _f["dropout"])(input, p, training)


def _feature_dropout(input, p, training, inplace):
    _check_p(p)
    return (_f["feature_dropout_"] if inplace else _f["feature_dropout"])(input, p, training)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, L) or (C, L) input."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.dim() == 2:
        return _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0) if not inplace else \
            input.copy_(_feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0))
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, H, W) input."""
    import warnings

    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout2d exists to provide channel-wise dropout on "
                      "inputs with 2 spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).")
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, D, H, W) input."""
    return _feature_dropout(input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return (_f["alpha_dropout_"] if inplace else _f["alpha_dropout"])(input, p, training)


# ---- convolution and pooling --------------------------------------------------------------------

def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _f["conv_transpose1d"](input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _f["conv_transpose2d"](input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _f["conv_transpose3d"](input, weight, bias, stride, padding, output_padding, groups, dilation)


def _stride(kernel_size, stride):
    return kernel_size if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    stride = _stride(kernel_size, stride)
    if return_indices:
        return _f["max_pool1d_with_indices"](input, kernel_size, stride, padding, dilation, ceil_mode)
    return _f["max_pool1d"](input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum over ``kernel_size`` windows; ``stride`` defaults to ``kernel_size``."""
    stride = _stride(kernel_size, stride)
    if return_indices:
        return _f["max_pool2d_with_indices"](input, kernel_size, stride, padding, dilation, ceil_mode)
    return _f["max_pool2d"](input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    stride = _stride(kernel_size, stride)
    if return_indices:
        return _f["max_pool3d_with_indices"](input, kernel_size, stride, padding, dilation, ceil_mode)
    return _f["max_pool3d"](input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _f["avg_pool1d"](input, kernel_size, _stride(kernel_size, stride), padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over ``kernel_size`` windows; ``stride`` defaults to ``kernel_size``."""
    return _f["avg_pool2d"](input, kernel_size, _stride(kernel_size, stride), padding, ceil_mode, count_include_pad,
                            divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _f["avg_pool3d"](input, kernel_size, _stride(kernel_size, stride), padding, ceil_mode, count_include_pad,
                            divisor_override)


def _output_size(input, output_size, n):
    if isinstance(output_size, int):
        return output_size
    sizes = list(output_size)
    return [input.size(i - n) if s is None else s for i, s in enumerate(sizes)]


def adaptive_avg_pool1d(input, output_size):
    return _f["adaptive_avg_pool1d"](input, _output_size(input, output_size, 1))


def adaptive_avg_pool2d(input, output_size):
    """The mean over ``output_size`` adaptive windows; None keeps the input's size."""
    return _f["adaptive_avg_pool2d"](input, _output_size(input, output_size, 2))


def adaptive_avg_pool3d(input, output_size):
    return _f["adaptive_avg_pool3d"](input, _output_size(input, output_size, 3))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out = _f["adaptive_max_pool1d"](input, _output_size(input, output_size, 1))
    return out if return_indices else out[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out = _f["adaptive_max_pool2d"](input, _output_size(input, output_size, 2))
    return out if return_indices else out[0]


def adaptive_max_pool3d(input, output_size, return_indices=False):
    out = _f["adaptive_max_pool3d"](input, _output_size(input, output_size, 3))
    return out if return_indices else out[0]


def pad(input, pad, mode="constant", value=None):
    return _f["pad"](input, list(pad), mode, value)


# ---- normalisation and embedding ----------------------------------------------------------------

def _verify_batch_size(size):
    size = tuple(size)
    size_prods = size[0]
    for s in size[2:]:
        size_prods *= s
    if size_prods == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         f"torch.Size({list(size)})")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1): batch statistics when
    training (updating the running ones in place with ``momentum``), running ones otherwise."""
    if training:
        _verify_batch_size(input.size())
    return _f["batch_norm"](input, weight, bias, running_mean, running_var, training, momentum, eps, False)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    return _f["instance_norm"](input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                               False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalises over the last ``len(normalized_shape)`` dims."""
    return _f["layer_norm"](input, list(normalized_shape), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalises over groups of channels."""
    return _f["group_norm"](input, num_groups, weight, bias, eps)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """Rescales, in place, the rows of ``weight`` that ``input`` looks up whose ``norm_type``
    norm exceeds ``max_norm`` to norm ``max_norm`` (PyTorch's embedding_renorm_)."""
    with _no_grad():
        rows = _C.tensor(sorted(set(input.flatten().tolist())), dtype=_C.int64, device=weight.device)
        selected = weight.index_select(0, rows)
        norms = selected.norm(norm_type, 1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp_max(1.0)
        weight.index_copy_(0, rows, selected * scale)


def _no_grad():
    from ..autograd import no_grad

    return no_grad()


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """The rows of ``weight`` at the indices ``input``."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        input = input.contiguous()
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _f["embedding"](weight, input, padding_idx, scale_grad_by_freq, sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """The sum, mean or maximum of the rows of ``weight`` looked up by each bag of ``input``: a
    2-D ``input`` is one bag per row, a 1-D ``input`` is split into bags at ``offsets``."""
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    # No kernel here: refused rather than silently giving PyTorch's unscaled gradient in its place.
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq=True is not supported by torchrs")
    if padding_idx is not None:
        n = weight.size(0)
        if not -n <= padding_idx < n:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n} through {n - 1}, "
                               f"but got {padding_idx}")
        padding_idx = padding_idx + n if padding_idx < 0 else padding_idx
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
            f"(got mode='{mode}'). Please open a feature request on GitHub.")
    return _C._embedding_bag(weight, input, offsets, per_sample_weights, mode, include_last_offset, padding_idx, sparse)


# ---- losses --------------------------------------------------------------------------------------

def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["smooth_l1_loss"](input, target, _reduction(reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    return _f["huber_loss"](input, target, _reduction(reduction), delta)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "batchmean":
        out = _f["kl_div"](input, target, _reduction("sum"), log_target=log_target)
        return out / input.size(0) if input.dim() != 0 else out
    return _f["kl_div"](input, target, _reduction(reduction), log_target=log_target)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["soft_margin_loss"](input, target, _reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["margin_ranking_loss"](input1, input2, target, margin, _reduction(reduction))


# ---- interpolation ---------------------------------------------------------------------------------

_INTERP_OPS = {
    ("nearest", 1): "upsample_nearest1d", ("nearest", 2): "upsample_nearest2d", ("nearest", 3): "upsample_nearest3d",
    ("nearest-exact", 1): "_upsample_nearest_exact1d", ("nearest-exact", 2): "_upsample_nearest_exact2d",
    ("nearest-exact", 3): "_upsample_nearest_exact3d", ("linear", 1): "upsample_linear1d",
    ("bilinear", 2): "upsample_bilinear2d", ("bicubic", 2): "upsample_bicubic2d",
    ("trilinear", 3): "upsample_trilinear3d",
}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resizes (N, C, *spatial) input to ``size`` or by ``scale_factor`` with ``mode`` (nearest,
    nearest-exact, linear, bilinear, bicubic, trilinear, area)."""
    import math

    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    output_size = scale_factors = None
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape)[2:]} and output size of {size}. "
                                 "Please "
                                 "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 "...,oK) format.")
            output_size = list(size)
        else:
            output_size = [size] * dim
    else:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape)[2:]} and scale_factor of "
                                 f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                                 "and scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor and scale_factors is not None:
        output_size = [int(math.floor(float(input.size(i + 2)) * s)) for i, s in enumerate(scale_factors)]
        scale_factors = None
    if mode == "area" and dim in (1, 2, 3):
        return globals()[f"adaptive_avg_pool{dim}d"](input, output_size)
    op = _INTERP_OPS.get((mode, dim))
    if op is None:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  "the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    if mode in ("nearest", "nearest-exact"):
        return _f[op](input, output_size, scale_factors)
    return _f[op](input, output_size, align_corners, scale_factors)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["cosine_embedding_loss"](input1, input2, target, margin, _reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where y = 1, max(0, margin - x) where y = -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["hinge_embedding_loss"](input, target, margin, _reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the pairwise p-norm distance."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["triplet_margin_loss"](anchor, positive, negative, margin, p, eps, swap, _reduction(reduction))


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(x) - y x (``log_input``) or x - y log(x + eps), plus Stirling's term with ``full``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["poisson_nll_loss"](input, target, log_input, full, eps, _reduction(reduction))


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p, divided by the number of classes."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["multi_margin_loss"](input, target, p, margin, weight, _reduction(reduction))


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _f["multilabel_margin_loss"](input, target, _reduction(reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) with
    ``full``); ``var`` may lack the last dim or have size 1 there."""
    import math

    in_size, var_size = list(input.shape), list(var.shape)
    if var_size != in_size:
        if in_size[:-1] == var_size:
            var = var.unsqueeze(-1)
        elif in_size[:-1] == var_size[:-1] and var_size[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with _no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _pair(x):
    return list(x) if isinstance(x, (list, tuple)) else [x, x]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding ``kernel_size`` blocks of (N, C, H, W) input as columns: (N, C k_h k_w, L)."""
    if input.dim() != 4 and input.dim() != 3:
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    return _f["im2col"](input, _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))
