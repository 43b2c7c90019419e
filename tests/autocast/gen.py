#!/usr/bin/env python3
"""Writes tests/autocast/expected.json: PyTorch's autocast behaviour, as a table our runner
(`cargo xtask autocast`, and a test inside `cargo test`) checks the library against.

Run by hand when PyTorch changes (nothing else needs Python):

    pip install torch
    python3 tests/autocast/gen.py

Two parts:

- `policies`: every operator PyTorch registers an `AutocastCPU` or `AutocastCUDA` kernel for
  (asked of PyTorch's dispatcher), with its cast policy. CUDA's policies are read from the
  `AT_FORALL_*` lists of the installed `ATen/autocast_mode.h`; the CPU's lists live in a .cpp
  file the wheel does not ship, so the CPU's lower-precision and promote lists are written
  below (from PyTorch's "Autocast Op Reference") and every other registered CPU operator is
  fp32, which the dtype cases then check.
- `cases`: the float32 and float64 OpInfo cases of tests/opinfo/cases.json, re-run by PyTorch
  inside autocast regions (float16 and bfloat16) on the CPU and on CUDA, recording the dtypes
  of the results (or PyTorch's error). Every case of an operator on a list is kept, plus one
  case of every other operator (which autocast must leave alone). CUDA needs no GPU: PyTorch's
  `AutocastCUDA` kernels run on fake CUDA tensors (`FakeTensorMode`), which compute dtypes and
  shapes without data. A case whose operator cannot run on fake tensors (a data-dependent
  shape) is recorded with the reason and counted as skipped by the runner.
"""

import gzip
import json
import os
import re
import struct
import sys
import warnings

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

HERE = os.path.dirname(os.path.abspath(__file__))
OPINFO = os.path.join(HERE, "..", "opinfo")

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool, "complex64": torch.complex64, "complex128": torch.complex128,
}
NAMES = {v: k for k, v in DTYPES.items()}
# Memory formats are names in the case format (tests/opinfo/gen.py's MEMORY_FORMATS).
FORMATS = {"contiguous_format": torch.contiguous_format, "preserve_format": torch.preserve_format,
           "channels_last": torch.channels_last, "channels_last_3d": torch.channels_last_3d}
ST = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
      "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}

# PyTorch's CPU lists (autocast_mode.cpp, "Autocast Op Reference"): lower precision, promote;
# every other AutocastCPU kernel is fp32.
CPU_LOWER = {
    "conv1d", "conv1d.padding", "conv2d", "conv2d.padding", "conv3d", "conv3d.padding", "bmm", "mm",
    "linalg_vecdot", "baddbmm", "addmm", "_addmm_activation", "addbmm", "linear", "_convolution.deprecated",
    "matmul", "conv_tbc", "mkldnn_rnn_layer", "conv_transpose1d", "conv_transpose2d.input",
    "conv_transpose3d.input", "prelu", "scaled_dot_product_attention", "_native_multi_head_attention",
}
CPU_PROMOTE = {"stack", "cat", "index_copy"}


def registered(key):
    names = torch._C._dispatch_get_all_op_names()
    return sorted(n[len("aten::"):] for n in names
                  if n.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(n, key))


def header_lists():
    """{op: policy} from the installed ATen/autocast_mode.h's AT_FORALL_* lists."""
    path = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "autocast_mode.h")
    text = open(path).read()
    policies = {}
    for macro, policy in [("AT_FORALL_LOWER_PRECISION_FP", "lower_precision_fp"), ("AT_FORALL_FP32", "fp32"),
                          ("AT_FORALL_FP32_SET_OPT_DTYPE", "fp32_set_opt_dtype"), ("AT_FORALL_PROMOTE", "promote")]:
        m = re.search(r"#define " + macro + r"\(_\)(.*?)\n\n", text, re.S)
        for name, overload in re.findall(r"_\((\w+)(?:,\s*(\w+))?\)", m.group(1)):
            policies[f"{name}.{overload}" if overload else name] = policy
    m = re.search(r"#define AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE\(_\)(.*?)\n\n", text, re.S)
    for overload in re.findall(r"_\(\s*ADD_NS\(norm\),\s*\"norm\.(\w+)\"", m.group(1)):
        policies[f"norm.{overload}"] = "fp32_append_dtype"
    return policies


def cuda_policy(op, header):
    if op in header:
        return header[op]
    if op == "binary_cross_entropy":
        return "banned"
    if op.startswith("cudnn_convolution") or op == "_cudnn_rnn":
        return "lower_precision_fp"
    return "unknown"


def cpu_policy(op):
    if op in CPU_LOWER:
        return "lower_precision_fp"
    if op in CPU_PROMOTE:
        return "promote"
    return "fp32"


