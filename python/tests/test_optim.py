"""torchrs.optim: optimizers against PyTorch 2.15's numbers (the cases of nn/tests/nn/optim.rs,
printed by PyTorch), closed forms written out here, the state dict format, and the LR
schedulers' sequences (PyTorch's, from the same file)."""

import math

import numpy as np
import pytest

import torchrs as torch
from torchrs.optim import SGD, Adagrad, Adam, AdamW, RMSprop
from torchrs.optim.lr_scheduler import (CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, MultiStepLR, OneCycleLR,
                                        ReduceLROnPlateau, SequentialLR, StepLR)

Parameter = torch.nn.Parameter


def f64(values):
    """A float64 tensor of exactly these Python floats (through numpy: torchrs's
    ``torch.tensor(floats, dtype=torch.float64)`` rounds them to float32 first)."""
    return torch.from_numpy(np.array(values, dtype=np.float64))

# The PyTorch loop that produced the expectations (nn/tests/nn/optim.rs):
#   a = Parameter(tensor(A0, float32)); b = Parameter(tensor(B0, float64)); opt = cls([a, b], **kw)
#   for t in range(4): a.grad = tensor(GA[t]); b.grad = None if GB[t] is None else tensor(GB[t]); opt.step()
A0 = [0.5, -1.0, 1.5, 2.0, -0.25, 0.0]
B0 = [1.0, -2.0, 0.3, 0.7]
GA = [[0.1, -0.2, 0.3, 0.4, 0.5, -0.6], [-0.3, 0.1, 0.2, 0.05, -0.4, 0.3], [0.02, 0.03, -0.01, 0.2, 0.1, 0.05],
      [0.01, -0.05, 0.1, -0.1, 0.02, 0.04]]
GB = [[0.5, -0.5, 1.0, -1.0], [0.2, 0.1, -0.3, 0.4], None, [-0.05, 0.02, 0.01, 0.03]]

