#!/usr/bin/env python3
"""Writes tests/opinfo/: PyTorch's OpInfo database (`op_db`) as operator parity cases.

Run by hand when PyTorch changes (nothing else needs Python):

    pip install torch expecttest hypothesis numpy
    python3 tests/opinfo/gen.py            # from the repository root (or anywhere)

For every `op_db` entry and every dtype of DTYPES the entry supports on the CPU, the first
samples of `entry.sample_inputs("cpu", dtype)` (those of at most MAX_NUMEL elements, as many
as DTYPES allows for the dtype) become cases in the parity case format (parsed by
`xtask/src/parity/cases.rs`; the shared cases document it in `parity/FORMAT.md`, and README.md
here lists what this directory adds): the operator and its arguments are what PyTorch's
own tracer records when the entry's Python function runs on the sample (`torch.jit.trace`
records the ATen call at the schema level, overload resolved and defaults filled), the
expected values are that ATen overload's results, and for differentiable entries (float64
samples) the expected gradients are vector-Jacobian products with seeded upstream gradients.

A function that returns no tensor (`item`, `equal`) cannot be traced: its sample is bound to
the entry's ATen operator by PyTorch's own overload resolution instead. A function that
decomposes in Python into several ATen calls becomes a graph case: the traced nodes in order
(`build_graph_case`), run by the runner's graph executor. A sample whose arguments have no
encoding (complex, sparse) or that cannot be traced is recorded in entries.json with the
reason: such an entry counts as unsupported, so the gap stays visible.

Outputs: cases.json, tensors.safetensors.gz (safetensors written here directly, no package
needed, then gzip-compressed) and entries.json.
"""

import gzip
import json
import math
import os
import struct
import sys
import warnings

import torch
from torch.testing._internal.common_methods_invocations import op_db

OUT = os.path.dirname(os.path.abspath(__file__))

# (dtype, name in cases, samples kept per entry)
DTYPES = [
    (torch.float32, "float32", 6),
    (torch.float64, "float64", 4),
    (torch.int64, "int64", 2),
    (torch.int32, "int32", 2),
    (torch.uint8, "uint8", 2),
    (torch.bool, "bool", 2),
]
# Samples with more elements than this (all tensor arguments together) are left out.
MAX_NUMEL = 1024
# Gradients are checked on float64 samples (exact enough to compare at tight tolerances).
# An entry that supports none of DTYPES on the CPU (`view_as_real`, `imag`: complex input only)
# takes its samples in these instead.
COMPLEX_DTYPES = [
    (torch.complex64, "complex64", 6),
    (torch.complex128, "complex128", 4),
]
GRAD_DTYPE = torch.float64
# Tolerances by the dtype of the results (the loosest over a case's floating outputs).
TOL = {
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1e-5, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}
# Complex tensors are stored as their view_as_real (float32/float64 with a last dim of 2) and
# listed in the file's metadata under "complex"; the runner views them back.
COMPLEX_PARTS = {torch.complex64: torch.float32, torch.complex128: torch.float64}
# Factories whose values are unspecified (uninitialised memory): shapes and dtypes compared.
UNINITIALISED = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted"}
GRAD_TOL = (1e-6, 1e-6)
# Outputs unique only up to the sign of each vector (LAPACK's signs are its own choice), by ATen
# operator: (output, axis of the vector index: -1 columns / -2 rows, output whose flips it
# shares). The runner aligns each vector's sign before comparing and compares the leading
# `count` vectors (the rest of a full U or Vh is an arbitrary completion); the upstream
# gradient of such an output is a stored tensor times the output, which makes the
# vector-Jacobian product independent of the signs (xtask/src/parity/gauge.rs).
GAUGE = {
    "linalg_eigh": [(1, -1, None)],
    "_linalg_svd": [(0, -1, None), (2, -2, 0)],
    "linalg_svd": [(0, -1, None), (2, -2, 0)],
    "svd": [(0, -1, None), (2, -1, 0)],
}

# Graph nodes that only assemble arguments; a mapped sample has exactly one other node.
PLUMBING = {
    "prim::Constant",
    "prim::ListConstruct",
    "prim::TupleConstruct",
    "prim::TupleUnpack",
    "prim::ListUnpack",
}
# c10::ScalarType, MemoryFormat and Layout enum values as the tracer records them.
SCALAR_TYPES = {
    0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
    7: "float64", 9: "complex64", 10: "complex128", 11: "bool", 15: "bfloat16",
}
MEMORY_FORMATS = {0: "contiguous_format", 1: "preserve_format", 2: "channels_last", 3: "channels_last_3d"}
LAYOUTS = {0: "strided"}
ST_DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}


class Unmapped(Exception):
    """A sample that cannot become a case; the message is the reason recorded."""


