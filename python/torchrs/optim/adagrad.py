"""Adagrad."""

from .. import _C
from ..autograd import no_grad
from .optimizer import Optimizer

_f = _C._torch_functions


class Adagrad(Optimizer):
    """s += g^2; p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps), s starting at
    ``initial_accumulator_value``."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _C.tensor(0.0)
                state["sum"] = _f["full_like"](p, group["initial_accumulator_value"])

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, lr_decay, weight_decay, eps = group["lr"], group["lr_decay"], group["weight_decay"], group["eps"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    state["step"].add_(1)
                    step = state["step"].item()
                    grad = -p.grad if group["maximize"] else p.grad
                    if weight_decay != 0:
                        if grad.is_sparse:
                            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
                        grad = grad.add(p, alpha=weight_decay)
                    clr = lr / (1 + (step - 1) * lr_decay)
                    if grad.is_sparse:
                        # Only the rows the gradient holds move (PyTorch's sparse branch).
                        grad = grad.coalesce()
                        indices, values = grad._indices(), grad._values()

                        def make(v):
                            return _C._torch_functions["sparse_coo_tensor"](indices, v, grad.shape)

                        state["sum"].add_(make(values.pow(2)))
                        std_values = state["sum"].sparse_mask(grad)._values().sqrt().add_(eps)
                        p.add_(make(values / std_values), alpha=-clr)
                        continue
                    state["sum"].addcmul_(grad, grad, value=1)
                    std = state["sum"].sqrt().add_(eps)
                    p.addcdiv_(grad, std, value=-clr)
        return loss
