//! The engine: runs the backward graph from root gradients, on the calling thread.
//!
//! Note [Engine]: a pass first counts, for every node reachable from the roots, how many edges
//! lead to it (its dependencies). Gradients sent to a node are summed in its input buffer; when
//! its last dependency has delivered, the node is ready. Ready nodes run highest sequence
//! number first (a max-heap), i.e. in reverse order of the forward pass, with `AccumulateGrad`
//! first of all. `autograd::grad` (and `backward(inputs=...)`) restrict the pass to the nodes
//! that lead to the requested inputs and capture the gradients arriving there. Grad mode inside
//! the pass is `create_graph`, so formulas record history exactly when a higher-order gradient
//! is wanted; without `retain_graph` each node frees its saved tensors after running.

use std::cell::RefCell;
use std::collections::BinaryHeap;
use std::rc::Rc;
use std::sync::Arc;

use aten::Tensor;
use c10::record_function::{InputMeta, RecordFunction, RecordScope};
use c10::{Error, Result, Scalar};

use crate::meta::{gradient_edge, requires_grad};
use crate::node::{Edge, Grads, GraphRoot, NodeCore, NodeRef};

/// A node's identity for the engine's maps.
fn addr(n: &NodeRef) -> usize {
    Arc::as_ptr(n) as *const () as usize
}

#[derive(Default)]
struct ExecInfo {
    needed: bool,
    /// `(input_nr, index in the captured results)`.
    captures: Vec<(u32, usize)>,
}

/// What a restricted pass (`grad`, `backward(inputs=...)`) runs and captures.
#[derive(Default)]
struct ExecPlan {
    info: foldhash::HashMap<usize, ExecInfo>,
}

impl ExecPlan {
    fn should_execute(&self, a: usize) -> bool {
        self.info.get(&a).is_some_and(|i| i.needed || !i.captures.is_empty())
    }
}

thread_local! {
    /// The plans of the passes running on this thread, innermost last.
    static PLANS: RefCell<Vec<Option<Rc<ExecPlan>>>> = const { RefCell::new(Vec::new()) };
}

/// Whether the running pass wants the gradient sent along `e` (always, outside a restricted
/// pass). Backward formulas use it to skip gradients nobody asked for.
pub(crate) fn task_needs_edge(e: &Edge) -> bool {
    let Some(f) = &e.function else {
        return false;
    };
    PLANS.with(|p| match p.borrow().last() {
        Some(Some(plan)) => plan.should_execute(addr(f)),
        _ => true,
    })
}

struct PlanGuard;

impl PlanGuard {
    fn push(plan: Option<Rc<ExecPlan>>) -> PlanGuard {
        PLANS.with(|p| p.borrow_mut().push(plan));
        PlanGuard
    }
}

impl Drop for PlanGuard {
    fn drop(&mut self) {
        PLANS.with(|p| p.borrow_mut().pop());
    }
}

struct ReadyTask {
    seq: u64,
    order: u64,
    /// The node's slot in the pass's graph.
    slot: u32,
}

impl PartialEq for ReadyTask {
    fn eq(&self, other: &Self) -> bool {
        (self.seq, self.order) == (other.seq, other.order)
    }
}
impl Eq for ReadyTask {}
impl PartialOrd for ReadyTask {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ReadyTask {
    /// Higher sequence number first; among equals, the one made ready first.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.seq.cmp(&other.seq).then(other.order.cmp(&self.order))
    }
}

/// Marks an edge that leads nowhere in [`Graph::targets`].
const NO_SLOT: u32 = u32::MAX;

/// What a pass knows of one node of its graph.
struct Slot<'g> {
    node: &'g NodeRef,
    /// The node's core, looked up once (one virtual call per node instead of one per use).
    core: &'g NodeCore,
    /// Edges still to deliver before the node is ready.
    deps: u32,
    /// Where the node's edges start in [`Graph::targets`].
    first_edge: u32,
    /// The input buffer, made when the first edge delivers.
    inputs: Option<Grads>,
}

/// The nodes reachable from a root, numbered once (see Note [Engine graph slots]).
///
/// Note [Engine graph slots]: the pass numbers the reachable nodes during the dependency count,
/// and records for every edge the number of the node it leads to. Running the graph then
/// indexes vectors instead of hashing node addresses, and holds borrowed node handles (the root,
/// alive for the whole pass, owns the graph) instead of reference-counted clones.
struct Graph<'g> {
    slots: Vec<Slot<'g>>,
    /// Per edge of every node (from its `first_edge`), the slot it leads to or [`NO_SLOT`].
    targets: Vec<u32>,
    /// Slots in an order where children come before parents (for restricted passes only).
    post_order: Vec<u32>,
}

