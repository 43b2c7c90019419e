//! The Chrome trace (Trace Event Format JSON) of a profile, laid out as PyTorch's
//! `export_chrome_trace` writes it: metadata events naming the process and threads, one
//! complete (`X`) event per range with PyTorch's argument names, `fwdbwd` flow events from each
//! forward operator to its backward node, device kernels on a track per device and stream with
//! `ac2g` flows from their launching operator, and allocator events as `[memory]` instants plus
//! `Memory` counters.
//!
//! Note [Forward-backward flows]: a backward node's range carries its node's sequence number,
//! as does every forward operator that ran while the node was being recorded (the wrappers
//! around the operator that made it share the number). The flow starts at the innermost of
//! those forward operators — the one that started last — and ends at the node's own range
//! (not the `evaluate_function` around it), which is what PyTorch's traces show.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use c10::record_function::RecordScope;

use super::Profile;

/// Microseconds since `origin`, with nanosecond precision (three decimals), as PyTorch writes them.
fn us(ns: u64, origin: u64) -> f64 {
    ns.saturating_sub(origin) as f64 / 1000.0
}

fn category(scope: RecordScope) -> &'static str {
    match scope {
        RecordScope::UserScope | RecordScope::Optimizer | RecordScope::DataLoader => "user_annotation",
        _ => "cpu_op",
    }
}

