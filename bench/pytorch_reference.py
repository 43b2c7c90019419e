#!/usr/bin/env python3
"""PyTorch reference for `cargo xtask bench`.

Runs the same workloads as xtask/src/bench/workloads.rs (same ids, shapes, dtypes and
operations) with the same timing method (Note [Bench timing method] in
xtask/src/bench/stats.rs) and prints one JSON line per workload:

    {"workload": "W1.add1", "threads": 1, "median_s": 1.1e-06}

Usage: python3 bench/pytorch_reference.py [--threads N] [--filter SUBSTR] [--only ID,ID]
                                          [--time SECONDS]
       python3 bench/pytorch_reference.py --serve

With --serve it first prints {"ready": VERSION} once `import torch` is done, then reads one
request per line from stdin, `THREADS ID SECONDS [DEVICE]`, and answers each with one JSON line (as
above, or {"error": ...}). `cargo xtask bench` keeps one such process
and asks it for each workload right after measuring its own, so that both sides of a row are
measured seconds apart (Note [Interleaved reference] in xtask/src/bench.rs).

Adding a workload: one function returning the per-iteration callable (inputs built outside
it, untimed), plus one entry in WORKLOADS with the id used on the Rust side.
"""

import argparse
import importlib
import json
import math
import os
import sys
import time
import warnings

# BENCH_TORCH_MODULE=torchrs runs the same Python with this repository's package in place of
# PyTorch (`import torchrs as torch`): the ours side of the P rows (Note [Python rows] in
# xtask/src/bench.rs).
torch = importlib.import_module(os.environ.get("BENCH_TORCH_MODULE", "torch"))

# Note [Bench timing method] -- keep in sync with xtask/src/bench/stats.rs.
WARMUP_S = 0.2
MIN_SAMPLE_S = 1e-3
MIN_SAMPLES = 5
MAX_SAMPLES = 1000