impl<'g> Graph<'g> {
    /// Numbers the nodes reachable from `root`; `post_order` only when `want_post_order`.
    fn discover(root: &'g NodeRef, want_post_order: bool) -> Graph<'g> {
        // The longest path from the root bounds the graph from below: a good first capacity.
        let hint = root.core().topological_nr() as usize + 1;
        let mut index: foldhash::HashMap<usize, u32> =
            foldhash::HashMap::with_capacity_and_hasher(hint, Default::default());
        let mut g =
            Graph { slots: Vec::with_capacity(hint), targets: Vec::with_capacity(2 * hint), post_order: Vec::new() };
        g.add(root, 0);
        index.insert(addr(root), 0);
        let mut stack: Vec<(u32, usize)> = Vec::with_capacity(hint);
        stack.push((0, 0));
        while let Some((n, i)) = stack.pop() {
            let edges = g.slots[n as usize].core.next_edges();
            if i == edges.len() {
                if want_post_order {
                    g.post_order.push(n);
                }
                continue;
            }
            stack.push((n, i + 1));
            let Some(f) = &edges[i].function else {
                continue;
            };
            let target = match index.entry(addr(f)) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    let k = *e.get();
                    g.slots[k as usize].deps += 1;
                    k
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    let k = g.slots.len() as u32;
                    e.insert(k);
                    g.add(f, 1);
                    stack.push((k, 0));
                    k
                }
            };
            let at = g.slots[n as usize].first_edge as usize + i;
            g.targets[at] = target;
        }
        g
    }

    fn add(&mut self, node: &'g NodeRef, deps: u32) {
        let first_edge = self.targets.len() as u32;
        let core = node.core();
        self.targets.resize(self.targets.len() + core.next_edges().len(), NO_SLOT);
        self.slots.push(Slot { node, core, deps, first_edge, inputs: None });
    }
}

/// Runs a backward pass from `roots` (edges with their gradients). With `outputs`, only the
/// nodes leading to those edges run, and the gradients arriving there are returned in order;
/// `accumulate` also runs the leaf accumulators among them (`backward(inputs=...)`).
pub(crate) fn execute(
    roots: Vec<(Edge, Option<Tensor>)>,
    keep_graph: bool,
    create_graph: bool,
    outputs: Option<(&[Edge], bool)>,
) -> Result<Vec<Option<Tensor>>> {
    let (edges, grads): (Vec<Edge>, Vec<Option<Tensor>>) = roots.into_iter().unzip();
    let root: NodeRef = Arc::new(GraphRoot::new(edges, grads));
    // The root always runs; other nodes of a restricted pass only if the plan needs them.
    let mut graph = Graph::discover(&root, outputs.is_some());

    let n_out = outputs.map_or(0, |(o, _)| o.len());
    let plan = outputs.map(|(outs, accumulate)| {
        let mut plan = ExecPlan::default();
        for (idx, e) in outs.iter().enumerate() {
            if let Some(f) = &e.function {
                let info = plan.info.entry(addr(f)).or_default();
                if accumulate && f.is_accumulator() {
                    info.needed = true;
                } else {
                    info.captures.push((e.input_nr, idx));
                }
            }
        }
        for &n in &graph.post_order {
            let Slot { node, core, .. } = &graph.slots[n as usize];
            let child_wanted =
                core.next_edges().iter().filter_map(|e| e.function.as_ref()).any(|f| plan.should_execute(addr(f)));
            if child_wanted {
                plan.info.entry(addr(node)).or_default().needed = true;
            }
        }
        Rc::new(plan)
    });
    let _plan_guard = PlanGuard::push(plan.clone());
    let _grad_mode = crate::grad_mode::set_grad_enabled(create_graph);

    let mut captured: Vec<Option<Tensor>> = vec![None; n_out];
    let mut heap = BinaryHeap::new();
    let mut order = 0u64;
    heap.push(ReadyTask { seq: u64::MAX, order, slot: 0 });

    while let Some(task) = heap.pop() {
        let slot = &mut graph.slots[task.slot as usize];
        let (node, core) = (slot.node, slot.core);
        let first_edge = slot.first_edge as usize;
        let mut inputs = slot.inputs.take().unwrap_or_default();
        run_tensor_hooks(node, core, &mut inputs)?;
        if let Some(plan) = &plan {
            let a = addr(node);
            if let Some(info) = plan.info.get(&a) {
                for &(nr, idx) in &info.captures {
                    captured[idx] = inputs.get(nr as usize).cloned().flatten();
                }
            }
            if task.slot != 0 && !plan.info.get(&a).is_some_and(|i| i.needed) {
                continue;
            }
        }
        let _eval = profiler_name(node).map(|name| {
            let name = format!("autograd::engine::evaluate_function: {name}");
            RecordFunction::start(RecordScope::BackwardFunction, name, profiler_seq(core), Vec::new)
        });
        let outputs = call_function(node, core, inputs, keep_graph)?;
        for (i, (edge, grad)) in core.next_edges().iter().zip(outputs).enumerate() {
            if edge.function.is_none() {
                continue;
            }
            let target = graph.targets[first_edge + i];
            let child_slot = &mut graph.slots[target as usize];
            let child = child_slot.core;
            let grad = match grad {
                Some(g) => Some(validate(node, i, child, edge.input_nr, g)?),
                None => None,
            };
            let buf = child_slot
                .inputs
                .get_or_insert_with(|| Grads::from_elem(None, child.num_inputs().max(edge.input_nr as usize + 1)));
            if let Some(g) = grad {
                let buf_slot = &mut buf[edge.input_nr as usize];
                *buf_slot = Some(match buf_slot.take() {
                    None => g,
                    Some(old) => sum_grads(&old, &g)?,
                });
            }
            child_slot.deps -= 1;
            if child_slot.deps == 0 {
                order += 1;
                heap.push(ReadyTask { seq: child.sequence_nr(), order, slot: target });
            }
        }
    }
    Ok(captured)
}

