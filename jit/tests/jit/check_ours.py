"""PyTorch's side of the jit tests' round trips (`write.rs`,
`pytorch_runs_our_torchscript_and_reads_our_state_dicts`): the archives in DIR were written by
us, and PyTorch must run and read them.

For every `<case>.io.pt` in DIR (`torch.save` format, written by our `nn::save_pt`: the inputs
`input0`, `input1`, ... and our outputs `output0`, ...), `<name>.ts.pt` (`<name>` is `<case>`
up to its first dot) is our `save_torchscript` archive: `torch.jit.load` runs it on the inputs
(0-dim tensors become the `int`/`float`/`bool` its forward declares; a missing input is `None`)
and its outputs, tuples flattened, must be ours within RTOL relative (plus ATOL). Where
`<name>.state.pt` is there too (our `nn::save_pt` of the state dict of a model of `gen.py`),
`torch.load(weights_only=True)` of it goes into that architecture with `strict=True`, and the
model gives the outputs, bit for bit, that it gives with PyTorch's own state dict
(`models/<name>.state.pt`); the TorchScript module's `state_dict()` has the same names.

Usage: python3 check_ours.py DIR
"""
import glob
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402  (the architectures; its main() does not run on import)

ARCHITECTURES = {
    "mlp": gen.MLP,
    "lenet": gen.LeNet,
    "resblock": gen.ResBlock,
    "gru": gen.GRUNet,
    "encoder": gen.Encoder,
}
RTOL = 1e-6
ATOL = 1e-7


def flatten(v, out):
    if isinstance(v, (tuple, list)):
        for x in v:
            flatten(x, out)
    else:
        out.append(v)
    return out


def argument(t, ty):
    kind = str(ty)
    if t is None:
        return None
    if kind.startswith("int"):
        return int(t)
    if kind.startswith("float"):
        return float(t)
    if kind.startswith("bool"):
        return bool(t)
    return t


def main():
    d = sys.argv[1]
    cases = sorted(glob.glob(os.path.join(d, "*.io.pt")))
    assert cases, f"no *.io.pt in {d}"
    worst = 0.0
    states = 0
    for io_path in cases:
        case = os.path.basename(io_path)[: -len(".io.pt")]
        name = case.split(".")[0]
        io = torch.load(io_path, weights_only=True)
        m = torch.jit.load(os.path.join(d, f"{name}.ts.pt"))
        m.eval()
        args = m.forward.schema.arguments[1:]
        inputs = [argument(io.get(f"input{i}"), a.type) for i, a in enumerate(args)]
        ours = [io[k] for k in sorted((k for k in io if k.startswith("output")), key=lambda k: int(k[6:]))]
        with torch.no_grad():
            theirs = flatten(m(*inputs), [])
        assert len(theirs) == len(ours), f"{case}: {len(theirs)} outputs, ours {len(ours)}"
        for k, (t, o) in enumerate(zip(theirs, ours)):
            if not isinstance(t, torch.Tensor):
                assert t == o.item(), f"{case} output {k}: {t} vs ours {o.item()}"
                continue
            assert t.shape == o.shape and t.dtype == o.dtype, f"{case} output {k}: {t.shape} {t.dtype} vs {o.shape} {o.dtype}"
            if t.is_floating_point():
                # |theirs - ours| <= ATOL + RTOL * |ours|, elementwise.
                rel = ((t - o).abs() - ATOL).clamp(min=0) / o.abs().clamp(min=1e-30)
                if t.numel():
                    worst = max(worst, float((t - o).abs().max()))
                assert bool((rel <= RTOL).all()), (
                    f"{case} output {k}: PyTorch and we differ by {float((t - o).abs().max())} "
                    f"(relative {float(rel.max())})"
                )
            else:
                assert torch.equal(t, o), f"{case} output {k}"
        state_path = os.path.join(d, f"{name}.state.pt")
        if os.path.exists(state_path) and "." not in case:
            state = torch.load(state_path, weights_only=True)
            assert list(m.state_dict()) == list(state), f"{name}: {list(m.state_dict())} vs {list(state)}"
            model = ARCHITECTURES[name]()
            model.load_state_dict(state, strict=True)
            ref = ARCHITECTURES[name]()
            ref.load_state_dict(torch.load(os.path.join(HERE, "models", f"{name}.state.pt"), weights_only=True), strict=True)
            model.eval()
            ref.eval()
            for (k, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
                assert a.dtype == b.dtype and torch.equal(a, b), f"{name}: {k}"
            with torch.no_grad():
                a = flatten(model(inputs[0]), [])
                b = flatten(ref(inputs[0]), [])
            assert all(torch.equal(x, y) for x, y in zip(a, b)), f"{name}: outputs with our state dict"
            states += 1
    print(f"ok {len(cases)} cases, {states} state dicts, largest difference {worst:.2e}")


if __name__ == "__main__":
    main()