def percentile(sorted_xs, q):
    """The q-quantile of sorted values, interpolating linearly (numpy's default)."""
    pos = min(max(q, 0.0), 1.0) * (len(sorted_xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def batch_size(estimate_s, min_sample_s=MIN_SAMPLE_S):
    if min_sample_s <= 0:
        return 1
    if estimate_s <= 0:
        return 1_000_000
    return int(min(max(math.ceil(min_sample_s / estimate_s), 1), 1e9))


def measure(fn, budget_s):
    """Median seconds per call of fn, with p10/p90 and min (see the Rust side)."""
    clock = time.perf_counter_ns
    start = clock()
    calls = 0
    while True:
        fn()
        calls += 1
        if clock() - start >= WARMUP_S * 1e9:
            break
    k = batch_size((clock() - start) * 1e-9 / calls)
    loop = range(k)

    samples = []
    spent = 0.0
    while len(samples) < max(MAX_SAMPLES, 1):
        t0 = clock()
        for _ in loop:
            fn()
        dt = (clock() - t0) * 1e-9
        spent += dt
        samples.append(dt / k)
        if len(samples) >= MIN_SAMPLES and spent >= budget_s:
            break
    samples.sort()
    return {
        "median_s": percentile(samples, 0.5),
        "p10_s": percentile(samples, 0.1),
        "p90_s": percentile(samples, 0.9),
        "min_s": samples[0],
        "samples": len(samples),
        "batch": k,
    }


# ---- workloads (same order and ids as xtask/src/bench/workloads.rs) ------------------------


def w1_add1():
    # Per-op overhead from Python: `a + b` of two 1-element f32 tensors.
    a = torch.tensor([1.0], dtype=torch.float32)
    b = torch.tensor([1.0], dtype=torch.float32)

    def run():
        return a + b

    return run


def w1_add1_grad():
    # `a + b` of two 1-element f32 tensors that require grad (the node is recorded).
    a = torch.tensor([1.0], dtype=torch.float32, requires_grad=True)
    b = torch.tensor([1.0], dtype=torch.float32, requires_grad=True)

    def run():
        return a + b

    return run


def w1_chain100():
    # 50 x (mul, add) on 1-element f32 tensors, sum, backward; .grad reset each time.
    x = torch.tensor([1.0], dtype=torch.float32, requires_grad=True)
    w = torch.tensor([0.999], dtype=torch.float32)
    c = torch.tensor([0.001], dtype=torch.float32)

    def run():
        y = x
        for _ in range(50):
            y = y * w + c
        y.sum().backward()
        x.grad = None

    return run


def binary(make_a, make_b, op):
    a, b = make_a(), make_b()

    def run():
        return op(a, b)

    return run


def unary(make_a, op):
    a = make_a()

    def run():
        return op(a)

    return run


# The device the next workload is built on (a request's DEVICE; the CPU by default).
DEVICE = "cpu"


def randn(*size):
    # Generated on the CPU and moved, as the Rust side does (Note [Device workloads]).
    return lambda: torch.randn(*size, dtype=torch.float32).to(DEVICE)


def stop_profiler(run):
    # A profiled row's profiler stops when its measurement ends (Note [Profiled rows]).
    prof = getattr(run, "profiler", None)
    if prof is not None:
        prof.__exit__(None, None, None)


def on_device(wid, setup):
    """The workload's callable, synchronising the device after every call on a GPU, so a
    call times the work and not only its launch (as the Rust side does). The C rows time the
    host's launch path and are not synchronised (Note [Launch overhead row])."""
    run = setup()
    if DEVICE == "cpu" or wid.startswith("C1."):
        return run

    def synced():
        out = run()
        torch.cuda.synchronize()
        return out

    return synced


def matmul_square(n):
    def setup():
        a = torch.randn(n, n, dtype=torch.float32).to(DEVICE)
        b = torch.randn(n, n, dtype=torch.float32).to(DEVICE)

        def run():
            return torch.matmul(a, b)

        return run

    return setup


def conv(input_shape, weight_shape, padding):
    def setup():
        x = torch.randn(*input_shape, dtype=torch.float32).to(DEVICE)
        w = torch.randn(*weight_shape, dtype=torch.float32).to(DEVICE)
        b = torch.randn(weight_shape[0], dtype=torch.float32).to(DEVICE)

        def run():
            return torch.nn.functional.conv2d(x, w, b, stride=1, padding=padding)

        return run

    return setup


def train_step(make_net, input_shape, batch):
    def setup():
        net = make_net().to(DEVICE)
        x = torch.randn(*input_shape, dtype=torch.float32).to(DEVICE)
        y = torch.randint(10, (batch,)).to(DEVICE)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

        def run():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()

        return run

    return setup


def train_step_profiled(make_net, input_shape, batch):
    # Note [Profiled rows] (xtask/src/bench/workloads.rs): the step under the profiler with
    # shapes recorded, a cycle ending (and aggregated) every 10 steps.
    def setup():
        run = train_step(make_net, input_shape, batch)()
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            record_shapes=True,
            schedule=torch.profiler.schedule(wait=0, warmup=0, active=10),
            on_trace_ready=lambda p: p.key_averages(),
        )
        prof.__enter__()

        def step():
            run()
            prof.step()

        step.profiler = prof
        return step

    return setup


def mlp():
    nn = torch.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def cnn():
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10),
    )


def gelu_tanh_ops(x):
    # The tanh-approximated GELU as 8 elementwise ops (pow, mul, add, mul, tanh, add, mul, mul),
    # as xtask/src/bench/workloads.rs writes it (Note [W7 workloads] there).
    return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * torch.pow(x, 3))))


def w7_gelu_eager():
    x = torch.randn(1 << 24, dtype=torch.float32)

    def run():
        return gelu_tanh_ops(x)

    return run


# torch.compile's kernels are specialised for the thread count at compile time (Inductor's
# C++ kernels fix their OpenMP thread count), so the compiled function is kept per thread count,
# and Dynamo is reset when the count changes. Compiling takes seconds; it happens in the
# workload's setup, untimed, with a few warm-up calls.
_COMPILED = {}


def w7_gelu_fused():
    threads = torch.get_num_threads()
    if threads not in _COMPILED:
        torch._dynamo.reset()
        _COMPILED.clear()
        _COMPILED[threads] = torch.compile(gelu_tanh_ops)
    fn = _COMPILED[threads]
    x = torch.randn(1 << 24, dtype=torch.float32)
    for _ in range(3):
        fn(x)

    def run():
        return fn(x)

    return run


def chain100_forward(x, w, c):
    y = x
    for _ in range(50):
        y = y * w + c
    return y.sum()


def chain_inputs():
    return (
        torch.tensor([1.0], dtype=torch.float32),
        torch.tensor([0.999], dtype=torch.float32),
        torch.tensor([0.001], dtype=torch.float32),
    )


def w7_chain100_eager():
    # The forward of W1.chain100, no tensor requiring grad.
    x, w, c = chain_inputs()

    def run():
        return chain100_forward(x, w, c)

    return run


