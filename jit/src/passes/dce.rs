//! Dead-code elimination: removes nodes none of whose outputs is used and that have no effect
//! (Note [Effects in passes]), and the unused outputs of `prim::If` nodes. Walks each block
//! backwards, so a chain of dead nodes goes in one sweep.

use crate::ir::{BlockId, Graph, NodeId};

use super::effects;

/// Runs the pass; returns whether anything was removed.
pub fn eliminate_dead_code(g: &mut Graph) -> bool {
    let mut changed = false;
    while sweep(g, g.root()) {
        changed = true;
    }
    changed
}

fn sweep(g: &mut Graph, b: BlockId) -> bool {
    let mut changed = false;
    for n in g.block_nodes(b).to_vec().into_iter().rev() {
        if !g.is_alive(n) {
            continue;
        }
        if g.kind(n) == "prim::If" {
            changed |= drop_unused_if_outputs(g, n);
        }
        for c in g.blocks_of(n).to_vec() {
            changed |= sweep(g, c);
        }
        let unused = g.outputs_of(n).iter().all(|&v| g.uses(v).is_empty());
        if unused && effects(g, n).is_pure() && g.destroy_node(n).is_ok() {
            changed = true;
        }
    }
    changed
}

/// Removes output `k` of an `If` (and what each branch returns for it) when nothing uses it.
fn drop_unused_if_outputs(g: &mut Graph, n: NodeId) -> bool {
    let mut changed = false;
    let mut k = g.outputs_of(n).len();
    while k > 0 {
        k -= 1;
        if g.uses(g.outputs_of(n)[k]).is_empty() {
            for b in g.blocks_of(n).to_vec() {
                g.remove_return(b, k);
            }
            g.remove_output(n, k);
            changed = true;
        }
    }
    changed
}
