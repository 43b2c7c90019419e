//! Shape and dtype propagation on the meta device.
//!
//! Note [Shape propagation on meta tensors]: the pass runs the graph once on meta tensors
//! (Note [Meta storage] in c10), tensors with sizes, strides and a dtype but no data. Each
//! graph input whose type gives a dtype and sizes becomes a meta tensor of that type; each node
//! whose inputs are all known runs through the dispatcher, where an operator's `Meta` kernel
//! does the argument checks, type promotion, broadcasting and output allocation of the real
//! kernel and skips its loop (Note [Meta loops] in aten). The results give the outputs' types:
//! dtype, sizes and strides from the meta tensors, the device from the inputs (a value stays on
//! the device the graph puts it on; `Device` arguments are redirected to the meta device while
//! the node runs, and so is a factory's `device=None`), and `requires_grad` as it was known. Numbers (`aten::size`, list
//! construction) are computed too, so shapes flow through `view(x, [n, -1])` chains.
//!
//! A node that cannot run on meta tensors leaves its outputs unknown and everything that
//! depends on them: an operator without a `Meta` kernel, one whose result shape depends on
//! values (`nonzero`), or an input of unknown shape. [`ShapeReport`] lists those nodes with the
//! reason. One unknown input is stood in for: `select`'s index (a loop's counter, typically),
//! which the result's shape does not depend on, runs as 0.
//!
//! Note [Shapes through control flow]: a `prim::If` whose condition is known propagates through
//! the branch it takes; otherwise through both, and each output keeps what the branches agree
//! on (the same meta value, or else the dtype, sizes, strides and device they share). A
//! `prim::Loop` is propagated to a fixed point: its body runs on the carried values' initial
//! types with the counter unknown, what the body returns is joined with what went in, and the
//! body runs again until nothing changes (each join only forgets, so this ends; a loop that
//! has not settled after as many rounds as it carries values, plus two, gives up on all of
//! them). The outputs are the joined carried values, which also cover a loop that runs no
//! trips.

use std::collections::HashMap;

use aten::IValue;
use c10::Device;

use schema::Type;

use crate::interpreter::{constant_ivalue, resolve, run_node};
use crate::ir::{BlockId, Graph, NodeId, ValueId};
use crate::types::{JitType, TensorType};

/// What one run of [`propagate_shapes`] did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ShapeReport {
    /// Nodes (constants excluded) whose outputs got their types.
    pub propagated: usize,
    /// Nodes whose outputs stayed unknown: the node, its kind and why.
    pub unknown: Vec<(NodeId, String, String)>,
}

/// A value the pass knows: its meta value (numbers and lists as they are) and, for tensors, the
/// device the graph puts it on.
#[derive(Clone)]
struct Known {
    value: IValue,
    device: Device,
    /// Whether the meta tensors' strides are the real ones (a type without strides, or two
    /// branches that disagree on them, run on contiguous stand-ins whose strides are not
    /// reported).
    exact: bool,
}

/// Sets the types of the graph's inputs (for example from the tensors a graph will run on),
/// before [`propagate_shapes`] specialises the rest to them. `types` has one entry per input.
pub fn set_input_types(g: &mut Graph, types: &[JitType]) -> c10::Result<()> {
    if types.len() != g.inputs().len() {
        return Err(c10::Error::invalid(
            "jit::set_input_types",
            format!("the graph has {} inputs, got {} types", g.inputs().len(), types.len()),
        ));
    }
    for (v, t) in g.inputs().to_vec().into_iter().zip(types) {
        g.set_type(v, t.clone());
    }
    Ok(())
}

/// Propagates dtypes, sizes and strides from the graph's input types through its nodes, into
/// control flow too (Notes [Shape propagation on meta tensors], [Shapes through control
/// flow]). A value whose type it cannot compute keeps only what its inputs decide (its tensor
/// type erased); the report says which nodes those are.
pub fn propagate_shapes(g: &mut Graph) -> ShapeReport {
    let _no_grad = autograd::no_grad();
    let mut known: HashMap<ValueId, Known> = HashMap::new();
    for &v in g.inputs() {
        if let JitType::Tensor(t) = g.value_type(v) {
            if let Some(k) = meta_tensor(t) {
                known.insert(v, k);
            }
        }
    }
    let mut report = ShapeReport::default();
    block(g, g.root(), &mut known, &mut report);
    report
}

