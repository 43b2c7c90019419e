//! Elementwise fusion (PyTorch's `FuseGraph`): maximal groups of adjacent elementwise nodes of
//! one float dtype and one output shape become one `prim::FusionGroup` node, whose `Subgraph`
//! attribute holds the nodes; the interpreter runs it as one fused kernel (`crate::fusion`).
//! Values used outside a group are the group node's outputs; the others are never
//! materialised. Which operators fuse is `crate::fusion::pointwise_of`.
//!
//! Note [Fusion is for inference]: as in PyTorch, fusion is a post-derivative optimisation: run
//! it on graphs used without gradients (`trace` under `no_grad`, or inputs that do not require
//! grad). The fused kernel records no autograd history, so the pass leaves nodes whose values
//! are known to require grad, and at run time a group whose inputs require grad with grad mode
//! on runs its subgraph in the interpreter, op by op, which records it (so do inputs of
//! another dtype or device, or whose shapes would give an output a different shape than the
//! group's: the kernel never guesses).
//!
//! Note [What fuses]: a node joins a group when its operator is a fusible pointwise one with
//! constant parameters; every tensor it reads or makes is known to be of one dtype (f32 or f64),
//! with known sizes, on the CPU or an unknown device, not requiring grad; its output has the
//! broadcast shape of its inputs; and the group's nodes all have that output shape and dtype.
//! Nodes never move across a node that writes a tensor, draws random numbers or has side
//! effects (Note [Effects in passes]) or one that owns blocks: those end the stretch in which
//! groups form. A group runs where its last node was, so a producer joins a consumer's group
//! only if nothing outside the group uses the producer's values before that point. Groups of
//! one node stay plain nodes.

use std::collections::{HashMap, HashSet};

use c10::ScalarType;

use crate::fusion::pointwise_of;
use crate::ir::{Attr, BlockId, Graph, NodeId, Use, ValueId};
use crate::types::{JitType, TensorType};

use super::{effects, eliminate_dead_code};

/// The kind of a fusion group node.
pub const FUSION_GROUP: &str = "prim::FusionGroup";

/// Runs the pass on every block of the graph, then dead-code elimination (the constants the
/// groups took in); returns whether any group was made.
pub fn fuse_elementwise(g: &mut Graph) -> bool {
    let mut blocks = vec![g.root()];
    for n in g.all_nodes() {
        blocks.extend_from_slice(g.blocks_of(n));
    }
    let mut changed = false;
    for b in blocks {
        changed |= fuse_block(g, b);
    }
    if changed {
        eliminate_dead_code(g);
    }
    changed
}

/// The dtype and output sizes every node of a group has.
#[derive(Clone, Debug, PartialEq)]
struct Signature {
    dtype: ScalarType,
    sizes: Vec<i64>,
}

struct Group {
    members: Vec<NodeId>,
    sig: Signature,
    stretch: usize,
    alive: bool,
}

fn tensor_type(g: &Graph, v: ValueId) -> Option<&TensorType> {
    match g.value_type(v) {
        JitType::Tensor(t) => Some(t),
        _ => None,
    }
}

/// What a tensor of a fusible node must be known to be (Note [What fuses]).
fn fits(t: &TensorType, dtype: ScalarType) -> Option<&[i64]> {
    let ok = t.dtype == Some(dtype) && t.requires_grad != Some(true) && t.device.is_none_or(|d| d.is_cpu());
    t.sizes.as_deref().filter(|_| ok)
}

