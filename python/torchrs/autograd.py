"""torch.autograd: ``grad``, ``backward`` and the grad-mode context managers."""

import functools as _functools

from . import _C


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (a tuple, one per input)."""
    single = isinstance(outputs, _C.Tensor)
    outputs = [outputs] if single else list(outputs)
    inputs = [inputs] if isinstance(inputs, _C.Tensor) else list(inputs)
    if grad_outputs is not None:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, _C.Tensor) else list(grad_outputs)
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported")
    allow_unused = bool(allow_unused) or materialize_grads
    res = _C._autograd_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        res = tuple(g if g is not None else _C._torch_functions["zeros_like"](i) for g, i in zip(res, inputs))
    return res


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    tensors = [tensors] if isinstance(tensors, _C.Tensor) else list(tensors)
    grads = [None] * len(tensors) if grad_tensors is None else (
        [grad_tensors] if isinstance(grad_tensors, _C.Tensor) else list(grad_tensors))
    for t, g in zip(tensors, grads):
        t.backward(g, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)


class _GradMode:
    """A context manager and decorator setting grad mode (restored on exit)."""

    mode = None

    def __enter__(self):
        self._prev = _C._set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """``with torch.no_grad():`` records no history; also a decorator."""

    mode = False


class enable_grad(_GradMode):
    """``with torch.enable_grad():`` records history (inside ``no_grad``); also a decorator."""

    mode = True


class set_grad_enabled(_GradMode):
    """``torch.set_grad_enabled(mode)``: sets grad mode now, and restores it when used as a
    context manager."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self._prev = _C._set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        mode = self.mode
        _C._set_grad_enabled(self._prev)

        @_functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class inference_mode:
    """``with torch.inference_mode():`` no history, no version counters, and tensors made
    inside are inference tensors (they cannot join a graph later); also a decorator.
    ``inference_mode(False)`` changes nothing."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self._guard = _C._enter_inference_mode(self.mode)
        return self

    def __exit__(self, *exc):
        self._guard.__exit__(None, None, None)
        return False

    def __call__(self, fn):
        mode = self.mode

        @_functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """``torch.autograd.set_detect_anomaly(mode)``: sets anomaly mode now, and restores it when
    used as a context manager."""

    def __init__(self, mode, check_nan=True):
        self._prev = _C._set_detect_anomaly(bool(mode))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_detect_anomaly(self._prev)
        return False


class detect_anomaly(set_detect_anomaly):
    """``with torch.autograd.detect_anomaly():`` a backward error names the forward call that
    made the failing node, and NaN gradients are errors."""

    def __init__(self, check_nan=True):
        super().__init__(True, check_nan)


class Function:
    """``torch.autograd.Function``: subclass with static ``forward(ctx, *args)`` and
    ``backward(ctx, *grads)``, call ``apply(*args)``. ``ctx`` has ``save_for_backward``,
    ``saved_tensors``, ``needs_input_grad``, ``mark_dirty`` and ``mark_non_differentiable``,
    and takes any other attribute. The node runs inside the engine (its name is
    ``<Class>Backward``); an exception raised in ``backward`` comes out of ``backward()``
    unchanged."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args):
        return _C._function_apply(cls, *args)


FunctionCtx = _C.FunctionCtx
