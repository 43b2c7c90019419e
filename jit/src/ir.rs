//! The graph IR (PyTorch's `torch/csrc/jit/ir`): a [`Graph`] owns every node, value and block in
//! arenas addressed by ids. Values are SSA: each is a block parameter or one output of one node,
//! and keeps its uses. Node kinds are open qualified names (`aten::add`, `prim::Constant`), not
//! a type per operator; an `aten::` node names an operator by schema name and its overload is
//! resolved from the input types, as in TorchScript. `prim::If` and `prim::Loop` nodes own
//! blocks.
//!
//! Note [Arena ids]: nodes removed by a pass stay in the arena, marked dead and out of every
//! block, so ids held elsewhere never dangle (printing and parsing again compacts). Ids are only meaningful for
//! the graph that made them.

use std::fmt;

use aten::Tensor;
use c10::{Device, Error, Result};

use crate::types::JitType;

/// A node of a graph.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);
/// A value of a graph.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub(crate) u32);
/// A block of a graph (the graph's body is block 0).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub(crate) u32);

/// The value of a `prim::Constant` (its `value` attribute) or of another constant attribute.
#[derive(Clone, Debug, PartialEq)]
pub enum Constant {
    /// `None` (`prim::Constant()` with no attribute).
    None,
    /// An `int`.
    Int(i64),
    /// A `float`.
    Float(f64),
    /// A `bool`.
    Bool(bool),
    /// A `str`.
    Str(String),
    /// An `int[]`.
    IntList(Vec<i64>),
    /// A `float[]`.
    FloatList(Vec<f64>),
    /// A `bool[]`.
    BoolList(Vec<bool>),
    /// A `Device`.
    Device(Device),
    /// A tensor: an index into the graph's tensor-constant table (printed `<Tensor k>`).
    Tensor(usize),
}

impl Constant {
    /// The IR type of the constant.
    pub fn ty(&self, g: &Graph) -> JitType {
        match self {
            Constant::None => JitType::None,
            Constant::Int(_) => JitType::Int,
            Constant::Float(_) => JitType::Float,
            Constant::Bool(_) => JitType::Bool,
            Constant::Str(_) => JitType::Str,
            Constant::IntList(_) => JitType::List(Box::new(JitType::Int)),
            Constant::FloatList(_) => JitType::List(Box::new(JitType::Float)),
            Constant::BoolList(_) => JitType::List(Box::new(JitType::Bool)),
            Constant::Device(_) => JitType::Device,
            Constant::Tensor(i) => match g.tensor_constants.get(*i) {
                Some(t) => JitType::Tensor(crate::types::TensorType::of(t)),
                None => JitType::tensor(),
            },
        }
    }

    /// Equality that compares floats by bits (constants pooled by CSE must be identical).
    pub fn same(&self, other: &Constant) -> bool {
        match (self, other) {
            (Constant::Float(a), Constant::Float(b)) => a.to_bits() == b.to_bits(),
            (Constant::FloatList(a), Constant::FloatList(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (a, b) => a == b,
        }
    }
}

/// A node attribute.
#[derive(Clone, Debug)]
pub enum Attr {
    /// A constant (`value=1`, `name="weight"`).
    Const(Constant),
    /// A subgraph (the body of a `prim::FusionGroup`).
    Graph(Box<Graph>),
}

/// Where a value comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ValueDef {
    /// Output `k` of a node.
    Node(NodeId, usize),
    /// Parameter `k` of a block (for block 0: a graph input).
    Param(BlockId, usize),
}

/// One use of a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Use {
    /// Input `k` of a node.
    Node(NodeId, usize),
    /// Returned value `k` of a block.
    Return(BlockId, usize),
}

