//! Tracing: running a function once with the `Tracer` dispatch key included records every
//! operator call into a [`Graph`] (PyTorch's `torch.jit.trace`). A boxed fallback on the key sees
//! each call first, looks up the graph values of its tensor arguments (non-tensor arguments
//! become constants), runs the operator below the key and records a node whose outputs stand for
//! the returned tensors from then on. Calls made inside an operator's kernel (a composite's
//! decomposition) run below the key and are not recorded: the graph holds `aten::linear`, not
//! its `matmul` and `add`, as in PyTorch.
//!
//! Note [Tensor identity in traces]: a tensor maps to its graph value by the address of its
//! `TensorImpl`. The trace keeps every tensor it has seen alive until it ends, so an address is
//! never reused for another tensor while tracing. An in-place operator returns its input: its
//! output value then stands for that tensor, so later uses see the mutated value.
//!
//! Note [Value-dependent traces]: a trace records one path. Reading a tensor's value into a
//! number (`item`, `equal`, `allclose`, `is_nonzero`) lets the program branch on data, which
//! the trace cannot see; such calls add a warning to the trace (and to stderr), as PyTorch's
//! `TracerWarning` does.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Once;

use aten::{dispatcher, IValue, KernelFunction, OperatorEntry, Stack, Tensor};
use c10::{DispatchKey, DispatchKeySet, Error, ExcludeDispatchKeyGuard, IncludeDispatchKeyGuard, Result, Scalar};

use crate::interpreter::memory_format_code;
use crate::ir::{BlockId, Constant, Graph, ValueId};
use crate::types::{JitType, TensorType};

/// The result of tracing: the graph and the warnings raised while recording it.
#[derive(Debug)]
pub struct Trace {
    /// The recorded graph: the inputs, then the extra (parameter) inputs, in the order given.
    pub graph: Graph,
    /// Why the trace may not generalise (Note [Value-dependent traces]).
    pub warnings: Vec<String>,
}

struct TracingState {
    graph: Graph,
    values: HashMap<usize, ValueId>,
    keep: Vec<Tensor>,
    warnings: Vec<String>,
}

thread_local! {
    static STATE: RefCell<Option<TracingState>> = const { RefCell::new(None) };
}

fn key(t: &Tensor) -> usize {
    t.imp() as *const c10::TensorImpl as usize
}

impl TracingState {
    fn bind(&mut self, t: &Tensor, v: ValueId) {
        self.values.insert(key(t), v);
        self.keep.push(t.clone());
    }

    fn root(&self) -> BlockId {
        self.graph.root()
    }

    fn constant(&mut self, c: Constant) -> ValueId {
        let b = self.root();
        self.graph.insert_constant(b, None, c)
    }

    fn tensor_value(&mut self, t: &Tensor) -> ValueId {
        if let Some(&v) = self.values.get(&key(t)) {
            return v;
        }
        // A tensor made outside the trace (or without the dispatcher): a constant of the graph.
        let k = self.graph.add_tensor_constant(t.clone());
        let v = self.constant(Constant::Tensor(k));
        self.bind(t, v);
        v
    }

