//! The graph: [`Node`]s (backward functions) joined by [`Edge`]s.
//!
//! A node's *inputs* are the gradients of the forward outputs it was created for
//! (`input_nr`), and its *outputs* are the gradients of the forward inputs, sent along
//! `next_edges` in the same order. Gradients arriving at one input from several places are
//! summed by the engine before the node runs.
//!
//! Note [Sequence numbers]: every node takes the next value of a thread-local counter when it is
//! created, so nodes of later forward operations have larger numbers; the engine runs the ready
//! node with the largest number first (`AccumulateGrad` uses `u64::MAX`: as soon as possible).
//! `topological_nr` is the length of the longest path to a leaf, so a path X -> Y implies
//! topo(X) > topo(Y).

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use aten::Tensor;
use c10::tensor_impl::DimVec;
use c10::{Device, Result, ScalarType, SetOnce};

/// A shared handle to a node.
pub type NodeRef = Arc<dyn Node>;

/// The gradients a node receives or returns, one per input or edge (None: zero or not
/// needed); inline for up to two, so running a node allocates no lists.
pub type Grads = smallvec::SmallVec<[Option<Tensor>; 2]>;

/// A tensor hook: sees the gradient of a tensor and may replace it (`Tensor.register_hook`).
pub type TensorHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// A node pre-hook: sees the node's incoming gradients and may replace them.
pub type PreHook = Box<dyn Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;

/// A node post-hook: sees the node's results and its incoming gradients and may replace the
/// results.
pub type PostHook =
    Box<dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;

/// Where a gradient goes: input `input_nr` of `function`, or nowhere (an invalid edge, for
/// inputs that do not require grad). Dropping the last handle of the node frees it through
/// [`release_node`] (Note [Freeing long graphs]).
#[derive(Clone)]
pub struct Edge {
    /// The receiving node (None: the gradient is dropped).
    pub function: Option<NodeRef>,
    /// Which input of the receiving node.
    pub input_nr: u32,
}

impl Edge {
    /// An edge to input `input_nr` of `function`.
    pub fn new(function: NodeRef, input_nr: u32) -> Self {
        Edge { function: Some(function), input_nr }
    }
    /// The edge of an input that needs no gradient.
    pub fn invalid() -> Self {
        Edge { function: None, input_nr: 0 }
    }
    /// Whether the edge leads somewhere.
    pub fn is_valid(&self) -> bool {
        self.function.is_some()
    }
}

impl Drop for Edge {
    fn drop(&mut self) {
        if let Some(f) = self.function.take() {
            release_node(f);
        }
    }
}

thread_local! {
    /// Nodes whose last handle was dropped while this thread was already freeing nodes.
    static DEFERRED: std::cell::RefCell<Vec<NodeRef>> = const { std::cell::RefCell::new(Vec::new()) };
    static FREEING: Cell<bool> = const { Cell::new(false) };
}

/// Drops a handle to a node without recursing through the graph (Note [Freeing long graphs]).
///
/// Note [Freeing long graphs]: a node owns its next nodes (through its edges) and, through saved
/// tensors' `grad_fn`, often its predecessors too, so freeing the last handle of a graph frees
/// it node by node. Left to the compiler's drop glue that is a recursion as deep as the graph:
/// an unrolled recurrence of 100,000 steps overflows the stack and aborts. Every place that
/// holds a node (edges, a tensor's `grad_fn`) therefore drops it here: a handle that is not the
/// last is just released; the last one, while this thread is already freeing a node, is queued,
/// and the outermost call frees the queue one node at a time (PyTorch's `deleteNode` does the
/// same for edges).
pub fn release_node(node: NodeRef) {
    if Arc::strong_count(&node) > 1 {
        return;
    }
    // While the thread is being torn down its thread-locals may be gone: the node is then
    // freed directly (the closures own it, and drop it when they cannot run).
    match FREEING.try_with(|f| f.replace(true)) {
        Ok(false) => {}
        Ok(true) => {
            let _ = DEFERRED.try_with(move |d| d.borrow_mut().push(node));
            return;
        }
        Err(_) => return,
    }
    struct Outermost;
    impl Drop for Outermost {
        fn drop(&mut self) {
            let _ = FREEING.try_with(|f| f.set(false));
        }
    }
    let _outermost = Outermost;
    drop(node);
    while let Some(next) = DEFERRED.try_with(|d| d.borrow_mut().pop()).ok().flatten() {
        drop(next);
    }
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.function {
            Some(n) => write!(f, "Edge({}, {})", n.name(), self.input_nr),
            None => f.write_str("Edge(None)"),
        }
    }
}

