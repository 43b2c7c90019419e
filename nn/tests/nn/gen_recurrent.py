"""Regenerates the PyTorch reference numbers embedded in recurrent.rs.

Run `python3 nn/tests/nn/gen_recurrent.py` from the workspace root: it rewrites the block between
`// BEGIN GENERATED` and `// END GENERATED` in recurrent.rs.

Each case is a list of named tensors:
  state.<name>   the module's state_dict, in PyTorch's order (loaded with load_state_dict)
  in.<i>         forward inputs (floating point; these get gradients)
  mask.<name>    masks (bool masks are stored as 0/1)
  gout.<i>       upstream gradient of output i (backward of sum(out_i * gout_i))
  out.<i>        expected outputs
  grad.in.<i>    expected input gradients
  grad.<param>   expected parameter gradients
"""
import os
import re

import numpy as np
import torch
import torch.nn as nn

torch.set_default_dtype(torch.float32)
HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "recurrent.rs")

CASES = []


def fmt(x):
    """The shortest decimal that reads back as the same f32, as a Rust literal."""
    if x != x or x in (float("inf"), float("-inf")):
        return {"inf": "f32::INFINITY", "-inf": "f32::NEG_INFINITY"}.get(str(x), "f32::NAN")
    f = np.float32(x)
    if x == 0 or abs(x) >= 1e-4:
        return np.format_float_positional(f, unique=True, trim="0")
    return np.format_float_scientific(f, unique=True, trim="0")


def add_case(name, entries):
    CASES.append((name, entries))


def flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    res = []
    for o in out:
        res.extend(flatten(o))
    return res


def run_case(name, module, inputs, masks, call, grad_params, same_input=False):
    """`call(module, inputs, masks)` returns the forward result."""
    entries = [("state." + k, v) for k, v in module.state_dict().items()]
    ins = [x.clone().requires_grad_(True) for x in inputs]
    if same_input:
        ins = [ins[0]] * len(inputs)
    for i, x in enumerate(inputs if not same_input else inputs[:1]):
        entries.append(("in.%d" % i, x))
    for k, m in masks.items():
        entries.append(("mask." + k, m.float() if m.dtype == torch.bool else m))
    outs = [o for o in flatten(call(module, ins, masks)) if o is not None]
    gouts = [torch.randn_like(o) for o in outs]
    loss = sum((o * g).sum() for o, g in zip(outs, gouts))
    loss.backward()
    for i, g in enumerate(gouts):
        entries.append(("gout.%d" % i, g))
    for i, o in enumerate(outs):
        entries.append(("out.%d" % i, o.detach()))
    for i, x in enumerate(ins if not same_input else ins[:1]):
        entries.append(("grad.in.%d" % i, x.grad))
    params = dict(module.named_parameters())
    for p in grad_params:
        entries.append(("grad." + p, params[p].grad))
    add_case(name, entries)


def randomize(module, scale=0.5):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * scale)


# ---- recurrent layers ------------------------------------------------------------------------

torch.manual_seed(1)
m = nn.LSTM(3, 4, num_layers=2, batch_first=True)
x = torch.randn(2, 3, 3)
run_case("LSTM2_BATCH_FIRST", m, [x], {}, lambda m, i, k: m(i[0]), ["weight_ih_l0", "bias_hh_l1", "weight_hh_l0"])

torch.manual_seed(2)
m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
x = torch.randn(3, 2, 3)
h0 = torch.randn(4, 2, 4)
c0 = torch.randn(4, 2, 4)
run_case(
    "LSTM_BIDIR",
    m,
    [x, h0, c0],
    {},
    lambda m, i, k: m(i[0], (i[1], i[2])),
    ["weight_ih_l0_reverse", "weight_hh_l1", "bias_ih_l1_reverse"],
)

torch.manual_seed(3)
m = nn.LSTM(3, 4, proj_size=2, bidirectional=True)
x = torch.randn(3, 3)  # unbatched
run_case("LSTM_PROJ_UNBATCHED", m, [x], {}, lambda m, i, k: m(i[0]), ["weight_hr_l0", "weight_hh_l0_reverse"])