/// A value's type as the pass leaves it: the known value's, or what the old type says.
fn settle(g: &mut Graph, v: ValueId, k: Option<Known>, ty: JitType, known: &mut HashMap<ValueId, Known>) {
    match k {
        Some(k) => {
            let t = typed(&ty, &k);
            g.set_type(v, t);
            known.insert(v, k);
        }
        None => {
            g.set_type(v, ty);
            known.remove(&v);
        }
    }
}

fn block(g: &mut Graph, b: BlockId, known: &mut HashMap<ValueId, Known>, report: &mut ShapeReport) {
    for n in g.block_nodes(b).to_vec() {
        let kind = g.kind(n).to_string();
        match kind.as_str() {
            "prim::Constant" => {
                let c = g.constant_of(n).and_then(|c| constant_ivalue(g, &c).ok()).and_then(|v| to_meta(v).ok());
                if let Some(k) = c {
                    known.insert(g.outputs_of(n)[0], k);
                }
            }
            "prim::If" => if_node(g, n, known, report),
            "prim::Loop" => loop_node(g, n, known, report),
            _ => match run_on_meta(g, n, known) {
                Ok(outs) => {
                    for (&v, k) in g.outputs_of(n).to_vec().iter().zip(outs) {
                        let ty = g.value_type(v).clone();
                        settle(g, v, Some(k), ty, known);
                    }
                    report.propagated += 1;
                }
                Err(reason) => {
                    // What an earlier run knew of these outputs may not hold for these inputs.
                    for v in g.outputs_of(n).to_vec() {
                        let t = g.value_type(v).erased();
                        settle(g, v, None, t, known);
                    }
                    report.unknown.push((n, kind, reason));
                }
            },
        }
    }
}

/// What is known of a value: its meta value, if any, and its type.
type State = (Option<Known>, JitType);

/// What two states agree on (Note [Shapes through control flow]).
fn join(a: &State, b: &State) -> State {
    if let (Some(x), Some(y)) = (&a.0, &b.0) {
        if same(x, y) {
            return a.clone();
        }
        // Tensors that agree on all but their strides run on, on a contiguous stand-in whose
        // strides are not reported.
        if let (IValue::Tensor(s), IValue::Tensor(t)) = (&x.value, &y.value) {
            if s.dtype() == t.dtype() && s.sizes() == t.sizes() && x.device == y.device {
                if let Ok(c) = aten::ops::empty(s.sizes(), Some(s.dtype()), None, Some(Device::META), None, None) {
                    let k = Known { value: IValue::Tensor(c), device: x.device, exact: false };
                    let ty = typed(&a.1, &k);
                    return (Some(k), ty);
                }
            }
        }
    }
    let ta = a.0.as_ref().map_or_else(|| a.1.clone(), |k| typed(&a.1, k));
    let tb = b.0.as_ref().map_or_else(|| b.1.clone(), |k| typed(&b.1, k));
    (None, join_types(&ta, &tb))
}

fn same_state(a: &State, b: &State) -> bool {
    match (&a.0, &b.0) {
        (Some(x), Some(y)) => same(x, y),
        (None, None) => a.1 == b.1,
        _ => false,
    }
}

/// Whether two known values are the same for the pass: tensors of one dtype, size, stride and
/// device; numbers, lists of numbers and the like equal.
fn same(a: &Known, b: &Known) -> bool {
    if a.device != b.device || a.exact != b.exact {
        return false;
    }
    match (&a.value, &b.value) {
        (IValue::Tensor(x), IValue::Tensor(y)) => {
            x.dtype() == y.dtype() && x.sizes() == y.sizes() && x.strides() == y.strides() && x.device() == y.device()
        }
        (IValue::Tuple(xs), IValue::Tuple(ys)) => {
            xs.len() == ys.len()
                && xs.iter().zip(ys).all(|(x, y)| {
                    let k = |value: &IValue, from: &Known| Known {
                        value: value.clone(),
                        device: from.device,
                        exact: from.exact,
                    };
                    same(&k(x, a), &k(y, b))
                })
        }
        (IValue::TensorList(xs), IValue::TensorList(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| x.dtype() == y.dtype() && x.sizes() == y.sizes())
        }
        (IValue::Int(x), IValue::Int(y)) => x == y,
        (IValue::Double(x), IValue::Double(y)) => x.to_bits() == y.to_bits(),
        (IValue::Bool(x), IValue::Bool(y)) => x == y,
        (IValue::None, IValue::None) => true,
        (IValue::IntList(x), IValue::IntList(y)) => x == y,
        (IValue::Str(x), IValue::Str(y)) => x == y,
        (IValue::Device(x), IValue::Device(y)) => x == y,
        _ => false,
    }
}

