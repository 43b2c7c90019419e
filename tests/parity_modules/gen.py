"""Writes modules.json and modules.safetensors beside this file: PyTorch's numbers for every
`nn` module and optimizer this project ships, in the format `cargo xtask parity-modules` reads
(documented in xtask/src/parity_modules.rs), so that `cargo xtask parity-modules tests/parity_modules` checks
every builder of xtask/src/parity_modules.rs from a clone with nothing beside it.

Run with PyTorch installed, from anywhere but the workspace root (its `torch/` directory
would shadow the package):

    cd /tmp && python3 /path/to/workspace/tests/parity_modules/gen.py

Each module case: the module built from `config` (PyTorch's keyword arguments), its
state_dict, seeded random inputs, the outputs, and the gradients of the parameters and the
floating-point inputs for seeded random upstream gradients (backward of sum(out_i * gout_i)).
Each trajectory: eight steps of an optimizer on the MLP of MODULES.md, the losses and the final
state_dict.
"""
import json
import os
import struct
import zlib

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
TENSORS = {}


def put(key, t):
    TENSORS[key] = t.detach().contiguous().clone()
    return key


def make_input(kind, shape, g):
    """A seeded input: `f` normal floats, `prob` in (0.05, 0.95), `pos` positive, `sign` +-1
    floats, `logp` log-softmax of normal floats over the last dimension, `idx:N` int64 indices
    below N (`idx:M:N` from M), `vals:a,b,...` those int64 values (shape ignored)."""
    if kind == "f":
        return torch.randn(shape, generator=g)
    if kind == "prob":
        return torch.rand(shape, generator=g) * 0.9 + 0.05
    if kind == "pos":
        return torch.rand(shape, generator=g) + 0.5
    if kind == "sign":
        return torch.randint(0, 2, shape, generator=g).float() * 2 - 1
    if kind == "logp":
        return torch.log_softmax(torch.randn(shape, generator=g), -1)
    if kind.startswith("idx:"):
        lo, _, hi = kind[4:].rpartition(":")
        return torch.randint(int(lo or 0), int(hi), shape, generator=g)
    if kind.startswith("vals:"):
        return torch.tensor([int(v) for v in kind[5:].split(",")], dtype=torch.int64)
    raise ValueError(kind)


