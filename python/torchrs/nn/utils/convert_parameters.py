"""Parameters to one vector and back."""

from ... import _C

_f = _C._torch_functions


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated."""
    return _f["cat"]([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of ``vec`` into the parameters' data."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        with _no_grad():
            param.copy_(vec[pointer:pointer + n].view_as(param))
        pointer += n


def _no_grad():
    from ...autograd import no_grad

    return no_grad()