#[derive(Clone, Debug)]
pub(crate) struct NodeData {
    kind: String,
    inputs: Vec<ValueId>,
    outputs: Vec<ValueId>,
    blocks: Vec<BlockId>,
    attrs: Vec<(String, Attr)>,
    owner: BlockId,
    alive: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct ValueData {
    ty: JitType,
    name: Option<String>,
    def: ValueDef,
    uses: Vec<Use>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct BlockData {
    params: Vec<ValueId>,
    nodes: Vec<NodeId>,
    returns: Vec<ValueId>,
    owner: Option<NodeId>,
}

/// A graph: inputs, nodes in order, outputs, and the tensors its constants refer to.
#[derive(Clone, Debug)]
pub struct Graph {
    nodes: Vec<NodeData>,
    values: Vec<ValueData>,
    blocks: Vec<BlockData>,
    /// Tensors referred to by `Constant::Tensor`.
    pub tensor_constants: Vec<Tensor>,
}

impl Default for Graph {
    fn default() -> Self {
        Graph::new()
    }
}

fn ir_error(msg: impl Into<String>) -> Error {
    Error::invalid("jit", msg)
}

impl Graph {
    /// An empty graph: no inputs, no nodes, no outputs.
    pub fn new() -> Graph {
        Graph {
            nodes: Vec::new(),
            values: Vec::new(),
            blocks: vec![BlockData::default()],
            tensor_constants: Vec::new(),
        }
    }

    /// The graph's body.
    pub fn root(&self) -> BlockId {
        BlockId(0)
    }

    /// The graph's inputs.
    pub fn inputs(&self) -> &[ValueId] {
        &self.blocks[0].params
    }

    /// The graph's outputs.
    pub fn outputs(&self) -> &[ValueId] {
        &self.blocks[0].returns
    }

    /// Adds a graph input.
    pub fn add_input(&mut self, ty: JitType, name: Option<&str>) -> ValueId {
        self.add_param(BlockId(0), ty, name)
    }

    /// Adds a parameter to a block.
    pub fn add_param(&mut self, b: BlockId, ty: JitType, name: Option<&str>) -> ValueId {
        let k = self.blocks[b.0 as usize].params.len();
        let v = self.new_value(ty, ValueDef::Param(b, k));
        self.values[v.0 as usize].name = name.map(str::to_string);
        self.blocks[b.0 as usize].params.push(v);
        v
    }

    /// Adds an output to node `n` (an `If` or `Loop`, whose outputs are known only once its
    /// blocks are built).
    pub fn add_node_output(&mut self, n: NodeId, ty: JitType) -> ValueId {
        let k = self.nodes[n.0 as usize].outputs.len();
        let v = self.new_value(ty, ValueDef::Node(n, k));
        self.nodes[n.0 as usize].outputs.push(v);
        v
    }

    /// Appends a value to what a block returns (for block 0: a graph output).
    pub fn add_return(&mut self, b: BlockId, v: ValueId) {
        let k = self.blocks[b.0 as usize].returns.len();
        self.values[v.0 as usize].uses.push(Use::Return(b, k));
        self.blocks[b.0 as usize].returns.push(v);
    }

    /// Appends a graph output.
    pub fn add_output(&mut self, v: ValueId) {
        self.add_return(BlockId(0), v)
    }

    fn new_value(&mut self, ty: JitType, def: ValueDef) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        self.values.push(ValueData { ty, name: None, def, uses: Vec::new() });
        id
    }

    /// Creates a node of `kind` with these inputs and one output per type, at position `pos` of
    /// block `b` (`None`: at the end).
    pub fn insert_node(
        &mut self,
        b: BlockId,
        pos: Option<usize>,
        kind: &str,
        inputs: &[ValueId],
        output_types: Vec<JitType>,
    ) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(NodeData {
            kind: kind.to_string(),
            inputs: inputs.to_vec(),
            outputs: Vec::new(),
            blocks: Vec::new(),
            attrs: Vec::new(),
            owner: b,
            alive: true,
        });
        for (k, &v) in inputs.iter().enumerate() {
            self.values[v.0 as usize].uses.push(Use::Node(id, k));
        }
        for (k, ty) in output_types.into_iter().enumerate() {
            let v = self.new_value(ty, ValueDef::Node(id, k));
            self.nodes[id.0 as usize].outputs.push(v);
        }
        let list = &mut self.blocks[b.0 as usize].nodes;
        match pos {
            Some(p) if p <= list.len() => list.insert(p, id),
            _ => list.push(id),
        }
        id
    }

    /// Appends a node at the end of block `b`.
    pub fn append_node(&mut self, b: BlockId, kind: &str, inputs: &[ValueId], output_types: Vec<JitType>) -> NodeId {
        self.insert_node(b, None, kind, inputs, output_types)
    }

    /// Creates a node just before `before`, in the same block.
    pub fn insert_before(
        &mut self,
        before: NodeId,
        kind: &str,
        inputs: &[ValueId],
        output_types: Vec<JitType>,
    ) -> NodeId {
        let b = self.node_block(before);
        let pos = self.position(before);
        self.insert_node(b, pos, kind, inputs, output_types)
    }

    /// The index of a live node in its block.
    pub fn position(&self, n: NodeId) -> Option<usize> {
        self.blocks[self.node_block(n).0 as usize].nodes.iter().position(|&m| m == n)
    }