class Composite(Exception):
    """The entry's function is several ATen calls on this sample: a graph case (the traced
    function is carried along)."""

    def __init__(self, traced):
        super().__init__("composite")
        self.traced = traced


def entry_id(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def flat_tensors(x, acc):
    if isinstance(x, torch.Tensor):
        acc.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            flat_tensors(y, acc)
    elif isinstance(x, dict):
        for y in x.values():
            flat_tensors(y, acc)
    return acc


def substitute(x, it):
    if isinstance(x, torch.Tensor):
        return next(it)
    if isinstance(x, list):
        return [substitute(y, it) for y in x]
    if isinstance(x, tuple):
        return tuple(substitute(y, it) for y in x)
    if isinstance(x, dict):
        return {k: substitute(v, it) for k, v in x.items()}
    return x


def trace_call(op, sample, tensors):
    """The schema of the one ATen call the entry's function makes on this sample and its
    arguments (resolved: graph inputs by index into `tensors`, constants, lists)."""
    call = (sample.input,) + tuple(sample.args)

    def f(*xs):
        it = iter(xs)
        return op.op(*substitute(call, it), **substitute(sample.kwargs, it))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            traced = torch.jit.trace(f, tuple(t.detach() for t in tensors), check_trace=False, strict=False)
        except Exception as e:  # noqa: BLE001 - any tracer failure is a reason
            message = str(e).strip().splitlines()[0]
            if "can be output from traced functions" in message:
                return bind_call(op, sample, tensors)
            raise Unmapped("not traceable: " + message[:160])
    graph = traced.graph
    nodes = [n for n in graph.nodes() if n.kind() not in PLUMBING]
    if len(nodes) != 1:
        if not nodes:
            raise Unmapped("composite in Python: no operator")
        raise Composite(traced)
    node = nodes[0]
    if not node.kind().startswith("aten::"):
        raise Unmapped(f"not an ATen operator: {node.kind()}")
    inputs = list(graph.inputs())
    return node.schema(), [resolve(v, inputs) for v in node.inputs()]


def bind_call(op, sample, tensors):
    """For functions that return no tensor (the tracer cannot record them): the entry's ATen
    operator, the overload PyTorch resolves for the sample's arguments, and the arguments bound
    to that schema by position and name."""
    name = op.aten_name or op.name
    if not hasattr(torch.ops.aten, name):
        raise Unmapped(f"returns no tensor and aten::{name} does not exist")
    args = (sample.input,) + tuple(sample.args)
    try:
        overload = torch._C._jit_resolve_packet(f"aten::{name}", *args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001
        raise Unmapped("returns no tensor and no overload of aten::" + name + " takes the sample: " + str(e).splitlines()[0][:100])
    schema = getattr(getattr(torch.ops.aten, name), overload or "default")._schema

    def as_resolved(v):
        if isinstance(v, torch.Tensor):
            for i, t in enumerate(tensors):
                if t is v:
                    return ("input", i)
            return ("const", v)
        if isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
            return ("list", [as_resolved(x) for x in v])
        return ("const", list(v) if isinstance(v, tuple) else v)

    resolved = []
    for k, arg in enumerate(schema.arguments):
        if not arg.kwarg_only and k < len(args):
            resolved.append(as_resolved(args[k]))
        elif arg.name in sample.kwargs:
            resolved.append(as_resolved(sample.kwargs[arg.name]))
        elif arg.has_default_value():
            resolved.append(("const", arg.default_value))
        else:
            raise Unmapped(f"argument {arg.name} of {schema} not given")
    return str(schema), resolved


def resolve(value, inputs):
    node = value.node()
    kind = node.kind()
    if kind == "prim::Param":
        for i, v in enumerate(inputs):
            if v.unique() == value.unique():
                return ("input", i)
        raise Unmapped("an argument is a graph input the tracer did not list")
    if kind == "prim::Constant":
        return ("const", value.toIValue())
    if kind == "prim::ListConstruct":
        return ("list", [resolve(v, inputs) for v in node.inputs()])
    raise Unmapped(f"an argument comes from {kind}")


def is_wrapped_number(t):
    # A Python number passed where the schema takes a Tensor: the tracer records a 0-dim
    # double/long/bool constant (PyTorch's wrapped numbers).
    return isinstance(t, torch.Tensor) and t.dim() == 0 and t.dtype in (torch.float64, torch.int64, torch.bool)


def check_tensor(t):
    if t.layout != torch.strided:
        raise Unmapped(f"{t.layout} tensor")
    if t.dtype not in ST_DTYPES and t.dtype not in COMPLEX_PARTS:
        raise Unmapped(f"{t.dtype} tensor")


def float_arg(x):
    # JSON has no literal for infinities and NaN; the runner reads these names.
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def strip_optional(ty):
    if ty.startswith("Optional[") and ty.endswith("]"):
        return ty[len("Optional["):-1]
    return ty


class CaseBuilder:
    """Encodes one sample's call as a case, registering its tensors."""

    def __init__(self, case_id, tensors, store):
        self.case_id = case_id
        self.tensors = tensors  # graph inputs, in order
        self.store = store
        self.inputs = []  # (key, tensor) of every tensor argument, in argument order
        self.no_grad = set()

    def tensor_key(self, t):
        key = f"{self.case_id}/in{len(self.inputs)}"
        self.inputs.append((key, t))
        return key

    def tensor_of(self, r):
        if r[0] == "input":
            return self.tensors[r[1]]
        if r[0] == "const" and isinstance(r[1], torch.Tensor):
            return r[1]
        raise Unmapped(f"expected a tensor, got {r}")

    def encode(self, r, ty):
        """(ARG for cases.json, the Python value to call PyTorch's operator with)."""
        base = strip_optional(ty)
        if r[0] == "const" and r[1] is None:
            if base == ty and ty not in ("NoneType",):
                raise Unmapped(f"None for the non-optional type {ty}")
            return None, None
        if base == "Tensor":
            if r[0] == "const" and is_wrapped_number(r[1]):
                v = r[1].item()
                if isinstance(v, float):
                    return {"float": float_arg(v)}, v
                return {"bool" if isinstance(v, bool) else "int": v}, v
            t = self.tensor_of(r)
            check_tensor(t)
            key = self.tensor_key(t)
            arg = {"tensor": key}
            if t.is_floating_point() and not t.requires_grad:
                arg["no_grad"] = True
                self.no_grad.add(key)
            return arg, t
        if base in ("List[Tensor]", "List[Optional[Tensor]]"):
            if r[0] == "const":
                items = [("const", x) for x in r[1]]
            elif r[0] == "list":
                items = r[1]
            else:
                raise Unmapped(f"a tensor list from {r[0]}")
            keys, values = [], []
            for it in items:
                if it[0] == "const" and it[1] is None:
                    keys.append(None)
                    values.append(None)
                    continue
                t = self.tensor_of(it)
                check_tensor(t)
                keys.append(self.tensor_key(t))
                values.append(t)
            if base == "List[Tensor]" or all(k is not None for k in keys):
                if any(k is None for k in keys):
                    raise Unmapped("None in a Tensor[]")
                return {"tensors": keys}, values
            return {"optional_tensors": keys}, values
        v = self.constant(r)
        if base in ("int", "SymInt"):
            return {"int": int(v)}, v
        if base in ("List[int]", "List[SymInt]"):
            return {"ints": [int(x) for x in v]}, v
        if base == "float":
            return {"float": float_arg(float(v))}, v
        if base == "List[float]":
            return {"floats": [float(x) for x in v]}, v
        if base == "bool":
            return {"bool": bool(v)}, v
        if base == "List[bool]":
            return {"bools": [bool(x) for x in v]}, v
        if base == "number":
            if isinstance(v, bool):
                return {"bool": v}, v
            if isinstance(v, int):
                return {"int": v}, v
            if isinstance(v, float):
                return {"float": float_arg(v)}, v
            raise Unmapped(f"Scalar of type {type(v).__name__}")
        if base == "str":
            return {"str": v}, v
        if base == "ScalarType":
            if v not in SCALAR_TYPES:
                raise Unmapped(f"dtype {v} has no name here")
            return {"dtype": SCALAR_TYPES[v]}, v
        if base == "MemoryFormat":
            return {"str": MEMORY_FORMATS[v]}, v
        if base == "Layout":
            if v not in LAYOUTS:
                raise Unmapped(f"layout {v}")
            return {"str": LAYOUTS[v]}, v
        if base == "Device":
            if str(v) != "cpu":
                raise Unmapped(f"device {v}")
            return {"str": "cpu"}, v
        raise Unmapped(f"argument type {ty}")

    def constant(self, r):
        if r[0] == "const":
            if isinstance(r[1], torch.Tensor):
                raise Unmapped("a tensor where a constant belongs")
            return r[1]
        if r[0] == "list":
            return [self.constant(x) for x in r[1]]
        raise Unmapped("a graph input where a constant belongs")


def flatten_outputs(v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)) and not isinstance(v, torch.Size) and all(isinstance(x, torch.Tensor) for x in v):
        return list(v)
    if isinstance(v, tuple):
        out = []
        for x in v:
            out.extend(flatten_outputs(x))
        return out
    if isinstance(v, bool):
        return [torch.tensor(v)]
    if isinstance(v, int):
        return [torch.tensor(v, dtype=torch.int64)]
    if isinstance(v, float):
        return [torch.tensor(v, dtype=torch.float64)]
    if isinstance(v, (list, torch.Size)) and all(isinstance(x, int) for x in v):
        return [torch.tensor(list(v), dtype=torch.int64)]
    if v is None:
        return [None]
    raise Unmapped(f"returns {type(v).__name__}")


def same(a, b):
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        torch.nan_to_num(a.detach(), 0.0) if a.is_floating_point() else a.detach(),
        torch.nan_to_num(b.detach(), 0.0) if b.is_floating_point() else b.detach(),
    ) and (not a.is_floating_point() or torch.equal(a.isnan(), b.isnan()))


