"""Differential testing from Python: every case of the repository's OpInfo set (tests/opinfo,
PyTorch's op_db samples) is called the way a Python user calls it -- `torch.<name>(*args, **kwargs)`, or the method when
the operator is only a method -- so the argument parser picks the overload, and the outputs
and gradients are compared with the values PyTorch computed for the same inputs.

At least 95% of each set must agree; every case that does not is listed, with its reason, in
python/tests/parity_disagreements.txt, and a case that disagrees without being listed fails
the test (a ratchet: the list may only shrink).

Any other directory of cases in the same format runs from the command line, as
`cargo xtask parity DIR` does for the Rust side (CI runs the shared parity set this way):

    python python/tests/test_parity.py parity ../shared/parity
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


def _arg(a, tensors, diff):
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
        return getattr(torch, name) if name else a["str"]
    for key in ("int", "float", "bool"):
        if key in a:
            return _number(a[key])
    for key in ("ints", "floats", "bools"):
        if key in a:
            return [_number(v) for v in a[key]]
    if "dtype" in a:
        return getattr(torch, a["dtype"])
    raise ValueError(f"unknown argument form {a}")


def _callable(op, first):
    base = op.split(".")[0]
    for prefix, mod in (("linalg_", torch.linalg), ("fft_", torch.fft), ("special_", torch.special)):
        if base.startswith(prefix) and hasattr(mod, base[len(prefix):]):
            return getattr(mod, base[len(prefix):]), False
    if base in torch._C._torch_functions:
        return torch._C._torch_functions[base], False
    if isinstance(first, torch.Tensor) and hasattr(first, base):
        return getattr(first, base), True
    if base in torch.__dict__ and callable(torch.__dict__[base]):
        return torch.__dict__[base], False
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


_BUILTINS = {
    "prim::NumToTensor": lambda v: torch.tensor(v),
    "aten::Int": lambda t: int(t.item()),
    "aten::Float": lambda t: float(t.item()),
    "aten::ScalarImplicit": lambda t: t.item(),
    "aten::size": lambda t, d=None: list(t.shape) if d is None else t.shape[d],
    "aten::numel": lambda t: t.numel(),
    "aten::dim": lambda t: t.dim(),
    "aten::detach": lambda t: t.detach(),
}


def _as_python_call(op, args, kwargs):
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
        if ty in ("Tensor", "Tensor?") and isinstance(a, (bool, int, float)):
            a = torch._C._wrapped_number(a)
        if kw_only:
            kwargs[name] = a
        else:
            pos.append(a)
    return pos + list(args[len(schema):]), kwargs


def _run_graph(graph, inputs, tensors):
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
        return _arg(a, tensors, None)

    for node in graph["nodes"]:
        op = node["op"]
        args = [val(a) for a in node.get("args", [])]
        kwargs = {k: val(v) for k, v in node.get("kwargs", {}).items()}
        if op in ("prim::ListUnpack", "prim::TupleUnpack"):
            out = list(args[0])
        elif op in _BUILTINS:
            out = [_BUILTINS[op](*args)]
        else:
            name = op.removeprefix("aten::")
            fn, is_method = _callable(name, args[0] if args else None)
            if fn is None:
                raise LookupError(f"no Python binding for {op}")
            args, kwargs = _as_python_call(name, args, kwargs)
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


def _check(name, cases_path, tensors_path, tmp_path):
    cases = json.loads(cases_path.read_text())["cases"]
    tensors = _load_tensors(tensors_path, tmp_path)
    listed = _listed()
    failed = {}
    for case in cases:
        why = _run_case(case, tensors)
        if why is not None:
            failed[f"{name}:{case['id']}"] = why
    agree = 1 - len(failed) / len(cases)
    new = {k: v for k, v in failed.items() if k not in listed}
    fixed = [k for k in listed if k.startswith(name + ":") and k not in failed]
    report = "\n".join(f"{k}\t{v}" for k, v in sorted(new.items()))
    print(f"{name}: {len(cases) - len(failed)} of {len(cases)} agree ({100 * agree:.1f}%); "
          f"{len(fixed)} listed disagreements now agree")
    assert not new, f"{len(new)} cases disagree and are not listed in {LISTED.name}:\n{report}"
    assert agree >= MIN_AGREEMENT, f"{name}: only {100 * agree:.1f}% agree"


def test_opinfo_samples_agree_with_pytorch(tmp_path):
    d = ROOT / "tests" / "opinfo"
    _check("opinfo", d / "cases.json", d / "tensors.safetensors.gz", tmp_path)


def test_the_comparison_can_fail():
    a = torch.tensor([1.0, 2.0])
    assert _compare(a, torch.tensor([1.0, 2.0]), 0, 0) is None
    assert _compare(a, torch.tensor([1.0, 2.5]), 0, 0.1).startswith("value at")
    assert _compare(a, torch.tensor([1, 2]), 0, 0).startswith("dtype")
    assert _compare(a, torch.tensor([[1.0, 2.0]]), 0, 0).startswith("shape")
    assert _compare(torch.tensor([float("nan")]), torch.tensor([1.0]), 0, 0) == "NaN at other places"


if __name__ == "__main__":
    import sys
    import tempfile

    name, directory = sys.argv[1], pathlib.Path(sys.argv[2])
    tensors = next(p for p in (directory / "tensors.safetensors", directory / "tensors.safetensors.gz") if p.exists())
    with tempfile.TemporaryDirectory() as tmp:
        _check(name, directory / "cases.json", tensors, pathlib.Path(tmp))
