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
//! A node that cannot run on meta tensors leaves its outputs as they were and everything that
//! depends on them unknown: an operator without a `Meta` kernel, one whose result shape depends
//! on values (`nonzero`), an input of unknown shape, or control flow (the blocks of `prim::If`
//! and `prim::Loop` are not entered). [`ShapeReport`] lists those nodes with the reason.

use std::collections::HashMap;

use aten::IValue;
use c10::Device;

use schema::Type;

use crate::interpreter::{constant_ivalue, resolve, run_node};
use crate::ir::{Graph, NodeId, ValueId};
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

/// Propagates dtypes, sizes and strides from the graph's input types through its top-level
/// nodes (Note [Shape propagation on meta tensors]). Types it cannot compute are left as they
/// were; the report says which nodes those are.
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
    for n in g.block_nodes(g.root()).to_vec() {
        let kind = g.kind(n).to_string();
        if kind == "prim::Constant" {
            if let Some(k) = g.constant_of(n).and_then(|c| constant_ivalue(g, &c).ok()).and_then(|v| to_meta(v).ok()) {
                known.insert(g.outputs_of(n)[0], k);
            }
            continue;
        }
        match run_on_meta(g, n, &known) {
            Ok(outs) => {
                for (&v, k) in g.outputs_of(n).to_vec().iter().zip(outs) {
                    let ty = typed(g.value_type(v), &k);
                    g.set_type(v, ty);
                    known.insert(v, k);
                }
                report.propagated += 1;
            }
            Err(reason) => {
                // What an earlier run knew of these outputs may not hold for these inputs.
                for v in g.outputs_of(n).to_vec() {
                    let t = g.value_type(v).erased();
                    g.set_type(v, t);
                }
                report.unknown.push((n, kind, reason));
            }
        }
    }
    report
}

/// Runs node `n` on the known meta values of its inputs.
fn run_on_meta(g: &Graph, n: NodeId, known: &HashMap<ValueId, Known>) -> Result<Vec<Known>, String> {
    if !g.blocks_of(n).is_empty() {
        return Err("control flow is not entered".into());
    }
    let mut inputs = Vec::with_capacity(g.inputs_of(n).len());
    let mut device = None;
    let mut target = None;
    for (i, &v) in g.inputs_of(n).iter().enumerate() {
        let Some(k) = known.get(&v) else {
            return Err(format!("input {i} (%{}) is not known", g.value_name(v).unwrap_or("?")));
        };
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
    Ok(outs.into_iter().map(|value| Known { value, device }).collect())
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
    Some(Known { value: IValue::Tensor(value), device: t.device.unwrap_or(Device::CPU) })
}

/// A constant as the pass sees it: tensors moved to the meta device (keeping their device as
/// where the graph has them), except 0-dim CPU tensors, numbers that operators take next to
/// tensors of any device and that `aten::Int` reads (PyTorch's traces keep sizes in them);
/// everything else as it is.
fn to_meta(v: IValue) -> c10::Result<Known> {
    Ok(match v {
        IValue::Tensor(t) if t.dim() == 0 && t.device().is_cpu() => {
            Known { value: IValue::Tensor(t), device: Device::CPU }
        }
        IValue::Tensor(t) => {
            let device = t.device();
            Known { value: IValue::Tensor(t.to_device(Device::META)?), device }
        }
        other => Known { value: other, device: Device::CPU },
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
                strides: Some(t.strides().to_vec()),
                requires_grad,
                device: Some(k.device),
            })
        }
        (IValue::Tuple(vs), JitType::Tuple(ts)) if vs.len() == ts.len() => JitType::Tuple(
            vs.iter().zip(ts).map(|(v, t)| typed(t, &Known { value: v.clone(), device: k.device })).collect(),
        ),
        _ => old.clone(),
    }
}
