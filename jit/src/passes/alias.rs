//! Alias analysis: which values may share memory with a value some node writes to (PyTorch's
//! `AliasDb`, reduced to what the passes ask).
//!
//! Note [Alias classes]: values are put in classes that may share memory, by union-find over
//! the whole graph (blocks included):
//! - an operator's output joins every input whose alias annotation names the same set
//!   (`view(Tensor(a) self, ...) -> Tensor(a)`, `add_(Tensor(a!) self, ...) -> Tensor(a!)`);
//!   an output with a wildcard (`Tensor(*)`) or an annotation no input has joins all its
//!   tensor inputs;
//! - containers and their items are one class: `prim::ListConstruct`, `TupleConstruct`,
//!   `ListUnpack`, `TupleUnpack`, `TupleIndex`, `ListIndex`, `__getitem__`, `aten::append`,
//!   `prim::unchecked_cast`, a list's `aten::slice`, and a dict's construction, entries and
//!   changes (Note [Dicts]);
//! - a block's parameters and returns join the values of the `If`/`Loop` that flow into and out
//!   of them;
//! - every tensor input of the graph is one class: the caller may pass one tensor twice;
//! - a node we cannot describe (an operator without a schema that takes tensors) joins all its
//!   inputs and outputs and writes them; a fusion group reads its inputs into fresh outputs.
//!
//! A class is *written* when a node writes one of its members (an argument annotated `!`). A
//! node that reads and produces only values of unwritten classes computes the same thing
//! wherever it runs, so CSE may merge it with an equal node and a peephole rule may make its
//! output share memory with its input.

use std::collections::HashSet;

use crate::interpreter::resolve;
use crate::ir::{Graph, NodeId, ValueId};

/// Alias classes of one graph (Note [Alias classes]). Built once; stale after the graph changes.
pub struct AliasDb {
    parent: Vec<usize>,
    written: HashSet<usize>,
}

impl AliasDb {
    /// The classes of `g`'s values.
    pub fn new(g: &Graph) -> AliasDb {
        let mut db = AliasDb { parent: (0..g.value_capacity()).collect(), written: HashSet::new() };
        let tensor_inputs: Vec<ValueId> =
            g.inputs().iter().copied().filter(|&v| may_hold_tensor(g.value_type(v))).collect();
        for w in tensor_inputs.windows(2) {
            db.union(w[0], w[1]);
        }
        let mut writes: Vec<ValueId> = Vec::new();
        for n in g.all_nodes() {
            db.node(g, n, &mut writes);
        }
        db.written = writes.into_iter().map(|v| db.find(v.0 as usize)).collect();
        db
    }

    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    fn union(&mut self, a: ValueId, b: ValueId) {
        let (x, y) = (self.find(a.0 as usize), self.find(b.0 as usize));
        if x != y {
            self.parent[x] = y;
        }
    }

