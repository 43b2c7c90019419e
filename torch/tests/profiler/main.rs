//! The profiler on a known program: `conv(1→4, 3) → relu → flatten → linear(144→5) → sum`,
//! backward, one SGD step — the program `pytorch_reference.py` beside this file profiles with
//! PyTorch to write `data/` (events, tables, trace). Names, counts, nesting, shapes,
//! forward↔backward links and memory deltas are checked against PyTorch's events and against
//! closed forms (the bytes of each output); the table's layout against PyTorch's table of the
//! same program; the trace against the Trace Event Format.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use torch::nn::{Conv2d, Forward, Linear, Module};
use torch::optim::{self, Optimizer};
use torch::profiler::{self, profile, record_function, Profile, ProfilerActivity, RecordScope};
use torch::TensorAutograd;
use tracing_subscriber::Layer as _;

/// The profiler observes every thread: tests that profile must not overlap.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn data(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/profiler/data").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Runs the known program under a profiler with shapes and memory.
fn known_program() -> Profile {
    torch::manual_seed(0);
    let conv = Conv2d::new(1, 4, 3).unwrap();
    let lin = Linear::new(144, 5).unwrap();
    let mut params = conv.parameters();
    params.extend(lin.parameters());
    let mut opt = optim::SGD::new(params, optim::SGDOptions { lr: 0.1, ..Default::default() }).unwrap();
    let x = torch::randn(&[2, 1, 8, 8]).call().unwrap();
    let prof = profile().activities(&[ProfilerActivity::CPU]).record_shapes(true).profile_memory(true).start();
    let h = conv.call(&x).unwrap().relu().unwrap();
    let y = lin.call(&h.flatten().start_dim(1).call().unwrap()).unwrap();
    let loss = y.sum().call().unwrap();
    loss.backward().unwrap();
    opt.step().unwrap();
    prof.stop()
}

fn only<'a>(p: &'a Profile, name: &'a str) -> &'a profiler::FunctionEvent {
    let v: Vec<_> = p.events_named(name).collect();
    assert_eq!(v.len(), 1, "{name}: {} events", v.len());
    v[0]
}

fn parent_name(p: &Profile, e: &profiler::FunctionEvent) -> Option<String> {
    e.parent.map(|i| p.events[i].name.clone())
}

/// PyTorch's events of the same program (`data/events.json`).
fn pytorch_events() -> Value {
    serde_json::from_str(&data("events.json")).unwrap()
}

