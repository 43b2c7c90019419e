//! Graph passes. Each takes a graph, changes it in place and says whether it changed anything;
//! each is tested on the text form (an input graph and the graph expected after the pass).
//!
//! Note [Effects in passes]: what may be removed, merged, folded or rewritten is decided by
//! [`effects`]: an operator whose schema writes an argument (`add_`, `out=` variants) is
//! *mutating*; one that takes a `Generator` or is a dropout is *random*; `prim::Print` and
//! `prim::RaiseException` have side effects. Dead-code elimination keeps mutating, random and
//! side-effecting nodes (PyTorch removes unused random calls; keeping them keeps the generator's
//! state what eager code leaves). Merging and rewriting would be wrong for a tensor that is
//! later written to, so CSE and the tensor peepholes only touch nodes whose inputs and outputs
//! no node writes, directly or through an alias ([`AliasDb`], Note [Alias classes]).

pub mod alias;
pub mod constant_propagation;
pub mod cse;
pub mod dce;
pub mod fuse;
pub mod peephole;
pub mod shape_prop;
pub mod unroll;

use crate::interpreter::resolve;
use crate::ir::{Graph, NodeId};

pub use alias::AliasDb;
pub use constant_propagation::constant_propagation;
pub use cse::eliminate_common_subexpressions;
pub use dce::eliminate_dead_code;
pub use peephole::peephole;
pub use shape_prop::{propagate_shapes, set_input_types, ShapeReport};
pub use unroll::unroll_loops;

/// The derivative-preserving passes to a fixed point: constant propagation, unrolling of small
/// constant loops, peephole rules, CSE and dead-code elimination. Returns whether anything
/// changed.
pub fn optimize(g: &mut Graph) -> bool {
    let mut changed = false;
    for _ in 0..16 {
        let mut round = constant_propagation(g);
        round |= unroll_loops(g);
        round |= peephole(g);
        round |= eliminate_common_subexpressions(g);
        round |= eliminate_dead_code(g);
        if !round {
            break;
        }
        changed = true;
    }
    changed
}

/// What running a node may do besides computing its outputs (Note [Effects in passes]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effects {
    /// Writes one of its inputs.
    pub mutates: bool,
    /// Draws random numbers.
    pub random: bool,
    /// Prints, raises, or runs blocks that may.
    pub side_effects: bool,
}

impl Effects {
    /// Nothing but its outputs: may be removed, merged or folded.
    pub fn is_pure(&self) -> bool {
        !self.mutates && !self.random && !self.side_effects
    }
}

const RANDOM_OPS: &[&str] = &[
    "dropout",
    "dropout_",
    "feature_dropout",
    "alpha_dropout",
    "feature_alpha_dropout",
    "native_dropout",
    "rrelu",
    "rrelu_",
];

/// The effects of a node (Note [Effects in passes]).
pub fn effects(g: &Graph, n: NodeId) -> Effects {
    let kind = g.kind(n);
    let mut e = Effects { mutates: false, random: false, side_effects: false };
    match kind {
        // The autocast and grad-mode queries read state that changes between runs: never folded.
        "prim::Print"
        | "prim::RaiseException"
        | "aten::warn"
        | "aten::is_autocast_enabled"
        | "aten::is_autocast_cpu_enabled"
        | "aten::is_grad_enabled" => e.side_effects = true,
        "prim::If" | "prim::Loop" => {
            for &b in g.blocks_of(n) {
                for &m in g.block_nodes(b) {
                    let inner = effects(g, m);
                    e.mutates |= inner.mutates;
                    e.random |= inner.random;
                    e.side_effects |= inner.side_effects;
                }
            }
        }
        k if k.starts_with("aten::") => match resolve(g, n) {
            Ok((_, schema)) => {
                e.mutates = schema.is_mutable();
                e.random = RANDOM_OPS.contains(&schema.name.as_str())
                    || schema.arguments.iter().any(|a| {
                        matches!(&a.ty, schema::Type::Generator)
                            || matches!(&a.ty, schema::Type::Optional(t) if **t == schema::Type::Generator)
                    });
            }
            // A builtin (number arithmetic, `aten::size`) or an unknown operator: builtins are
            // pure; an unknown operator is treated as having every effect.
            Err(_) => {
                let builtin = matches!(
                    k,
                    "aten::size"
                        | "aten::dim"
                        | "aten::numel"
                        | "aten::Int"
                        | "aten::Float"
                        | "aten::Bool"
                        | "aten::ScalarImplicit"
                        | "aten::__getitem__"
                        | "aten::len"
                        | "aten::__not__"
                        | "aten::is_floating_point"
                        | "aten::is_complex"
                        | "aten::list"
                        | "aten::keys"
                        | "aten::items"
                        | "aten::get"
                        | "aten::_set_item"
                        | "aten::Delete"
                        | "aten::pop"
                        | "aten::setdefault"
                        | "aten::update"
                        | "aten::clear"
                        | "prim::requires_grad"
                        | "prim::is_cuda"
                ) || g.inputs_of(n).iter().all(|&v| !g.value_type(v).is_tensor());
                if !builtin {
                    e.mutates = true;
                    e.side_effects = true;
                }
            }
        },
        _ => {}
    }
    e
}

/// Whether any node of the graph writes to a tensor.
pub fn has_mutation(g: &Graph) -> bool {
    g.all_nodes().into_iter().any(|n| effects(g, n).mutates)
}