# Seeds tried before a result is taken as deterministic: a random result with few possible
# values (one Bernoulli draw) agrees between two seeds half the time.
RANDOM_SEEDS = 8


def differs_by_seed(outputs, run):
    """Whether the results of seed 0 (`outputs`) change under other seeds (`run(seed)`)."""
    for seed in range(1, RANDOM_SEEDS):
        if any(not same(a, b) for a, b in zip(outputs, run(seed))):
            return True
    return False


def call_aten(overload, pos, kw):
    return overload(*pos, **kw)


def build_case(op, sample, dtype, dname, index, store):
    tensors = flat_tensors([sample.input, list(sample.args), sample.kwargs], [])
    if sum(t.numel() for t in tensors) > MAX_NUMEL:
        return None
    try:
        schema_text, resolved = trace_call(op, sample, tensors)
    except Composite as c:
        return build_graph_case(op, sample, dtype, dname, index, store, tensors, c.traced)
    schema = torch._C.parse_schema(schema_text)
    if schema.overload_name:
        op_name = f"{schema.name[len('aten::'):]}.{schema.overload_name}"
    else:
        op_name = schema.name[len("aten::"):]
    packet = getattr(torch.ops.aten, schema.name[len("aten::"):])
    overload = getattr(packet, schema.overload_name or "default")
    case_id = f"{entry_id(op)}/{dname}/{index}"
    b = CaseBuilder(case_id, tensors, store)
    args, kwargs, pos_values, kw_values = [], {}, [], {}
    if len(resolved) != len(schema.arguments):
        raise Unmapped(f"{len(resolved)} inputs for {len(schema.arguments)} schema arguments")
    for arg, value in zip(schema.arguments, resolved):
        if arg.is_out:
            raise Unmapped("an out= variant")
        if str(arg.real_type).startswith("Optional[Generator") or str(arg.real_type) == "Generator":
            enc, py = None, None
        else:
            enc, py = b.encode(value, str(arg.real_type))
        if arg.kwarg_only:
            kwargs[arg.name] = enc
            kw_values[arg.name] = py
        else:
            args.append(enc)
            pos_values.append(py)

    def fresh(v, grad):
        if isinstance(v, torch.Tensor):
            c = v.detach().clone()
            return c.requires_grad_(True) if grad and c.is_floating_point() else c
        if isinstance(v, list):
            return [fresh(x, grad) for x in v]
        return v

    def run(seed, grad=False):
        torch.manual_seed(seed)
        return call_aten(overload, [fresh(v, grad) for v in pos_values], {k: fresh(v, grad) for k, v in kw_values.items()})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            first = run(0)
        except Exception as e:  # noqa: BLE001
            raise Unmapped("PyTorch's operator fails on the traced arguments: " + str(e).strip().splitlines()[0][:120])
        outputs = flatten_outputs(first)
        for o in outputs:
            if o is not None:
                check_tensor(o)
        random = schema.name[len("aten::"):] in UNINITIALISED or differs_by_seed(outputs, lambda seed: flatten_outputs(run(seed)))
    case = {"id": case_id, "op": op_name, "args": args}
    if kwargs:
        case["kwargs"] = kwargs
    # Which element an `indices` result names among equal values is the implementation's
    # choice (PyTorch documents no order for ties): with ties in the input it is not compared.
    ties = any(t.numel() > 1 and torch.unique(t.detach()).numel() < t.numel() for t in tensors if not t.is_complex())
    index_outputs = {k for k, r in enumerate(schema.returns) if r.name == "indices"} if len(outputs) == len(schema.returns) else set()
    keys = []
    for k, o in enumerate(outputs):
        if o is None or (ties and k in index_outputs):
            keys.append(None)
            continue
        key = f"{case_id}/out{k}"
        store[key] = o.detach()
        keys.append(key)
    case["outputs"] = keys
    gauge = []
    base_name = schema.name[len("aten::"):]
    if base_name in GAUGE and not random:
        # eigh: n eigenvectors; SVD: k = min(m, n) singular vector pairs (the length of S).
        count = outputs[0].shape[-1] if base_name == "linalg_eigh" else outputs[1].shape[-1]
        for o, axis, follow in GAUGE[base_name]:
            if outputs[o] is not None and outputs[o].dim() >= 2:
                gauge.append({"output": o, "axis": axis, "count": count, "follow": follow})
        if gauge:
            case["gauge"] = gauge
    if random:
        # Random (or uninitialised) results: shapes and dtypes are compared, not values.
        case["compare"] = "meta"
    tols = [TOL[o.dtype] for o in outputs if o is not None and o.dtype in TOL]
    case["rtol"] = max((t[0] for t in tols), default=0.0)
    case["atol"] = max((t[1] for t in tols), default=0.0)
    if not random:
        widened = oracle_uncertainty(op, sample, outputs, case["rtol"], case["atol"])
        if widened is not None:
            which, value = widened
            case[which] = max(case[which], value)
            WIDENED.setdefault(entry_id(op), []).append(f"{case_id}: {which} {value:.3g}")
    for key, t in b.inputs:
        store[key] = t.detach()
    grad = None
    mutates = any(a.is_write for a in schema.arguments)
    if dtype == GRAD_DTYPE and op.supports_autograd and not random and not mutates:
        grad = gradient_block(b, case_id, overload, pos_values, kw_values, outputs, store, [g["output"] for g in gauge])
    if grad is not None:
        case["grad"] = grad
    return case


