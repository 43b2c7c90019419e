"""torchrs.nn's recurrent, attention and transformer layers against PyTorch 2.15: initial
weights, outputs and gradients of the cases of nn/tests/nn/recurrent.rs, written there by
gen_recurrent.py, which ran PyTorch (its call for each case is repeated here)."""

import re
from pathlib import Path

import numpy as np
import pytest

import torchrs as torch
import torchrs.nn as nn

RECURRENT_RS = Path(__file__).resolve().parents[2] / "nn" / "tests" / "nn" / "recurrent.rs"
_RUST_FLOATS = {"f32::NEG_INFINITY": -np.inf, "f32::INFINITY": np.inf, "f32::NAN": np.nan}
_ENTRY = re.compile(r'\("([^"]+)", &\[([^\]]*)\], &\[([^\]]*)\]\)')


def _case(name):
    """{entry name: float32 array} of one generated case."""
    text = RECURRENT_RS.read_text()
    start = text.index(f"const {name}: &[Entry] = &[")
    body = text[start:text.index("\n];", start)]
    out = {}
    for key, shape, values in _ENTRY.findall(body):
        dims = [int(s) for s in shape.split(",") if s.strip()]
        vals = np.array([_RUST_FLOATS.get(v.strip(), None) or float(v) for v in values.split(",") if v.strip()],
                        dtype=np.float32)
        out[key] = vals.reshape(dims)
    return out


def _check(name, module, call, grad_params):
    case = _case(name)
    state = {k[len("state."):]: torch.from_numpy(v.copy()) for k, v in case.items() if k.startswith("state.")}
    module.load_state_dict(state)
    ins = [torch.from_numpy(case[f"in.{i}"].copy()).requires_grad_(True) for i in range(len(case))
           if f"in.{i}" in case]
    outs = call(module, ins)
    flat = []
    for o in outs if isinstance(outs, tuple) else (outs,):
        flat.extend(o if isinstance(o, tuple) else (o,))
    loss = None
    for i, o in enumerate(flat):
        np.testing.assert_allclose(o.detach().numpy(), case[f"out.{i}"], rtol=1e-4, atol=1e-5, err_msg=f"out.{i}")
        term = (o * torch.from_numpy(case[f"gout.{i}"].copy())).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    for i, x in enumerate(ins):
        np.testing.assert_allclose(x.grad.numpy(), case[f"grad.in.{i}"], rtol=1e-4, atol=1e-5, err_msg=f"grad.in.{i}")
    params = dict(module.named_parameters())
    for p in grad_params:
        np.testing.assert_allclose(params[p].grad.numpy(), case[f"grad.{p}"], rtol=1e-4, atol=1e-5, err_msg=p)
    return case


def test_lstm_two_layers_batch_first_and_its_initial_weights():
    # torch.manual_seed(1); m = nn.LSTM(3, 4, num_layers=2, batch_first=True); x = torch.randn(2, 3, 3)
    torch.manual_seed(1)
    m = nn.LSTM(3, 4, num_layers=2, batch_first=True)
    case = _case("LSTM2_BATCH_FIRST")
    # PyTorch's initial weights: U(-1/2, 1/2) drawn parameter by parameter in this order.
    assert list(m.state_dict()) == [k[len("state."):] for k in case if k.startswith("state.")]
    for k, v in m.state_dict().items():
        np.testing.assert_allclose(v.numpy(), case["state." + k], atol=1e-7, err_msg=k)
    np.testing.assert_allclose(torch.randn(2, 3, 3).numpy(), case["in.0"], atol=1e-6)  # the same draws follow
    _check("LSTM2_BATCH_FIRST", m, lambda m, i: m(i[0]), ["weight_ih_l0", "bias_hh_l1", "weight_hh_l0"])


def test_lstm_bidirectional_with_initial_state():
    _check("LSTM_BIDIR", nn.LSTM(3, 4, num_layers=2, bidirectional=True), lambda m, i: m(i[0], (i[1], i[2])),
           ["weight_ih_l0_reverse", "weight_hh_l1", "bias_ih_l1_reverse"])


def test_lstm_projection_unbatched():
    _check("LSTM_PROJ_UNBATCHED", nn.LSTM(3, 4, proj_size=2, bidirectional=True), lambda m, i: m(i[0]),
           ["weight_hr_l0", "weight_hh_l0_reverse"])


def test_gru():
    _check("GRU", nn.GRU(3, 4), lambda m, i: m(i[0], i[1]), ["weight_ih_l0", "weight_hh_l0", "bias_hh_l0"])
    _check("GRU_BIDIR_NOBIAS", nn.GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True, bias=False),
           lambda m, i: m(i[0]), ["weight_hh_l1_reverse"])


def test_rnn():
    _check("RNN_RELU", nn.RNN(3, 4, num_layers=2, nonlinearity="relu"), lambda m, i: m(i[0], i[1]),
           ["weight_ih_l1", "bias_ih_l0"])
    _check("RNN_TANH", nn.RNN(3, 4, batch_first=True), lambda m, i: m(i[0]), ["weight_hh_l0"])


def test_cells():
    _check("RNN_CELL", nn.RNNCell(3, 4), lambda m, i: m(i[0], i[1]), ["weight_ih", "bias_hh"])
    _check("LSTM_CELL", nn.LSTMCell(3, 4), lambda m, i: m(i[0], (i[1], i[2])), ["weight_hh", "bias_ih"])
    _check("GRU_CELL", nn.GRUCell(3, 4), lambda m, i: m(i[0], i[1]), ["weight_ih", "weight_hh"])


