//! Loop unrolling: a `prim::Loop` that runs a constant number of times with a condition that
//! is constantly true (a `for` over `range(<constant>)`) is replaced by that many copies of its
//! body, each reading the trip's index as a constant and the previous copy's carried values;
//! a loop that runs zero times by its initial values. The copies then fold, merge and fuse
//! with the nodes around them. Only small loops are unrolled (PyTorch's limits): at most
//! [`MAX_TRIPS`] trips and [`MAX_UNROLLED_NODES`] nodes copied in all. Loops inside loops are
//! unrolled first.

use std::collections::HashMap;

use crate::ir::{BlockId, Constant, Graph, NodeId};

/// The most trips a loop may have to be unrolled.
pub const MAX_TRIPS: i64 = 64;
/// The most nodes an unrolled loop may copy (trips times the body's nodes, nested ones
/// counted).
pub const MAX_UNROLLED_NODES: usize = 512;

/// Runs the pass; returns whether any loop was unrolled.
pub fn unroll_loops(g: &mut Graph) -> bool {
    block(g, g.root())
}

fn size(g: &Graph, b: BlockId) -> usize {
    g.block_nodes(b).iter().map(|&n| 1 + g.blocks_of(n).iter().map(|&c| size(g, c)).sum::<usize>()).sum()
}

fn block(g: &mut Graph, b: BlockId) -> bool {
    let mut changed = false;
    for n in g.block_nodes(b).to_vec() {
        if !g.is_alive(n) {
            continue;
        }
        for c in g.blocks_of(n).to_vec() {
            changed |= block(g, c);
        }
        if g.kind(n) == "prim::Loop" {
            changed |= unroll(g, n);
        }
    }
    changed
}

fn unroll(g: &mut Graph, n: NodeId) -> bool {
    let ins = g.inputs_of(n).to_vec();
    let body = g.blocks_of(n)[0];
    let is_true = |g: &Graph, v| matches!(g.constant_value(v), Some(Constant::Bool(true)));
    let Some(Constant::Int(trips)) = g.constant_value(ins[0]) else { return false };
    if !is_true(g, ins[1]) || !is_true(g, g.block_returns(body)[0]) {
        return false;
    }
    let trips = trips.max(0);
    if trips > MAX_TRIPS || trips as usize * size(g, body) > MAX_UNROLLED_NODES {
        return false;
    }
    let outer = g.node_block(n);
    let Some(mut pos) = g.position(n) else { return false };
    let params = g.block_params(body).to_vec();
    let returns = g.block_returns(body).to_vec();
    let mut carried = ins[2..].to_vec();
    for i in 0..trips {
        let index = g.insert_constant(outer, Some(pos), Constant::Int(i));
        pos += 1;
        let mut map: HashMap<_, _> = params[1..].iter().copied().zip(carried.iter().copied()).collect();
        map.insert(params[0], index);
        pos = g.clone_block_into(body, outer, pos, &mut map);
        carried = returns[1..].iter().map(|v| *map.get(v).unwrap_or(v)).collect();
    }
    for (old, new) in g.outputs_of(n).to_vec().into_iter().zip(carried) {
        g.replace_all_uses_with(old, new);
    }
    g.destroy_node(n).is_ok()
}