# Nodes a graph case's runner executes itself (xtask/src/parity/graph.rs): they turn sizes and
# numbers into values and back, or take lists apart; every other node is an ATen operator.
GRAPH_BUILTINS = {
    "prim::NumToTensor", "aten::Int", "aten::Float", "aten::ScalarImplicit", "aten::size",
    "aten::numel", "aten::dim", "aten::detach", "prim::ListUnpack", "prim::TupleUnpack",
}


def graph_constant(v, ty, case_id, store, counter):
    """A prim::Constant input of a graph node as an ARG (`ty`: the schema type, or None)."""
    base = strip_optional(ty) if ty else None
    if v is None:
        return None
    if isinstance(v, torch.Tensor):
        if base == "Tensor" and is_wrapped_number(v):
            x = v.item()
            if isinstance(x, float):
                return {"float": float_arg(x)}
            return {"bool" if isinstance(x, bool) else "int": x}
        check_tensor(v)
        key = f"{case_id}/const{len(counter)}"
        counter.append(key)
        store[key] = v.detach()
        return {"tensor": key, "no_grad": True}
    if isinstance(v, torch.device):
        if str(v) != "cpu":
            raise Unmapped(f"device {v}")
        return {"str": "cpu"}
    if isinstance(v, torch.dtype):
        names = {d: n for d, n in [(torch.float32, "float32"), (torch.float64, "float64"), (torch.int64, "int64"), (torch.int32, "int32"), (torch.uint8, "uint8"), (torch.bool, "bool"), (torch.int16, "int16"), (torch.int8, "int8"), (torch.float16, "float16"), (torch.bfloat16, "bfloat16")]}
        if v not in names:
            raise Unmapped(f"dtype {v}")
        return {"dtype": names[v]}
    if base == "ScalarType" and isinstance(v, int):
        if v not in SCALAR_TYPES:
            raise Unmapped(f"dtype {v} has no name here")
        return {"dtype": SCALAR_TYPES[v]}
    if base == "MemoryFormat" and isinstance(v, int):
        return {"str": MEMORY_FORMATS[v]}
    if base == "Layout" and isinstance(v, int):
        if v not in LAYOUTS:
            raise Unmapped(f"layout {v}")
        return {"str": LAYOUTS[v]}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    if isinstance(v, float):
        return {"float": float_arg(v)}
    if isinstance(v, str):
        return {"str": v}
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, bool) for x in v):
            return {"bools": list(v)}
        if all(isinstance(x, int) for x in v):
            return {"ints": list(v)}
        if all(isinstance(x, (int, float)) for x in v):
            return {"floats": [float(x) for x in v]}
    raise Unmapped(f"graph constant of type {type(v).__name__}")