def test_repr_and_argument_errors():
    assert repr(nn.LSTM(3, 4, num_layers=2, batch_first=True)) == "LSTM(3, 4, num_layers=2, batch_first=True)"
    assert repr(nn.GRU(3, 4, bidirectional=True)) == "GRU(3, 4, bidirectional=True)"
    assert repr(nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4)"  # RNNBase's repr leaves it out
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert repr(nn.LSTMCell(3, 4)) == "LSTMCell(3, 4)"
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."):
        nn.RNN(3, 4, nonlinearity="gelu")


# ---- attention and transformer layers (the same file's cases; masks are stored as 0/1 floats) ------

def _mask(case, name, boolean):
    m = torch.from_numpy(case["mask." + name].copy())
    return m != 0 if boolean else m


def test_multihead_attention_self():
    # nn.MultiheadAttention(4, 2); m(x, x, x) with one x (its gradient is the sum of the three uses)
    case = _case("MHA_SELF")
    m = nn.MultiheadAttention(4, 2)
    m.load_state_dict({k[6:]: torch.from_numpy(v.copy()) for k, v in case.items() if k.startswith("state.")})
    x = torch.from_numpy(case["in.0"].copy()).requires_grad_(True)
    out, weights = m(x, x, x)
    np.testing.assert_allclose(out.detach().numpy(), case["out.0"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(weights.detach().numpy(), case["out.1"], rtol=1e-4, atol=1e-5)
    ((out * torch.from_numpy(case["gout.0"].copy())).sum()
     + (weights * torch.from_numpy(case["gout.1"].copy())).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), case["grad.in.0"], rtol=1e-4, atol=1e-5)
    for p in ["in_proj_weight", "out_proj.weight", "in_proj_bias"]:
        np.testing.assert_allclose(dict(m.named_parameters())[p].grad.numpy(), case["grad." + p], rtol=1e-4,
                                   atol=1e-5)


def test_multihead_attention_bool_masks():
    case = _case("MHA_BOOL_MASKS")
    _check("MHA_BOOL_MASKS", nn.MultiheadAttention(4, 2),
           lambda m, i: m(i[0], i[1], i[2], key_padding_mask=_mask(case, "key_padding_mask", True),
                          attn_mask=_mask(case, "attn_mask", True), average_attn_weights=False),
           ["in_proj_weight", "out_proj.bias"])


def test_multihead_attention_float_mask_without_weights():
    case = _case("MHA_FLOAT_MASK_NO_WEIGHTS")
    m = nn.MultiheadAttention(4, 2, batch_first=True)
    m.load_state_dict({k[6:]: torch.from_numpy(v.copy()) for k, v in case.items() if k.startswith("state.")})
    x = torch.from_numpy(case["in.0"].copy()).requires_grad_(True)
    out, weights = m(x, x, x, attn_mask=_mask(case, "attn_mask", False), need_weights=False)
    assert weights is None
    np.testing.assert_allclose(out.detach().numpy(), case["out.0"], rtol=1e-4, atol=1e-5)
    (out * torch.from_numpy(case["gout.0"].copy())).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), case["grad.in.0"], rtol=1e-4, atol=1e-5)


def test_multihead_attention_kdim_vdim_bias_kv_zero_attn_unbatched():
    _check("MHA_KDIM_BIAS_KV_UNBATCHED", nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True,
                                                               add_zero_attn=True),
           lambda m, i: m(i[0], i[1], i[2]), ["k_proj_weight", "bias_v", "in_proj_bias"])


def test_transformer_encoder_layer():
    case = _case("ENCODER_LAYER")
    _check("ENCODER_LAYER", nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True),
           lambda m, i: m(i[0], src_key_padding_mask=_mask(case, "src_key_padding_mask", True)),
           ["self_attn.in_proj_weight", "linear1.weight", "norm2.bias"])
    case = _case("ENCODER_LAYER_NORM_FIRST_GELU")
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(mask.numpy(), case["mask.src_mask"])
    _check("ENCODER_LAYER_NORM_FIRST_GELU",
           nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, activation="gelu", norm_first=True),
           lambda m, i: m(i[0], src_mask=mask), ["self_attn.out_proj.weight", "linear2.weight", "norm1.weight"])


def test_transformer_decoder_layer():
    case = _case("DECODER_LAYER")
    _check("DECODER_LAYER", nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True),
           lambda m, i: m(i[0], i[1], tgt_mask=_mask(case, "tgt_mask", False),
                          memory_key_padding_mask=_mask(case, "memory_key_padding_mask", True)),
           ["multihead_attn.in_proj_weight", "self_attn.in_proj_bias", "norm3.weight"])


def test_transformer_stacks_run_and_keep_shapes():
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16,
                           dropout=0.0, batch_first=True)
    assert [n for n, _ in model.named_parameters()][:2] == ["encoder.layers.0.self_attn.in_proj_weight",
                                                           "encoder.layers.0.self_attn.in_proj_bias"]
    assert len(model.encoder.layers) == 2 and model.encoder.layers[0] is not model.encoder.layers[1]
    out = model(torch.randn(2, 5, 8), torch.randn(2, 3, 8),
                tgt_mask=nn.Transformer.generate_square_subsequent_mask(3))
    assert out.shape == torch.Size([2, 3, 8])