    /// The graph value of an argument (Note [Tensor identity in traces]).
    fn value_of(&mut self, v: &IValue, op: &str) -> ValueId {
        match v {
            IValue::None => self.constant(Constant::None),
            IValue::Tensor(t) => self.tensor_value(t),
            IValue::TensorList(ts) => {
                let vs: Vec<ValueId> = ts.iter().map(|t| self.tensor_value(t)).collect();
                let b = self.root();
                let n = self.graph.append_node(
                    b,
                    "prim::ListConstruct",
                    &vs,
                    vec![JitType::List(Box::new(JitType::tensor()))],
                );
                self.graph.outputs_of(n)[0]
            }
            IValue::OptionalTensorList(ts) => {
                let vs: Vec<ValueId> = ts
                    .iter()
                    .map(|t| match t {
                        Some(t) => self.tensor_value(t),
                        None => self.constant(Constant::None),
                    })
                    .collect();
                let b = self.root();
                let ty = JitType::List(Box::new(JitType::Optional(Box::new(JitType::tensor()))));
                let n = self.graph.append_node(b, "prim::ListConstruct", &vs, vec![ty]);
                self.graph.outputs_of(n)[0]
            }
            IValue::Int(i) => self.constant(Constant::Int(*i)),
            IValue::Double(x) => self.constant(Constant::Float(*x)),
            IValue::Bool(b) => self.constant(Constant::Bool(*b)),
            IValue::IntList(l) => self.constant(Constant::IntList(l.clone())),
            IValue::DoubleList(l) => self.constant(Constant::FloatList(l.clone())),
            IValue::BoolList(l) => self.constant(Constant::BoolList(l.clone())),
            IValue::Str(s) => self.constant(Constant::Str(s.clone())),
            IValue::Scalar(Scalar::Int(i)) => self.constant(Constant::Int(*i)),
            IValue::Scalar(Scalar::Bool(b)) => self.constant(Constant::Bool(*b)),
            IValue::Scalar(s) => self.constant(Constant::Float(s.to_f64())),
            IValue::ScalarType(d) => self.constant(Constant::Int(*d as i64)),
            IValue::Layout(_) => self.constant(Constant::Int(0)),
            IValue::MemoryFormat(m) => self.constant(Constant::Int(memory_format_code(*m))),
            IValue::Device(d) => self.constant(Constant::Device(*d)),
            IValue::Generator(_) => {
                self.warn(format!(
                    "{op} was called with an explicit Generator, which a trace cannot record; the traced graph \
                     uses the default generator"
                ));
                self.constant(Constant::None)
            }
            IValue::Tuple(vs) => {
                let ids: Vec<ValueId> = vs.iter().map(|v| self.value_of(v, op)).collect();
                let ty = JitType::Tuple(ids.iter().map(|&v| self.graph.value_type(v).clone()).collect());
                let b = self.root();
                let n = self.graph.append_node(b, "prim::TupleConstruct", &ids, vec![ty]);
                self.graph.outputs_of(n)[0]
            }
            IValue::Dict(entries) => {
                let ids: Vec<ValueId> =
                    entries.iter().flat_map(|(k, v)| [self.value_of(k, op), self.value_of(v, op)]).collect();
                let b = self.root();
                let n = self.graph.append_node(b, "prim::DictConstruct", &ids, vec![type_of(v)]);
                self.graph.outputs_of(n)[0]
            }
        }
    }

    fn warn(&mut self, msg: String) {
        // PyTorch prints TracerWarnings through Python's warnings; ours are `tracing` events
        // (target `torch::jit`) and stay readable from the trace's `warnings()`.
        tracing::warn!(target: "torch::jit", "TracerWarning: {msg}");
        self.warnings.push(msg);
    }
}

/// The IR type of a run-time value.
pub fn type_of(v: &IValue) -> JitType {
    match v {
        IValue::None => JitType::None,
        IValue::Tensor(t) => JitType::Tensor(TensorType::of(t)),
        IValue::TensorList(_) => JitType::List(Box::new(JitType::tensor())),
        IValue::OptionalTensorList(_) => JitType::List(Box::new(JitType::Optional(Box::new(JitType::tensor())))),
        IValue::Int(_) | IValue::ScalarType(_) | IValue::Layout(_) | IValue::MemoryFormat(_) => JitType::Int,
        IValue::Double(_) => JitType::Float,
        IValue::Bool(_) => JitType::Bool,
        IValue::IntList(_) => JitType::List(Box::new(JitType::Int)),
        IValue::DoubleList(_) => JitType::List(Box::new(JitType::Float)),
        IValue::BoolList(_) => JitType::List(Box::new(JitType::Bool)),
        IValue::Str(_) => JitType::Str,
        IValue::Scalar(Scalar::Int(_)) => JitType::Int,
        IValue::Scalar(Scalar::Bool(_)) => JitType::Bool,
        IValue::Scalar(_) => JitType::Float,
        IValue::Device(_) => JitType::Device,
        IValue::Generator(_) => JitType::Generator,
        IValue::Tuple(vs) => JitType::Tuple(vs.iter().map(type_of).collect()),
        // An empty dict is `Dict(str, Tensor)`, TorchScript's default for `{}`.
        IValue::Dict(entries) => {
            let (k, v) = entries.first().map_or((JitType::Str, JitType::tensor()), |(k, v)| (type_of(k), type_of(v)));
            JitType::Dict(Box::new(k.erased()), Box::new(v.erased()))
        }
    }
}

/// Operators whose result is a tensor's value as a number (Note [Value-dependent traces]).
const VALUE_READS: &[&str] = &["item", "_local_scalar_dense", "equal", "allclose", "is_nonzero"];