/// What a node knows about one of its inputs (a forward output): the shape, dtype and device
/// its gradient must have.
#[derive(Clone, Debug, PartialEq)]
pub struct InputMeta {
    /// Sizes of the forward output.
    pub sizes: DimVec,
    /// Dtype of the forward output.
    pub dtype: ScalarType,
    /// Device of the forward output.
    pub device: Device,
}

impl InputMeta {
    /// The metadata of `t`.
    pub fn of(t: &Tensor) -> Self {
        InputMeta { sizes: DimVec::from_slice(t.sizes()), dtype: t.dtype(), device: t.device() }
    }
    /// A zero gradient of this shape and dtype (for undefined incoming gradients).
    pub fn zeros(&self) -> Result<Tensor> {
        aten::ops::zeros(&self.sizes, Some(self.dtype), None, Some(self.device), None)
    }
}

/// The next sequence number of this thread (see Note [Sequence numbers]); the counter is
/// c10's, so the dispatcher's profiling ranges can name the number a node will get.
pub fn next_sequence_nr() -> u64 {
    c10::record_function::sequence_number::get_and_increment()
}

/// The `next_edges` of a node: inline for the common one- and two-input operations, so
/// recording a node allocates only the node itself.
pub type EdgeList = smallvec::SmallVec<[Edge; 2]>;

/// The state every node has: ordering numbers, edges, input metadata and hooks.
///
/// Note [Node hooks are allocated on demand]: almost no node has hooks, more than one forward
/// output or an anomaly-mode backtrace, and every node is created, run and freed once per
/// step, so those live in a [`NodeExtra`] allocated when first needed. The engine's check for
/// hooks is then one load, not a lock, and the core of a one-output node is 152 bytes where it
/// was 216: less memory to write when the operation is recorded and to read when it runs.
pub struct NodeCore {
    seq_nr: u64,
    topo_nr: u64,
    next_edges: EdgeList,
    /// The metadata of forward output 0, read without a lock by the engine (Note [SetOnce
    /// instead of OnceLock] in c10).
    first_input: SetOnce<InputMeta>,
    extra: SetOnce<Box<NodeExtra>>,
}

/// What few nodes have (Note [Node hooks are allocated on demand]).
#[derive(Default)]
struct NodeExtra {
    /// Outputs 1.. of multi-output operations, in order, and how many there are.
    more_inputs: Mutex<Vec<InputMeta>>,
    more_count: AtomicU32,
    /// Set when the first hook is registered.
    hooks: OnceLock<Mutex<Hooks>>,
    /// The forward backtrace recorded in anomaly mode.
    anomaly_trace: Option<String>,
}

/// Hooks of a node, by kind.
#[derive(Default)]
pub struct Hooks {
    /// Tensor hooks on input `nr` (the gradient of forward output `nr`), in registration order.
    pub tensor_pre: Vec<(u32, TensorHook)>,
    /// `retain_grad` hooks on input `nr`: they run after the tensor hooks.
    pub retains_grad: Vec<(u32, TensorHook)>,
    /// Node pre-hooks.
    pub pre: Vec<PreHook>,
    /// Node post-hooks.
    pub post: Vec<PostHook>,
}

impl NodeCore {
    /// A node sending its outputs along `next_edges`, numbered by the thread's counter.
    #[inline]
    pub fn new(next_edges: impl Into<EdgeList>) -> Self {
        Self::with_sequence_nr(next_edges, next_sequence_nr())
    }