    /// Adds a block to a node (`prim::If`'s branches, `prim::Loop`'s body).
    pub fn add_block(&mut self, n: NodeId) -> BlockId {
        let id = BlockId(self.blocks.len() as u32);
        self.blocks.push(BlockData { owner: Some(n), ..BlockData::default() });
        self.nodes[n.0 as usize].blocks.push(id);
        id
    }

    /// Copies the nodes of block `src` (with their attributes and blocks) into block `dest` at
    /// position `pos`, reading `map[v]` wherever they read a value `v` of the map (the block's
    /// parameters, to begin with) and `v` itself otherwise; the copies' outputs are added to
    /// the map. Returns the position after the last copy.
    pub fn clone_block_into(
        &mut self,
        src: BlockId,
        dest: BlockId,
        mut pos: usize,
        map: &mut std::collections::HashMap<ValueId, ValueId>,
    ) -> usize {
        for n in self.block_nodes(src).to_vec() {
            let inputs: Vec<ValueId> = self.inputs_of(n).iter().map(|v| *map.get(v).unwrap_or(v)).collect();
            let types: Vec<JitType> = self.outputs_of(n).iter().map(|&v| self.value_type(v).clone()).collect();
            let kind = self.kind(n).to_string();
            let copy = self.insert_node(dest, Some(pos), &kind, &inputs, types);
            pos += 1;
            self.nodes[copy.0 as usize].attrs = self.nodes[n.0 as usize].attrs.clone();
            for (&old, &new) in self.outputs_of(n).to_vec().iter().zip(&self.outputs_of(copy).to_vec()) {
                map.insert(old, new);
            }
            for b in self.blocks_of(n).to_vec() {
                let nb = self.add_block(copy);
                for p in self.block_params(b).to_vec() {
                    let ty = self.value_type(p).clone();
                    let np = self.add_param(nb, ty, None);
                    map.insert(p, np);
                }
                self.clone_block_into(b, nb, 0, map);
                for r in self.block_returns(b).to_vec() {
                    let nr = *map.get(&r).unwrap_or(&r);
                    self.add_return(nb, nr);
                }
            }
        }
        pos
    }

    /// Appends a `prim::Constant` to block `b` (or inserts it at `pos`) and returns its value.
    pub fn insert_constant(&mut self, b: BlockId, pos: Option<usize>, c: Constant) -> ValueId {
        let ty = c.ty(self);
        let n = self.insert_node(b, pos, "prim::Constant", &[], vec![ty]);
        if c != Constant::None {
            self.set_attr(n, "value", Attr::Const(c));
        }
        self.outputs_of(n)[0]
    }

    /// Adds a tensor to the constant table and returns its index (a tensor already in the table
    /// keeps its index).
    pub fn add_tensor_constant(&mut self, t: Tensor) -> usize {
        if let Some(i) = self.tensor_constants.iter().position(|c| c.is_same(&t)) {
            return i;
        }
        self.tensor_constants.push(t);
        self.tensor_constants.len() - 1
    }