def build_graph_case(op, sample, dtype, dname, index, store, tensors, traced):
    """A sample whose function is several ATen calls: a case with a `graph` (its nodes in order,
    each an operator and ARGs that are constants, graph inputs `{"input": i}`, earlier nodes'
    outputs `{"node": [n, k]}` or lists of those), run by the parity runner's graph executor."""
    case_id = f"{entry_id(op)}/{dname}/{index}"
    graph = traced.graph
    inputs = list(graph.inputs())
    if len(inputs) != len(tensors):
        raise Unmapped("the traced graph's inputs are not the sample's tensors")
    produced = {}  # Value.unique() -> {"input": i} or {"node": [n, k]}
    for i, v in enumerate(inputs):
        produced[v.unique()] = {"input": i}
    consts = []
    lists = {}  # ListConstruct outputs: their element values

    def ref(v, ty):
        u = v.unique()
        if u in produced:
            return produced[u]
        node = v.node()
        if node.kind() == "prim::Constant":
            return graph_constant(v.toIValue(), ty, case_id, store, consts)
        if u in lists:
            elem_ty = None
            if ty:
                b = strip_optional(ty)
                if b.startswith("List[") and b.endswith("]"):
                    elem_ty = b[len("List["):-1]
            items = [ref(x, elem_ty) for x in lists[u]]
            if not items and elem_ty in ("int", "SymInt"):
                return {"ints": []}
            if all(isinstance(x, dict) and ("input" not in x and "node" not in x and "list" not in x) or x is None for x in items) and items:
                # A list of constants: one constant ARG of the list type.
                vals = [x and next(iter(x.values())) for x in items]
                if all(isinstance(x, dict) and "int" in x for x in items):
                    return {"ints": vals}
                if all(isinstance(x, dict) and ("float" in x or "int" in x) for x in items):
                    return {"floats": [float(a) for a in vals]}
            return {"list": items}
        raise Unmapped(f"a graph value from {node.kind()}")

    nodes = []
    for node in graph.nodes():
        kind = node.kind()
        if kind == "prim::Constant":
            continue
        if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            lists[node.output().unique()] = list(node.inputs())
            continue
        if kind.startswith("aten::") and kind not in GRAPH_BUILTINS:
            schema = node.schema()
            if schema == "(no schema)":
                raise Unmapped(f"{kind} without a schema")
            parsed = torch._C.parse_schema(schema)
            if any(a.is_out for a in parsed.arguments):
                raise Unmapped("an out= variant")
            name = parsed.name[len("aten::"):]
            op_name = f"{name}.{parsed.overload_name}" if parsed.overload_name else name
            types = [str(a.real_type) for a in parsed.arguments]
            if len(types) != len(list(node.inputs())):
                raise Unmapped(f"{kind}: {len(list(node.inputs()))} inputs for {len(types)} schema arguments")
            args = []
            for a, v, ty in zip(parsed.arguments, node.inputs(), types):
                if ty.startswith("Optional[Generator") or ty == "Generator":
                    args.append(None)
                    continue
                args.append(ref(v, ty))
        elif kind in GRAPH_BUILTINS or kind.startswith("prim::"):
            if kind not in GRAPH_BUILTINS:
                raise Unmapped(f"graph node {kind}")
            op_name = kind
            args = [ref(v, None) for v in node.inputs()]
        else:
            raise Unmapped(f"graph node {kind}")
        n = len(nodes)
        for k, o in enumerate(node.outputs()):
            produced[o.unique()] = {"node": [n, k]}
        nodes.append({"op": op_name, "args": args, "outputs": len(list(node.outputs()))})
    outs = []

    def flatten_out(v):
        if v.unique() in lists and v.node().kind() == "prim::TupleConstruct":
            for x in lists[v.unique()]:
                flatten_out(x)
        else:
            outs.append(ref(v, None))

    for v in graph.outputs():
        flatten_out(v)
    # The graph inputs are the sample's tensors, in order.
    args = []
    for i, t in enumerate(tensors):
        check_tensor(t)
        key = f"{case_id}/in{i}"
        store[key] = t.detach()
        arg = {"tensor": key}
        if not (t.is_floating_point() and t.requires_grad):
            arg["no_grad"] = True
        args.append(arg)

    def run(seed, grad=False):
        torch.manual_seed(seed)
        xs = [t.detach().clone().requires_grad_(True) if grad and not a.get("no_grad") else t.detach().clone() for t, a in zip(tensors, args)]
        return xs, traced(*xs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            first = flatten_outputs(run(0)[1])
            random = differs_by_seed(first, lambda seed: flatten_outputs(run(seed)[1]))
        except Exception as e:  # noqa: BLE001
            raise Unmapped("the traced graph fails: " + str(e).strip().splitlines()[0][:120])
    for o in first:
        if o is not None:
            check_tensor(o)
    if len(first) != len(outs):
        raise Unmapped(f"the graph returns {len(outs)} values, the function {len(first)}")
    keys = []
    for k, o in enumerate(first):
        key = f"{case_id}/out{k}"
        store[key] = o.detach()
        keys.append(key)
    case = {"id": case_id, "op": "graph", "args": args, "graph": {"nodes": nodes, "outputs": outs}, "outputs": keys}
    if random:
        case["compare"] = "meta"
    tols = [TOL[o.dtype] for o in first if o.dtype in TOL]
    case["rtol"] = max((t[0] for t in tols), default=0.0)
    case["atol"] = max((t[1] for t in tols), default=0.0)
    if dtype == GRAD_DTYPE and op.supports_autograd and not random:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                xs, res = run(0, grad=True)
                res = flatten_outputs(res)
                leaves = [x for x, a in zip(xs, args) if not a.get("no_grad")]
                selected = [i for i, o in enumerate(res) if o is not None and o.requires_grad and (o.is_floating_point() or o.is_complex())]
                if leaves and selected:
                    torch.manual_seed(1234)
                    gouts = [torch.randn_like(res[i]) for i in selected]
                    grads = torch.autograd.grad([res[i] for i in selected], leaves, gouts, allow_unused=True)
                    block = {"outputs": selected, "grad_outputs": [], "expected": [], "rtol": GRAD_TOL[0], "atol": GRAD_TOL[1]}
                    for j, g in zip(selected, gouts):
                        store[f"{case_id}/gout{j}"] = g
                        block["grad_outputs"].append(f"{case_id}/gout{j}")
                    for k, (leaf, g) in enumerate(zip(leaves, grads)):
                        store[f"{case_id}/grad{k}"] = torch.zeros_like(leaf).detach() if g is None else g.detach()
                        block["expected"].append(f"{case_id}/grad{k}")
                    case["grad"] = block
            except Exception:  # noqa: BLE001 - PyTorch cannot differentiate it here: no block
                pass
    return case


# Cases whose tolerance covers PyTorch's disagreement with the entry's reference, by entry.
WIDENED = {}


def oracle_uncertainty(op, sample, outputs, rtol, atol):
    """Where the entry has a reference implementation (`op.ref`, NumPy/SciPy; else, for float32
    results, PyTorch's own float64 computation of the sample) and PyTorch's
    float result differs from it by more than the tolerance (but within 1e-5 relative in float64,
    1e-3 in float32: an accuracy difference, as PyTorch's Bessel functions near their zeros or
    its float32 digamma near the poles), the
    expected value itself is that uncertain: `("rtol", r)` or `("atol", a)`, the relative (or,
    where values cross zero, absolute) tolerance that accepts both, twice the largest
    difference; else None. A result that matches either PyTorch or the reference passes."""
    ref = getattr(op, "ref", None)
    # Only float results of float samples of the same dtype: NumPy computes integer inputs in
    # narrow float types (uint8 in float16), which says nothing about PyTorch's accuracy.
    caps = {torch.float64: 1e-5, torch.float32: 1e-3}
    if len(outputs) != 1 or outputs[0] is None or outputs[0].dtype not in caps:
        return None
    if sample.input.dtype != outputs[0].dtype if isinstance(sample.input, torch.Tensor) else True:
        return None
    cap = caps[outputs[0].dtype]
    if ref is None:
        # Without a NumPy reference, a float32 result is checked against PyTorch's own float64
        # computation of the same sample (e.g. matrix_exp, whose float32 rounding PyTorch and
        # a double-precision computation disagree on).
        if outputs[0].dtype != torch.float32:
            return None
        try:
            s = sample.transform(lambda t: t.detach().double() if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = flatten_outputs(op(s.input, *s.args, **s.kwargs))
        except Exception:  # noqa: BLE001 - no usable reference for this sample
            return None
        if len(r) != 1 or r[0] is None or r[0].dtype != torch.float64:
            return None
        r = r[0].detach()
    else:
        try:
            import numpy as np

            s = sample.numpy()
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = torch.as_tensor(np.asarray(ref(s.input, *s.args, **s.kwargs)), dtype=torch.float64)
        except Exception:  # noqa: BLE001 - no usable reference for this sample
            return None
    o = outputs[0].detach().double()
    if r.shape != o.shape:
        return None
    finite = torch.isfinite(r) & torch.isfinite(o)
    dev = (o - r).abs()[finite]
    scale = r.abs()[finite]
    if dev.numel() == 0 or bool((dev <= atol + rtol * scale).all()):
        return None
    # A difference beyond `cap` relative (1e-5 in float64, 1e-3 in float32) is a different
    # computation (the reference need not take every argument the sample passes), not an
    # accuracy question: no widening.
    if not bool((dev <= cap * (1.0 + scale)).all()):
        return None
    rel = (dev / scale.clamp_min(1e-300)).max().item()
    if rel <= cap:
        return ("rtol", 2.0 * rel)
    return ("atol", 2.0 * dev.max().item())


def gradient_block(b, case_id, overload, pos_values, kw_values, outputs, store, gauge_outputs=()):
    """The grad block: d(sum <out_i, g_i>)/d(input) for every differentiable input, in the
    runner's order (positional then keyword arguments; lists element by element)."""
    leaves = []

    def leaf(v):
        if isinstance(v, torch.Tensor):
            c = v.detach().clone()
            if c.is_floating_point() and id(v) not in no_grad_ids:
                c.requires_grad_(True)
                leaves.append(c)
            return c
        if isinstance(v, list):
            return [leaf(x) for x in v]
        return v

    no_grad_ids = {id(t) for key, t in b.inputs if key in b.no_grad}
    pos = [leaf(v) for v in pos_values]
    kw = {k: leaf(v) for k, v in kw_values.items()}
    if not leaves:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            outs = flatten_outputs(overload(*pos, **kw))
            selected = [i for i, o in enumerate(outs) if o is not None and o.requires_grad and (o.is_floating_point() or o.is_complex())]
            if not selected:
                return None
            torch.manual_seed(1234)
            stored = [torch.randn_like(outs[i]) for i in selected]
            gouts = [g * outs[i].detach() if i in gauge_outputs else g for i, g in zip(selected, stored)]
            grads = torch.autograd.grad([outs[i] for i in selected], leaves, gouts, allow_unused=True)
        except Exception:  # noqa: BLE001 - PyTorch cannot differentiate it here: no block
            return None
    block = {"outputs": selected, "grad_outputs": [], "expected": [], "rtol": GRAD_TOL[0], "atol": GRAD_TOL[1]}
    if any(i in gauge_outputs for i in selected):
        block["gauge_outputs"] = [i for i in selected if i in gauge_outputs]
    for j, g in zip(selected, stored):
        key = f"{case_id}/gout{j}"
        store[key] = g
        block["grad_outputs"].append(key)
    for k, (leaf_t, g) in enumerate(zip(leaves, grads)):
        key = f"{case_id}/grad{k}"
        store[key] = torch.zeros_like(leaf_t).detach() if g is None else g.detach()
        block["expected"].append(key)
    return block


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    complex_keys = []
    for key in sorted(tensors):
        t = tensors[key].detach().resolve_conj().resolve_neg().contiguous().cpu()
        if t.is_complex():
            complex_keys.append(key)
            t = torch.view_as_real(t).contiguous()
        if t.dtype not in ST_DTYPES:
            raise ValueError(f"{key}: dtype {t.dtype}")
        flat = torch.empty(t.numel(), dtype=t.dtype)
        flat.copy_(t.reshape(-1))
        data = flat.view(torch.uint8).numpy().tobytes()
        header[key] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if complex_keys:
        header["__metadata__"] = {"complex": json.dumps(complex_keys)}
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    # mtime=0: the same tensors give the same bytes.
    with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for blob in blobs:
            f.write(blob)


def main():
    only = sys.argv[1:]  # entry ids to regenerate for a look (the files are then partial)
    cases, store, entries = [], {}, []
    for op in op_db:
        eid = entry_id(op)
        if only and eid not in only:
            continue
        record = {"entry": eid, "autograd": bool(op.supports_autograd), "cases": 0, "unsupported": []}
        supported = op.supported_dtypes("cpu")
        dtypes = DTYPES if any(d in supported for d, _, _ in DTYPES) else COMPLEX_DTYPES
        record["dtypes"] = [name for d, name, _ in dtypes if d in supported]
        for dtype, dname, limit in dtypes:
            if dtype not in supported:
                continue
            torch.manual_seed(0)
            try:
                samples = list(op.sample_inputs("cpu", dtype, requires_grad=bool(op.supports_autograd) and dtype.is_floating_point))
            except Exception as e:  # noqa: BLE001
                record["unsupported"].append({"dtype": dname, "reason": "sample_inputs fails: " + str(e).splitlines()[0][:120]})
                continue
            kept = 0
            for i, sample in enumerate(samples):
                if kept >= limit:
                    break
                try:
                    case = build_case(op, sample, dtype, dname, i, store)
                except Unmapped as e:
                    record["unsupported"].append({"dtype": dname, "sample": i, "reason": str(e)})
                    kept += 1
                    continue
                except Exception as e:  # noqa: BLE001 - recorded, so the entry shows as unsupported
                    reason = f"generator: {type(e).__name__}: {str(e).strip().splitlines()[0][:120]}"
                    record["unsupported"].append({"dtype": dname, "sample": i, "reason": reason})
                    kept += 1
                    continue
                if case is None:
                    continue
                cases.append(case)
                record["cases"] += 1
                kept += 1
        if eid in WIDENED:
            record["widened"] = WIDENED[eid]
        if record["cases"] == 0 and not record["unsupported"]:
            record["unsupported"].append({"reason": f"no CPU sample under {MAX_NUMEL} elements in {', '.join(n for _, n, _ in dtypes)}"})
        entries.append(record)
        print(f"{eid}: {record['cases']} cases, {len(record['unsupported'])} unsupported", file=sys.stderr)
    meta = {"format": 1, "generator": f"torch {torch.__version__}", "source": "tests/opinfo/gen.py"}
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump({**meta, "cases": cases}, f, separators=(",", ":"))
    with open(os.path.join(OUT, "entries.json"), "w") as f:
        json.dump({**meta, "entries": entries}, f, indent=0)
    write_safetensors(os.path.join(OUT, "tensors.safetensors.gz"), store)
    print(f"{len(entries)} entries, {len(cases)} cases, {len(store)} tensors", file=sys.stderr)


if __name__ == "__main__":
    main()
