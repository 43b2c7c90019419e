"""Differential testing from Python: every case of the repository's OpInfo set (tests/opinfo,
PyTorch's op_db samples) is called the way a Python user calls it -- `torch.<name>(*args, **kwargs)`, or the method when
the operator is only a method -- so the argument parser picks the overload, and the outputs
and gradients are compared with the values PyTorch computed for the same inputs.

At least 95% of each set must agree; every case that does not is listed, with its reason, in
python/tests/parity_disagreements.txt, and a case that disagrees without being listed fails
the test (a ratchet: the list may only shrink).

Any other directory of cases in the same format runs from the command line, as
`cargo xtask parity DIR` does for the Rust side (CI runs the project's shared parity set, which
sits outside the repository, this way; no pytest test reads it):

    python python/tests/test_parity.py NAME DIR [--reference torch]

With PyTorch installed (CI), every case also runs through PyTorch itself, from the same inputs
(handed over by DLPack) and the same Python call, and our outputs and gradients are compared
with what PyTorch computes there and then (`test_opinfo_samples_agree_with_pytorch_run_now`;
`--reference torch` on the command line). A case PyTorch itself refuses, or whose stored values
PyTorch no longer reproduces (random operators seeded differently), is compared with the stored
values instead and counted on its own line.
"""

import gzip
import json
import pathlib
import shutil

import numpy as np
import pytest

import torchrs as torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
LISTED = pathlib.Path(__file__).resolve().parent / "parity_disagreements.txt"
MIN_AGREEMENT = 0.95


def _listed():
    out = {}
    for line in LISTED.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            case, _, reason = line.partition("\t")
            out[case] = reason
    return out


def _load_tensors(path, tmp):
    """The case tensors; complex ones are stored as their view_as_real and listed in the
    file's metadata under "complex" (tests/opinfo/README.md)."""
    if path.suffix == ".gz":
        plain = tmp / path.stem
        with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        path = plain
    tensors = torch.load(path)
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        meta = json.loads(f.read(n)).get("__metadata__", {})
    for key in json.loads(meta.get("complex", "[]")):
        tensors[key] = torch.view_as_complex(tensors[key])
    return tensors


_OBJECTS = {
    "strided": "strided", "torch.strided": "strided", "contiguous_format": "contiguous_format",
    "preserve_format": "preserve_format", "channels_last": "channels_last",
    "channels_last_3d": "channels_last_3d",
}


def _number(v):
    return float(v) if isinstance(v, str) and v in ("inf", "-inf", "nan") else v


def _arg(a, tensors, diff, m=torch):
    if a is None:
        return None
    if "tensor" in a:
        t = tensors[a["tensor"]]
        if a.get("noncontig") and t.dim() >= 2:
            t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
        t = t.clone() if not a.get("noncontig") else t
        if diff is not None and t.is_floating_point() and not a.get("no_grad"):
            t = t.detach().requires_grad_(True)
            diff.append(t)
        return t
    if "tensors" in a:
        out = []
        for k in a["tensors"]:
            t = tensors[k].clone()
            if diff is not None and t.is_floating_point():
                t = t.detach().requires_grad_(True)
                diff.append(t)
            out.append(t)
        return out
    if "optional_tensors" in a:
        return [None if k is None else tensors[k].clone() for k in a["optional_tensors"]]
    if "str" in a:
        # Layouts and memory formats are objects in Python (the generator wrote their names).
        name = _OBJECTS.get(a["str"])
        return getattr(m, name) if name else a["str"]
    for key in ("int", "float", "bool"):
        if key in a:
            return _number(a[key])
    for key in ("ints", "floats", "bools"):
        if key in a:
            return [_number(v) for v in a[key]]
    if "dtype" in a:
        return getattr(m, a["dtype"])
    raise ValueError(f"unknown argument form {a}")


def _callable(op, first, m=torch):
    base = op.split(".")[0]
    for prefix, mod in (("linalg_", m.linalg), ("fft_", m.fft), ("special_", m.special)):
        if base.startswith(prefix) and hasattr(mod, base[len(prefix):]):
            return getattr(mod, base[len(prefix):]), False
    # The operators bound from the schema: ours in _torch_functions, PyTorch's in
    # _VariableFunctions.
    if m is torch:
        if base in torch._C._torch_functions:
            return torch._C._torch_functions[base], False
    else:
        # PyTorch's torch.* operators live in torch._C._VariableFunctions; the rest are reached
        # as torch.ops.aten.<name>.<overload> (torch._C._nn's bindings read some defaults
        # differently: _nn.mse_loss(a, b) does not reduce).
        if hasattr(m._C._VariableFunctions, base):
            return getattr(m._C._VariableFunctions, base), False
        packet = getattr(m.ops.aten, base, None)
        overload = op.split(".")[1] if "." in op else "default"
        if packet is not None and hasattr(packet, overload):
            return getattr(packet, overload), False
    if isinstance(first, m.Tensor) and hasattr(first, base):
        return getattr(first, base), True
    if base in m.__dict__ and callable(m.__dict__[base]):
        return m.__dict__[base], False
    return None, False


