//! Constant propagation: a pure node (Note [Effects in passes]) whose inputs are all constants
//! runs once, now, and its outputs become constants (tensors go into the graph's constant
//! table); a `prim::If` on a constant condition is replaced by the branch it takes. Nodes whose
//! results cannot be constants (tuples, tensor lists, tensors that require grad) are left, and
//! so is a node whose operator fails: the error belongs to the run, not to the pass.

use aten::IValue;

use crate::interpreter::{constant_ivalue, run_node};
use crate::ir::{BlockId, Constant, Graph, NodeId};

use super::effects;

/// Runs the pass; returns whether anything was folded.
pub fn constant_propagation(g: &mut Graph) -> bool {
    let _no_grad = autograd::no_grad();
    block(g, g.root())
}

fn block(g: &mut Graph, b: BlockId) -> bool {
    let mut changed = false;
    for n in g.block_nodes(b).to_vec() {
        if !g.is_alive(n) {
            continue;
        }
        match g.kind(n) {
            "prim::Constant" => {}
            "prim::If" => {
                if let Some(Constant::Bool(c)) = g.constant_value(g.inputs_of(n)[0]) {
                    let taken = g.blocks_of(n)[if c { 0 } else { 1 }];
                    let returns = g.hoist_block(taken, n);
                    for (old, new) in g.outputs_of(n).to_vec().into_iter().zip(returns) {
                        g.replace_all_uses_with(old, new);
                    }
                    let _ = g.destroy_node(n);
                    changed = true;
                    // The hoisted nodes are now in `b`: fold them on the next sweep.
                    changed |= block(g, b);
                    return changed;
                }
                for c in g.blocks_of(n).to_vec() {
                    changed |= block(g, c);
                }
            }
            "prim::Loop" => {
                for c in g.blocks_of(n).to_vec() {
                    changed |= block(g, c);
                }
            }
            _ => changed |= fold(g, n),
        }
    }
    changed
}

fn to_constant(g: &mut Graph, v: IValue) -> Option<Constant> {
    use autograd::TensorAutograd;
    Some(match v {
        IValue::None => Constant::None,
        IValue::Int(i) => Constant::Int(i),
        IValue::Double(x) => Constant::Float(x),
        IValue::Bool(b) => Constant::Bool(b),
        IValue::Str(s) => Constant::Str(s),
        IValue::IntList(l) => Constant::IntList(l),
        IValue::DoubleList(l) => Constant::FloatList(l),
        IValue::BoolList(l) => Constant::BoolList(l),
        IValue::Device(d) => Constant::Device(d),
        IValue::Tensor(t) if !t.requires_grad() => Constant::Tensor(g.add_tensor_constant(t)),
        _ => return None,
    })
}

fn fold(g: &mut Graph, n: NodeId) -> bool {
    if !g.blocks_of(n).is_empty() || !effects(g, n).is_pure() || g.outputs_of(n).is_empty() {
        return false;
    }
    let mut inputs = Vec::new();
    for &v in g.inputs_of(n) {
        let Some(c) = g.constant_value(v) else { return false };
        match constant_ivalue(g, &c) {
            Ok(iv) => inputs.push(iv),
            Err(_) => return false,
        }
    }
    let Ok(results) = run_node(g, n, inputs) else { return false };
    let mut constants = Vec::new();
    for r in results {
        match to_constant(g, r) {
            Some(c) => constants.push(c),
            None => return false,
        }
    }
    let b = g.node_block(n);
    for (old, c) in g.outputs_of(n).to_vec().into_iter().zip(constants) {
        let pos = g.position(n);
        let new = g.insert_constant(b, pos, c);
        // Keep what is known of the value (a folded tensor's type is its constant's).
        let name = g.value_name(old).map(str::to_string);
        g.set_value_name(new, name.as_deref());
        g.replace_all_uses_with(old, new);
    }
    g.destroy_node(n).is_ok()
}