    /// A node with an explicit sequence number (`AccumulateGrad` uses `u64::MAX`).
    pub fn with_sequence_nr(next_edges: impl Into<EdgeList>, seq_nr: u64) -> Self {
        let next_edges = next_edges.into();
        let topo_nr = next_edges.iter().filter_map(|e| e.function.as_ref()).map(|f| f.core().topo_nr + 1).max();
        let extra = match crate::anomaly::is_enabled() {
            true => SetOnce::with(Box::new(NodeExtra {
                anomaly_trace: Some(crate::anomaly::capture_trace()),
                ..NodeExtra::default()
            })),
            false => SetOnce::new(),
        };
        NodeCore { seq_nr, topo_nr: topo_nr.unwrap_or(0), next_edges, first_input: SetOnce::new(), extra }
    }

    /// The core of a leaf's `AccumulateGrad`: no edges, the largest sequence number, and the
    /// leaf's metadata as its one input.
    pub(crate) fn leaf(meta: InputMeta) -> Self {
        let mut core = Self::with_sequence_nr(EdgeList::new(), u64::MAX);
        core.first_input = SetOnce::with(meta);
        core
    }

    /// The sequence number.
    pub fn sequence_nr(&self) -> u64 {
        self.seq_nr
    }
    /// The longest path to a leaf (0 for `AccumulateGrad`).
    pub fn topological_nr(&self) -> u64 {
        self.topo_nr
    }
    /// Where the outputs go.
    pub fn next_edges(&self) -> &[Edge] {
        &self.next_edges
    }
    /// Whether output `i` is wanted at all (its edge is valid and, during a backward pass that
    /// asks for particular inputs, leads to one of them).
    pub fn should_compute_output(&self, i: usize) -> bool {
        match self.next_edges.get(i) {
            Some(e) => e.is_valid() && crate::engine::task_needs_edge(e),
            None => false,
        }
    }
    /// Records the metadata of the next input (forward output); returns its input number.
    pub fn add_input_metadata(&self, t: &Tensor) -> u32 {
        match self.first_input.set(InputMeta::of(t)) {
            Ok(_) => 0,
            Err(meta) => {
                let extra = self.extra.get_or_set_with(Box::default);
                let mut more = extra.more_inputs.lock().unwrap_or_else(|e| e.into_inner());
                more.push(meta);
                extra.more_count.store(more.len() as u32, Ordering::Release);
                more.len() as u32
            }
        }
    }
    /// The metadata of input `nr`.
    pub fn input_metadata(&self, nr: usize) -> Option<InputMeta> {
        self.with_input_metadata(nr, |m| m.cloned())
    }
    /// Runs `f` on the metadata of input `nr` (None if there is none) without copying it, and
    /// for input 0 without a lock.
    pub fn with_input_metadata<R>(&self, nr: usize, f: impl FnOnce(Option<&InputMeta>) -> R) -> R {
        if nr == 0 {
            return f(self.first_input.get());
        }
        match self.extra.get() {
            Some(extra) => f(extra.more_inputs.lock().unwrap_or_else(|e| e.into_inner()).get(nr - 1)),
            None => f(None),
        }
    }
    /// Number of inputs (forward outputs).
    pub fn num_inputs(&self) -> usize {
        match self.first_input.get() {
            Some(_) => 1 + self.extra.get().map_or(0, |e| e.more_count.load(Ordering::Acquire) as usize),
            None => 0,
        }
    }
    /// The hooks, locked (made on first use; see Note [Node hooks are allocated on demand]).
    pub fn hooks(&self) -> MutexGuard<'_, Hooks> {
        let extra = self.extra.get_or_set_with(Box::default);
        extra.hooks.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner())
    }
    /// The hooks, locked, if any were ever registered.
    pub fn hooks_if_any(&self) -> Option<MutexGuard<'_, Hooks>> {
        let hooks = self.extra.get()?.hooks.get()?;
        Some(hooks.lock().unwrap_or_else(|e| e.into_inner()))
    }
    /// Whether this may be a leaf's `AccumulateGrad` (whose tensor hooks live on the leaf): it
    /// has the accumulators' sequence number and no edges. Lets the engine skip looking for
    /// hooks on every other node without a virtual call.
    pub(crate) fn may_accumulate(&self) -> bool {
        self.seq_nr == u64::MAX && self.next_edges.is_empty()
    }
    /// The forward backtrace recorded in anomaly mode.
    pub fn anomaly_trace(&self) -> Option<&str> {
        self.extra.get()?.anomaly_trace.as_deref()
    }
}