def _np(t):
    t = t.detach()
    if t.dtype is torch.bfloat16:
        t = t.float()
    return t.numpy()


def _compare(got, want, rtol, atol):
    if not isinstance(got, torch.Tensor):
        return f"returned {type(got).__name__}, not a tensor"
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    if got.dtype is not want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    g, w = _np(got), _np(want)
    if g.dtype.kind in "biu":
        return None if np.array_equal(g, w) else "integer values differ"
    if g.dtype.kind == "c":
        g, w = np.stack([g.real, g.imag]), np.stack([w.real, w.imag])
    g, w = g.astype(np.float64), w.astype(np.float64)
    nan = np.isnan(w)
    if not np.array_equal(np.isnan(g), nan):
        return "NaN at other places"
    ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True) | (np.isinf(w) & (g == w))
    if not ok.all():
        i = np.argwhere(~ok)[0]
        return f"value at {tuple(i)}: {g[tuple(i)]!r} != {w[tuple(i)]!r}"
    return None


def _builtins(m):
    return {
    "prim::NumToTensor": lambda v: m.tensor(v),
    "aten::Int": lambda t: int(t.item()),
    "aten::Float": lambda t: float(t.item()),
    "aten::ScalarImplicit": lambda t: t.item(),
    "aten::size": lambda t, d=None: list(t.shape) if d is None else t.shape[d],
    "aten::numel": lambda t: t.numel(),
    "aten::dim": lambda t: t.dim(),
    "aten::detach": lambda t: t.detach(),
    }


_BUILTINS = _builtins(torch)


def _as_python_call(op, args, kwargs, m=torch):
    """The case lists arguments in schema order, keyword-only ones included; a Python caller
    passes those by keyword (`torch.add(x, y, alpha=2)`)."""
    try:
        schema = torch._C._schema_arguments(op)
    except RuntimeError:
        return args, kwargs
    pos = []
    kwargs = dict(kwargs)
    for (name, kw_only, ty), a in zip(schema, args):
        # A number where the schema takes a tensor is a wrapped number (tests/opinfo/README.md).
        if ty in ("Tensor", "Tensor?") and isinstance(a, (bool, int, float)) and m is torch:
            a = torch._C._wrapped_number(a)
        if kw_only:
            kwargs[name] = a
        else:
            pos.append(a)
    return pos + list(args[len(schema):]), kwargs


def _run_graph(graph, inputs, tensors, m=torch):
    """A graph case: its ATen calls in order, each made from Python as a user would."""
    values = []

    def val(a):
        if isinstance(a, dict) and "node" in a:
            n, k = a["node"]
            return values[n][k]
        if isinstance(a, dict) and "input" in a:
            return inputs[a["input"]]
        if isinstance(a, dict) and "list" in a:
            return [val(x) for x in a["list"]]
        return _arg(a, tensors, None, m)

    builtins = _BUILTINS if m is torch else _builtins(m)
    for node in graph["nodes"]:
        op = node["op"]
        args = [val(a) for a in node.get("args", [])]
        kwargs = {k: val(v) for k, v in node.get("kwargs", {}).items()}
        if op in ("prim::ListUnpack", "prim::TupleUnpack"):
            out = list(args[0])
        elif op in builtins:
            out = [builtins[op](*args)]
        else:
            name = op.removeprefix("aten::")
            fn, is_method = _callable(name, args[0] if args else None, m)
            if fn is None:
                raise LookupError(f"no Python binding for {op}")
            args, kwargs = _as_python_call(name, args, kwargs, m)
            r = fn(*(args[1:] if is_method else args), **kwargs)
            out = list(r) if isinstance(r, tuple) and node.get("outputs", 1) > 1 else [r]
        values.append(out)
    return tuple(val(o) for o in graph["outputs"])