/// Tensor hooks, then `retain_grad` hooks, on the node's incoming gradients. For a leaf's
/// accumulator these are the leaf's hooks.
fn run_tensor_hooks(node: &NodeRef, core: &NodeCore, inputs: &mut [Option<Tensor>]) -> Result<()> {
    let node_hooks = core.hooks_if_any();
    if node_hooks.is_none() && !core.may_accumulate() {
        return Ok(());
    }
    let mut hooks: Vec<(u32, crate::node::TensorHook)> = match node.accumulated_variable() {
        Some(leaf) => match crate::meta::meta(&leaf) {
            Some(m) => {
                m.state().rare().map_or_else(Vec::new, |r| r.leaf_hooks.iter().map(|h| (0, h.clone())).collect())
            }
            None => Vec::new(),
        },
        None => node_hooks.as_ref().map_or_else(Vec::new, |h| h.tensor_pre.clone()),
    };
    if let Some(h) = &node_hooks {
        hooks.extend(h.retains_grad.iter().cloned());
    }
    drop(node_hooks);
    if hooks.is_empty() {
        return Ok(());
    }
    for (k, (nr, hook)) in hooks.into_iter().enumerate() {
        if let Some(Some(g)) = inputs.get(nr as usize) {
            if let Some(replacement) = hook(g)? {
                check_hook_result(g, &replacement, k)?;
                inputs[nr as usize] = Some(replacement);
            }
        }
    }
    Ok(())
}

/// PyTorch's `check_variable_result`: a tensor hook may replace a gradient only by one of the
/// same dtype, device and shape. Anything else would reach `.grad` or the next node silently
/// (a `[1]` gradient for a `[1, 2]` weight, which an optimizer then broadcasts).
fn check_hook_result(original: &Tensor, result: &Tensor, k: usize) -> Result<()> {
    let type_name = |t: &Tensor| format!("{}{}Type", t.device().ty.name().to_uppercase(), t.dtype().legacy_name());
    if original.dtype() != result.dtype() || original.device() != result.device() {
        return Err(Error::Autograd(format!(
            "hook 'tensor hook {k}' has changed the type of value (was {} got {})",
            type_name(original),
            type_name(result)
        )));
    }
    if original.sizes() != result.sizes() {
        return Err(Error::Autograd(format!(
            "hook 'tensor hook {k}' has changed the size of value (was {:?} got {:?})",
            original.sizes(),
            result.sizes()
        )));
    }
    Ok(())
}

/// A node's sequence number as its profiling ranges carry it: -1 for a leaf's accumulator
/// (whose number is the largest, so that it runs last), as PyTorch's traces show it.
fn profiler_seq(core: &NodeCore) -> i64 {
    i64::try_from(core.sequence_nr()).unwrap_or(-1)
}

/// A node's name in its profiling ranges, or `None` when no range is observed or the node is
/// the engine's `GraphRoot` (PyTorch's traces have no range for it): PyTorch's C++ name for a
/// leaf's accumulator (`torch::autograd::AccumulateGrad`), else the node's name.
fn profiler_name(node: &NodeRef) -> Option<String> {
    if !c10::record_function::is_active() {
        return None;
    }
    if node.is_accumulator() {
        return Some("torch::autograd::AccumulateGrad".into());
    }
    Some(node.name()).filter(|n| n != "GraphRoot")
}