torch.manual_seed(4)
m = nn.GRU(3, 4)
x = torch.randn(3, 2, 3)
h0 = torch.randn(1, 2, 4)
run_case("GRU", m, [x, h0], {}, lambda m, i, k: m(i[0], i[1]), ["weight_ih_l0", "weight_hh_l0", "bias_hh_l0"])

torch.manual_seed(5)
m = nn.GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True, bias=False)
x = torch.randn(2, 3, 3)
run_case("GRU_BIDIR_NOBIAS", m, [x], {}, lambda m, i, k: m(i[0]), ["weight_hh_l1_reverse"])

torch.manual_seed(6)
m = nn.RNN(3, 4, num_layers=2, nonlinearity="relu")
x = torch.randn(3, 2, 3)
h0 = torch.randn(2, 2, 4)
run_case("RNN_RELU", m, [x, h0], {}, lambda m, i, k: m(i[0], i[1]), ["weight_ih_l1", "bias_ih_l0"])

torch.manual_seed(7)
m = nn.RNN(3, 4, batch_first=True)
x = torch.randn(2, 3, 3)
run_case("RNN_TANH", m, [x], {}, lambda m, i, k: m(i[0]), ["weight_hh_l0"])

torch.manual_seed(8)
m = nn.RNNCell(3, 4)
run_case("RNN_CELL", m, [torch.randn(2, 3), torch.randn(2, 4)], {}, lambda m, i, k: m(i[0], i[1]), ["weight_ih", "bias_hh"])

torch.manual_seed(9)
m = nn.LSTMCell(3, 4)
run_case(
    "LSTM_CELL",
    m,
    [torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 4)],
    {},
    lambda m, i, k: m(i[0], (i[1], i[2])),
    ["weight_hh", "bias_ih"],
)

torch.manual_seed(10)
m = nn.GRUCell(3, 4)
run_case("GRU_CELL", m, [torch.randn(3), torch.randn(4)], {}, lambda m, i, k: m(i[0], i[1]), ["weight_ih", "weight_hh"])

# ---- attention -------------------------------------------------------------------------------

torch.manual_seed(11)
m = nn.MultiheadAttention(4, 2)
randomize(m)
x = torch.randn(3, 2, 4)
run_case(
    "MHA_SELF",
    m,
    [x, x, x],
    {},
    lambda m, i, k: m(i[0], i[1], i[2]),
    ["in_proj_weight", "out_proj.weight", "in_proj_bias"],
    same_input=True,
)

torch.manual_seed(12)
m = nn.MultiheadAttention(4, 2)
randomize(m)
q = torch.randn(3, 2, 4)
kv = torch.randn(4, 2, 4)
v = torch.randn(4, 2, 4)
kpm = torch.tensor([[False, False, True, False], [False, True, True, False]])
am = torch.tensor([[False, True, False, False], [False, False, False, True], [True, False, False, False]])
run_case(
    "MHA_BOOL_MASKS",
    m,
    [q, kv, v],
    {"key_padding_mask": kpm, "attn_mask": am},
    lambda m, i, k: m(
        i[0], i[1], i[2], key_padding_mask=k["key_padding_mask"], attn_mask=k["attn_mask"], average_attn_weights=False
    ),
    ["in_proj_weight", "out_proj.bias"],
)

torch.manual_seed(13)
m = nn.MultiheadAttention(4, 2, batch_first=True)
randomize(m)
x = torch.randn(2, 3, 4)
am = torch.randn(4, 3, 3)
run_case(
    "MHA_FLOAT_MASK_NO_WEIGHTS",
    m,
    [x, x, x],
    {"attn_mask": am},
    lambda m, i, k: m(i[0], i[1], i[2], attn_mask=k["attn_mask"], need_weights=False)[0],
    ["in_proj_weight", "out_proj.weight"],
    same_input=True,
)

torch.manual_seed(14)
m = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True)
randomize(m)
q = torch.randn(3, 4)  # unbatched
k_ = torch.randn(2, 3)
v = torch.randn(2, 5)
run_case(
    "MHA_KDIM_BIAS_KV_UNBATCHED",
    m,
    [q, k_, v],
    {},
    lambda m, i, k: m(i[0], i[1], i[2]),
    ["k_proj_weight", "bias_v", "in_proj_bias"],
)

# ---- transformer -----------------------------------------------------------------------------