/// The type two types agree on: a tensor's fields where they are equal, anything else as it
/// is when equal and erased otherwise.
fn join_types(a: &JitType, b: &JitType) -> JitType {
    match (a, b) {
        (JitType::Tensor(x), JitType::Tensor(y)) => JitType::Tensor(TensorType {
            dtype: if x.dtype == y.dtype { x.dtype } else { None },
            sizes: if x.sizes == y.sizes { x.sizes.clone() } else { None },
            strides: if x.strides == y.strides && x.sizes == y.sizes { x.strides.clone() } else { None },
            requires_grad: if x.requires_grad == y.requires_grad { x.requires_grad } else { None },
            device: if x.device == y.device { x.device } else { None },
        }),
        (JitType::Tuple(xs), JitType::Tuple(ys)) if xs.len() == ys.len() => {
            JitType::Tuple(xs.iter().zip(ys).map(|(x, y)| join_types(x, y)).collect())
        }
        (a, b) if a == b => a.clone(),
        (a, _) => a.erased(),
    }
}

fn state(g: &Graph, v: ValueId, known: &HashMap<ValueId, Known>) -> State {
    (known.get(&v).cloned(), g.value_type(v).clone())
}

fn if_node(g: &mut Graph, n: NodeId, known: &mut HashMap<ValueId, Known>, report: &mut ShapeReport) {
    let cond = match known.get(&g.inputs_of(n)[0]).map(|k| &k.value) {
        Some(IValue::Bool(c)) => Some(*c),
        _ => None,
    };
    let blocks = g.blocks_of(n).to_vec();
    let taken: Vec<BlockId> = match cond {
        Some(c) => vec![blocks[if c { 0 } else { 1 }]],
        None => blocks,
    };
    let mut joined: Option<Vec<State>> = None;
    for b in taken {
        block(g, b, known, report);
        let out: Vec<State> = g.block_returns(b).iter().map(|&r| state(g, r, known)).collect();
        joined = Some(match joined {
            None => out,
            Some(j) => j.iter().zip(&out).map(|(a, b)| join(a, b)).collect(),
        });
    }
    let joined = joined.unwrap_or_default();
    let mut all = true;
    for (v, (k, ty)) in g.outputs_of(n).to_vec().into_iter().zip(joined) {
        all &= k.is_some();
        settle(g, v, k, ty, known);
    }
    if all {
        report.propagated += 1;
    } else {
        report.unknown.push((n, "prim::If".into(), "the branches give different values or types".into()));
    }
}

fn loop_node(g: &mut Graph, n: NodeId, known: &mut HashMap<ValueId, Known>, report: &mut ShapeReport) {
    let ins = g.inputs_of(n).to_vec();
    let body = g.blocks_of(n)[0];
    let params = g.block_params(body).to_vec();
    let rets = g.block_returns(body).to_vec();
    let mut carried: Vec<State> = ins[2..].iter().map(|&v| state(g, v, known)).collect();
    let mut settled = false;
    let mut inner = ShapeReport::default();
    for _ in 0..carried.len() + 2 {
        known.remove(&params[0]);
        for (&p, (k, ty)) in params[1..].iter().zip(&carried) {
            settle(g, p, k.clone(), ty.clone(), known);
        }
        inner = ShapeReport::default();
        block(g, body, known, &mut inner);
        let next: Vec<State> = carried.iter().zip(&rets[1..]).map(|(c, &r)| join(c, &state(g, r, known))).collect();
        if carried.iter().zip(&next).all(|(a, b)| same_state(a, b)) {
            settled = true;
            break;
        }
        carried = next;
    }
    if !settled {
        carried = carried.into_iter().map(|(_, ty)| (None, ty.erased())).collect();
    }
    report.propagated += inner.propagated;
    report.unknown.extend(inner.unknown);
    let mut all = true;
    for (v, (k, ty)) in g.outputs_of(n).to_vec().into_iter().zip(carried) {
        all &= k.is_some();
        settle(g, v, k, ty, known);
    }
    if all {
        report.propagated += 1;
    } else {
        let why = if settled { "a carried value changes between trips" } else { "the carried values did not settle" };
        report.unknown.push((n, "prim::Loop".into(), why.into()));
    }
}