/// A backward function.
pub trait Node: Send + Sync + 'static {
    /// The name PyTorch gives it (`MulBackward0`, `AccumulateGrad`, ...).
    fn name(&self) -> String;
    /// The shared state.
    fn core(&self) -> &NodeCore;
    /// Computes the gradients of the forward inputs (one per next edge; None = zero or not
    /// needed) from the gradients of the forward outputs (None = zero).
    fn apply(&self, grads: Grads) -> Result<Grads>;
    /// Frees what was saved for backward (after a pass without `retain_graph`).
    fn release_variables(&self) {}
    /// The leaf tensor, for `AccumulateGrad` (None for other nodes, and once the leaf is gone).
    fn accumulated_variable(&self) -> Option<Tensor> {
        None
    }
    /// Whether this is a leaf's `AccumulateGrad`.
    fn is_accumulator(&self) -> bool {
        false
    }
}

/// Adds a node pre-hook (`Node.register_prehook`).
pub fn register_prehook(node: &NodeRef, hook: PreHook) {
    node.core().hooks().pre.push(hook);
}

/// Adds a node post-hook (`Node.register_hook`).
pub fn register_posthook(node: &NodeRef, hook: PostHook) {
    node.core().hooks().post.push(hook);
}

/// The next functions of a node as `(name, input_nr)` pairs (`grad_fn.next_functions`); None
/// for invalid edges.
pub fn next_functions(node: &NodeRef) -> Vec<Option<(String, u32)>> {
    node.core().next_edges().iter().map(|e| e.function.as_ref().map(|f| (f.name(), e.input_nr))).collect()
}

/// The node at the root of a backward pass with several roots: it passes the root gradients on.
pub(crate) struct GraphRoot {
    core: NodeCore,
    grads: Grads,
}

impl GraphRoot {
    pub(crate) fn new(edges: Vec<Edge>, grads: Vec<Option<Tensor>>) -> Self {
        GraphRoot { core: NodeCore::with_sequence_nr(edges, u64::MAX), grads: grads.into() }
    }
}

impl Node for GraphRoot {
    fn name(&self) -> String {
        "GraphRoot".into()
    }
    fn core(&self) -> &NodeCore {
        &self.core
    }
    fn apply(&self, _grads: Grads) -> Result<Grads> {
        Ok(self.grads.clone())
    }
}

/// The node given to outputs of operators without a derivative formula when an input requires
/// grad: running it is an error naming the operator.
pub(crate) struct NotImplementedNode {
    core: NodeCore,
    op: String,
}

impl NotImplementedNode {
    pub(crate) fn new(op: &str, edges: EdgeList) -> Self {
        NotImplementedNode { core: NodeCore::new(edges), op: op.to_string() }
    }
}

impl Node for NotImplementedNode {
    fn name(&self) -> String {
        "NotImplemented".into()
    }
    fn core(&self) -> &NodeCore {
        &self.core
    }
    fn apply(&self, _grads: Grads) -> Result<Grads> {
        Err(c10::Error::NotImplemented {
            op: self.op.clone(),
            msg: format!("the derivative for '{}' is not implemented.", self.op),
        })
    }
}

// Note [Node hooks are allocated on demand]: keep the core of a one-output node small.
const _: () = assert!(std::mem::size_of::<NodeCore>() <= 152);