/// Pre-hooks, the node, post-hooks; releases saved tensors unless the graph is kept; anomaly
/// checks.
fn call_function(node: &NodeRef, core: &NodeCore, mut inputs: Grads, keep_graph: bool) -> Result<Grads> {
    let mut has_post = false;
    if let Some(hooks) = core.hooks_if_any() {
        for h in &hooks.pre {
            if let Some(r) = h(&inputs)? {
                inputs = r.into();
            }
        }
        has_post = !hooks.post.is_empty();
    }
    let kept_inputs = if has_post { inputs.clone() } else { Grads::new() };
    let range = profiler_name(node).map(|name| {
        RecordFunction::start(RecordScope::BackwardFunction, name, profiler_seq(core), || {
            inputs
                .iter()
                .map(|g| g.as_ref().map_or_else(InputMeta::none, |t| InputMeta::tensor(t.sizes(), t.dtype())))
                .collect()
        })
    });
    let result = node.apply(inputs);
    drop(range);
    if !keep_graph {
        node.release_variables();
    }
    let mut outputs = match result {
        Ok(o) => o,
        Err(e) => return Err(with_anomaly_trace(node, e)),
    };
    if has_post {
        let hooks = core.hooks();
        for h in &hooks.post {
            if let Some(r) = h(&outputs, &kept_inputs)? {
                outputs = r.into();
            }
        }
    }
    let expected = core.next_edges().len();
    if outputs.len() != expected && !node.is_accumulator() {
        return Err(Error::invalid(
            "backward",
            format!(
                "function {} returned an incorrect number of gradients (expected {expected}, got {})",
                node.name(),
                outputs.len()
            ),
        ));
    }
    if crate::anomaly::is_enabled() {
        for (i, g) in outputs.iter().enumerate() {
            if let Some(g) = g {
                if g.dtype().is_floating_point() && aten::ops::any(&aten::ops::isnan(g)?)?.item::<bool>()? {
                    let e = Error::invalid(
                        "backward",
                        format!("Function '{}' returned nan values in its {i}th output.", node.name()),
                    );
                    return Err(with_anomaly_trace(node, e));
                }
            }
        }
    }
    Ok(outputs)
}

/// In anomaly mode, adds the forward backtrace of the failing node to its error.
fn with_anomaly_trace(node: &NodeRef, e: Error) -> Error {
    match node.core().anomaly_trace() {
        Some(trace) if crate::anomaly::is_enabled() => Error::invalid(
            "backward",
            format!(
                "{e}\nError detected in {}. Traceback of forward call that caused the error:\n{trace}",
                node.name()
            ),
        ),
        _ => e,
    }
}

/// Makes gradient `i` of `node` fit input `input_nr` of `child`: summed down to a broadcast
/// shape, cast to its dtype; any other shape is an error naming the node.
fn validate(node: &NodeRef, i: usize, child: &NodeCore, input_nr: u32, g: Tensor) -> Result<Tensor> {
    let fits = child.with_input_metadata(input_nr as usize, |m| {
        m.is_none_or(|m| m.sizes.as_slice() == g.sizes() && m.dtype == g.dtype())
    });
    if fits {
        return Ok(g);
    }
    let Some(meta) = child.input_metadata(input_nr as usize) else {
        return Ok(g);
    };
    let mut g = g;
    if g.sizes() != meta.sizes.as_slice() {
        if !is_expandable_to(&meta.sizes, g.sizes()) {
            return Err(Error::shape(
                "backward",
                format!(
                    "Function {} returned an invalid gradient at index {i} - got {:?} but expected shape compatible \
                     with {:?}",
                    node.name(),
                    g.sizes(),
                    meta.sizes.as_slice()
                ),
            ));
        }
        g = sum_to(&g, &meta.sizes)?;
    }
    if g.dtype() != meta.dtype {
        g = aten::ops::to(&g, meta.dtype, false, false, None)?;
    }
    Ok(g)
}

/// `a + b` for two gradients of one input, either of which may be sparse: the dense one goes
/// first, as `add(sparse, dense)` is refused (PyTorch's `InputBuffer::accumulate` swaps them too).
pub(crate) fn sum_grads(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.layout() != c10::Layout::Strided && b.layout() == c10::Layout::Strided {
        return aten::ops::add(b, a, Scalar::Int(1));
    }
    aten::ops::add(a, b, Scalar::Int(1))
}