def _run_case(case, tensors):
    """None when the case agrees with PyTorch, else the reason."""
    if case.get("gauge"):
        return "outputs unique up to sign (gauge) are not compared from Python yet"
    diff = [] if "grad" in case else None
    try:
        args = [_arg(a, tensors, diff) for a in case.get("args", [])]
        kwargs = {k: _arg(v, tensors, diff) for k, v in case.get("kwargs", {}).items()}
    except KeyError as e:
        return f"missing tensor {e}"
    if case["op"] == "graph":
        fn, is_method = (lambda *a: _run_graph(case["graph"], a, tensors)), False
    else:
        fn, is_method = _callable(case["op"], args[0] if args else None)
        args, kwargs = _as_python_call(case["op"], args, kwargs)
    if fn is None:
        return "no Python binding"
    if is_method:
        args = args[1:]
    if case.get("expect_error"):
        try:
            fn(*args, **kwargs)
        except (RuntimeError, IndexError, ValueError, TypeError, NotImplementedError):
            return None
        return "no error raised"
    try:
        out = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the reason is the point
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for k, key in enumerate(case.get("outputs") or []):
        if key is None:
            continue
        if k >= len(outs):
            return f"{len(outs)} outputs, expected more"
        got = outs[k]
        if isinstance(got, (bool, int, float)) or (isinstance(got, list) and not got or isinstance(got, list) and isinstance(got[0], int)):
            got = torch.tensor(got, dtype=tensors[key].dtype)  # a returned number or int[]
        if case.get("compare") == "meta":
            if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(tensors[key].shape) or got.dtype is not tensors[key].dtype:
                return f"output {k}: shape or dtype differ"
            continue
        why = _compare(got, tensors[key], case["rtol"], case["atol"])
        if why:
            return f"output {k}: {why}"
    g = case.get("grad")
    if g and diff:
        sel = [outs[i] for i in g["outputs"]]
        gouts = [tensors[k] for k in g["grad_outputs"]]
        try:
            grads = torch.autograd.grad(sel, diff, gouts, allow_unused=True)
        except Exception as e:  # noqa: BLE001
            return f"grad {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        for i, (gr, key) in enumerate(zip(grads, g["expected"])):
            want = tensors[key]
            if gr is None:
                gr = torch.zeros_like(want)
            why = _compare(gr, want, g["rtol"], g["atol"])
            if why:
                return f"gradient {i}: {why}"
    return None


def _to_reference(tensors, pt):
    """The case tensors as PyTorch's, handed over by DLPack and copied (so that neither side
    writes into the other's inputs)."""
    return {k: pt.from_dlpack(v).clone() for k, v in tensors.items()}


def _from_reference(t):
    # Copied into a fresh PyTorch tensor first: that materialises PyTorch's efficient zero
    # tensors (some gradients), whose DLPack export has no data.
    t = t.detach()
    dense = t.new_empty(t.shape).copy_(t.resolve_conj().resolve_neg())
    return torch.from_dlpack(dense).clone()