pub(super) fn trace_json(p: &Profile) -> String {
    let pid = std::process::id() as i64;
    let origin = p.origin_ns;
    let base_epoch_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        .saturating_sub(c10::record_function::clock_ns().saturating_sub(origin));
    let mut ev: Vec<Value> = Vec::new();

    let meta = |name: &str, pid: Value, tid: Value, args: Value| json!({"ph": "M", "name": name, "ts": 0.0, "pid": pid, "tid": tid, "args": args});
    ev.push(meta("process_name", json!(pid), json!(0), json!({"name": process_name()})));
    ev.push(meta("process_labels", json!(pid), json!(0), json!({"labels": "CPU"})));
    ev.push(meta("process_sort_index", json!(pid), json!(0), json!({"sort_index": pid})));
    let mut threads: Vec<u64> = p.events.iter().map(|e| e.thread).chain(p.memory.iter().map(|m| m.thread)).collect();
    threads.sort_unstable();
    threads.dedup();
    for t in &threads {
        ev.push(meta("thread_name", json!(pid), json!(t), json!({"name": format!("thread {t}")})));
        ev.push(meta("thread_sort_index", json!(pid), json!(t), json!({"sort_index": t})));
    }

    // Note [Forward-backward flows]: the innermost forward range per (thread, sequence number).
    let mut forward: HashMap<(u64, i64), usize> = HashMap::new();
    for (i, e) in p.events.iter().enumerate() {
        if e.scope == RecordScope::Function && e.sequence_nr >= 0 {
            forward.insert((e.thread, e.sequence_nr), i);
        }
    }
    let mut flow_of_forward: HashMap<usize, u64> = HashMap::new();
    let mut flow_of_backward: HashMap<usize, u64> = HashMap::new();
    let mut next_flow = 1u64;
    for (i, e) in p.events.iter().enumerate() {
        let is_node = e.scope == RecordScope::BackwardFunction
            && e.sequence_nr >= 0
            && !e.name.starts_with("autograd::engine::evaluate_function: ");
        if !is_node {
            continue;
        }
        // A node's forward ran on its forward thread; unknown (0) means the same thread.
        let fwd_thread = if e.fwd_thread == 0 { e.thread } else { e.fwd_thread };
        if let Some(&f) = forward.get(&(fwd_thread, e.sequence_nr)) {
            if p.events[f].start_ns <= e.start_ns && !flow_of_forward.contains_key(&f) {
                flow_of_forward.insert(f, next_flow);
                flow_of_backward.insert(i, next_flow);
                next_flow += 1;
            }
        }
    }

    let kernel_launchers: std::collections::HashSet<usize> = p.kernels.iter().filter_map(|k| k.event_index).collect();
    for (i, e) in p.events.iter().enumerate() {
        let mut args = Map::new();
        args.insert("External id".into(), json!(i + 1));
        if e.sequence_nr >= 0 {
            args.insert("Sequence number".into(), json!(e.sequence_nr));
            args.insert("Fwd thread id".into(), json!(e.fwd_thread));
        }
        args.insert("Record function id".into(), json!(e.id));
        if let Some(inputs) = e.inputs.as_ref().filter(|v| !v.is_empty()) {
            args.insert("Input type".into(), json!(inputs.iter().map(|m| m.ty.as_ref()).collect::<Vec<_>>()));
            args.insert("Input Dims".into(), json!(inputs.iter().map(|m| m.dims.clone()).collect::<Vec<_>>()));
        }
        if let Some(bt) = &e.stack {
            args.insert("Call stack".into(), json!(bt.to_string()));
        }
        args.insert("Ev Idx".into(), json!(i));
        let ts = us(e.start_ns, origin);
        ev.push(json!({
            "ph": "X", "cat": category(e.scope), "name": e.name, "pid": pid, "tid": e.thread,
            "ts": ts, "dur": us(e.end_ns, e.start_ns), "args": Value::Object(args),
        }));
        if let Some(id) = flow_of_forward.get(&i) {
            ev.push(
                json!({"ph": "s", "id": id, "pid": pid, "tid": e.thread, "ts": ts, "cat": "fwdbwd", "name": "fwdbwd"}),
            );
        }
        if let Some(id) = flow_of_backward.get(&i) {
            ev.push(json!({"ph": "f", "id": id, "pid": pid, "tid": e.thread, "ts": ts, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"}));
        }
        if kernel_launchers.contains(&i) {
            ev.push(
                json!({"ph": "s", "id": i + 1, "pid": pid, "tid": e.thread, "ts": ts, "cat": "ac2g", "name": "ac2g"}),
            );
        }
    }

    // Device kernels: a process per device, a thread per stream.
    let mut devices: Vec<(i64, u64)> =
        p.kernels.iter().map(|k| (k.kernel.device.index as i64, k.kernel.stream)).collect();
    devices.sort_unstable();
    devices.dedup();
    let mut named = std::collections::HashSet::new();
    for &(d, s) in &devices {
        if named.insert(d) {
            ev.push(meta("process_name", json!(d), json!(0), json!({"name": format!("CUDA device {d}")})));
            ev.push(meta("process_labels", json!(d), json!(0), json!({"labels": format!("GPU {d}")})));
            ev.push(meta("process_sort_index", json!(d), json!(0), json!({"sort_index": pid + 1 + d})));
        }
        ev.push(meta("thread_name", json!(d), json!(s), json!({"name": format!("stream {s}")})));
    }
    for k in &p.kernels {
        let kk = &k.kernel;
        let d = kk.device.index as i64;
        let ts = us(kk.start_ns, origin);
        let mut args = Map::new();
        args.insert("device".into(), json!(d));
        args.insert("stream".into(), json!(kk.stream));
        if let Some(i) = k.event_index {
            args.insert("External id".into(), json!(i + 1));
            args.insert("correlation".into(), json!(i + 1));
        }
        ev.push(json!({
            "ph": "X", "cat": "kernel", "name": kk.name, "pid": d, "tid": kk.stream,
            "ts": ts, "dur": us(kk.end_ns, kk.start_ns), "args": Value::Object(args),
        }));
        if let Some(i) = k.event_index {
            ev.push(json!({"ph": "f", "id": i + 1, "pid": d, "tid": kk.stream, "ts": ts, "cat": "ac2g", "name": "ac2g", "bp": "e"}));
        }
    }

    // Allocator events: PyTorch's instants, and counters Perfetto draws as a graph per device.
    let first_mem_idx = p.events.len();
    for (j, m) in p.memory.iter().enumerate() {
        let e = &m.event;
        let ts = us(m.ts_ns, origin);
        let (dev_type, dev_id) = if e.device.is_cpu() { (0, -1) } else { (1, e.device.index as i64) };
        ev.push(json!({
            "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid, "tid": m.thread, "ts": ts,
            "args": {
                "Total Reserved": e.total_reserved, "Total Allocated": e.total_allocated, "Bytes": e.bytes,
                "Device Id": dev_id, "Device Type": dev_type, "Addr": e.ptr, "finished": false,
                "Ev Idx": first_mem_idx + j,
            },
        }));
        let counter = if e.device.is_cpu() { "Memory (CPU)".to_string() } else { format!("Memory (cuda:{dev_id})") };
        ev.push(json!({
            "ph": "C", "name": counter, "pid": pid, "ts": ts,
            "args": {"Total Allocated": e.total_allocated, "Total Reserved": e.total_reserved},
        }));
    }

    let end_ns = p.events.iter().map(|e| e.end_ns).max().unwrap_or(origin);
    ev.push(json!({
        "ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
        "ts": 0.0, "dur": us(end_ns, origin), "args": {"Op count": 0},
    }));
    ev.push(meta("process_sort_index", json!("Spans"), json!(0), json!({"sort_index": 536870912})));

    let doc = json!({
        "schemaVersion": 1,
        "deviceProperties": [],
        "profile_memory": i32::from(!p.memory.is_empty()),
        "record_shapes": i32::from(p.events.iter().any(|e| e.inputs.is_some())),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_epoch_ns,
        "traceEvents": ev,
    });
    // A `Value` with string keys always serializes: its Display is the JSON text.
    doc.to_string()
}

fn process_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "torch".into())
}
