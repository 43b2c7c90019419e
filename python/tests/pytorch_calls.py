"""Everyday PyTorch calls whose results PyTorch printed (python/tests/pytorch_calls.json):
`test_pytorch_calls.py` makes the same calls with torchrs and compares the reprs exactly.

Regenerate the expected file with PyTorch installed (not torchrs):
    python3 python/tests/pytorch_calls.py torch python/tests/pytorch_calls.json
"""

import importlib
import json
import sys


def calls(torch, F):
    """name -> a function making one call (random calls report only shapes)."""
    torch.manual_seed(0)
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    y = torch.ones(3, 4)
    m = x > 5
    # Bags [1, 2], [] and [4, 5, 4, 3] of a 10 x 3 table.
    table = torch.arange(30.).view(10, 3)
    bag_idx = torch.tensor([1, 2, 4, 5, 4, 3])
    bag_offsets = torch.tensor([0, 2, 2])

    def bag_grad(f):
        w = table.clone().requires_grad_()
        (f(w) * torch.arange(9.).view(3, 3)).sum().backward()
        return w.grad

    return {
     "split_list": lambda: torch.split(x, [1, 2]),
     "split_int": lambda: torch.split(x, 2, dim=1),
     "chunk": lambda: torch.chunk(x, 2, 1),
     "cat": lambda: torch.cat([x, y], dim=0),
     "stack": lambda: torch.stack((x, y)),
     "where3": lambda: torch.where(m, x, y),
     "where_scalar": lambda: torch.where(m, x, 0.0),
     "where1": lambda: torch.where(m),
     "view_neg": lambda: x.view(-1),
     "reshape": lambda: x.reshape(2, -1),
     "reshape_tuple": lambda: x.reshape((2, 6)),
     "permute": lambda: x.permute(1, 0),
     "permute_tuple": lambda: x.permute((1, 0)),
     "expand": lambda: torch.ones(1, 4).expand(3, 4),
     "expand_neg": lambda: torch.ones(1, 4).expand(3, -1),
     "arange_float": lambda: torch.arange(0, 1, 0.25),
     "linspace": lambda: torch.linspace(0, 1, 5),
     "full": lambda: torch.full((2, 2), 3.0),
     "full_int": lambda: torch.full((2,), 3),
     "einsum": lambda: torch.einsum("ij,kj->ik", x, y),
     "squeeze": lambda: torch.ones(1, 3, 1).squeeze(),
     "squeeze_dim": lambda: torch.ones(1, 3, 1).squeeze(0),
     "unsqueeze": lambda: x.unsqueeze(0),
     "flatten": lambda: torch.ones(2, 3, 4).flatten(1),
     "argmax": lambda: torch.argmax(x, dim=1),
     "max_values": lambda: x.max(dim=1).values,
     "norm": lambda: torch.norm(x),
     "norm_dim": lambda: x.norm(dim=1),
     "softmax": lambda: F.softmax(x, dim=-1),
     "clamp_min": lambda: torch.clamp(x, min=3),
     "clamp": lambda: x.clamp(2, 5),
     "masked_fill": lambda: x.masked_fill(m, 0),
     "topk": lambda: torch.topk(x, 2),
     "sort_desc": lambda: torch.sort(x, descending=True),
     "float": lambda: torch.arange(3).float(),
     "type": lambda: x.type(torch.float64),
     "type_str": lambda: x.type(),
     "new_zeros": lambda: x.new_zeros(2),
     "new_tensor": lambda: x.new_tensor([1, 2]),
     "bmm": lambda: torch.bmm(torch.ones(2, 2, 3), torch.ones(2, 3, 2)),
     "sum_list": lambda: x.sum(dim=[0, 1]),
     "std": lambda: x.std(),
     "var_unbiased": lambda: x.var(unbiased=False),
     "var_correction": lambda: x.var(dim=1, correction=0),
     "mean_dim": lambda: x.mean(dim=0, keepdim=True),
     "zeros_like": lambda: torch.zeros_like(x),
     "randn_like_shape": lambda: torch.randn_like(x).shape,
     "eq_all": lambda: torch.equal(x, x),
     "allclose": lambda: torch.allclose(x, x + 1e-9),
     "isclose": lambda: torch.isclose(x, x),
     "numel": lambda: x.numel(),
     "size_tuple": lambda: x.size(),
     "cumsum": lambda: x.cumsum(dim=1),
     "repeat": lambda: x.repeat(2, 1),
     "transpose": lambda: x.transpose(0, 1),
     "t": lambda: x.t(),
     "contiguous": lambda: x.t().contiguous(),
     "abs_": lambda: (-x).abs(),
     "pow_": lambda: x.pow(2),
     "exp": lambda: torch.exp(x / 10),
     "log_softmax": lambda: F.log_softmax(x, dim=1),
     "one_hot": lambda: F.one_hot(torch.tensor([0, 2]), num_classes=3),
     "relu": lambda: F.relu(x - 5),
     "gelu": lambda: F.gelu(x / 10),
     "dropout_eval": lambda: F.dropout(x, 0.5, training=False),
     "pad": lambda: F.pad(x, (1, 1)),
     "conv2d": lambda: F.conv2d(torch.ones(1, 1, 4, 4), torch.ones(2, 1, 3, 3), padding=1),
     "max_pool2d": lambda: F.max_pool2d(torch.arange(16.).view(1, 1, 4, 4), 2),
     "mse": lambda: F.mse_loss(x, y),
     "ce": lambda: F.cross_entropy(x, torch.tensor([0, 1, 2])),
     "nll": lambda: F.nll_loss(F.log_softmax(x, 1), torch.tensor([0, 1, 2])),
     "bce_logits": lambda: F.binary_cross_entropy_with_logits(x / 10, y),
     "linear": lambda: F.linear(x, torch.ones(2, 4)),
     "layer_norm": lambda: F.layer_norm(x, (4,)),
     "normalize": lambda: F.normalize(x, dim=1),
     "cosine": lambda: F.cosine_similarity(x, y + 1, dim=1),
     "index_select": lambda: x.index_select(0, torch.tensor([0, 2])),
     "gather": lambda: x.gather(1, torch.tensor([[0], [1], [2]])),
     "scatter": lambda: torch.zeros(3, 4).scatter(1, torch.tensor([[0], [1], [2]]), 1.0),
     "nonzero": lambda: torch.nonzero(m),
     "unique": lambda: torch.unique(torch.tensor([3, 1, 3, 2])),
     "flip": lambda: x.flip(0),
     "roll": lambda: x.roll(1, 1),
     "tril": lambda: torch.tril(x),
     "outer": lambda: torch.outer(torch.arange(3.), torch.arange(2.)),
     "mm": lambda: x.mm(y.t()),
     "matmul_vec": lambda: x @ torch.ones(4),
     "item": lambda: x.sum().item(),
     "tolist": lambda: x[0].tolist(),
     "any": lambda: m.any(),
     "all_dim": lambda: m.all(dim=1),
     "logical_and": lambda: torch.logical_and(m, m),
     "minimum": lambda: torch.minimum(x, y),
     "max_binary": lambda: torch.max(x, y),
     "sign": lambda: torch.sign(x - 5),
     "round_dec": lambda: torch.round(x / 3, decimals=2),
     "div_mode": lambda: torch.div(x, 3, rounding_mode="floor"),
     "to_int": lambda: x.to(torch.int32),
     "to_dev_dtype": lambda: x.to("cpu", torch.float64),
     "detach_clone": lambda: x.detach().clone(),
     "masked_select": lambda: torch.masked_select(x, m),
     "split_size_kw": lambda: x.split(split_size=2, dim=1) if False else x.split(2, 1),
     "addmm": lambda: torch.addmm(torch.zeros(3, 3), x, y.t(), beta=0.5, alpha=2),
     "baddbmm": lambda: torch.baddbmm(torch.zeros(2, 2, 2), torch.ones(2, 2, 3), torch.ones(2, 3, 2)),
     "diag": lambda: torch.diag(torch.arange(3.)),
     "eye": lambda: torch.eye(3, 2),
     "randperm_shape": lambda: torch.randperm(5).shape,
     "multinomial_shape": lambda: torch.multinomial(torch.ones(4), 2).shape,
     "bernoulli_shape": lambda: torch.bernoulli(torch.full((3,), 0.5)).shape,
     "randint": lambda: torch.randint(0, 10, (3,)).shape,
     "sum_dtype": lambda: x.sum(dtype=torch.float64),
     "prod": lambda: torch.prod(torch.arange(1., 5.)),
     "cumprod": lambda: torch.cumprod(torch.arange(1., 5.), 0),
     "logsumexp": lambda: torch.logsumexp(x, 1),
     "amax": lambda: x.amax(dim=1),
     "median": lambda: x.median(),
     "mode_values": lambda: torch.tensor([1, 2, 2, 3]).mode().values,
     "kthvalue": lambda: torch.kthvalue(torch.tensor([3., 1., 2.]), 2).values,
     "histc": lambda: torch.histc(torch.tensor([1., 2., 1.]), bins=4, min=0, max=3),
     "bincount": lambda: torch.bincount(torch.tensor([0, 1, 1, 3])),
     "searchsorted": lambda: torch.searchsorted(torch.tensor([1, 3, 5]), torch.tensor([2, 4])),
     "tensordot": lambda: torch.tensordot(x, y, dims=([1], [1])),
     "cross": lambda: torch.linalg.cross(torch.tensor([1., 0, 0]), torch.tensor([0., 1, 0])),
     "det": lambda: torch.linalg.det(torch.eye(3) * 2),
     "inv": lambda: torch.linalg.inv(torch.eye(2) * 2),
     "fft": lambda: torch.fft.rfft(torch.arange(4.)).abs(),
     "erf": lambda: torch.special.erf(torch.tensor([0.5])),
     "embedding_bag_sum": lambda: F.embedding_bag(bag_idx, table, bag_offsets, mode="sum"),
     "embedding_bag_mean": lambda: F.embedding_bag(bag_idx, table, bag_offsets),
     "embedding_bag_max": lambda: F.embedding_bag(bag_idx, table, bag_offsets, mode="max"),
     "embedding_bag_2d": lambda: F.embedding_bag(bag_idx.view(2, 3), table),
     "embedding_bag_last_offset": lambda: F.embedding_bag(bag_idx, table, torch.tensor([0, 2, 6]), mode="sum",
                                                          include_last_offset=True, padding_idx=-6),
     "embedding_bag_weights": lambda: F.embedding_bag(bag_idx, table, bag_offsets, mode="sum",
                                                      per_sample_weights=torch.tensor([1., 2, 0.5, 1, -1, 3])),
     "embedding_bag_grad_mean": lambda: bag_grad(lambda w: F.embedding_bag(bag_idx, w, bag_offsets)),
     "embedding_bag_grad_max": lambda: bag_grad(lambda w: F.embedding_bag(bag_idx, w, bag_offsets, mode="max")),
     "embedding_bag_module": lambda: torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=-1),
     "embedding_bag_module_out": lambda: torch.nn.EmbeddingBag.from_pretrained(table, mode="sum")(
         bag_idx, bag_offsets),
     # PyTorch's deprecated argument orders (they warn once).
     "deprecated_add": lambda: torch.add(x, 2, y),
     "deprecated_sub_method": lambda: x.sub(0.5, y),
     "deprecated_add_out": lambda: torch.add(x, 3, y, out=torch.empty(3, 4)),
     "deprecated_addcmul": lambda: torch.addcmul(y, 0.5, x, x),
     "deprecated_addmm": lambda: torch.addmm(2, torch.ones(2, 2), 3, torch.eye(2), torch.ones(2, 2)),
     "deprecated_addmm_no_alpha": lambda: torch.addmm(0.5, torch.ones(2, 2), torch.eye(2), torch.ones(2, 2)),
     "deprecated_baddbmm": lambda: torch.baddbmm(2, torch.ones(1, 2, 2), torch.ones(1, 2, 2), torch.ones(1, 2, 2)),
     "deprecated_addcmul_inplace": lambda: y.clone().addcmul_(0.5, x, x),
     "deprecated_addmm_method": lambda: torch.ones(2, 2).addmm(0.5, torch.eye(2), torch.ones(2, 2)),
     "deprecated_addmm_method_alpha": lambda: torch.ones(2, 2).addmm(0.5, 3, torch.eye(2), torch.ones(2, 2)),
     "deprecated_add_inplace": lambda: y.clone().add_(2, x),
    }