/// Whether `shape` broadcasts to `desired`.
pub(crate) fn is_expandable_to(shape: &[i64], desired: &[i64]) -> bool {
    if shape.len() > desired.len() {
        return false;
    }
    let off = desired.len() - shape.len();
    shape.iter().enumerate().all(|(i, &s)| s == desired[off + i] || s == 1)
}

/// Sums `g` down to `shape` (which broadcasts to `g`'s shape): over the leading dims and the
/// dims where `shape` has 1.
pub fn sum_to(g: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let lead = g.dim() - shape.len();
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &s) in shape.iter().enumerate() {
        if s == 1 && g.sizes()[lead + i] != 1 {
            dims.push((lead + i) as i64);
        }
    }
    if dims.is_empty() {
        return aten::ops::reshape(g, shape);
    }
    let r = aten::ops::sum_dim_intlist(g, Some(&dims), true, None)?;
    aten::ops::reshape(&r, shape)
}

/// The gradient to start from for root `i`: the given one (which must have the root's shape),
/// or 1 for a one-element root.
fn root_grad(i: usize, t: &Tensor, g: Option<&Tensor>) -> Result<Tensor> {
    match g {
        Some(g) => {
            if g.sizes() != t.sizes() {
                return Err(Error::shape(
                    "backward",
                    format!(
                        "Mismatch in shape: grad_output[{i}] has a shape of torch.Size({:?}) and output[{i}] has a \
                         shape of torch.Size({:?}).",
                        g.sizes(),
                        t.sizes()
                    ),
                ));
            }
            Ok(g.clone())
        }
        None => {
            if t.numel() != 1 {
                return Err(Error::invalid("backward", "grad can be implicitly created only for scalar outputs"));
            }
            aten::ops::ones_like(t, None, None, None, None, None)
        }
    }
}

fn roots_of(tensors: &[Tensor], grad_tensors: &[Option<Tensor>]) -> Result<Vec<(Edge, Option<Tensor>)>> {
    if !grad_tensors.is_empty() && grad_tensors.len() != tensors.len() {
        return Err(Error::invalid(
            "backward",
            format!("got {} tensors and {} gradients", tensors.len(), grad_tensors.len()),
        ));
    }
    let mut roots = Vec::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        if !requires_grad(t) {
            return Err(Error::invalid(
                "backward",
                format!("element {i} of tensors does not require grad and does not have a grad_fn"),
            ));
        }
        let g = root_grad(i, t, grad_tensors.get(i).and_then(|g| g.as_ref()))?;
        roots.push((gradient_edge(t), Some(g)));
    }
    Ok(roots)
}

/// `torch.autograd.backward`: accumulates the gradients of `tensors` (weighted by
/// `grad_tensors`, which may be empty for one-element roots) into the `.grad` of the leaves, or
/// of `inputs` only when given. `retain_graph` defaults to `create_graph`.
pub fn backward(
    tensors: &[Tensor],
    grad_tensors: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: &[Tensor],
) -> Result<()> {
    let roots = roots_of(tensors, grad_tensors)?;
    let keep = retain_graph.unwrap_or(create_graph);
    if inputs.is_empty() {
        execute(roots, keep, create_graph, None)?;
        return Ok(());
    }
    let edges = input_edges(inputs)?;
    let captured = execute(roots, keep, create_graph, Some((&edges, true)))?;
    // Non-leaf inputs were captured rather than accumulated.
    for (t, g) in inputs.iter().zip(captured) {
        if let Some(g) = g {
            let total = match crate::meta::grad(t) {
                Some(old) => sum_grads(&old, &g)?,
                None => g,
            };
            crate::meta::set_grad(t, Some(total))?;
        }
    }
    Ok(())
}

fn input_edges(inputs: &[Tensor]) -> Result<Vec<Edge>> {
    inputs
        .iter()
        .map(|t| {
            if !requires_grad(t) {
                return Err(Error::invalid("grad", "One of the differentiated Tensors does not require grad"));
            }
            Ok(gradient_edge(t))
        })
        .collect()
}

/// `torch.autograd.grad`: the gradients of `outputs` with respect to `inputs`, without touching
/// any `.grad`. With `create_graph` the results have history (for higher-order gradients).
/// An input the outputs do not depend on is an error unless `allow_unused` (then None).
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    let roots = roots_of(outputs, grad_outputs)?;
    let edges = input_edges(inputs)?;
    let keep = retain_graph.unwrap_or(create_graph);
    let captured = execute(roots, keep, create_graph, Some((&edges, false)))?;
    if !allow_unused && captured.iter().any(|g| g.is_none()) {
        return Err(Error::invalid(
            "grad",
            "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if \
             this is the desired behavior.",
        ));
    }
    Ok(captured)
}
