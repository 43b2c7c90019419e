#!/usr/bin/env python3
"""Reference data generator: runs a small, fixed program under torch.profiler and
writes PyTorch's own profiler output (tables, event list, trimmed Chrome trace)
into ./data/, so the Rust profiler can be compared against PyTorch's shape.

Usage: python3 torch/tests/profiler/pytorch_reference.py
Timings differ run to run; layout, names, shapes, memory numbers and links do not.
"""
import json
import os
import tempfile

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
MAX_TRACE_EVENTS = 60


def run():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    conv = nn.Conv2d(1, 4, 3)
    lin = nn.Linear(4 * 6 * 6, 5)
    params = list(conv.parameters()) + list(lin.parameters())
    opt = torch.optim.SGD(params, lr=0.1)
    x = torch.randn(2, 1, 8, 8)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 profile_memory=True) as prof:
        y = lin(torch.relu(conv(x)).flatten(1))
        loss = y.sum()
        loss.backward()
        opt.step()
    return prof


def write_tables(prof):
    tables = {
        "table.txt": prof.key_averages().table(sort_by="cpu_time_total", row_limit=10),
        "table_shapes.txt": prof.key_averages(group_by_input_shape=True).table(
            sort_by="cpu_time_total", row_limit=10),
        "table_memory.txt": prof.key_averages().table(
            sort_by="self_cpu_memory_usage", row_limit=10),
    }
    for fname, text in tables.items():
        with open(os.path.join(DATA, fname), "w") as f:
            f.write(text)
            if not text.endswith("\n"):
                f.write("\n")


def export_full_trace(prof):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)


def slice_at(evs, flow):
    """The X slice a flow event binds to: same pid/tid, starting at the flow's ts
    (PyTorch places s and f exactly at the start of the linked op)."""
    cands = [e for e in evs if e.get("ph") == "X" and e.get("tid") == flow.get("tid")
             and e.get("pid") == flow.get("pid") and e.get("ts") == flow.get("ts")]
    # innermost (shortest) first when several start together
    cands.sort(key=lambda e: e.get("dur", 0))
    return cands[0] if cands else None


def flow_links(trace):
    evs = trace.get("traceEvents", [])
    starts = {e["id"]: e for e in evs if e.get("cat") == "fwdbwd" and e.get("ph") == "s"}
    ends = {e["id"]: e for e in evs if e.get("cat") == "fwdbwd" and e.get("ph") == "f"}
    links = []
    for fid in sorted(starts):
        fwd = slice_at(evs, starts[fid])
        bwd = slice_at(evs, ends[fid]) if fid in ends else None
        links.append({
            "flow_id": fid,
            "sequence_nr": (fwd or {}).get("args", {}).get("Sequence number"),
            "forward": (fwd or {}).get("name"),
            "backward": (bwd or {}).get("name"),
        })
    return links


def write_events(prof, trace):
    events = []
    for e in prof.events():
        events.append({
            "id": e.id,
            "name": e.name,
            "sequence_nr": e.sequence_nr,
            "fwd_thread": e.fwd_thread,
            "input_shapes": e.input_shapes,
            "cpu_memory_usage": e.cpu_memory_usage,
            "self_cpu_memory_usage": e.self_cpu_memory_usage,
            "count": e.count,
            "thread": e.thread,
            "cpu_parent": e.cpu_parent.name if e.cpu_parent is not None else None,
            "is_async": e.is_async,
            "is_user_annotation": e.is_user_annotation,
            # scope 1 = at::RecordScope::BACKWARD_FUNCTION (the evaluate_function range)
            "scope": e.scope,
            "direction": "bwd" if e.scope == 1 or _under_bwd(e) else "fwd",
        })
    with open(os.path.join(DATA, "events.json"), "w") as f:
        json.dump({
            "torch_version": torch.__version__,
            "note": "events in prof.events() order; direction=bwd for events at or "
                    "under an 'autograd::engine::evaluate_function: ...' range. "
                    "fwd_bwd_links come from the exported trace's fwdbwd flow "
                    "events (s at the forward op, f at the backward node).",
            "events": events,
            "fwd_bwd_links": flow_links(trace),
        }, f, indent=1)
        f.write("\n")


def _under_bwd(e):
    p = e.cpu_parent
    while p is not None:
        if p.scope == 1:
            return True
        p = p.cpu_parent
    return False


def trim_trace(trace):
    evs = trace.get("traceEvents", [])
    keep, seen = [], set()

    def add(i):
        if i not in seen and len(keep) < MAX_TRACE_EVENTS:
            seen.add(i)
            keep.append(i)

    # 1) one of every (ph, cat) combination
    combos = {}
    for i, e in enumerate(evs):
        combos.setdefault((e.get("ph"), e.get("cat")), i)
    for i in combos.values():
        add(i)
    # 2) every metadata event, the optimizer step, user annotations
    for i, e in enumerate(evs):
        if e.get("ph") == "M" or e.get("cat") == "user_annotation" \
                or e.get("name") == "Record Window End" \
                or str(e.get("name", "")).startswith("Optimizer.step"):
            add(i)
    # 3) the fwdbwd flows (both halves) with the slices they bind to
    idx = {id(e): i for i, e in enumerate(evs)}
    for i, e in enumerate(evs):
        if e.get("cat") == "fwdbwd":
            add(i)
            s = slice_at(evs, e)
            if s is not None:
                add(idx[id(s)])
    # 4) a few memory events (alloc and free), and named ops a reader looks for
    n = 0
    for i, e in enumerate(evs):
        if e.get("name") == "[memory]" and n < 6:
            add(i)
            n += 1
    for i, e in enumerate(evs):
        if e.get("name") in ("aten::conv2d", "aten::linear", "aten::addmm",
                             "aten::relu", "aten::mm", "aten::add_",
                             "autograd::engine::evaluate_function: AddmmBackward0",
                             "autograd::engine::evaluate_function: "
                             "torch::autograd::AccumulateGrad",
                             "torch::autograd::AccumulateGrad"):
            add(i)
    keep.sort()
    out = {k: v for k, v in trace.items() if k != "traceEvents"}
    out["traceEvents"] = [evs[i] for i in keep]
    ordered = {k: out[k] for k in trace.keys() if k in out}
    ordered["_trimmed"] = {
        "note": "added by pytorch_reference.py, not part of PyTorch's output; "
                "events kept in original file order",
        "kept": len(keep), "original_event_count": len(evs),
        "original_ph_cat_counts": {
            f"{ph}|{cat}": sum(1 for e in evs if (e.get("ph"), e.get("cat")) == (ph, cat))
            for (ph, cat) in combos}}
    return ordered


def write_trace(trace):
    with open(os.path.join(DATA, "trace.json"), "w") as f:
        json.dump(trim_trace(trace), f, indent=1)
        f.write("\n")


def main():
    os.makedirs(DATA, exist_ok=True)
    prof = run()
    write_tables(prof)
    trace = export_full_trace(prof)
    write_events(prof, trace)
    write_trace(trace)
    total = sum(os.path.getsize(os.path.join(DATA, n)) for n in os.listdir(DATA))
    print(f"wrote {DATA} ({total} bytes)")


if __name__ == "__main__":
    main()
