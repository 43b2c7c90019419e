"""Stochastic gradient descent, with momentum, dampening, Nesterov and weight decay."""

from ..autograd import no_grad
from .optimizer import Optimizer


class SGD(Optimizer):
    """For each parameter with a gradient g (negated with ``maximize``):
    g += weight_decay * p; b = g at the first step, then b = momentum * b + (1 - dampening) * g;
    g = g + momentum * b with ``nesterov``, b otherwise; p -= lr * g."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
                weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = -p.grad if maximize else p.grad
                    if weight_decay != 0:
                        grad = grad.add(p, alpha=weight_decay)
                    if momentum != 0:
                        state = self.state[p]
                        buf = state.get("momentum_buffer")
                        if buf is None:
                            buf = grad.clone().detach()
                            state["momentum_buffer"] = buf
                        else:
                            buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                        grad = grad.add(buf, alpha=momentum) if nesterov else buf
                    p.add_(grad, alpha=-lr)
        return loss