    /// Sets (or replaces) an attribute.
    pub fn set_attr(&mut self, n: NodeId, name: &str, a: Attr) {
        let attrs = &mut self.nodes[n.0 as usize].attrs;
        match attrs.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = a,
            None => attrs.push((name.to_string(), a)),
        }
    }

    /// An attribute.
    pub fn attr(&self, n: NodeId, name: &str) -> Option<&Attr> {
        self.nodes[n.0 as usize].attrs.iter().find(|(k, _)| k == name).map(|(_, a)| a)
    }

    /// Every attribute, in order.
    pub fn attrs(&self, n: NodeId) -> &[(String, Attr)] {
        &self.nodes[n.0 as usize].attrs
    }

    /// The constant of a `prim::Constant` node (`None` for other nodes).
    pub fn constant_of(&self, n: NodeId) -> Option<Constant> {
        if self.kind(n) != "prim::Constant" {
            return None;
        }
        match self.attr(n, "value") {
            Some(Attr::Const(c)) => Some(c.clone()),
            Some(Attr::Graph(_)) => None,
            None => Some(Constant::None),
        }
    }

    /// The constant a value is, if it is a `prim::Constant`'s output.
    pub fn constant_value(&self, v: ValueId) -> Option<Constant> {
        match self.def(v) {
            ValueDef::Node(n, _) => self.constant_of(n),
            ValueDef::Param(..) => None,
        }
    }

    /// A node's kind (`aten::add`).
    pub fn kind(&self, n: NodeId) -> &str {
        &self.nodes[n.0 as usize].kind
    }

    /// A node's inputs.
    pub fn inputs_of(&self, n: NodeId) -> &[ValueId] {
        &self.nodes[n.0 as usize].inputs
    }

    /// A node's outputs.
    pub fn outputs_of(&self, n: NodeId) -> &[ValueId] {
        &self.nodes[n.0 as usize].outputs
    }

    /// A node's blocks.
    pub fn blocks_of(&self, n: NodeId) -> &[BlockId] {
        &self.nodes[n.0 as usize].blocks
    }

    /// The block a node is in.
    pub fn node_block(&self, n: NodeId) -> BlockId {
        self.nodes[n.0 as usize].owner
    }

    /// Whether the node is still in the graph.
    pub fn is_alive(&self, n: NodeId) -> bool {
        self.nodes[n.0 as usize].alive
    }

    /// A block's nodes, in order.
    pub fn block_nodes(&self, b: BlockId) -> &[NodeId] {
        &self.blocks[b.0 as usize].nodes
    }

    /// A block's parameters.
    pub fn block_params(&self, b: BlockId) -> &[ValueId] {
        &self.blocks[b.0 as usize].params
    }

    /// What a block returns.
    pub fn block_returns(&self, b: BlockId) -> &[ValueId] {
        &self.blocks[b.0 as usize].returns
    }

    /// The node that owns a block (`None` for the graph's body).
    pub fn block_owner(&self, b: BlockId) -> Option<NodeId> {
        self.blocks[b.0 as usize].owner
    }

    /// A value's type.
    pub fn value_type(&self, v: ValueId) -> &JitType {
        &self.values[v.0 as usize].ty
    }

    /// Sets a value's type.
    pub fn set_type(&mut self, v: ValueId, ty: JitType) {
        self.values[v.0 as usize].ty = ty;
    }

    /// A value's debug name (`x` in `%x`), if it has one.
    pub fn value_name(&self, v: ValueId) -> Option<&str> {
        self.values[v.0 as usize].name.as_deref()
    }

    /// Sets a value's debug name.
    pub fn set_value_name(&mut self, v: ValueId, name: Option<&str>) {
        self.values[v.0 as usize].name = name.map(str::to_string);
    }

    /// Where a value comes from.
    pub fn def(&self, v: ValueId) -> ValueDef {
        self.values[v.0 as usize].def
    }

    /// The node producing a value (`None` for block parameters).
    pub fn producer(&self, v: ValueId) -> Option<NodeId> {
        match self.def(v) {
            ValueDef::Node(n, _) => Some(n),
            ValueDef::Param(..) => None,
        }
    }

    /// A value's uses.
    pub fn uses(&self, v: ValueId) -> &[Use] {
        &self.values[v.0 as usize].uses
    }

    /// Replaces input `k` of node `n` with `v`.
    pub fn replace_input(&mut self, n: NodeId, k: usize, v: ValueId) {
        let old = self.nodes[n.0 as usize].inputs[k];
        self.values[old.0 as usize].uses.retain(|u| *u != Use::Node(n, k));
        self.nodes[n.0 as usize].inputs[k] = v;
        self.values[v.0 as usize].uses.push(Use::Node(n, k));
    }

    /// Replaces every use of `old` with `new` (`replaceAllUsesWith`).
    pub fn replace_all_uses_with(&mut self, old: ValueId, new: ValueId) {
        if old == new {
            return;
        }
        let uses = std::mem::take(&mut self.values[old.0 as usize].uses);
        for u in &uses {
            match *u {
                Use::Node(n, k) => self.nodes[n.0 as usize].inputs[k] = new,
                Use::Return(b, k) => self.blocks[b.0 as usize].returns[k] = new,
            }
        }
        self.values[new.0 as usize].uses.extend(uses);
    }

    /// Removes a node whose outputs have no uses, with its blocks.
    pub fn destroy_node(&mut self, n: NodeId) -> Result<()> {
        if let Some(v) = self.outputs_of(n).iter().find(|v| !self.uses(**v).is_empty()) {
            return Err(ir_error(format!("cannot remove {}: its output %{} is still used", self.kind(n), v.0)));
        }
        self.force_destroy(n);
        Ok(())
    }

    fn drop_uses_of_block_returns(&mut self, b: BlockId) {
        let rets = std::mem::take(&mut self.blocks[b.0 as usize].returns);
        for (k, v) in rets.into_iter().enumerate() {
            self.values[v.0 as usize].uses.retain(|u| *u != Use::Return(b, k));
        }
    }

    fn force_destroy(&mut self, n: NodeId) {
        for b in self.blocks_of(n).to_vec() {
            self.drop_uses_of_block_returns(b);
            for m in self.block_nodes(b).to_vec().into_iter().rev() {
                self.force_destroy(m);
            }
        }
        let inputs = std::mem::take(&mut self.nodes[n.0 as usize].inputs);
        for (k, v) in inputs.into_iter().enumerate() {
            self.values[v.0 as usize].uses.retain(|u| *u != Use::Node(n, k));
        }
        let b = self.node_block(n);
        self.blocks[b.0 as usize].nodes.retain(|&m| m != n);
        self.nodes[n.0 as usize].alive = false;
    }

    /// Removes returned value `k` of a block (a dead output of an `If` branch or loop body).
    pub fn remove_return(&mut self, b: BlockId, k: usize) {
        let rets = std::mem::take(&mut self.blocks[b.0 as usize].returns);
        for (i, v) in rets.iter().enumerate() {
            self.values[v.0 as usize].uses.retain(|u| *u != Use::Return(b, i));
        }
        for (i, v) in rets.into_iter().enumerate() {
            if i != k {
                self.add_return(b, v);
            }
        }
    }

    /// Removes output `k` of a node; nothing may use it.
    pub fn remove_output(&mut self, n: NodeId, k: usize) {
        let v = self.nodes[n.0 as usize].outputs.remove(k);
        debug_assert!(self.uses(v).is_empty(), "a removed output is unused");
        for (i, &o) in self.nodes[n.0 as usize].outputs.iter().enumerate() {
            self.values[o.0 as usize].def = ValueDef::Node(n, i);
        }
    }

    /// Moves the nodes of block `b` (which has no parameters) just before node `before`, in
    /// order, leaving `b` empty; returns what `b` returned (`prim::If` folding).
    pub fn hoist_block(&mut self, b: BlockId, before: NodeId) -> Vec<ValueId> {
        let target = self.node_block(before);
        let nodes = std::mem::take(&mut self.blocks[b.0 as usize].nodes);
        for m in nodes {
            let pos = self.position(before).unwrap_or(0);
            self.nodes[m.0 as usize].owner = target;
            self.blocks[target.0 as usize].nodes.insert(pos, m);
        }
        self.block_returns(b).to_vec()
    }

    /// Moves node `n` to position `pos` of its block.
    pub fn move_node(&mut self, n: NodeId, pos: usize) {
        let b = self.node_block(n);
        let list = &mut self.blocks[b.0 as usize].nodes;
        list.retain(|&m| m != n);
        list.insert(pos.min(list.len()), n);
    }

    /// Every live node, depth first in program order (a node before the nodes of its blocks).
    pub fn all_nodes(&self) -> Vec<NodeId> {
        let mut out = Vec::new();
        self.collect_nodes(self.root(), &mut out);
        out
    }

    fn collect_nodes(&self, b: BlockId, out: &mut Vec<NodeId>) {
        for &n in self.block_nodes(b) {
            out.push(n);
            for &c in self.blocks_of(n) {
                self.collect_nodes(c, out);
            }
        }
    }

    /// Checks the invariants: every input is defined before its use in a visible scope, every
    /// use is recorded, outputs belong to their node.
    pub fn lint(&self) -> Result<()> {
        let mut defined = vec![false; self.values.len()];
        self.lint_block(self.root(), &mut defined)
    }

    fn lint_block(&self, b: BlockId, defined: &mut Vec<bool>) -> Result<()> {
        let mut local = Vec::new();
        for &p in self.block_params(b) {
            defined[p.0 as usize] = true;
            local.push(p);
        }
        for &n in self.block_nodes(b) {
            if !self.is_alive(n) {
                return Err(ir_error(format!("a dead node ({}) is still in a block", self.kind(n))));
            }
            for (k, &v) in self.inputs_of(n).iter().enumerate() {
                if !defined[v.0 as usize] {
                    return Err(ir_error(format!("input {k} of {} is used before it is defined", self.kind(n))));
                }
                if !self.uses(v).contains(&Use::Node(n, k)) {
                    return Err(ir_error(format!("input {k} of {} is missing from its value's uses", self.kind(n))));
                }
            }
            for &c in self.blocks_of(n) {
                self.lint_block(c, defined)?;
            }
            for &o in self.outputs_of(n) {
                defined[o.0 as usize] = true;
                local.push(o);
            }
        }
        for (k, &v) in self.block_returns(b).iter().enumerate() {
            if !defined[v.0 as usize] {
                return Err(ir_error(format!("returned value {k} is not defined")));
            }
        }
        for v in local {
            defined[v.0 as usize] = false;
        }
        // Values of an enclosing block stay defined; only this block's own go out of scope.
        Ok(())
    }

    /// Number of value slots (an upper bound of `ValueId`s, for per-value tables).
    pub fn value_capacity(&self) -> usize {
        self.values.len()
    }
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::text::print(self))
    }
}