/// Runs node `n` on the known meta values of its inputs.
fn run_on_meta(g: &Graph, n: NodeId, known: &HashMap<ValueId, Known>) -> Result<Vec<Known>, String> {
    if !g.blocks_of(n).is_empty() {
        return Err(format!("{} is not propagated through", g.kind(n)));
    }
    let mut inputs = Vec::with_capacity(g.inputs_of(n).len());
    let mut device = None;
    let mut target = None;
    let stand_in = Known { value: IValue::Int(0), device: Device::CPU, exact: true };
    let mut exact = true;
    for (i, &v) in g.inputs_of(n).iter().enumerate() {
        let k = match known.get(&v) {
            Some(k) => k,
            // `select`'s result has the same shape whatever the index.
            None if i == 2 && g.kind(n) == "aten::select" && *g.value_type(v) == JitType::Int => &stand_in,
            None => return Err(format!("input {i} (%{}) is not known", g.value_name(v).unwrap_or("?"))),
        };
        exact &= k.exact;
        match &k.value {
            // The node runs on the meta device; its results belong where the graph asked.
            IValue::Device(d) => {
                target = Some(*d);
                inputs.push(IValue::Device(Device::META));
            }
            v => {
                // The first input on the meta device decides where the results live; a CPU
                // scalar kept as it is (`to_meta`) joins tensors of any device and does not.
                if device.is_none() && has_meta_tensor(v) {
                    device = Some(k.device);
                }
                inputs.push(v.clone());
            }
        }
    }
    // A factory's `device=None` means the default device, the CPU: it runs on meta too.
    if let Ok((_, schema)) = resolve(g, n) {
        for (v, arg) in inputs.iter_mut().zip(&schema.arguments) {
            let is_device = match &arg.ty {
                Type::Device => true,
                Type::Optional(t) => **t == Type::Device,
                _ => false,
            };
            if is_device && matches!(v, IValue::None) {
                *v = IValue::Device(Device::META);
            }
        }
    }
    let device = target.or(device).unwrap_or(Device::CPU);
    let outs = run_node(g, n, inputs).map_err(|e| e.to_string())?;
    Ok(outs.into_iter().map(|value| Known { value, device, exact }).collect())
}

fn has_meta_tensor(v: &IValue) -> bool {
    match v {
        IValue::Tensor(t) => t.device().is_meta(),
        IValue::TensorList(ts) => ts.iter().any(|t| t.device().is_meta()),
        IValue::OptionalTensorList(ts) => ts.iter().flatten().any(|t| t.device().is_meta()),
        IValue::Tuple(vs) => vs.iter().any(has_meta_tensor),
        _ => false,
    }
}

/// A meta tensor of a tensor type that gives the dtype and sizes (and the strides, or a
/// contiguous layout).
fn meta_tensor(t: &TensorType) -> Option<Known> {
    let (dtype, sizes) = (t.dtype?, t.sizes.as_ref()?);
    let value = match &t.strides {
        Some(strides) => aten::ops::empty_strided(sizes, strides, Some(dtype), None, Some(Device::META), None),
        None => aten::ops::empty(sizes, Some(dtype), None, Some(Device::META), None, None),
    }
    .ok()?;
    Some(Known { value: IValue::Tensor(value), device: t.device.unwrap_or(Device::CPU), exact: t.strides.is_some() })
}

/// A constant as the pass sees it: tensors moved to the meta device (keeping their device as
/// where the graph has them), except 0-dim CPU tensors, numbers that operators take next to
/// tensors of any device and that `aten::Int` reads (PyTorch's traces keep sizes in them);
/// everything else as it is.
fn to_meta(v: IValue) -> c10::Result<Known> {
    Ok(match v {
        IValue::Tensor(t) if t.dim() == 0 && t.device().is_cpu() => {
            Known { value: IValue::Tensor(t), device: Device::CPU, exact: true }
        }
        IValue::Tensor(t) => {
            let device = t.device();
            Known { value: IValue::Tensor(t.to_device(Device::META)?), device, exact: true }
        }
        other => Known { value: other, device: Device::CPU, exact: true },
    })
}

/// The type of a value the pass computed: tensors from their meta tensor, tuples element by
/// element, anything else as it was.
fn typed(old: &JitType, k: &Known) -> JitType {
    match (&k.value, old) {
        (IValue::Tensor(t), old) => {
            let requires_grad = match old {
                JitType::Tensor(o) => o.requires_grad,
                _ => None,
            };
            JitType::Tensor(TensorType {
                dtype: Some(t.dtype()),
                sizes: Some(t.sizes().to_vec()),
                strides: k.exact.then(|| t.strides().to_vec()),
                requires_grad,
                device: Some(k.device),
            })
        }
        (IValue::Tuple(vs), JitType::Tuple(ts)) if vs.len() == ts.len() => JitType::Tuple(
            vs.iter()
                .zip(ts)
                .map(|(v, t)| typed(t, &Known { value: v.clone(), device: k.device, exact: k.exact }))
                .collect(),
        ),
        _ => old.clone(),
    }
}
