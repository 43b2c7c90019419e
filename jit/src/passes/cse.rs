//! Common-subexpression elimination: a pure node (Note [Effects in passes]) with the same kind,
//! inputs and attributes as an earlier node in the same or an enclosing block is replaced by
//! that node's outputs. Constants are pooled the same way. A node whose inputs or outputs may
//! be written, directly or through an alias (Note [Alias classes]), is neither merged nor
//! merged into: two equal tensors merged into one would both see a later write to either, and
//! two reads of a tensor written between them are not equal.

use std::collections::HashMap;

use crate::ir::{Attr, BlockId, Graph, NodeId, ValueId};

use super::{effects, AliasDb};

/// Runs the pass; returns whether anything was merged.
pub fn eliminate_common_subexpressions(g: &mut Graph) -> bool {
    let mut aliases = AliasDb::new(g);
    block(g, g.root(), &mut HashMap::new(), &mut aliases)
}

fn signature(g: &Graph, n: NodeId) -> String {
    let attrs: Vec<String> = g
        .attrs(n)
        .iter()
        .map(|(k, a)| match a {
            Attr::Const(c) => format!("{k}={c:?}"),
            Attr::Graph(sub) => format!("{k}={sub}"),
        })
        .collect();
    let types: Vec<String> = g.outputs_of(n).iter().map(|&v| g.value_type(v).erased().to_string()).collect();
    format!("{}|{:?}|{}|{}", g.kind(n), g.inputs_of(n), attrs.join(","), types.join(","))
}

fn block(g: &mut Graph, b: BlockId, seen: &mut HashMap<String, Vec<ValueId>>, aliases: &mut AliasDb) -> bool {
    let mut changed = false;
    for n in g.block_nodes(b).to_vec() {
        if !g.blocks_of(n).is_empty() {
            for c in g.blocks_of(n).to_vec() {
                let mut inner = seen.clone();
                changed |= block(g, c, &mut inner, aliases);
            }
            continue;
        }
        if !effects(g, n).is_pure() {
            continue;
        }
        if !aliases.untouched(g, n) {
            continue;
        }
        let sig = signature(g, n);
        match seen.get(&sig) {
            Some(earlier) => {
                for (old, new) in g.outputs_of(n).to_vec().into_iter().zip(earlier.clone()) {
                    g.replace_all_uses_with(old, new);
                }
                if g.destroy_node(n).is_ok() {
                    changed = true;
                }
            }
            None => {
                seen.insert(sig, g.outputs_of(n).to_vec());
            }
        }
    }
    changed
}