/// The boxed fallback on the `Tracer` key.
fn tracer_fallback(op: &'static OperatorEntry, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    let below = ks.remove(DispatchKey::Tracer);
    let tracing = STATE.with(|s| s.borrow().is_some());
    if !tracing {
        let _g = ExcludeDispatchKeyGuard::new(DispatchKey::Tracer);
        return op.redispatch_boxed(below, stack);
    }
    let schema = op.schema().ok_or_else(|| Error::invalid("jit::trace", format!("{} has no schema", op.name())))?;
    let nargs = schema.arguments.len();
    if stack.len() < nargs {
        return Err(Error::invalid(
            "jit::trace",
            format!("{}: {} arguments on the stack, {nargs} expected", op.name(), stack.len()),
        ));
    }
    let base = schema.name.as_str();
    let inputs: Vec<ValueId> = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let st = s.as_mut().expect("tracing");
        if VALUE_READS.contains(&base) {
            st.warn(format!(
                "aten::{} reads a tensor's value into a number: the trace records the value of this run, and a \
                 branch taken on it is not recorded (the trace might not generalize to other inputs)",
                op.name()
            ));
        }
        stack[stack.len() - nargs..].iter().map(|v| st.value_of(v, op.name())).collect()
    });
    {
        let _g = ExcludeDispatchKeyGuard::new(DispatchKey::Tracer);
        op.redispatch_boxed(below, stack)?;
    }
    let nret = schema.returns.len();
    let outs = &stack[stack.len().saturating_sub(nret)..];
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let st = s.as_mut().expect("tracing");
        let types: Vec<JitType> = outs.iter().map(type_of).collect();
        let b = st.root();
        let n = st.graph.append_node(b, &format!("aten::{base}"), &inputs, types);
        let out_values = st.graph.outputs_of(n).to_vec();
        for (v, id) in outs.iter().zip(out_values) {
            match v {
                IValue::Tensor(t) => st.bind(t, id),
                IValue::TensorList(ts) => {
                    let types = ts.iter().map(|t| JitType::Tensor(TensorType::of(t))).collect();
                    let u = st.graph.append_node(b, "prim::ListUnpack", &[id], types);
                    for (t, tv) in ts.iter().zip(st.graph.outputs_of(u).to_vec()) {
                        st.bind(t, tv);
                    }
                }
                _ => {}
            }
        }
    });
    Ok(())
}

fn register_tracer() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        dispatcher()
            .register_fallback(DispatchKey::Tracer, KernelFunction::from_boxed(tracer_fallback))
            .expect("Tracer is a runtime key");
    });
}

/// Ends the trace however the traced function leaves (an error or a panic included).
struct StateGuard;

impl Drop for StateGuard {
    fn drop(&mut self) {
        STATE.with(|s| s.borrow_mut().take());
    }
}

/// Traces `f` on `inputs`: the graph's inputs are `inputs` then `extra` (a module's parameters
/// and buffers, named), its outputs what `f` returns.
pub fn trace_with(
    inputs: &[Tensor],
    extra: &[(String, Tensor)],
    f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
) -> Result<Trace> {
    register_tracer();
    if STATE.with(|s| s.borrow().is_some()) {
        return Err(Error::invalid("jit::trace", "a trace is already being recorded on this thread"));
    }
    let mut st = TracingState { graph: Graph::new(), values: HashMap::new(), keep: Vec::new(), warnings: Vec::new() };
    for (i, t) in inputs.iter().enumerate() {
        if st.values.contains_key(&key(t)) {
            return Err(Error::invalid("jit::trace", format!("input {i} is the same tensor as an earlier input")));
        }
        let v = st.graph.add_input(JitType::Tensor(TensorType::of(t)), Some(&format!("input{i}")));
        st.bind(t, v);
    }
    for (name, t) in extra {
        if st.values.contains_key(&key(t)) {
            continue;
        }
        let v = st.graph.add_input(JitType::Tensor(TensorType::of(t)), Some(name));
        st.bind(t, v);
    }
    STATE.with(|s| *s.borrow_mut() = Some(st));
    let guard = StateGuard;
    let outputs = {
        let _inc = IncludeDispatchKeyGuard::new(DispatchKey::Tracer);
        f(inputs)?
    };
    let mut st = STATE.with(|s| s.borrow_mut().take()).expect("the trace's state");
    drop(guard);
    for t in &outputs {
        let v = st.tensor_value(t);
        st.graph.add_output(v);
    }
    Ok(Trace { graph: st.graph, warnings: st.warnings })
}

/// Traces a function of tensors (`torch.jit.trace(fn, inputs)`).
///
/// ```
/// use aten::Tensor;
/// let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3]).unwrap();
/// let t = jit::trace_fn(&[x], |xs| Ok(vec![aten::ops::relu(&xs[0])?])).unwrap();
/// assert!(t.graph.to_string().contains("aten::relu(%input0)"));
/// ```
pub fn trace_fn(inputs: &[Tensor], f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>) -> Result<Trace> {
    trace_with(inputs, &[], f)
}