def w7_chain100_jit():
    # The same traced (w and c become constants, as in our trace), warmed up past the profiling
    # executor's first runs.
    x, w, c = chain_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "torch.jit.trace is deprecated"
        traced = torch.jit.trace(lambda t: chain100_forward(t, w, c), (x,))
    for _ in range(5):
        traced(x)

    def run():
        return traced(x)

    return run


def jit_model(name):
    # The fixtures the W7 rows of loaded models run (ours load the same files).
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jit", "tests", "jit", "models", name)


def w7_script_loop():
    # PyTorch's TorchScript interpreter on the archive ours loads, warmed past the profiling
    # executor's first runs.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        m = torch.jit.load(jit_model("w7_script_loop.pt"))
    x = torch.randn(50, 8, 32)
    with torch.no_grad():
        for _ in range(5):
            m(x)

    def run():
        with torch.no_grad():
            return m(x)

    return run


def w7_export_resnet_block():
    # ep.module() of the .pt2 ours loads.
    m = torch.export.load(jit_model("w7_resblock.pt2")).module()
    x = torch.randn(8, 32, 28, 28)
    with torch.no_grad():
        for _ in range(3):
            m(x)

    def run():
        with torch.no_grad():
            return m(x)

    return run


def w9_solve_512():
    a = torch.randn(512, 512, dtype=torch.float32)
    b = torch.randn(512, 1, dtype=torch.float32)

    def run():
        return torch.linalg.solve(a, b)

    return run


def w9_svd_256():
    a = torch.randn(256, 256, dtype=torch.float32)

    def run():
        return torch.linalg.svd(a, full_matrices=False)

    return run


def w9_fft_1m():
    z = torch.complex(torch.randn(1 << 20), torch.randn(1 << 20))

    def run():
        return torch.fft.fft(z)

    return run


def random_coo(n, nnz):
    idx = torch.randint(n, (2, nnz))
    return torch.sparse_coo_tensor(idx, torch.randn(nnz), (n, n))


def w10_spmm_coo():
    s = random_coo(100_000, 1_000_000).coalesce()
    d = torch.randn(100_000, 64)

    def run():
        return torch.sparse.mm(s, d)

    return run


def w10_spmm_csr():
    s = random_coo(100_000, 1_000_000).to_sparse_csr()
    d = torch.randn(100_000, 64)

    def run():
        return torch.mm(s, d)

    return run


def w10_coalesce_1m():
    s = random_coo(100_000, 1_000_000)

    def run():
        return torch.ops.aten._coalesce.default(s)

    return run


def w10_embedding_sparse_step():
    emb = torch.nn.EmbeddingBag(100_000, 64, mode="mean", sparse=True)
    fc1, fc2 = torch.nn.Linear(64, 32), torch.nn.Linear(32, 1)
    sparse = torch.optim.SparseAdam(emb.parameters(), lr=0.01)
    adam = torch.optim.Adam(list(fc1.parameters()) + list(fc2.parameters()), lr=0.01)
    ids = torch.randint(100_000, (32, 8))
    target = torch.randint(2, (32,)).float()

    def run():
        sparse.zero_grad()
        adam.zero_grad()
        logits = fc2(torch.relu(fc1(emb(ids)))).squeeze(1)
        torch.nn.functional.binary_cross_entropy_with_logits(logits, target).backward()
        sparse.step()
        adam.step()

    return run


