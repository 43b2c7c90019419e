"""Expected values of the PowerSGD DDP hook (distributed/tests/ranks/mod.rs, `powersgd`),
computed by PyTorch: two Gloo ranks train a small MLP under DDP with PyTorch's
`powerSGD_hook`, and rank 0 records every step's averaged gradients and the final weights.

    python distributed/tests/data/powersgd_gen.py   # writes powersgd.json beside this file

The inputs, targets and initial weights are closed forms the Rust test computes the same way.
"""

import json
import math
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

STEPS = 6
CASES = [
    # name, matrix_approximation_rank, start_powerSGD_iter, use_error_feedback, warm_start
    ("rank1", 1, 2, True, True),
    # Rank 3 orthogonalises with a QR decomposition (ranks 1 and 2 with Gram-Schmidt); only
    # the first layer's 16x32 weight is worth compressing at rank 3.
    ("rank3_cold", 3, 3, True, False),
    ("rank2_no_feedback", 2, 2, False, True),
]


def model():
    m = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
    # Closed-form weights (the Rust test builds the same), not PyTorch's random init.
    with torch.no_grad():
        for k, p in enumerate(m.parameters()):
            n = p.numel()
            v = [math.sin(0.37 * i + 1.3 * k + 0.5) * 0.4 for i in range(n)]
            p.copy_(torch.tensor(v, dtype=torch.float32).view(p.shape))
    return m


def batch(rank, step):
    x = [math.cos(0.11 * i + 0.7 * step + 1.9 * rank) for i in range(4 * 32)]
    y = [math.sin(0.23 * i - 0.3 * step + 0.8 * rank) for i in range(4 * 8)]
    return torch.tensor(x, dtype=torch.float32).view(4, 32), torch.tensor(y, dtype=torch.float32).view(4, 8)


def floats(t):
    # 9 significant digits hold a float32 exactly.
    return [float(f"{v:.9g}") for v in t.flatten().tolist()]


def run(rank, port, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    results = {}
    for name, r, start, feedback, warm in CASES:
        ddp = torch.nn.parallel.DistributedDataParallel(model())
        state = powersgd.PowerSGDState(
            process_group=None,
            matrix_approximation_rank=r,
            start_powerSGD_iter=start,
            use_error_feedback=feedback,
            warm_start=warm,
            random_seed=0,
        )
        ddp.register_comm_hook(state, powersgd.powerSGD_hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        grads = []
        for step in range(STEPS):
            opt.zero_grad()
            x, y = batch(rank, step)
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            grads.append([floats(p.grad) for p in ddp.parameters()])
            opt.step()
        results[name] = {
            "rank": r,
            "start_powerSGD_iter": start,
            "use_error_feedback": feedback,
            "warm_start": warm,
            "grads": grads,
            "final": [floats(p.detach()) for p in ddp.parameters()],
        }
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"generator": f"torch {torch.__version__}", "steps": STEPS, "cases": results}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "powersgd.json")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    mp.spawn(run, args=(port, out), nprocs=2, join=True)
    print(f"wrote {out}", file=sys.stderr)
