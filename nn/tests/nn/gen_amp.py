#!/usr/bin/env python3
"""Writes amp_expected.txt: GradScaler trajectories computed by PyTorch, for amp.rs.

    pip install torch
    python3 nn/tests/nn/gen_amp.py

Two runs of SGD (momentum 0.9) on a [3, 2] weight with a GradScaler, inputs in closed form so
the Rust test builds the same ones: `x_t[i, j] = sin(0.37 * (3 i + j) + t)` for a [4, 3] input,
loss `mean((x_t @ w)^2) * loss_scale`.
- "inf": init_scale 1024, growth_interval 2; step 2's input holds an inf, so that step is
  skipped and the scale backs off; the scale grows after every 2 clean steps.
- "overflow": init_scale 2^125 and loss_scale 100, so the scaled gradients overflow float32 by
  themselves until the scale has backed off enough (backoff 0.25, growth_interval 3).
Per step: whether the optimizer stepped, the scale and growth tracker after update(), and the
weight after the step; at the end, the scaler's state_dict.
"""
import math
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "amp_expected.txt")


def inputs(t, inf_step):
    x = torch.tensor([[math.sin(0.37 * (3 * i + j) + t) for j in range(3)] for i in range(4)], dtype=torch.float32)
    if t == inf_step:
        x[0, 0] = float("inf")
    return x


def run(name, init_scale, backoff, interval, loss_scale, inf_step, steps, lines):
    w = torch.tensor([[0.1, -0.2], [0.3, 0.05], [-0.15, 0.25]], dtype=torch.float32, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=2.0, backoff_factor=backoff,
                                  growth_interval=interval)
    for t in range(steps):
        opt.zero_grad()
        loss = (inputs(t, inf_step) @ w).pow(2).mean() * loss_scale
        scaler.scale(loss).backward()
        before = w.detach().clone()
        scaler.step(opt)
        stepped = not torch.equal(before, w.detach())
        scaler.update()
        lines.append(f"// {name} step {t} [4]")
        lines.append(repr([float(stepped), scaler.get_scale(), float(scaler._get_growth_tracker()), float(loss.item())]))
        lines.append(f"// {name} weight {t} [3, 2]")
        lines.append(repr([float(v) for v in w.detach().reshape(-1)]))
    sd = scaler.state_dict()
    lines.append(f"// {name} state_dict [5]")
    lines.append(repr([float(sd["scale"]), sd["growth_factor"], sd["backoff_factor"], float(sd["growth_interval"]),
                       float(sd["_growth_tracker"])]))


def main():
    lines = [f"// written by gen_amp.py with torch {torch.__version__} []", "[]"]
    run("inf", 1024.0, 0.5, 2, 1.0, 2, 7, lines)
    run("overflow", 2.0 ** 125, 0.25, 3, 100.0, -1, 8, lines)
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