fn broadcast(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    let at = |s: &[i64], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

/// The signature of a node that may join a group (Note [What fuses]).
fn fusible(g: &Graph, n: NodeId) -> Option<Signature> {
    let p = pointwise_of(g, n)?;
    let out = tensor_type(g, g.outputs_of(n)[0])?;
    let dtype = out.dtype.filter(|d| matches!(d, ScalarType::F32 | ScalarType::F64))?;
    let sizes = fits(out, dtype)?.to_vec();
    let mut shape = Vec::new();
    for &v in &g.inputs_of(n)[..p.arity()] {
        if let Some(t) = tensor_type(g, v) {
            shape = broadcast(&shape, fits(t, dtype)?)?;
        }
    }
    (shape == sizes).then_some(Signature { dtype, sizes })
}

/// The position in block `b` of node `n` or of the node of `b` that contains it.
fn position_in(g: &Graph, b: BlockId, mut n: NodeId, pos: &HashMap<NodeId, usize>) -> Option<usize> {
    while g.node_block(n) != b {
        n = g.block_owner(g.node_block(n))?;
    }
    pos.get(&n).copied()
}

/// Whether every use of the group's values outside the group comes after position `last`, where
/// the group node will run.
fn uses_follow(g: &Graph, b: BlockId, members: &[NodeId], last: usize, pos: &HashMap<NodeId, usize>) -> bool {
    let set: HashSet<NodeId> = members.iter().copied().collect();
    members.iter().flat_map(|&m| g.outputs_of(m)).flat_map(|&v| g.uses(v)).all(|u| match *u {
        Use::Node(user, _) if set.contains(&user) => true,
        Use::Node(user, _) => position_in(g, b, user, pos).is_some_and(|p| p > last),
        Use::Return(rb, _) if rb == b => true,
        Use::Return(rb, _) => {
            g.block_owner(rb).and_then(|owner| position_in(g, b, owner, pos)).is_some_and(|p| p > last)
        }
    })
}

fn fuse_block(g: &mut Graph, b: BlockId) -> bool {
    let nodes = g.block_nodes(b).to_vec();
    let pos: HashMap<NodeId, usize> = nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let mut group_of: HashMap<NodeId, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut stretch = 0;
    for (i, &n) in nodes.iter().enumerate() {
        if !g.blocks_of(n).is_empty() || !effects(g, n).is_pure() {
            stretch += 1;
            continue;
        }
        let Some(sig) = fusible(g, n) else { continue };
        let mut members = vec![n];
        let mut absorbed = Vec::new();
        for &v in g.inputs_of(n) {
            let Some(&id) = g.producer(v).and_then(|p| group_of.get(&p)) else { continue };
            let other = &groups[id];
            if absorbed.contains(&id) || other.stretch != stretch || other.sig != sig {
                continue;
            }
            let mut trial = members.clone();
            trial.extend_from_slice(&other.members);
            if uses_follow(g, b, &trial, i, &pos) {
                members = trial;
                absorbed.push(id);
            }
        }
        for id in absorbed {
            groups[id].alive = false;
        }
        members.sort_by_key(|m| pos[m]);
        for &m in &members {
            group_of.insert(m, groups.len());
        }
        groups.push(Group { members, sig, stretch, alive: true });
    }
    let mut changed = false;
    for group in groups.iter().filter(|grp| grp.alive && grp.members.len() > 1) {
        make_group(g, &group.members);
        changed = true;
    }
    changed
}

/// Replaces `members` (in block order, valid per `uses_follow`) with one `prim::FusionGroup`
/// node at the last member's place.
fn make_group(g: &mut Graph, members: &[NodeId]) {
    let set: HashSet<NodeId> = members.iter().copied().collect();
    let inside = |g: &Graph, v: ValueId| g.producer(v).is_some_and(|p| set.contains(&p));
    // Inputs: the tensors the members read from outside, in order of first use; numbers are
    // constants (`pointwise_of`) and are copied into the subgraph.
    let mut inputs: Vec<ValueId> = Vec::new();
    for &m in members {
        for &v in g.inputs_of(m) {
            if g.value_type(v).is_tensor() && !inside(g, v) && !inputs.contains(&v) {
                inputs.push(v);
            }
        }
    }
    let outputs: Vec<ValueId> = members
        .iter()
        .flat_map(|&m| g.outputs_of(m).to_vec())
        .filter(|&v| {
            g.uses(v).iter().any(|u| match u {
                Use::Node(user, _) => !set.contains(user),
                Use::Return(..) => true,
            })
        })
        .collect();
    let mut sub = Graph::new();
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    for &v in &inputs {
        let s = sub.add_input(g.value_type(v).clone(), g.value_name(v));
        map.insert(v, s);
    }
    let root = sub.root();
    for &m in members {
        let mut ins = Vec::new();
        for &v in g.inputs_of(m) {
            let s = match map.get(&v) {
                Some(&s) => s,
                None => {
                    let c = g.constant_value(v).expect("pointwise_of: a fusible node's other inputs are constants");
                    let s = sub.insert_constant(root, None, c);
                    sub.set_value_name(s, g.value_name(v));
                    map.insert(v, s);
                    s
                }
            };
            ins.push(s);
        }
        let types = g.outputs_of(m).iter().map(|&o| g.value_type(o).clone()).collect();
        let sm = sub.append_node(root, g.kind(m), &ins, types);
        for (k, a) in g.attrs(m).to_vec() {
            sub.set_attr(sm, &k, a);
        }
        for (&o, &so) in g.outputs_of(m).iter().zip(&sub.outputs_of(sm).to_vec()) {
            sub.set_value_name(so, g.value_name(o));
            map.insert(o, so);
        }
    }
    for v in &outputs {
        sub.add_output(map[v]);
    }
    let last = *members.last().expect("a group has members");
    let types = outputs.iter().map(|&v| g.value_type(v).clone()).collect();
    let node = g.insert_before(last, FUSION_GROUP, &inputs, types);
    g.set_attr(node, "Subgraph", Attr::Graph(Box::new(sub)));
    for (&old, new) in outputs.iter().zip(g.outputs_of(node).to_vec()) {
        let name = g.value_name(old).map(str::to_string);
        g.set_value_name(new, name.as_deref());
        g.replace_all_uses_with(old, new);
    }
    // Consumers first, so that each member's outputs have no uses left when it goes.
    for &m in members.iter().rev() {
        let removed = g.destroy_node(m);
        debug_assert!(removed.is_ok(), "a fused node is still used: {removed:?}");
    }
}