# (id, PyTorch class, constructor kwargs, mode, [(input kind, shape), ...], tolerances)
CASES = [
    # the modules the shared set also covers
    ("linear", "Linear", {"in_features": 6, "out_features": 4}, "train", [("f", (3, 6))]),
    ("linear_no_bias", "Linear", {"in_features": 5, "out_features": 3, "bias": False}, "train", [("f", (2, 4, 5))]),
    ("conv1d", "Conv1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1, "dilation": 2}, "train", [("f", (2, 2, 9))]),
    ("conv2d_groups", "Conv2d", {"in_channels": 4, "out_channels": 6, "kernel_size": [3, 2], "stride": 2, "groups": 2}, "train", [("f", (2, 4, 7, 6))]),
    ("conv_transpose2d", "ConvTranspose2d", {"in_channels": 3, "out_channels": 2, "kernel_size": 3, "stride": 2, "padding": 1}, "train", [("f", (1, 3, 4, 5))]),
    ("batch_norm1d_train", "BatchNorm1d", {"num_features": 4}, "train", [("f", (6, 4))]),
    ("batch_norm2d_eval", "BatchNorm2d", {"num_features": 3}, "eval", [("f", (2, 3, 4, 4))]),
    ("layer_norm", "LayerNorm", {"normalized_shape": [4, 5]}, "train", [("f", (3, 4, 5))]),
    ("group_norm", "GroupNorm", {"num_groups": 2, "num_channels": 4}, "train", [("f", (2, 4, 3, 3))]),
    ("embedding", "Embedding", {"num_embeddings": 10, "embedding_dim": 4, "padding_idx": 0}, "train", [("idx:10", (3, 5))]),
    ("lstm", "LSTM", {"input_size": 4, "hidden_size": 5, "num_layers": 2}, "train", [("f", (6, 2, 4))]),
    ("gru_bidirectional", "GRU", {"input_size": 4, "hidden_size": 3, "bidirectional": True, "batch_first": True}, "train", [("f", (2, 5, 4))]),
    ("rnn_relu", "RNN", {"input_size": 3, "hidden_size": 4, "nonlinearity": "relu"}, "train", [("f", (5, 2, 3))]),
    ("rnn_cell_relu", "RNNCell", {"input_size": 3, "hidden_size": 4, "nonlinearity": "relu"}, "train", [("f", (5, 3))]),
    ("lstm_cell", "LSTMCell", {"input_size": 3, "hidden_size": 4}, "train", [("f", (5, 3))]),
    ("gru_cell_no_bias", "GRUCell", {"input_size": 3, "hidden_size": 4, "bias": False}, "train", [("f", (5, 3))]),
    ("multihead_attention", "MultiheadAttention", {"embed_dim": 8, "num_heads": 2}, "train", [("f", (4, 2, 8)), ("f", (5, 2, 8)), ("f", (5, 2, 8))]),
    ("transformer_encoder_layer", "TransformerEncoderLayer", {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0}, "eval", [("f", (5, 2, 8))]),
    ("max_pool2d", "MaxPool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, "train", [("f", (2, 3, 7, 6))]),
    ("dropout_eval", "Dropout", {"p": 0.3}, "eval", [("f", (3, 4))]),
    ("dropout2d_eval", "Dropout2d", {"p": 0.3}, "eval", [("f", (2, 3, 4, 4))]),
    ("alpha_dropout_eval", "AlphaDropout", {"p": 0.3}, "eval", [("f", (3, 4))]),
    ("flatten", "Flatten", {"start_dim": 1, "end_dim": 2}, "train", [("f", (2, 3, 4, 5))]),
    ("gelu", "GELU", {}, "train", [("f", (2, 3, 4))]),
    # activations
    ("relu6", "ReLU6", {}, "train", [("f", (2, 3, 4))]),
    ("sigmoid", "Sigmoid", {}, "train", [("f", (2, 3, 4))]),
    ("tanh", "Tanh", {}, "train", [("f", (2, 3, 4))]),
    ("relu", "ReLU", {}, "train", [("f", (2, 3, 4))]),
    ("silu", "SiLU", {}, "train", [("f", (2, 3, 4))]),
    ("mish", "Mish", {}, "train", [("f", (2, 3, 4))]),
    ("hardsigmoid", "Hardsigmoid", {}, "train", [("f", (2, 3, 4))]),
    ("hardswish", "Hardswish", {}, "train", [("f", (2, 3, 4))]),
    ("selu", "SELU", {}, "train", [("f", (2, 3, 4))]),
    ("logsigmoid", "LogSigmoid", {}, "train", [("f", (2, 3, 4))]),
    ("softsign", "Softsign", {}, "train", [("f", (2, 3, 4))]),
    ("tanhshrink", "Tanhshrink", {}, "train", [("f", (2, 3, 4))]),
    ("leaky_relu", "LeakyReLU", {"negative_slope": 0.2}, "train", [("f", (2, 3, 4))]),
    ("elu", "ELU", {"alpha": 0.7}, "train", [("f", (2, 3, 4))]),
    ("celu", "CELU", {"alpha": 1.3}, "train", [("f", (2, 3, 4))]),
    ("softplus", "Softplus", {"beta": 2.0, "threshold": 1.5}, "train", [("f", (2, 3, 4))]),
    ("hardtanh", "Hardtanh", {"min_val": -0.5, "max_val": 0.8}, "train", [("f", (2, 3, 4))]),
    ("threshold", "Threshold", {"threshold": 0.1, "value": -2.0}, "train", [("f", (2, 3, 4))]),
    ("glu", "GLU", {"dim": 1}, "train", [("f", (2, 4, 3))]),
    ("softmax", "Softmax", {"dim": 1}, "train", [("f", (2, 3, 4))]),
    ("log_softmax", "LogSoftmax", {"dim": 1}, "train", [("f", (2, 3, 4))]),
    ("softmin", "Softmin", {"dim": -1}, "train", [("f", (2, 3, 4))]),
    ("hardshrink", "Hardshrink", {"lambd": 0.3}, "train", [("f", (2, 3, 4))]),
    ("softshrink", "Softshrink", {"lambd": 0.3}, "train", [("f", (2, 3, 4))]),
    ("gelu_tanh", "GELU", {"approximate": "tanh"}, "train", [("f", (2, 3, 4))]),
    ("prelu", "PReLU", {"num_parameters": 3, "init": 0.1}, "train", [("f", (2, 3, 4))]),
    # pooling
    ("max_pool1d", "MaxPool1d", {"kernel_size": 3, "stride": 2, "padding": 1}, "train", [("f", (2, 3, 9))]),
    (
        "avg_pool1d",
        "AvgPool1d",
        {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
        "train",
        [("f", (2, 3, 9))],
    ),
    (
        "avg_pool2d",
        "AvgPool2d",
        {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0], "ceil_mode": True},
        "train",
        [("f", (2, 3, 7, 6))],
    ),
    ("avg_pool2d_divisor", "AvgPool2d", {"kernel_size": 2, "divisor_override": 3}, "train", [("f", (1, 2, 4, 4))]),
    ("adaptive_avg_pool1d", "AdaptiveAvgPool1d", {"output_size": 4}, "train", [("f", (2, 3, 10))]),
    ("adaptive_avg_pool2d", "AdaptiveAvgPool2d", {"output_size": [3, 2]}, "train", [("f", (2, 3, 7, 5))]),
    ("adaptive_max_pool2d", "AdaptiveMaxPool2d", {"output_size": [3, 2]}, "train", [("f", (2, 3, 7, 5))]),
    # convolutions
    (
        "conv3d",
        "Conv3d",
        {"in_channels": 2, "out_channels": 3, "kernel_size": [2, 3, 2], "stride": [1, 2, 1], "padding": 1},
        "train",
        [("f", (2, 2, 4, 5, 4))],
    ),
    (
        "conv_transpose1d",
        "ConvTranspose1d",
        {"in_channels": 3, "out_channels": 2, "kernel_size": 3, "stride": 2, "padding": 1, "output_padding": 1},
        "train",
        [("f", (2, 3, 6))],
    ),
    # normalisation
    (
        "instance_norm2d",
        "InstanceNorm2d",
        {"num_features": 3, "affine": True},
        "train",
        [("f", (2, 3, 4, 5))],
    ),
    # shapes and resampling
    ("identity", "Identity", {}, "train", [("f", (2, 3))]),
    ("unflatten", "Unflatten", {"dim": 1, "unflattened_size": [2, 3]}, "train", [("f", (4, 6, 2))]),
    ("pixel_shuffle", "PixelShuffle", {"upscale_factor": 2}, "train", [("f", (2, 8, 3, 3))]),
    ("pixel_unshuffle", "PixelUnshuffle", {"downscale_factor": 2}, "train", [("f", (2, 2, 4, 6))]),
    (
        "upsample_bilinear",
        "Upsample",
        {"scale_factor": 2.0, "mode": "bilinear", "align_corners": False},
        "train",
        [("f", (1, 2, 3, 4))],
    ),
    ("upsample_nearest", "Upsample", {"size": [5, 7], "mode": "nearest"}, "train", [("f", (1, 2, 3, 4))]),
    # layers with two inputs
    ("bilinear", "Bilinear", {"in1_features": 3, "in2_features": 4, "out_features": 5}, "train", [("f", (6, 3)), ("f", (6, 4))]),
    ("embedding_bag_mean", "EmbeddingBag", {"num_embeddings": 10, "embedding_dim": 4}, "train", [("idx:10", (3, 4))]),
    (
        "embedding_bag_max",
        "EmbeddingBag",
        {"num_embeddings": 10, "embedding_dim": 4, "mode": "max"},
        "train",
        [("idx:10", (3, 4))],
    ),
    (
        "transformer_decoder_layer",
        "TransformerDecoderLayer",
        {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0},
        "eval",
        [("f", (5, 2, 8)), ("f", (4, 2, 8))],
    ),
    (
        "transformer_decoder_layer_norm_first",
        "TransformerDecoderLayer",
        {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0, "norm_first": True, "batch_first": True},
        "eval",
        [("f", (2, 5, 8)), ("f", (2, 4, 8))],
    ),
    (
        "transformer",
        "Transformer",
        {
            "d_model": 8,
            "nhead": 2,
            "num_encoder_layers": 2,
            "num_decoder_layers": 1,
            "dim_feedforward": 16,
            "dropout": 0.0,
        },
        "eval",
        [("f", (4, 2, 8)), ("f", (3, 2, 8))],
    ),
    # losses
    ("mse_loss", "MSELoss", {}, "train", [("f", (3, 4)), ("f", (3, 4))]),
    ("l1_loss_sum", "L1Loss", {"reduction": "sum"}, "train", [("f", (3, 4)), ("f", (3, 4))]),
    ("smooth_l1_loss", "SmoothL1Loss", {"beta": 0.5}, "train", [("f", (3, 4)), ("f", (3, 4))]),
    ("huber_loss_none", "HuberLoss", {"delta": 0.7, "reduction": "none"}, "train", [("f", (3, 4)), ("f", (3, 4))]),
    ("cross_entropy_loss", "CrossEntropyLoss", {"label_smoothing": 0.1}, "train", [("f", (4, 5)), ("idx:5", (4,))]),
    ("nll_loss", "NLLLoss", {"ignore_index": 2}, "train", [("f", (6, 5)), ("idx:5", (6,))]),
    ("bce_loss", "BCELoss", {}, "train", [("prob", (3, 4)), ("prob", (3, 4))]),
    ("bce_with_logits_loss", "BCEWithLogitsLoss", {}, "train", [("f", (3, 4)), ("prob", (3, 4))]),
    ("kl_div_loss_sum", "KLDivLoss", {"reduction": "sum"}, "train", [("f", (3, 4)), ("prob", (3, 4))]),
    ("margin_ranking_loss", "MarginRankingLoss", {"margin": 0.2}, "train", [("f", (5,)), ("f", (5,)), ("sign", (5,))]),
    (
        "cosine_embedding_loss",
        "CosineEmbeddingLoss",
        {"margin": 0.1},
        "train",
        [("f", (4, 6)), ("f", (4, 6)), ("sign", (4,))],
    ),
    ("triplet_margin_loss", "TripletMarginLoss", {"margin": 0.5}, "train", [("f", (4, 6)), ("f", (4, 6)), ("f", (4, 6))]),
    (
        "ctc_loss",
        "CTCLoss",
        {"blank": 0},
        "train",
        [("logp", (7, 3, 5)), ("idx:1:5", (3, 4)), ("vals:7,6,5", (3,)), ("vals:4,2,3", (3,))],
    ),
]

# Inputs that are targets of a loss: not differentiated (PyTorch has no gradient for some of
# them), so the runner gets no expected gradient for them or anything after them.
LOSSES = {
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "CrossEntropyLoss",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "KLDivLoss",
    "MarginRankingLoss",
    "CosineEmbeddingLoss",
    "CTCLoss",
}


def flatten(out):
    """A module's results in order: `(out, (h, c))` gives out, h, c."""
    if isinstance(out, (tuple, list)):
        for o in out:
            yield from flatten(o)
    else:
        yield out


def module_case(case_id, cls, config, mode, inputs, g):
    torch.manual_seed(zlib.crc32(case_id.encode()))
    m = getattr(nn, cls)(**config)
    # Parameters drawn from the seeded generator, so that zero-initialised ones (biases of
    # attention) are not trivially zero.
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    m.train(mode == "train")
    # The state the runner loads: before the forward, which updates BatchNorm's statistics.
    state = {k: put(f"{case_id}.{k}", v) for k, v in m.state_dict().items()}
    xs = [make_input(kind, shape, g) for kind, shape in inputs]
    for x in xs:
        if x.is_floating_point():
            x.requires_grad_(True)
    out = m(*xs)
    outs = list(flatten(out))
    gouts = [torch.randn(o.shape, generator=g) for o in outs]
    total = sum((o * go).sum() for o, go in zip(outs, gouts))
    total.backward()
    entry = {
        "id": case_id,
        "module": cls,
        "config": config,
        "mode": mode,
        "state": state,
        "inputs": [put(f"{case_id}:in{i}", x) for i, x in enumerate(xs)],
        "outputs": [put(f"{case_id}:out{i}", o) for i, o in enumerate(outs)],
        "grad": {
            "grad_outputs": [put(f"{case_id}:gout{i}", go) for i, go in enumerate(gouts)],
            "params": {
                k: put(f"{case_id}:grad.{k}", p.grad) for k, p in m.named_parameters() if p.grad is not None
            },
            "inputs": [],
        },
        "rtol": 1e-4,
        "atol": 1e-5,
    }
    buffers = dict(m.named_buffers())
    if buffers and mode == "train":
        entry["buffers_after"] = {k: put(f"{case_id}:after.{k}", v) for k, v in buffers.items()}
    float_inputs = [x for x in xs if x.is_floating_point()]
    if cls in LOSSES:
        float_inputs = float_inputs[:1] if cls not in ("MarginRankingLoss", "CosineEmbeddingLoss") else float_inputs[:2]
    for i, x in enumerate(float_inputs):
        if x.grad is None:
            break
        entry["grad"]["inputs"].append(put(f"{case_id}:ingrad{i}", x.grad))
    return entry


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 5))

    def forward(self, x):
        return self.net(x)