torch.manual_seed(15)
m = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True)
randomize(m)
x = torch.randn(2, 3, 4)
kpm = torch.tensor([[False, False, True], [False, False, False]])
run_case(
    "ENCODER_LAYER",
    m,
    [x],
    {"src_key_padding_mask": kpm},
    lambda m, i, k: m(i[0], src_key_padding_mask=k["src_key_padding_mask"]),
    ["self_attn.in_proj_weight", "linear1.weight", "norm2.bias"],
)

torch.manual_seed(16)
m = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, activation="gelu", norm_first=True)
randomize(m)
x = torch.randn(3, 2, 4)
sm = nn.Transformer.generate_square_subsequent_mask(3)
run_case(
    "ENCODER_LAYER_NORM_FIRST_GELU",
    m,
    [x],
    {"src_mask": sm},
    lambda m, i, k: m(i[0], src_mask=k["src_mask"]),
    ["self_attn.out_proj.weight", "linear2.weight", "norm1.weight"],
)

torch.manual_seed(17)
m = nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True)
randomize(m)
tgt = torch.randn(2, 3, 4)
mem = torch.randn(2, 4, 4)
tm = nn.Transformer.generate_square_subsequent_mask(3)
mkpm = torch.tensor([[False, False, False, True], [True, False, False, False]])
run_case(
    "DECODER_LAYER",
    m,
    [tgt, mem],
    {"tgt_mask": tm, "memory_key_padding_mask": mkpm},
    lambda m, i, k: m(i[0], i[1], tgt_mask=k["tgt_mask"], memory_key_padding_mask=k["memory_key_padding_mask"]),
    ["multihead_attn.in_proj_weight", "self_attn.in_proj_bias", "norm3.weight"],
)

torch.manual_seed(18)
m = nn.Transformer(4, 2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=8, dropout=0.0)
randomize(m)
src = torch.randn(4, 2, 4)
tgt = torch.randn(3, 2, 4)
tm = nn.Transformer.generate_square_subsequent_mask(3)
run_case(
    "TRANSFORMER",
    m,
    [src, tgt],
    {"tgt_mask": tm},
    lambda m, i, k: m(i[0], i[1], tgt_mask=k["tgt_mask"]),
    ["encoder.layers.1.linear1.weight", "encoder.norm.weight", "decoder.layers.0.multihead_attn.in_proj_weight"],
)

# ---- seeded default initialisation ----------------------------------------------------------

torch.manual_seed(0)
m = nn.LSTM(3, 4, num_layers=2)
add_case("INIT_LSTM", [("state." + k, v) for k, v in m.state_dict().items()])

torch.manual_seed(0)
m = nn.MultiheadAttention(4, 2)
add_case("INIT_MHA", [("state." + k, v) for k, v in m.state_dict().items()])

torch.manual_seed(0)
m = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True)
add_case("INIT_MHA_KDIM", [("state." + k, v) for k, v in m.state_dict().items()])

torch.manual_seed(0)
m = nn.GRUCell(3, 4)
add_case("INIT_GRU_CELL", [("state." + k, v) for k, v in m.state_dict().items()])

torch.manual_seed(0)
m = nn.Transformer(4, 2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=8)
add_case("INIT_TRANSFORMER", [("state." + k, v) for k, v in m.state_dict().items()])


def emit():
    lines = ["// BEGIN GENERATED by gen_recurrent.py (PyTorch %s) — do not edit by hand" % torch.__version__]
    for name, entries in CASES:
        lines.append("#[rustfmt::skip]")
        lines.append("const %s: &[Entry] = &[" % name)
        for k, t in entries:
            t = t.detach().float().contiguous()
            shape = ", ".join(str(s) for s in t.shape)
            vals = ", ".join(fmt(v) for v in t.reshape(-1).tolist())
            lines.append('    ("%s", &[%s], &[%s]),' % (k, shape, vals))
        lines.append("];")
    lines.append("// END GENERATED")
    return "\n".join(lines)


src = open(TARGET).read()
block = emit()
pattern = re.compile(r"// BEGIN GENERATED.*?// END GENERATED", re.S)
if pattern.search(src):
    src = pattern.sub(lambda _: block, src)
else:
    src = src.rstrip("\n") + "\n\n" + block + "\n"
open(TARGET, "w").write(src)
print("wrote %d cases to %s" % (len(CASES), TARGET))
