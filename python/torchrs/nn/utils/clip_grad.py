"""Gradient clipping."""

from ... import _C
from ...autograd import no_grad

Tensor = _C.Tensor
_f = _C._torch_functions


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales all gradients together so that their total ``norm_type`` norm (the norm of the
    per-gradient norms) is at most ``max_norm``; returns the total norm before clipping."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if len(grads) == 0:
        return _C.tensor(0.0)
    vector_norm = _C._linalg_functions["vector_norm"]
    norms = [vector_norm(g, norm_type) for g in grads]
    total_norm = vector_norm(_f["stack"](norms), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    clip_coef = max_norm / (total_norm + 1e-6)
    clip_coef_clamped = clip_coef.clamp_max(1.0)
    for g in grads:
        g.mul_(clip_coef_clamped.to(g.device))
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of ``clip_grad_norm_``."""
    import warnings

    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(min=-clip_value, max=clip_value)