TRAJECTORIES = [
    ("mlp_sgd_nesterov", "SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.0001}),
    ("mlp_adam_amsgrad", "Adam", {"lr": 0.01, "amsgrad": True}),
    ("mlp_adamw", "AdamW", {"lr": 0.01, "weight_decay": 0.05}),
    ("mlp_rmsprop", "RMSprop", {"lr": 0.01}),
    ("mlp_rmsprop_centered_momentum", "RMSprop", {"lr": 0.005, "alpha": 0.9, "momentum": 0.5, "centered": True, "weight_decay": 0.01}),
    ("mlp_adagrad", "Adagrad", {"lr": 0.1}),
    ("mlp_adagrad_decay", "Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.001, "initial_accumulator_value": 0.1}),
]


def trajectory(case_id, opt_name, config, g):
    torch.manual_seed(zlib.crc32(case_id.encode()))
    model = MLP()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    init = {k: put(f"{case_id}.init.{k}", v) for k, v in model.state_dict().items()}
    x = torch.randn((8, 16, 20), generator=g)
    y = torch.randint(0, 5, (8, 16), generator=g)
    opt = getattr(torch.optim, opt_name)(model.parameters(), **config)
    losses = []
    for s in range(8):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[s]), y[s])
        losses.append(loss.item())
        loss.backward()
        opt.step()
    return {
        "id": case_id,
        "model": "MLP",
        "optimizer": opt_name,
        "config": config,
        "init": init,
        "x": put(f"{case_id}.x", x),
        "y": put(f"{case_id}.y", y),
        "loss": "cross_entropy(mean)",
        "losses": losses,
        "final": {k: put(f"{case_id}.final.{k}", v) for k, v in model.state_dict().items()},
        "rtol": 1e-3,
        "atol": 1e-5,
    }


def save_safetensors(path, tensors):
    """The safetensors format: an 8-byte little-endian header length, the JSON header, the
    data (written here so that the script needs nothing but torch)."""
    names = {torch.float32: "F32", torch.int64: "I64"}
    header, blobs, offset = {}, [], 0
    for key in sorted(tensors):
        t = tensors[key]
        data = t.numpy().tobytes()
        header[key] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    g = torch.Generator().manual_seed(2026)
    modules = [module_case(*c, g) for c in CASES]
    trajectories = [trajectory(*t, g) for t in TRAJECTORIES]
    doc = {"format": 1, "generator": f"torch {torch.__version__}", "modules": modules, "trajectories": trajectories}
    with open(os.path.join(HERE, "modules.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    save_safetensors(os.path.join(HERE, "modules.safetensors"), TENSORS)
    print(f"wrote {len(modules)} module cases, {len(trajectories)} trajectories, {len(TENSORS)} tensors")


if __name__ == "__main__":
    main()