def _reference_values(case, tensors, ptt, pt):
    """The case run by PyTorch now, from the same inputs (`ptt`: `tensors` as PyTorch's) and the
    same Python call: a copy of `tensors` whose expected outputs and gradients are PyTorch's new
    values."""
    diff = [] if "grad" in case else None
    args = [_arg(a, ptt, diff, pt) for a in case.get("args", [])]
    kwargs = {k: _arg(v, ptt, diff, pt) for k, v in case.get("kwargs", {}).items()}
    if case["op"] == "graph":
        fn, is_method = (lambda *a: _run_graph(case["graph"], a, ptt, pt)), False
    else:
        fn, is_method = _callable(case["op"], args[0] if args else None, pt)
        args, kwargs = _as_python_call(case["op"], args, kwargs, pt)
    if fn is None:
        raise LookupError(f"PyTorch has no Python binding for {case['op']}")
    out = fn(*(args[1:] if is_method else args), **kwargs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    live = dict(tensors)
    for k, key in enumerate(case.get("outputs") or []):
        if key is not None and k < len(outs) and isinstance(outs[k], pt.Tensor):
            live[key] = _from_reference(outs[k])
    g = case.get("grad")
    if g and diff:
        sel = [outs[i] for i in g["outputs"]]
        gouts = [ptt[k] for k in g["grad_outputs"]]
        grads = pt.autograd.grad(sel, diff, gouts, allow_unused=True)
        for gr, key in zip(grads, g["expected"]):
            live[key] = _from_reference(gr) if gr is not None else torch.zeros_like(tensors[key])
    return live


def _reproduces(case, live, stored):
    """Whether PyTorch's values now are the stored ones, within the case's tolerances."""
    keys = [k for k in case.get("outputs") or [] if k is not None]
    g = case.get("grad") or {}
    pairs = [(k, case["rtol"], case["atol"]) for k in keys]
    pairs += [(k, g["rtol"], g["atol"]) for k in g.get("expected", [])]
    return all(_compare(live[k], stored[k], rtol, atol) is None for k, rtol, atol in pairs)


def _check(name, cases_path, tensors_path, tmp_path, reference=None):
    """`reference`: PyTorch's module, to compare with its values computed now (else the stored
    ones)."""
    cases = json.loads(cases_path.read_text())["cases"]
    tensors = _load_tensors(tensors_path, tmp_path)
    listed = _listed()
    failed = {}
    counts = {"live": 0, "refused by PyTorch": 0, "not reproduced by PyTorch": 0}
    not_reproduced = []
    ptt = _to_reference(tensors, reference) if reference is not None else None
    for case in cases:
        expected = tensors
        if reference is not None and not case.get("expect_error") and case.get("compare") != "meta":
            try:
                live = _reference_values(case, tensors, ptt, reference)
            except Exception:  # noqa: BLE001 - a case PyTorch refuses is compared with its record
                counts["refused by PyTorch"] += 1
            else:
                if _reproduces(case, live, tensors):
                    expected = live
                    counts["live"] += 1
                else:
                    counts["not reproduced by PyTorch"] += 1
                    not_reproduced.append(case["id"])
        why = _run_case(case, expected)
        if why is not None:
            failed[f"{name}:{case['id']}"] = why
    agree = 1 - len(failed) / len(cases)
    new = {k: v for k, v in failed.items() if k not in listed}
    fixed = [k for k in listed if k.startswith(name + ":") and k not in failed]
    report = "\n".join(f"{k}\t{v}" for k, v in sorted(new.items()))
    print(f"{name}: {len(cases) - len(failed)} of {len(cases)} agree ({100 * agree:.1f}%); "
          f"{len(fixed)} listed disagreements now agree")
    if reference is not None:
        print(f"{name}: compared with PyTorch {reference.__version__} run now: " +
              ", ".join(f"{v} {k}" for k, v in counts.items()) + " (those with the stored values)")
        if not_reproduced:
            print(f"{name}: PyTorch now computes other values than the stored ones for: {', '.join(not_reproduced)}")
    assert not new, f"{len(new)} cases disagree and are not listed in {LISTED.name}:\n{report}"
    assert agree >= MIN_AGREEMENT, f"{name}: only {100 * agree:.1f}% agree"
    return counts


def test_opinfo_samples_agree_with_pytorch(tmp_path):
    d = ROOT / "tests" / "opinfo"
    _check("opinfo", d / "cases.json", d / "tensors.safetensors.gz", tmp_path)


def test_opinfo_samples_agree_with_pytorch_run_now(tmp_path, pytorch):
    d = ROOT / "tests" / "opinfo"
    counts = _check("opinfo", d / "cases.json", d / "tensors.safetensors.gz", tmp_path, reference=pytorch)
    # The live comparison must be the rule: the cases PyTorch computes now are most of them.
    assert counts["live"] >= 0.9 * sum(counts.values()), counts


def test_the_comparison_can_fail():
    a = torch.tensor([1.0, 2.0])
    assert _compare(a, torch.tensor([1.0, 2.0]), 0, 0) is None
    assert _compare(a, torch.tensor([1.0, 2.5]), 0, 0.1).startswith("value at")
    assert _compare(a, torch.tensor([1, 2]), 0, 0).startswith("dtype")
    assert _compare(a, torch.tensor([[1.0, 2.0]]), 0, 0).startswith("shape")
    assert _compare(torch.tensor([float("nan")]), torch.tensor([1.0]), 0, 0) == "NaN at other places"


if __name__ == "__main__":
    import argparse
    import importlib
    import tempfile

    cli = argparse.ArgumentParser(description="Runs a directory of parity cases through torchrs.")
    cli.add_argument("name")
    cli.add_argument("directory", type=pathlib.Path)
    cli.add_argument("--reference", help="a module to compute the expected values now (torch)")
    opts = cli.parse_args()
    ref = importlib.import_module(opts.reference) if opts.reference else None
    tensors = next(p for p in (opts.directory / "tensors.safetensors", opts.directory / "tensors.safetensors.gz")
                   if p.exists())
    with tempfile.TemporaryDirectory() as tmp:
        _check(opts.name, opts.directory / "cases.json", tensors, pathlib.Path(tmp), reference=ref)
