"""SparseAdam: Adam for sparse gradients, moving only the rows a gradient holds."""

from .. import _C
from ..autograd import no_grad
from .optimizer import Optimizer


class SparseAdam(Optimizer):
    """PyTorch's ``F.sparse_adam``: per parameter, the gradient coalesced; at its positions
    m += (1 - beta1)(g - m), v += (1 - beta2)(g^2 - v), and
    p -= lr sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps); elsewhere nothing moves."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params = []
        for index, group in enumerate(self.param_groups):
            for d_index, d_param in enumerate(group["params"]):
                if d_param.is_sparse:
                    sparse_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, maximize = group["lr"], group["eps"], group.get("maximize", False)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not p.grad.is_sparse:
                        raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["exp_avg"] = p.detach().clone().zero_()
                        state["exp_avg_sq"] = p.detach().clone().zero_()
                    state["step"] += 1
                    grad = (-p.grad if maximize else p.grad).coalesce()
                    indices, values = grad._indices(), grad._values()
                    if values.numel() == 0:
                        continue

                    def make(v):
                        return _C._torch_functions["sparse_coo_tensor"](indices, v, grad.shape)

                    exp_avg, exp_avg_sq, step = state["exp_avg"], state["exp_avg_sq"], state["step"]
                    old_m = exp_avg.sparse_mask(grad)._values()
                    m_update = values.sub(old_m).mul_(1 - beta1)
                    exp_avg.add_(make(m_update))
                    old_v = exp_avg_sq.sparse_mask(grad)._values()
                    v_update = values.pow(2).sub_(old_v).mul_(1 - beta2)
                    exp_avg_sq.add_(make(v_update))
                    numer = m_update.add_(old_m)
                    denom = v_update.add_(old_v).sqrt_().add_(eps)
                    step_size = lr * (1 - beta2 ** step) ** 0.5 / (1 - beta1 ** step)
                    p.add_(make(-step_size * numer.div_(denom)))
        return loss