    fn node(&mut self, g: &Graph, n: NodeId, writes: &mut Vec<ValueId>) {
        let kind = g.kind(n);
        let ins = g.inputs_of(n);
        let outs = g.outputs_of(n);
        match kind {
            "prim::Constant" => {}
            "prim::ListConstruct"
            | "prim::TupleConstruct"
            | "prim::ListUnpack"
            | "prim::TupleUnpack"
            | "prim::TupleIndex"
            | "prim::ListIndex"
            | "aten::__getitem__"
            | "aten::append"
            | "prim::unchecked_cast"
            | "prim::DictConstruct"
            | "aten::list" => self.together(g, n),
            // Dict operations, and the list forms of `_set_item` and `Delete` (Note [Dicts]).
            "aten::keys" | "aten::values" | "aten::items" | "aten::get" | "aten::_set_item" | "aten::Delete"
            | "aten::pop" | "aten::setdefault" | "aten::update" | "aten::clear" | "aten::copy"
                if ins.first().is_some_and(|&c| {
                    matches!(g.value_type(c), crate::types::JitType::Dict(..) | crate::types::JitType::List(_))
                }) =>
            {
                self.together(g, n)
            }
            // A list made of two lists holds their items.
            "aten::add" if matches!(g.value_type(outs[0]), crate::types::JitType::List(_)) => self.together(g, n),
            // A slice of a list holds the list's items.
            "aten::slice" if matches!(g.value_type(ins[0]), crate::types::JitType::List(_)) => self.together(g, n),
            "prim::If" | "prim::Loop" => {
                let loop_ = kind == "prim::Loop";
                for &b in g.blocks_of(n) {
                    for (k, &r) in g.block_returns(b).iter().enumerate() {
                        // A loop's body returns the condition first.
                        let out = if loop_ { k.checked_sub(1).map(|k| outs[k]) } else { Some(outs[k]) };
                        if let Some(o) = out {
                            self.union(o, r);
                        }
                    }
                    if loop_ {
                        // The carried values: the node's inputs after the trip count and the
                        // condition, the body's parameters after the counter.
                        for (k, &p) in g.block_params(b).iter().enumerate().skip(1) {
                            self.union(p, ins[k + 1]);
                            self.union(p, outs[k - 1]);
                        }
                    }
                }
            }
            k if k.starts_with("aten::") => match resolve(g, n) {
                Ok((_, schema)) => {
                    for (arg, &v) in schema.arguments.iter().zip(ins) {
                        if arg.is_write() {
                            writes.push(v);
                        }
                    }
                    for (ret, &o) in schema.returns.iter().zip(outs) {
                        if !may_hold_tensor(g.value_type(o)) {
                            continue;
                        }
                        let sets: &[String] = ret.alias.as_ref().map_or(&[], |a| a.before.as_slice());
                        if sets.is_empty() {
                            continue; // a fresh tensor
                        }
                        let mut joined = false;
                        for (arg, &v) in schema.arguments.iter().zip(ins) {
                            let shares = arg.alias.as_ref().is_some_and(|a| a.before.iter().any(|s| sets.contains(s)));
                            if shares {
                                self.union(o, v);
                                joined = true;
                            }
                        }
                        if !joined || sets.iter().any(|s| s == "*") {
                            for &v in ins.iter().filter(|&&v| may_hold_tensor(g.value_type(v))) {
                                self.union(o, v);
                            }
                        }
                    }
                }
                // Number arithmetic and the other builtins touch no tensor memory.
                Err(_) if !ins.iter().chain(outs).any(|&v| may_hold_tensor(g.value_type(v))) => {}
                Err(_) if super::effects(g, n).is_pure() => {
                    // A builtin reading a tensor (`aten::size`, `aten::Int`): no tensor out.
                }
                Err(_) => self.unknown(g, n, writes),
            },
            // Elementwise kernels over their inputs, into fresh outputs.
            k if k.starts_with("prim::FusionGroup") => {}
            _ => {
                if ins.iter().chain(outs).any(|&v| may_hold_tensor(g.value_type(v)))
                    && !matches!(kind, "prim::NumToTensor" | "prim::dtype" | "prim::device" | "prim::Print")
                {
                    self.unknown(g, n, writes);
                }
            }
        }
    }

    /// Containers and their items: every tensor-holding input and output in one class.
    fn together(&mut self, g: &Graph, n: NodeId) {
        let held: Vec<ValueId> = g
            .inputs_of(n)
            .iter()
            .chain(g.outputs_of(n))
            .copied()
            .filter(|&v| may_hold_tensor(g.value_type(v)))
            .collect();
        for w in held.windows(2) {
            self.union(w[0], w[1]);
        }
    }

    fn unknown(&mut self, g: &Graph, n: NodeId, writes: &mut Vec<ValueId>) {
        let all: Vec<ValueId> = g.inputs_of(n).iter().chain(g.outputs_of(n)).copied().collect();
        for w in all.windows(2) {
            self.union(w[0], w[1]);
        }
        writes.extend(all);
    }

    /// Whether `v` may share memory with a value some node writes.
    pub fn may_be_written(&mut self, v: ValueId) -> bool {
        let root = self.find(v.0 as usize);
        self.written.contains(&root)
    }

    /// Whether every input and output of `n` is in a class no node writes: the node may be
    /// merged with an equal one, or its output made to share its input's memory.
    pub fn untouched(&mut self, g: &Graph, n: NodeId) -> bool {
        g.inputs_of(n).iter().chain(g.outputs_of(n)).all(|&v| !self.may_be_written(v))
    }
}

/// Whether a value of this type may be or hold a tensor.
fn may_hold_tensor(t: &crate::types::JitType) -> bool {
    use crate::types::JitType;
    match t {
        JitType::Tensor(_) => true,
        JitType::List(e) | JitType::Optional(e) => may_hold_tensor(e),
        JitType::Dict(k, v) => may_hold_tensor(k) || may_hold_tensor(v),
        JitType::Tuple(ts) => ts.iter().any(may_hold_tensor),
        _ => false,
    }
}