WORKLOADS = {
    "W1.add1": w1_add1,
    "W1.add1_front": w1_add1,
    "W1.add1_grad": w1_add1_grad,
    "W1.chain100": w1_chain100,
    "W1.chain100_front": w1_chain100,
    "C1.add1": lambda: binary(randn(1), randn(1), lambda a, b: a + b),
    "W2.add_1M": lambda: binary(randn(1 << 20), randn(1 << 20), lambda a, b: a + b),
    "W2.add_16M": lambda: binary(randn(1 << 24), randn(1 << 24), lambda a, b: a + b),
    "W2.bcast_add": lambda: binary(randn(4096, 4096), randn(4096), lambda a, b: a + b),
    "W2.transposed_add": lambda: binary(randn(4096, 4096), randn(4096, 4096), lambda a, b: a.t() + b),
    "W2.exp_16M": lambda: unary(randn(1 << 24), torch.exp),
    "W2.tanh_16M": lambda: unary(randn(1 << 24), torch.tanh),
    "W2.gelu_16M": lambda: unary(randn(1 << 24), torch.nn.functional.gelu),
    "W4.sum_16M": lambda: unary(randn(1 << 24), lambda a: a.sum()),
    "W4.softmax": lambda: unary(randn(4096, 1024), lambda a: torch.softmax(a, -1)),
    "W4.log_softmax": lambda: unary(randn(4096, 1024), lambda a: torch.log_softmax(a, -1)),
    "W3.matmul_256": matmul_square(256),
    "W3.matmul_1024": matmul_square(1024),
    "W3.matmul_2048": matmul_square(2048),
    "W3.bmm_64x256": lambda: binary(randn(64, 256, 256), randn(64, 256, 256), torch.bmm),
    "W5.conv_large": conv((32, 64, 56, 56), (64, 64, 3, 3), 1),
    "W5.conv_small": conv((64, 1, 28, 28), (32, 1, 3, 3), 0),
    "W6.mlp_step": train_step(mlp, (128, 784), 128),
    "W6.mlp_step_front": train_step(mlp, (128, 784), 128),
    "W6.mlp_step_profiled": train_step_profiled(mlp, (128, 784), 128),
    "W6.cnn_step": train_step(cnn, (64, 1, 28, 28), 64),
    "W7.gelu_eager": w7_gelu_eager,
    "W7.gelu_fused": w7_gelu_fused,
    "W7.chain100_eager": w7_chain100_eager,
    "W7.chain100_jit": w7_chain100_jit,
    "W7.script_loop": w7_script_loop,
    "W7.export_resnet_block": w7_export_resnet_block,
    "W9.solve_512": w9_solve_512,
    "W9.svd_256": w9_svd_256,
    "W9.fft_1M": w9_fft_1m,
    "W10.spmm_coo": w10_spmm_coo,
    "W10.spmm_csr": w10_spmm_csr,
    "W10.coalesce_1M": w10_coalesce_1m,
    "W10.embedding_sparse_step": w10_embedding_sparse_step,
    # The Python front end (Note [Python rows]): the same Python code run by PyTorch and by
    # torchrs (BENCH_TORCH_MODULE=torchrs).
    "P1.add1": w1_add1,
    "P1.chain100": w1_chain100,
    "P6.mlp_step": train_step(mlp, (128, 784), 128),
}


def serve():
    """Says it is ready, then answers `THREADS ID SECONDS [DEVICE]` requests from stdin, one
    JSON line each, until EOF."""
    global DEVICE
    print(json.dumps({"ready": torch.__version__}), flush=True)
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        try:
            if len(parts) not in (3, 4):
                raise ValueError("expected THREADS ID SECONDS [DEVICE]")
            threads, wid, budget = int(parts[0]), parts[1], float(parts[2])
            DEVICE = parts[3] if len(parts) == 4 else "cpu"
            if DEVICE != "cpu" and not torch.cuda.is_available():
                raise RuntimeError(f"PyTorch has no CUDA device for {DEVICE}")
            if wid not in WORKLOADS:
                raise KeyError(f"unknown workload {wid}")
            torch.set_num_threads(threads)
            run = on_device(wid, WORKLOADS[wid])
            try:
                s = measure(run, budget)
            finally:
                stop_profiler(run)
            out = {"workload": wid, "threads": threads, "median_s": s["median_s"]}
        except Exception as e:  # noqa: BLE001 -- every failure is reported to the caller
            out = {"error": f"{type(e).__name__}: {e}", "request": line.strip()}
        print(json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--filter", default=None, help="only ids containing this string")
    p.add_argument("--only", default=None, help="comma-separated ids to run (others skipped)")
    p.add_argument("--time", type=float, default=1.0, help="seconds of measurement per workload")
    p.add_argument("--verbose", action="store_true", help="also print p10/p90/min to stderr")
    p.add_argument("--serve", action="store_true", help="answer THREADS ID SECONDS lines from stdin")
    args = p.parse_args()
    if args.serve:
        serve()
        return

    torch.set_num_threads(args.threads)
    only = set(args.only.split(",")) if args.only else None
    for wid, setup in WORKLOADS.items():
        if args.filter and args.filter not in wid:
            continue
        if only is not None and wid not in only:
            continue
        run = setup()
        try:
            s = measure(run, args.time)
        finally:
            stop_profiler(run)
        print(json.dumps({"workload": wid, "threads": args.threads, "median_s": s["median_s"]}), flush=True)
        if args.verbose:
            print(f"{wid} ({args.threads} threads): {s}", file=sys.stderr)


if __name__ == "__main__":
    main()