#[test]
fn events_have_pytorchs_names_counts_nesting_and_shapes() {
    let _s = serial();
    let p = known_program();
    let theirs = pytorch_events();
    let their = |name: &str| -> &Value {
        theirs["events"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap_or_else(|| panic!("{name}"))
    };
    // Forward operators PyTorch records for the same calls: one each, top level or under the
    // same parent, with the same input shapes and the same autograd sequence numbers.
    for (name, parent) in [
        ("aten::conv2d", None),
        ("aten::convolution", Some("aten::conv2d")),
        ("aten::relu", None),
        ("aten::flatten", None),
        ("aten::linear", None),
        ("aten::addmm", Some("aten::linear")),
    ] {
        let e = only(&p, name);
        assert_eq!(parent_name(&p, e).as_deref(), parent, "{name}'s parent");
        let t = their(name);
        assert_eq!(e.sequence_nr, t["sequence_nr"].as_i64().unwrap(), "{name}'s sequence number");
        let shapes: Vec<Vec<i64>> = e.inputs.as_ref().unwrap().iter().map(|m| m.dims.clone()).collect();
        let their_shapes: Vec<Vec<i64>> = serde_json::from_value(t["input_shapes"].clone()).unwrap();
        assert_eq!(shapes, their_shapes, "{name}'s input shapes");
        assert_eq!(e.scope, RecordScope::Function);
    }
    // The forward sum carries the next number after addmm; ops under no_grad carry none.
    let fwd_sum = p.events_named("aten::sum").find(|e| e.parent.is_none()).unwrap();
    assert_eq!(fwd_sum.sequence_nr, 5);
    assert_eq!(fwd_sum.inputs.as_ref().unwrap()[0].dims, [2, 5]);
    assert_eq!(fwd_sum.inputs.as_ref().unwrap()[0].ty, "float");

    // Backward: each node inside its evaluate_function, with the forward's sequence number.
    for (node, seq) in [
        ("SumBackward0", 5),
        ("AddmmBackward0", 4),
        ("TBackward0", 3),
        ("ReluBackward0", 1),
        ("ConvolutionBackward0", 0),
    ] {
        let outer = format!("autograd::engine::evaluate_function: {node}");
        let o = only(&p, &outer);
        let n = only(&p, node);
        assert_eq!(parent_name(&p, n).as_deref(), Some(outer.as_str()));
        assert_eq!((o.sequence_nr, n.sequence_nr), (seq, seq), "{node}");
        assert_eq!(n.scope, RecordScope::BackwardFunction);
        assert_eq!(their(node)["sequence_nr"].as_i64(), Some(seq), "PyTorch numbers {node} the same");
        // Operators inside backward record no sequence number (grad mode is off there).
        for &c in &n.children {
            assert_eq!(p.events[c].sequence_nr, -1, "{} under {node}", p.events[c].name);
        }
    }
    // The backward of addmm computes two products: [2, 5] @ [5, 144] and [5, 2] @ [2, 144].
    let addmm_bw = only(&p, "AddmmBackward0");
    let mm: Vec<_> = addmm_bw.children.iter().map(|&c| &p.events[c]).filter(|e| e.name == "aten::mm").collect();
    assert_eq!(mm.len(), 2);
    assert_eq!(mm[0].inputs.as_ref().unwrap()[0].dims, [2, 5]);
    assert_eq!(mm[1].inputs.as_ref().unwrap()[1].dims, [2, 144]);
    // Four parameters: four gradient accumulations, as PyTorch.
    let acc = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad";
    assert_eq!(p.events_named(acc).count(), 4);
    let their_acc = theirs["events"].as_array().unwrap().iter().filter(|e| e["name"] == acc).count();
    assert_eq!(their_acc, 4);

    // The optimizer step, a user annotation, holds one add_ per parameter.
    let step = only(&p, "Optimizer.step#SGD.step");
    assert_eq!(step.scope, RecordScope::Optimizer);
    let adds: Vec<_> = step.children.iter().map(|&c| &p.events[c]).collect();
    assert_eq!(adds.len(), 4);
    assert!(adds.iter().all(|e| e.name == "aten::add_" && e.sequence_nr == -1));
    let shapes: BTreeSet<Vec<i64>> = adds.iter().map(|e| e.inputs.as_ref().unwrap()[0].dims.clone()).collect();
    assert_eq!(shapes, BTreeSet::from([vec![4, 1, 3, 3], vec![4], vec![5, 144], vec![5]]));

    // Every event ends after it starts, inside its parent.
    for e in &p.events {
        assert!(e.end_ns >= e.start_ns, "{}", e.name);
        if let Some(q) = e.parent {
            let q = &p.events[q];
            assert!(q.start_ns <= e.start_ns && e.end_ns <= q.end_ns, "{} inside {}", e.name, q.name);
            assert_eq!(q.thread, e.thread);
        }
    }
}

#[test]
fn memory_deltas_are_the_bytes_of_each_output() {
    let _s = serial();
    let p = known_program();
    let avg = p.key_averages();
    let f32_bytes = |shape: &[i64]| shape.iter().product::<i64>() * 4;
    // Inclusive memory of each forward op: its output (the closed form), as PyTorch reports.
    for (name, shape) in [
        ("aten::conv2d", &[2i64, 4, 6, 6][..]),
        ("aten::relu", &[2, 4, 6, 6]),
        ("aten::addmm", &[2, 5]),
        ("aten::linear", &[2, 5]),
    ] {
        let r = avg.get(name).unwrap();
        assert_eq!(r.cpu_memory_usage, f32_bytes(shape), "{name}");
    }
    // The backward products: [2, 144] and [5, 144].
    let mm = avg.get("aten::mm").unwrap();
    assert_eq!((mm.count, mm.cpu_memory_usage), (2, f32_bytes(&[2, 144]) + f32_bytes(&[5, 144])));
    // PyTorch's numbers for the same calls.
    let theirs = pytorch_events();
    let their_total = |name: &str| -> i64 {
        theirs["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == name)
            .map(|e| e["cpu_memory_usage"].as_i64().unwrap())
            .sum()
    };
    for name in ["aten::conv2d", "aten::relu", "aten::addmm", "aten::threshold_backward"] {
        assert_eq!(avg.get(name).unwrap().cpu_memory_usage, their_total(name), "{name} against PyTorch");
    }
    // The step updates in place: no memory.
    assert_eq!(avg.get("Optimizer.step#SGD.step").unwrap().cpu_memory_usage, 0);
    // Memory records carry running totals and the live set is what was allocated and kept.
    assert!(p
        .memory
        .iter()
        .all(|m| m.event.device == torch::Device::CPU && m.event.total_reserved >= m.event.total_allocated));
    let live_bytes: i64 = p.live.iter().map(|a| a.bytes).sum();
    let net: i64 = p.memory.iter().map(|m| m.event.bytes).sum();
    assert_eq!(live_bytes, net, "live allocations are the net of the events (nothing freed that was not seen)");
    assert!(p.live.iter().any(|a| a.made_by.as_deref() == Some("aten::addmm") && a.bytes == 40), "{:?}", p.live);
}

#[test]
fn the_table_has_pytorchs_layout() {
    let _s = serial();
    let p = known_program();
    let ours = p.key_averages().table("self_cpu_memory_usage", 10);
    let theirs = data("table_memory.txt");
    let (o, t): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    // Separator, header, separator: byte for byte (the longest name is an evaluate_function in
    // both, so the name column is 55 wide in both).
    assert_eq!(o[..3], t[..3], "\nours:\n{ours}\ntheirs:\n{theirs}");
    assert_eq!(o.len(), t.len(), "10 rows, separators and the footer");
    assert_eq!(o[o.len() - 2], t[t.len() - 2]);
    assert!(o[o.len() - 1].starts_with("Self CPU time total: "));
    // The top rows by self memory: the largest allocators, with PyTorch's memory formats.
    assert!(o[3].trim_start().starts_with("aten::mm") && o[3].contains("3.94 KB"), "{}", o[3]);
    for line in &o[3..o.len() - 2] {
        assert_eq!(line.len(), t[3].len(), "every row is as wide as PyTorch's: {line:?}");
        assert!(line.ends_with("  "));
        let cells: Vec<&str> = line.split_whitespace().collect();
        let pct = cells.iter().filter(|c| c.ends_with('%')).count();
        assert_eq!(pct, 2, "{line}");
    }
    // Grouped by shape: PyTorch's Input Shapes column.
    let by_shape = p.key_averages_by_input_shape().table("cpu_time_total", 0);
    let header = by_shape.lines().nth(1).unwrap();
    assert!(header.trim_end().ends_with("Input Shapes"), "{header}");
    let conv = by_shape.lines().find(|l| l.trim_start().starts_with("aten::conv2d ")).unwrap();
    assert!(conv.trim_end().ends_with("[[2, 1, 8, 8], [4, 1, 3, 3], [4], [], [], [], []]"), "{conv}");
}

#[test]
fn the_chrome_trace_is_trace_event_format_with_flows() {
    let _s = serial();
    let p = known_program();
    let trace: Value = serde_json::from_str(&p.chrome_trace()).unwrap();
    assert_eq!(trace["schemaVersion"], 1);
    assert_eq!(trace["displayTimeUnit"], "ms");
    let events = trace["traceEvents"].as_array().unwrap();
    let mut x_by_ts: HashMap<(String, String), Vec<&Value>> = HashMap::new();
    let (mut starts, mut finishes) = (HashMap::new(), HashMap::new());
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        assert!(e["pid"].is_number() || e["pid"].is_string());
        match ph {
            "X" => {
                assert!(e["name"].is_string() && e["ts"].is_number() && e["dur"].as_f64().unwrap() >= 0.0, "{e}");
                x_by_ts.entry((e["tid"].to_string(), e["ts"].to_string())).or_default().push(e);
            }
            "s" | "f" => {
                let key = (e["cat"].as_str().unwrap().to_string(), e["id"].as_u64().unwrap());
                let m = if ph == "s" { &mut starts } else { &mut finishes };
                assert!(m.insert(key, e).is_none(), "one start and one finish per flow");
                if ph == "f" {
                    assert_eq!(e["bp"], "e");
                }
            }
            "i" => {
                assert_eq!(e["name"], "[memory]");
                for k in ["Total Reserved", "Total Allocated", "Bytes", "Device Id", "Device Type", "Addr"] {
                    assert!(e["args"][k].is_number(), "{k} in {e}");
                }
            }
            "C" => assert!(e["args"]["Total Allocated"].is_number()),
            "M" => assert!(e["args"].is_object()),
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(starts.len(), finishes.len());
    // Each flow binds a slice at its start and its finish: the forward op and its node, as
    // PyTorch's trace of the same program does.
    let slice_at = |e: &Value, want: &dyn Fn(&str) -> bool| -> String {
        let v = &x_by_ts[&(e["tid"].to_string(), e["ts"].to_string())];
        v.iter().map(|s| s["name"].as_str().unwrap().to_string()).find(|n| want(n)).unwrap_or_else(|| panic!("{e}"))
    };
    let mut links = BTreeSet::new();
    for ((cat, id), s) in &starts {
        if cat != "fwdbwd" {
            continue;
        }
        let f = finishes[&(cat.clone(), *id)];
        links.insert((slice_at(s, &|n| n.starts_with("aten::")), slice_at(f, &|n| n.ends_with("Backward0"))));
    }
    let theirs = pytorch_events();
    for l in theirs["fwd_bwd_links"].as_array().unwrap() {
        let pair = (l["forward"].as_str().unwrap().to_string(), l["backward"].as_str().unwrap().to_string());
        // PyTorch flattens with a view; ours reshapes through _reshape_alias.
        if pair.0 == "aten::view" {
            continue;
        }
        assert!(links.contains(&pair), "{pair:?} in {links:?}");
    }
    // Op events carry PyTorch's argument names.
    let addmm = events.iter().find(|e| e["name"] == "aten::addmm").unwrap();
    assert_eq!(addmm["cat"], "cpu_op");
    assert_eq!(addmm["args"]["Sequence number"], 4);
    assert_eq!(addmm["args"]["Input Dims"], serde_json::json!([[5], [2, 144], [144, 5], [], []]));
    assert_eq!(addmm["args"]["Input type"], serde_json::json!(["float", "float", "float", "Scalar", "Scalar"]));
    let step = events.iter().find(|e| e["name"] == "Optimizer.step#SGD.step").unwrap();
    assert_eq!(step["cat"], "user_annotation");
}

#[test]
fn a_schedule_keeps_the_active_steps_of_each_cycle() {
    let _s = serial();
    let ready: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let r = ready.clone();
    let mut prof = profile()
        .schedule(profiler::schedule(1, 1, 2, 2))
        .on_trace_ready(move |p: &Profile| {
            let names = p.events.iter().filter(|e| e.parent.is_none()).map(|e| e.name.clone()).collect();
            r.lock().unwrap().push(names);
        })
        .start();
    for i in 0..10 {
        let _r = record_function(format!("work {i}"));
        drop(_r);
        prof.step();
    }
    let last = prof.stop();
    let cycles = ready.lock().unwrap().clone();
    // wait 1, warmup 1, active 2, twice: steps 2-3 and 6-7.
    assert_eq!(cycles.len(), 2, "{cycles:?}");
    assert_eq!(cycles[0], ["ProfilerStep#2", "ProfilerStep#3"]);
    assert_eq!(cycles[1], ["ProfilerStep#6", "ProfilerStep#7"]);
    let step2 = last.events.iter().filter(|e| e.name == "ProfilerStep#6").count();
    assert_eq!(step2, 1, "stop returns the last cycle");
    let names: Vec<&str> = last.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["ProfilerStep#6", "work 6", "ProfilerStep#7", "work 7"]);
    // Tables show every step as one row, as PyTorch's `ProfilerStep*`.
    assert_eq!(last.key_averages().get("ProfilerStep*").map(|r| r.count), Some(2));
    // Schedules as PyTorch computes them.
    let s = profiler::schedule(1, 1, 2, 0).skip_first(2);
    use profiler::ProfilerAction::*;
    let actions: Vec<_> = (0..9).map(|i| s.action(i)).collect();
    assert_eq!(actions, [None, None, None, Warmup, Record, RecordAndSave, None, Warmup, Record]);
}

#[test]
fn nothing_is_recorded_when_no_profiler_runs() {
    let _s = serial();
    assert!(!torch::profiler::RecordFunction::start(RecordScope::UserScope, "x", -1, Vec::new).is_observed());
    // A stopped profiler, and one dropped without stopping, leave no observer behind.
    let p = profile().start().stop();
    assert!(p.events.is_empty(), "nothing ran while it profiled");
    assert!(!record_function("after stop").is_observed());
    drop(profile().start());
    let a = torch::ones(&[3]).call().unwrap();
    let _b = (&a + &a).unwrap();
    assert!(!record_function("after drop").is_observed());
}

#[test]
fn user_ranges_nest_and_data_loader_batches_are_ranges() {
    let _s = serial();
    let ds = torch::data::TensorDataset::new((torch::arange(10).call().unwrap(), torch::arange(10).call().unwrap()))
        .unwrap();
    let loader = torch::data::DataLoader::builder(ds).batch_size(4).build().unwrap();
    let prof = profile().start();
    {
        let _outer = record_function("epoch");
        for b in loader.iter() {
            b.unwrap();
        }
    }
    let p = prof.stop();
    let epoch = only(&p, "epoch");
    assert_eq!(epoch.scope, RecordScope::UserScope);
    let batches: Vec<_> = p.events_named("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__").collect();
    // Three batches and the call that ends the loop, as PyTorch counts them.
    assert_eq!(batches.len(), 4);
    assert!(batches.iter().all(|b| b.parent.map(|i| p.events[i].name.as_str()) == Some("epoch")));
}

/// A `tracing` layer that keeps the spans' targets and `name` fields, and the events' messages.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(String, String)>>>);

struct NameField(String);

impl tracing::field::Visit for NameField {
    fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
        if f.name() == "name" || f.name() == "message" {
            self.0 = v.to_string();
        }
    }
    fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
        if f.name() == "name" || f.name() == "message" {
            self.0 = format!("{v:?}");
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Spans {
    fn on_new_span(
        &self,
        a: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut v = NameField(String::new());
        a.record(&mut v);
        self.0.lock().unwrap().push((a.metadata().target().to_string(), v.0));
    }
    fn on_event(&self, e: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut v = NameField(String::new());
        e.record(&mut v);
        self.0.lock().unwrap().push((e.metadata().target().to_string(), v.0));
    }
}

#[test]
fn ranges_are_tracing_spans_for_a_subscriber_that_wants_them() {
    use tracing_subscriber::layer::SubscriberExt;
    let _s = serial();
    let spans = Spans::default();
    // A subscriber that wants torch::ops and torch::user spans only.
    let filter = tracing_subscriber::filter::Targets::new()
        .with_target("torch::ops", tracing::Level::TRACE)
        .with_target("torch::user", tracing::Level::TRACE);
    let subscriber = tracing_subscriber::registry().with(spans.clone().with_filter(filter));
    let a = torch::ones(&[2, 2]).call().unwrap();
    tracing::subscriber::with_default(subscriber, || {
        let _r = record_function("my range");
        let _b = a.matmul(&a).unwrap();
        let _c = a.sum().call().unwrap().backward();
    });
    let seen = spans.0.lock().unwrap().clone();
    assert!(seen.contains(&("torch::user".into(), "my range".into())), "{seen:?}");
    assert!(seen.contains(&("torch::ops".into(), "aten::matmul".into())), "{seen:?}");
    assert!(seen.iter().all(|(t, _)| t == "torch::ops" || t == "torch::user"), "filtered by target: {seen:?}");
    // Outside the subscriber's scope, with no profiler, a range has no observer.
    assert!(!record_function("after").is_observed());
}

#[test]
fn with_stack_records_where_each_range_started() {
    let _s = serial();
    let a = torch::ones(&[2]).call().unwrap();
    let prof = profile().with_stack(true).start();
    let _b = a.exp().unwrap();
    let p = prof.stop();
    let me = torch::profiler::current_thread_id();
    let exp = p.events_named("aten::exp").find(|e| e.thread == me).unwrap();
    // Symbolized when printed: the operator's call is on the stack (the test's own frame may be
    // inlined away in this build).
    let stack = exp.stack.as_ref().expect("a stack").to_string();
    assert!(stack.contains("aten::generated::handles::exp::"), "{stack}");
    let trace: Value = serde_json::from_str(&p.chrome_trace()).unwrap();
    let ev = trace["traceEvents"].as_array().unwrap().iter().find(|e| e["name"] == "aten::exp").unwrap();
    assert!(ev["args"]["Call stack"].as_str().unwrap().contains("aten::generated::handles::exp::"));
}