def read_tensors():
    with gzip.open(os.path.join(OPINFO, "tensors.safetensors.gz"), "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    meta = header.pop("__metadata__", {})
    out = {}
    for key, h in header.items():
        a, b = h["data_offsets"]
        t = torch.frombuffer(bytearray(body[a:b]), dtype=ST[h["dtype"]]) if b > a else torch.empty(0, dtype=ST[h["dtype"]])
        out[key] = t.reshape(h["shape"])
    for key in json.loads(meta.get("complex", "[]")):
        out[key] = torch.view_as_complex(out[key])
    return out


def decode(arg, tensors, place):
    if arg is None:
        return None
    if isinstance(arg, list):
        return [decode(a, tensors, place) for a in arg]
    (kind, value), *_ = [(k, v) for k, v in arg.items() if k not in ("noncontig", "no_grad")]
    if kind == "tensor":
        return place(tensors[value])
    if kind in ("tensors", "optional_tensors"):
        return [None if k is None else place(tensors[k]) for k in value]
    if kind == "dtype":
        return DTYPES[value]
    if kind == "float":
        return float(value)  # "inf", "-inf" and "nan" are strings in the case format
    if kind == "str" and value in FORMATS:
        return FORMATS[value]
    if kind == "str" and value == "cpu":
        return place(torch.empty(0)).device
    return value


def flatten(v):
    if isinstance(v, torch.Tensor):
        return [NAMES.get(v.dtype, str(v.dtype))]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in flatten(item)]
    return [None]


def first_line(e):
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:200]


def run(overload, case, tensors, device, dtype):
    """The result dtypes of `case` in an autocast region, or {"error": ...} / {"skip": ...}."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if device == "cpu":
            args = [decode(a, tensors, lambda t: t.clone()) for a in case["args"]]
            kwargs = {k: decode(a, tensors, lambda t: t.clone()) for k, a in (case.get("kwargs") or {}).items()}
            try:
                with torch.autocast("cpu", dtype=dtype):
                    return {"dtypes": flatten(overload(*args, **kwargs))}
            except Exception as e:  # noqa: BLE001 - PyTorch's refusal is the expected result
                return {"error": first_line(e)}
        mode = FakeTensorMode()
        with mode:
            place = lambda t: mode.from_tensor(t).to("cuda")  # noqa: E731
            args = [decode(a, tensors, place) for a in case["args"]]
            kwargs = {k: decode(a, tensors, place) for k, a in (case.get("kwargs") or {}).items()}
            try:
                overload(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - fake tensors cannot run it at all
                return {"skip": "fake CUDA tensors: " + first_line(e)}
            torch.set_autocast_enabled("cuda", True)
            torch.set_autocast_dtype("cuda", dtype)
            torch.autocast_increment_nesting()
            try:
                return {"dtypes": flatten(overload(*args, **kwargs))}
            except Exception as e:  # noqa: BLE001
                return {"error": first_line(e)}
            finally:
                torch.autocast_decrement_nesting()
                torch.clear_autocast_cache()
                torch.set_autocast_enabled("cuda", False)


def main():
    header = header_lists()
    cpu_ops, cuda_ops = registered("AutocastCPU"), registered("AutocastCUDA")
    policies = {"cpu": {op: cpu_policy(op) for op in cpu_ops}, "cuda": {op: cuda_policy(op, header) for op in cuda_ops}}
    with open(os.path.join(OPINFO, "cases.json")) as f:
        opinfo = json.load(f)["cases"]
    tensors = read_tensors()
    listed = set(cpu_ops) | set(cuda_ops)
    seen_other = set()
    cases = []
    for case in opinfo:
        if "graph" in case or "/float32/" not in case["id"] and "/float64/" not in case["id"]:
            continue
        op = case["op"]
        if op not in listed:
            # One case of each other operator: autocast must leave it alone.
            if op in seen_other or "/float32/" not in case["id"]:
                continue
            seen_other.add(op)
        name, _, overload_name = op.partition(".")
        try:
            overload = getattr(getattr(torch.ops.aten, name), overload_name or "default")
        except AttributeError:
            continue
        entry = {"id": case["id"], "op": op}
        for device in ("cpu", "cuda"):
            entry[device] = {d: run(overload, case, tensors, device, DTYPES[d]) for d in ("bfloat16", "float16")}
        cases.append(entry)
        print(case["id"], file=sys.stderr)
    out = {
        "format": 1,
        "generator": f"torch {torch.__version__}",
        "source": "tests/autocast/gen.py",
        "policies": policies,
        "cases": cases,
    }
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(out, f, indent=0, sort_keys=False)
    print(f"{len(cases)} cases, {len(cpu_ops)} CPU and {len(cuda_ops)} CUDA operators", file=sys.stderr)


if __name__ == "__main__":
    main()