def errors(torch, F):
    """name -> a function making one call that PyTorch refuses; the class and the whole message
    are compared."""
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    i = torch.tensor([1, 2, 3])
    return {
     "broadcast": lambda: x + torch.ones(3),
     "broadcast_inplace": lambda: torch.ones(1, 4).add_(x),
     "dim_range": lambda: x.sum(5),
     "dim_range_neg": lambda: x.softmax(-3),
     "select_range": lambda: x.select(0, 5),
     "index_range": lambda: x[7],
     "index_tensor_range": lambda: x[torch.tensor([0, 9])],
     "view_size": lambda: x.view(5),
     "view_stride": lambda: x.t().view(12),
     "reshape_size": lambda: x.reshape(5, -1),
     "matmul_shapes": lambda: x @ x,
     "mm_shapes": lambda: torch.mm(x, torch.ones(3, 2)),
     "mv_shapes": lambda: torch.mv(x, torch.ones(3)),
     "inplace_cast": lambda: i.add_(1.5),
     "inplace_float_into_int": lambda: i.mul_(torch.tensor([0.5])),
     "cat_shapes": lambda: torch.cat([x, torch.ones(2, 3)]),
     "cat_empty_list": lambda: torch.cat([]),
     "stack_shapes": lambda: torch.stack([x, torch.ones(4, 3)]),
     "item_many": lambda: x.item(),
     "bool_many": lambda: bool(x),
     "expand_size": lambda: torch.ones(2, 3).expand(4, 3),
     "permute_dims": lambda: x.permute(0),
     "transpose_dim": lambda: x.transpose(0, 2),
     "squeeze_dim": lambda: x.squeeze(3),
     "gather_index": lambda: torch.gather(x, 1, torch.tensor([[9]])),
     "index_select_dtype": lambda: x.index_select(0, torch.tensor([0.0])),
     "randn_negative": lambda: torch.randn(-1),
     "zeros_negative": lambda: torch.zeros(2, -3),
     "arange_step": lambda: torch.arange(0, 1, 0),
     "linspace_steps": lambda: torch.linspace(0, 1, -1),
     "cross_entropy_target": lambda: F.cross_entropy(x, torch.tensor([0, 1])),
     "nll_class": lambda: F.nll_loss(x.log_softmax(1), torch.tensor([0, 1, 7])),
     "linear_shapes": lambda: F.linear(x, torch.ones(2, 3)),
     "conv_channels": lambda: F.conv2d(torch.ones(1, 3, 5, 5), torch.ones(2, 4, 3, 3)),
     "conv_rank": lambda: F.conv2d(torch.ones(5, 5), torch.ones(2, 1, 3, 3)),
     "backward_no_grad": lambda: x.sum().backward(),
     "backward_nonscalar": lambda: (torch.ones(2, requires_grad=True) * 2).backward(),
     "leaf_inplace": lambda: torch.ones(2, requires_grad=True).add_(1),
     "numpy_requires_grad": lambda: torch.ones(2, requires_grad=True).numpy(),
     "inv_singular": lambda: torch.linalg.inv(torch.zeros(2, 2)),
     "cholesky_not_pd": lambda: torch.linalg.cholesky(-torch.eye(2)),
     "solve_shapes": lambda: torch.linalg.solve(torch.eye(2), torch.ones(3)),
     "int_pow_negative": lambda: torch.tensor([2]) ** -1,
     "div_mode": lambda: torch.div(x, 2, rounding_mode="up"),
     "bitwise_float": lambda: x & x,
     "type_add_str": lambda: torch.add(x, "a"),
     "type_ones_str": lambda: torch.ones("a"),
     "type_unexpected_kw": lambda: x.sum(dimension=1),
     "type_kw_only": lambda: torch.ones(2).sum(keepdim="yes"),
     "type_missing": lambda: torch.add(x),
     "type_tensor_method": lambda: x.sum("a"),
     "type_view_str": lambda: x.view("a"),
     "type_didnt_match": lambda: torch.ones(2).sum("a", "b"),
     "type_list_arg": lambda: torch.cat(x, ["a"]),
     "embedding_bag_no_offsets": lambda: F.embedding_bag(i, torch.ones(5, 2)),
     "embedding_bag_mode": lambda: F.embedding_bag(i, torch.ones(5, 2), torch.tensor([0]), mode="min"),
     "embedding_bag_weights_mode": lambda: F.embedding_bag(i, torch.ones(5, 2), torch.tensor([0]),
                                                           per_sample_weights=torch.ones(3)),
     "embedding_bag_weights_shape": lambda: F.embedding_bag(i, torch.ones(5, 2), torch.tensor([0]), mode="sum",
                                                            per_sample_weights=torch.ones(2)),
     "embedding_bag_weight_dim": lambda: F.embedding_bag(i, torch.ones(5), torch.tensor([0])),
     "embedding_bag_input_dim": lambda: F.embedding_bag(i.view(1, 1, 3), torch.ones(5, 2)),
     "embedding_bag_padding_idx": lambda: F.embedding_bag(i, torch.ones(5, 2), torch.tensor([0]), padding_idx=5),
     "embedding_bag_max_scale": lambda: F.embedding_bag(i, torch.ones(5, 2), torch.tensor([0]), mode="max",
                                                        scale_grad_by_freq=True),
     "embedding_bag_module_padding": lambda: torch.nn.EmbeddingBag(5, 2, padding_idx=5),
     "tensor_ragged": lambda: torch.tensor([[1, 2], [3]]),
     "to_dtype_name": lambda: x.to("float99"),
     "device_name": lambda: torch.device("gpu"),
    }


def run(module):
    torch = importlib.import_module(module)
    F = importlib.import_module(module + ".nn.functional")
    out = {}
    for name, f in calls(torch, F).items():
        try:
            out[name] = repr(f())
        except Exception as e:  # noqa: BLE001 - an error is a result too
            out[name] = "ERR " + type(e).__name__ + ": " + str(e).splitlines()[0][:150]
    return out


def run_errors(module):
    """name -> [class name, message] of each call of `errors`; a call that raised nothing
    gives ["no error", repr(result)]."""
    torch = importlib.import_module(module)
    F = importlib.import_module(module + ".nn.functional")
    out = {}
    for name, f in errors(torch, F).items():
        try:
            out[name] = ["no error", repr(f())]
        except Exception as e:  # noqa: BLE001 - the error is the result
            out[name] = [type(e).__name__, str(e)]
    return out


if __name__ == "__main__":
    module = importlib.import_module(sys.argv[1])
    with open(sys.argv[2], "w") as f:
        json.dump({"generator": f"torch {module.__version__}", "reprs": run(sys.argv[1]), "errors": run_errors(sys.argv[1])},
                  f, indent=0, sort_keys=True)