PYTORCH = {
    "sgd_plain": (lambda p: SGD(p, lr=0.1),
                  [0.5170000791549683, -0.9880000352859497, 1.4410001039505005, 1.9450000524520874,
                   -0.2720000147819519, 0.020999999716877937],
                  [0.9349999999999999, -1.962, 0.22899999999999998, 0.7569999999999999]),
    "sgd_momentum": (lambda p: SGD(p, lr=0.1, momentum=0.9),
                     [0.542110025882721, -0.9590200185775757, 1.3345298767089844, 1.820889949798584,
                      -0.33454999327659607, 0.11154000461101532],
                     [0.8314999999999999, -1.8855, 0.08499999999999994, 0.892]),
    "sgd_dampening_wd": (lambda p: SGD(p, lr=0.1, momentum=0.9, dampening=0.5, weight_decay=0.01),
                         [0.5007579922676086, -0.9389616847038269, 1.3564767837524414, 1.8293787240982056,
                          -0.3765002489089966, 0.1586989313364029],
                         [0.84394213725, -1.8667767869999998, 0.055935119924999985, 0.928409529825]),
    "sgd_nesterov_wd": (lambda p: SGD(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
                        [0.4978748857975006, -0.9288274049758911, 1.335855484008789, 1.8077925443649292,
                         -0.27472254633903503, 0.04509574547410011],
                        [0.8718962259999999, -1.8698930969999998, 0.17934767129999996, 0.7692731997]),
    "sgd_maximize": (lambda p: SGD(p, lr=0.1, momentum=0.5, maximize=True),
                     [0.4702499806880951, -1.0204999446868896, 1.5997499227523804, 2.103749990463257,
                      -0.20925000309944153, -0.04850000515580177],
                     [1.1125, -2.0705, 0.43100000000000005, 0.588]),
    "adam_default": (lambda p: Adam(p, lr=0.01),
                     [0.5009585022926331, -0.9839354157447815, 1.465643048286438, 1.9691424369812012,
                      -0.2633622884750366, 0.015185956843197346],
                     [0.9746891678825053, -1.9811931506210145, 0.2823531411285805, 0.7159485301113782]),
    "adam_amsgrad_wd": (lambda p: Adam(p, lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True),
                        [0.4936293363571167, -0.9706855416297913, 1.4625778198242188, 1.9639142751693726,
                         -0.2600786089897156, 0.013407616876065731],
                        [0.9736781544943026, -1.9759911625259916, 0.28273798159159963, 0.7128808775818682]),
    "adam_maximize_eps": (lambda p: Adam(p, lr=0.02, maximize=True, eps=1e-3),
                          [0.49799877405166626, -1.0319398641586304, 1.5684235095977783, 2.0615053176879883,
                           -0.22333386540412903, -0.030313726514577866],
                          [1.050494264324659, -2.0375204836442378, 0.3352509980104413, 0.6681399893208391]),
    "adam_decoupled": (lambda p: Adam(p, lr=0.01, amsgrad=True, weight_decay=0.1, decoupled_weight_decay=True),
                       [0.49897822737693787, -0.9799779653549194, 1.4597097635269165, 1.9612077474594116,
                        -0.26233118772506714, 0.015149085782468319],
                       [0.9717211426339152, -1.9752242488812448, 0.2814798391937841, 0.7138269048431145]),
    "adamw_default": (lambda p: AdamW(p, lr=0.01),
                      [0.5007601976394653, -0.9835391044616699, 1.4650487899780273, 1.9683477878570557,
                       -0.26325905323028564, 0.015182266011834145],
                      [0.9743920963566463, -1.9805957215450376, 0.2822655778768462, 0.7157362056048547]),
    "adamw_amsgrad_maximize": (lambda p: AdamW(p, lr=0.01, weight_decay=0.5, amsgrad=True, maximize=True),
                               [0.48903337121009827, -0.9960322976112366, 1.5042977333068848, 1.990891456604004,
                                -0.23183731734752655, -0.015002249740064144],
                               [1.0102410283604415, -1.9888312980778302, 0.31304664906358515, 0.6737211911898228]),
    "sgd_groups": (lambda p: SGD([{"params": [p[0]]}, {"params": [p[1]], "lr": 0.01, "momentum": 0.5}], lr=0.1,
                                 momentum=0.9),
                   [0.542110025882721, -0.9590200185775757, 1.3345298767089844, 1.820889949798584,
                    -0.33454999327659607, 0.11154000461101532],
                   [0.98875, -1.99295, 0.2869, 0.7111999999999999]),
    "adam_groups": (lambda p: Adam([{"params": [p[0]], "betas": (0.5, 0.6)},
                                    {"params": [p[1]], "lr": 0.1, "amsgrad": True}], lr=0.01),
                    [0.5020818710327148, -0.9894168376922607, 1.4679675102233887, 1.9731578826904297,
                     -0.2589242160320282, 0.007553262636065483],
                    [0.7468916788250524, -1.8119315062101464, 0.1235467100812693, 0.8594825160134839]),
}


def _params():
    a = Parameter(torch.tensor(A0, dtype=torch.float32).view(2, 3))
    b = Parameter(f64(B0))
    return a, b


def _run(opt, a, b, steps):
    for t in steps:
        a.grad = torch.tensor(GA[t], dtype=torch.float32).view(2, 3)
        b.grad = None if GB[t] is None else f64(GB[t])
        opt.step()


@pytest.mark.parametrize("case", sorted(PYTORCH))
def test_optimizers_match_pytorch(case):
    build, want_a, want_b = PYTORCH[case]
    a, b = _params()
    opt = build([a, b])
    _run(opt, a, b, range(4))
    assert a.dtype == torch.float32 and b.dtype == torch.float64
    np.testing.assert_allclose(a.detach().numpy().reshape(-1), want_a, rtol=0, atol=2e-7)
    np.testing.assert_allclose(b.detach().numpy(), want_b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", ["sgd_momentum", "adam_amsgrad_wd", "adamw_default", "adam_groups"])
def test_state_dict_round_trip_continues_identically(case):
    """Two steps, save, load into a fresh optimizer over fresh parameters with the same values,
    two more steps: PyTorch's final values."""
    build, want_a, want_b = PYTORCH[case]
    a, b = _params()
    opt = build([a, b])
    _run(opt, a, b, range(2))
    saved = opt.state_dict()
    a2, b2 = _params()
    with torch.no_grad():
        a2.copy_(a)
        b2.copy_(b)
    opt2 = build([a2, b2])
    opt2.load_state_dict(saved)
    _run(opt2, a2, b2, range(2, 4))
    np.testing.assert_allclose(a2.detach().numpy().reshape(-1), want_a, rtol=0, atol=2e-7)
    np.testing.assert_allclose(b2.detach().numpy(), want_b, rtol=0, atol=1e-12)


def test_sgd_momentum_on_a_quadratic_by_hand():
    # f(x) = x^2 / 2 from x0 = 1: g = x; b1 = g; b_t = m b + g; x -= lr b.
    x = Parameter(f64([1.0]))
    opt = SGD([x], lr=0.1, momentum=0.9)
    xs, buf, want = [], None, 1.0
    for _ in range(5):
        opt.zero_grad()
        (x * x / 2).sum().backward()
        opt.step()
        buf = want if buf is None else 0.9 * buf + want
        want = want - 0.1 * buf
        xs.append(want)
        assert x.item() == pytest.approx(want, abs=1e-15)
    # The hand-unrolled first three values.
    assert xs[:3] == pytest.approx([0.9, 0.9 - 0.1 * (0.9 * 1 + 0.9), 0.72 - 0.1 * (0.9 * 1.8 + 0.72)])


def test_adam_first_steps_by_the_formula():
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
    p = Parameter(f64([1.0, -2.0]))
    opt = Adam([p], lr=lr)
    grads = [[0.5, -1.0], [0.25, 3.0], [-1.0, 0.5]]
    x = np.array([1.0, -2.0])
    m = np.zeros(2)
    v = np.zeros(2)
    for t, g in enumerate(grads, 1):
        g = np.array(g)
        p.grad = f64(g)
        opt.step()
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        x = x - lr / (1 - b1 ** t) * m / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
        np.testing.assert_allclose(p.detach().numpy(), x, rtol=1e-12)
    assert opt.state[p]["step"].item() == 3.0


def test_adamw_decays_the_weights_before_the_update():
    p = Parameter(f64([2.0]))
    opt = AdamW([p], lr=0.1, weight_decay=0.5)
    p.grad = f64([0.0])
    opt.step()
    # A zero gradient leaves m = v = 0: only the decay p *= 1 - lr * wd acts.
    assert p.item() == pytest.approx(2.0 * (1 - 0.1 * 0.5), abs=1e-15)


def test_param_groups_defaults_and_errors():
    a, b = _params()
    opt = SGD([{"params": a}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[0]["params"][0] is a
    assert set(opt.param_groups[0]) == {"params", "lr", "momentum", "dampening", "weight_decay", "nesterov",
                                        "maximize", "foreach", "differentiable", "fused"}
    assert opt.defaults["momentum"] == 0.9
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        SGD([], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable"):
        SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        SGD([a], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0: 1.0"):
        Adam([a], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        SGD([a * 2], lr=0.1)
    c = Parameter(torch.zeros(2))
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.0


def test_state_dict_format_is_pytorchs():
    a, b = _params()
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 0.01}], lr=0.1, momentum=0.9)
    _run(opt, a, b, range(1))
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.01
    assert sorted(sd["state"]) == [0, 1]
    assert set(sd["state"][0]) == {"momentum_buffer"}
    # The first momentum buffer is the gradient itself.
    np.testing.assert_allclose(sd["state"][0]["momentum_buffer"].numpy().reshape(-1), GA[0], rtol=1e-7)
    opt2 = SGD([{"params": [a]}], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        opt2.load_state_dict(sd)
    adam = Adam([a])
    a.grad = torch.ones(2, 3)
    adam.step()
    st = adam.state_dict()["state"][0]
    assert set(st) == {"step", "exp_avg", "exp_avg_sq"} and st["step"].dtype == torch.float32


def test_zero_grad_and_closure():
    a, b = _params()
    opt = SGD([a, b], lr=0.1)
    a.grad = torch.ones(2, 3)
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and a.grad.abs().sum().item() == 0
    opt.zero_grad()
    assert a.grad is None

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    before = a.detach().clone()
    loss = opt.step(closure)
    assert loss.item() == pytest.approx(sum(v * v for v in A0), rel=1e-6)
    np.testing.assert_allclose(a.detach().numpy(), before.numpy() * (1 - 0.2), rtol=1e-6)


# ---- LR schedulers: [get_last_lr()] after construction and after each opt.step(); sched.step() ----
# (PyTorch 2.15's sequences, nn/tests/nn/optim.rs)

def _sgd_groups(lrs, momentum=0.0):
    return SGD([{"params": [Parameter(torch.zeros(1))], "lr": lr} for lr in lrs], lr=lrs[0], momentum=momentum)


def _sequence(opt, sched, steps):
    out = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
        assert out[-1] == [g["lr"] for g in opt.param_groups]
    return [list(col) for col in zip(*out)]


def _close(got, want):
    assert len(got) == len(want)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


def test_lambda_lr():
    opt = _sgd_groups([0.1, 0.05])
    s = LambdaLR(opt, [lambda e: 0.95 ** e, lambda e: 1 / (e + 1)])
    g0, g1 = _sequence(opt, s, 6)
    _close(g0, [0.1, 0.095, 0.09025, 0.0857375, 0.081450625, 0.07737809374999999, 0.07350918906249998])
    _close(g1, [0.05, 0.025, 0.016666666666666666, 0.0125, 0.010000000000000002, 0.008333333333333333,
                0.007142857142857143])
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        LambdaLR(_sgd_groups([0.1, 0.05]), [lambda e: 1.0])


def test_step_lr():
    opt = _sgd_groups([0.1, 0.05])
    s = StepLR(opt, step_size=3, gamma=0.5)
    assert opt.param_groups[0]["initial_lr"] == 0.1
    g0, g1 = _sequence(opt, s, 10)
    _close(g0, [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125])
    _close(g1, [0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625])


def test_multi_step_lr():
    opt = _sgd_groups([0.1])
    (g0,) = _sequence(opt, MultiStepLR(opt, milestones=[2, 5, 5, 8], gamma=0.1), 10)
    _close(g0, [0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.00010000000000000005,
                0.00010000000000000005, 0.00010000000000000005, 1.0000000000000006e-05, 1.0000000000000006e-05,
                1.0000000000000006e-05])


def test_exponential_lr():
    opt = _sgd_groups([0.1])
    (g0,) = _sequence(opt, ExponentialLR(opt, gamma=0.9), 8)
    _close(g0, [0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002, 0.06561000000000002,
                0.05904900000000002, 0.05314410000000002, 0.04782969000000002, 0.043046721000000024])


def test_cosine_annealing_lr():
    opt = _sgd_groups([0.1, 0.02])
    g0, g1 = _sequence(opt, CosineAnnealingLR(opt, T_max=5, eta_min=0.001), 15)
    _close(g0, [0.1, 0.0905463412215599, 0.06579634122155989, 0.035203658778440096, 0.010453658778440105, 0.001,
                0.010453658778440102, 0.03520365877844012, 0.06579634122155993, 0.09054634122155995,
                0.10000000000000005, 0.09054634122155998, 0.06579634122155995, 0.03520365877844014,
                0.010453658778440116, 0.001])
    _close(g1, [0.02, 0.018185661446562, 0.013435661446562, 0.007564338553437999, 0.002814338553438, 0.001,
                0.002814338553437999, 0.007564338553438001, 0.013435661446562004, 0.01818566144656201,
                0.020000000000000007, 0.018185661446562015, 0.013435661446562008, 0.007564338553438004,
                0.0028143385534380016, 0.001])


def test_one_cycle_lr_cycles_lr_and_momentum():
    opt = _sgd_groups([0.1], momentum=0.9)
    s = OneCycleLR(opt, max_lr=0.1, total_steps=10)
    assert opt.param_groups[0]["initial_lr"] == 0.1 / 25.0
    lrs, momentum = [s.get_last_lr()[0]], [opt.param_groups[0]["momentum"]]
    for _ in range(9):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
        momentum.append(opt.param_groups[0]["momentum"])
    _close(lrs, [0.0040000000000000036, 0.052000000000000005, 0.1, 0.09504846320134738, 0.0811745653949763,
                 0.06112620219362893, 0.03887419780637107, 0.0188258346050237, 0.004951936798652629, 4e-07])
    _close(momentum, [0.95, 0.8999999999999999, 0.85, 0.854951556604879, 0.8688255099070633, 0.8888739533021842,
                      0.9111260466978157, 0.9311744900929366, 0.945048443395121, 0.95])
    s.step()  # step 10 == total_steps is still allowed
    with pytest.raises(ValueError, match="Tried to step 11 times. The specified number of total steps is 10"):
        s.step()


def test_one_cycle_lr_three_phase_linear_with_adam_beta1():
    opt = Adam([{"params": [Parameter(torch.zeros(1))], "lr": 0.001},
                {"params": [Parameter(torch.zeros(1))], "lr": 0.001}])
    s = OneCycleLR(opt, max_lr=[0.01, 0.02], epochs=2, steps_per_epoch=4, pct_start=0.25, anneal_strategy="linear",
                   three_phase=True, div_factor=10.0, final_div_factor=100.0, base_momentum=0.8, max_momentum=0.9)
    assert s.total_steps == 8
    lrs, beta1 = [s.get_last_lr()], [opt.param_groups[1]["betas"][0]]
    for _ in range(8):
        s.step()
        lrs.append(s.get_last_lr())
        beta1.append(opt.param_groups[1]["betas"][0])
        assert opt.param_groups[1]["betas"][1] == 0.999
    _close([r[0] for r in lrs], [0.001, 0.010000000000000002, 0.0009999999999999992, 0.000802, 0.0006039999999999999,
                                 0.000406, 0.00020799999999999996, 1.0000000000000026e-05, -0.00018800000000000002])
    _close(beta1, [0.9, 0.8, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9])


def test_one_cycle_lr_errors():
    opt = _sgd_groups([0.1])
    with pytest.raises(ValueError, match="Expected positive integer total_steps, but got 0"):
        OneCycleLR(opt, 0.1, total_steps=0)
    with pytest.raises(ValueError, match=r"You must define either total_steps OR \(epochs AND steps_per_epoch\)"):
        OneCycleLR(opt, 0.1)
    with pytest.raises(ValueError, match="Expected float between 0 and 1 pct_start, but got 1.5"):
        OneCycleLR(opt, 0.1, total_steps=10, pct_start=1.5)
    with pytest.raises(ValueError, match="max_lr must have the same length as optimizer.param_groups. max_lr has 3 "
                                         "values, param_groups has 1."):
        OneCycleLR(opt, [0.1, 0.2, 0.3], total_steps=10)


def test_scheduler_state_dict_resumes():
    opt = _sgd_groups([0.1])
    s = StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        opt.step()
        s.step()
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 3 and sd["base_lrs"] == [0.1]
    s2 = StepLR(_sgd_groups([0.1]), step_size=7)
    s2.load_state_dict(sd)
    assert s2.last_epoch == 3 and s2.step_size == 2 and s2.get_last_lr() == [0.05]


PYTORCH_MORE = {
    "rmsprop_default": (lambda p: RMSprop(p, lr=0.01),
                        [0.4853813648223877, -0.9363915920257568, 1.3200794458389282, 1.8646975755691528,
                         -0.30601632595062256, 0.0415792353451252],
                        [0.8720309684768223, -1.9236646695728745, 0.22790046790871982, 0.7598893042753486]),
    "rmsprop_momentum": (lambda p: RMSprop(p, lr=0.01, momentum=0.9),
                         [0.3980754613876343, -0.7813472151756287, 0.9835121631622314, 1.5591620206832886,
                          -0.4567635655403137, 0.20194785296916962],
                         [0.6674608358410326, -1.7704006272846802, 0.08288124462225152, 0.8973191172091335]),
    "rmsprop_centered_wd": (lambda p: RMSprop(p, lr=0.01, centered=True, weight_decay=0.1),
                            [0.4456634819507599, -0.8407568335533142, 1.2782443761825562, 1.7985589504241943,
                             -0.2924620509147644, 0.039450325071811676],
                            [0.8499892094544786, -1.8629392035222054, 0.2228303882409562, 0.7442936252865001]),
    "rmsprop_all": (lambda p: RMSprop(p, lr=0.005, centered=True, momentum=0.5, alpha=0.9, maximize=True, eps=1e-4),
                    [0.5063566565513611, -1.0187205076217651, 1.5534030199050903, 2.0436418056488037,
                     -0.23206371068954468, -0.01521755289286375],
                    [1.0374765797886243, -2.0234243814041366, 0.32204501777056405, 0.6806550034270887]),
    "adagrad_default": (lambda p: Adagrad(p, lr=0.1),
                        [0.4854019582271576, -0.936381459236145, 1.32058584690094, 1.8648450374603271,
                         -0.30604541301727295, 0.041909828782081604],
                        [0.8721059356601973, -1.923530922537552, 0.22777700621271543, 0.7600765822120452]),
    "adagrad_all": (lambda p: Adagrad(p, lr=0.1, lr_decay=0.1, weight_decay=0.05, initial_accumulator_value=0.5,
                                      eps=1e-6),
                    [0.5067050457000732, -0.9608538746833801, 1.402618408203125, 1.9008147716522217,
                     -0.2752229869365692, 0.028753455728292465],
                    [0.914829932797195, -1.9287415253096498, 0.23719844324937278, 0.7449375762229389]),
    "adagrad_maximize": (lambda p: Adagrad(p, lr=0.1, maximize=True),
                         [0.5145980715751648, -1.0636184215545654, 1.67941415309906, 2.135154962539673,
                          -0.19395458698272705, -0.041909828782081604],
                         [1.127894064339803, -2.0764690774624475, 0.37222299378728463, 0.6399234177879547]),
}


@pytest.mark.parametrize("case", sorted(PYTORCH_MORE))
def test_rmsprop_and_adagrad_match_pytorch(case):
    build, want_a, want_b = PYTORCH_MORE[case]
    a, b = _params()
    _run(build([a, b]), a, b, range(4))
    np.testing.assert_allclose(a.detach().numpy().reshape(-1), want_a, rtol=0, atol=2e-7)
    np.testing.assert_allclose(b.detach().numpy(), want_b, rtol=0, atol=1e-12)


def test_linear_lr():
    opt = _sgd_groups([0.1])
    (g0,) = _sequence(opt, LinearLR(opt), 8)
    _close(g0, [0.03333333333333333, 0.04666666666666667, 0.060000000000000005, 0.07333333333333335,
                0.08666666666666668, 0.1, 0.1, 0.1, 0.1])
    opt = _sgd_groups([0.1])
    (g0,) = _sequence(opt, LinearLR(opt, start_factor=0.5, end_factor=0.1, total_iters=4), 7)
    _close(g0, [0.05, 0.04000000000000001, 0.030000000000000006, 0.020000000000000004, 0.01, 0.01, 0.01, 0.01])
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater than 0 and less or "
                                         "equal to 1."):
        LinearLR(opt, start_factor=0.0)


def test_sequential_lr():
    opt = _sgd_groups([0.1, 0.05])
    s = SequentialLR(opt, [LinearLR(opt, start_factor=0.1, total_iters=3), ExponentialLR(opt, gamma=0.9)],
                     milestones=[3])
    g0, g1 = _sequence(opt, s, 8)
    _close(g0, [0.010000000000000002, 0.04, 0.07, 0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002,
                0.06561000000000002, 0.05904900000000002])
    _close(g1, [0.005000000000000001, 0.02, 0.035, 0.05, 0.045000000000000005, 0.04050000000000001,
                0.03645000000000001, 0.03280500000000001, 0.02952450000000001])
    opt = _sgd_groups([0.1])
    s = SequentialLR(opt, [ExponentialLR(opt, 0.5), CosineAnnealingLR(opt, T_max=4, eta_min=0.01), StepLR(opt, 2, 0.1)],
                     milestones=[2, 6])
    (g0,) = _sequence(opt, s, 10)
    _close(g0, [0.1, 0.05, 0.1, 0.08681980515339464, 0.05500000000000001, 0.023180194846605363, 0.1, 0.1,
                0.010000000000000002, 0.010000000000000002, 0.0010000000000000002])
    with pytest.raises(ValueError, match="Sequential Schedulers expects number of schedulers provided to be one more "
                                         "than the number of milestone points"):
        SequentialLR(opt, [ExponentialLR(opt, 0.5)], milestones=[2])


def test_reduce_lr_on_plateau():
    opt = _sgd_groups([0.1, 0.05])
    s = ReduceLROnPlateau(opt, patience=2, cooldown=1, min_lr=[0.001, 0.01], factor=0.5)
    got = [s.get_last_lr()]
    for m in [1.0, 0.9, 0.95, 0.95, 0.95, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]:
        s.step(m)
        got.append(s.get_last_lr())
    _close([g[0] for g in got], [0.1, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025, 0.0125,
                                 0.0125])
    _close([g[1] for g in got], [0.05, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125,
                                 0.0125, 0.01, 0.01])
    assert s.last_epoch == 14
    opt = _sgd_groups([0.1])
    s = ReduceLROnPlateau(opt, mode="max", threshold_mode="abs", threshold=0.1, patience=1)
    got = [s.get_last_lr()[0]]
    for m in [0.5, 0.55, 0.65, 0.7, 0.74, 0.8, 0.85, 0.85]:
        s.step(m)
        got.append(s.get_last_lr()[0])
    _close(got, [0.1, 0.1, 0.1, 0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002,
                 0.0010000000000000002])
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        ReduceLROnPlateau(opt, min_lr=[0.1, 0.2])


def test_named_parameters_are_accepted_as_pytorch_2_6_does():
    model = torch.nn.Linear(2, 1)
    opt = SGD(model.named_parameters(), lr=0.1)
    group = opt.param_groups[0]
    assert group["param_names"] == ["weight", "bias"]
    assert group["params"][0] is model.weight and group["params"][1] is model.bias
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


# ---- more schedulers, against their documented closed forms ---------------------------------------

def test_constant_multiplicative_and_polynomial_lr():
    from torchrs.optim.lr_scheduler import ConstantLR, MultiplicativeLR, PolynomialLR

    opt = _sgd_groups([0.1])
    (g0,) = _sequence(opt, ConstantLR(opt, factor=0.5, total_iters=3), 5)
    _close(g0, [0.05, 0.05, 0.05, 0.1, 0.1, 0.1])
    opt = _sgd_groups([0.1])
    (g0,) = _sequence(opt, MultiplicativeLR(opt, lambda e: 0.5 if e % 2 else 1.0), 4)
    _close(g0, [0.1, 0.05, 0.05, 0.025, 0.025])
    opt = _sgd_groups([0.1])
    (g0,) = _sequence(opt, PolynomialLR(opt, total_iters=4, power=2.0), 6)
    _close(g0, [0.1 * (1 - min(t, 4) / 4) ** 2 for t in range(7)])


def test_cosine_annealing_warm_restarts():
    from torchrs.optim.lr_scheduler import CosineAnnealingWarmRestarts

    opt = _sgd_groups([0.1])
    (g0,) = _sequence(opt, CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.01), 10)
    # Cycles of 3 then 6 epochs: t_cur = 0,1,2 | 0..5 | 0,1.
    t_cur = [0, 1, 2, 0, 1, 2, 3, 4, 5, 0, 1]
    t_i = [3, 3, 3, 6, 6, 6, 6, 6, 6, 12, 12]
    _close(g0, [0.01 + 0.09 * (1 + math.cos(math.pi * c / i)) / 2 for c, i in zip(t_cur, t_i)])
    s = CosineAnnealingWarmRestarts(_sgd_groups([0.1]), T_0=4)
    s.step(5.5)  # fractional epochs: t_cur = 5.5 mod 4
    assert s.get_last_lr()[0] == pytest.approx(0.1 * (1 + math.cos(math.pi * 1.5 / 4)) / 2, abs=1e-15)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        CosineAnnealingWarmRestarts(_sgd_groups([0.1]), T_0=0)


def test_chained_scheduler_composes():
    from torchrs.optim.lr_scheduler import ChainedScheduler, ConstantLR

    opt = _sgd_groups([1.0])
    s = ChainedScheduler([ConstantLR(opt, factor=0.1, total_iters=2), ExponentialLR(opt, gamma=0.9)])
    (g0,) = _sequence(opt, s, 4)
    _close(g0, [0.1, 0.09, 0.81, 0.729, 0.6561])
