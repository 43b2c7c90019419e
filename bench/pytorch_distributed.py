"""The W8 benchmarks in PyTorch (BENCHMARKS.md), for `cargo xtask bench W8`:

    python3 -m torch.distributed.run --standalone --nproc-per-node 2 bench/pytorch_distributed.py [--time S]

The twin of distributed/examples/w8.rs, on the gloo backend: all_reduce (sum) of 1 MB and 64 MB
of f32, and a DistributedDataParallel step of the MLP 784-512-512-10 (ReLU, batch 128 per rank,
cross entropy, SGD momentum 0.9), and the same step with the MLP under FullyShardedDataParallel
(FULL_SHARD, a unit per Linear, BACKWARD_PRE prefetch: `W8.fsdp_step`). One operator thread per
rank. Rank 0 prints one JSON line per
workload: {"id": ..., "median_s": ..., "iters": ...}, with the iteration count picked the same
way as ours (two warm-up runs estimate the time; rank 0's count is broadcast).
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def iterations(budget, estimate):
    return max(5, min(2000, int(budget / max(estimate, 1e-9))))


def timed(budget, f):
    t0 = time.perf_counter()
    f()
    f()
    k = torch.tensor([iterations(budget, (time.perf_counter() - t0) / 2)], dtype=torch.int64)
    dist.broadcast(k, 0)
    times = []
    for _ in range(int(k.item())):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return times


def report(rank, wid, times):
    if rank == 0:
        print(json.dumps({"id": wid, "median_s": statistics.median(times), "iters": len(times)}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--time", type=float, default=1.0)
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    for wid, n in (("W8.allreduce_1M", 1 << 18), ("W8.allreduce_64M", 1 << 24)):
        t = torch.ones(n, dtype=torch.float32)
        report(rank, wid, timed(args.time, lambda: dist.all_reduce(t, op=dist.ReduceOp.SUM)))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(128, 784)
    y = torch.randint(10, (128,))
    loss_fn = nn.CrossEntropyLoss()

    def train_step(m, o):
        def step():
            o.zero_grad(set_to_none=True)
            loss = loss_fn(m(x), y)
            loss.backward()
            o.step()

        return step

    report(rank, "W8.ddp_mlp_step", timed(args.time, train_step(model, opt)))

    from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    torch.manual_seed(0)
    fsdp = FullyShardedDataParallel(
        nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)),
        sharding_strategy=ShardingStrategy.FULL_SHARD,
        auto_wrap_policy=ModuleWrapPolicy({nn.Linear}),
        device_id=torch.device("cpu"),
    )
    fsdp_opt = torch.optim.SGD(fsdp.parameters(), lr=0.01, momentum=0.9)
    report(rank, "W8.fsdp_step", timed(args.time, train_step(fsdp, fsdp_opt)))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
