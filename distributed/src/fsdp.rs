//! `FullyShardedDataParallel`: each rank keeps a 1/world shard of the parameters, gathers a
//! unit's full parameters just before they are needed and frees them after (PyTorch's FSDP with
//! `use_orig_params=False`, its "FSDP1").
//!
//! Note [FSDP units and flat parameters]: as PyTorch's FSDP.
//! - A **unit** is one wrapped module: [`FullyShardedDataParallel::new`] makes the module it is
//!   given a unit, and its auto-wrap policy makes units of the children of a root `Sequential`
//!   first (a model's own fields can be wrapped by hand, `block: FullyShardedDataParallel<Block>`,
//!   as PyTorch users wrap submodules; the outermost wrapper is the root).
//! - A unit's parameters (those not in a nested unit) are flattened, in the order the module
//!   lists them, into one flat parameter padded to a multiple of the world size. Rank `r` keeps
//!   elements `[r*s, (r+1)*s)` (s = padded/world) as its `_flat_param` shard: a leaf that
//!   requires grad, the only parameter an optimizer sees. The module's own parameter slots hold
//!   empty placeholders between forward passes.
//! - **Forward**: the unit all-gathers its shards (an autograd function whose outputs are the
//!   original parameters, views of the gathered flat buffer), puts them in the module's slots,
//!   runs the module, and puts the placeholders back.
//! - **Backward**: the gather's backward receives every parameter's gradient, lays them out as
//!   the flat parameter, and reduce-scatters them (a sum divided by the world size): each rank's
//!   shard gets the average gradient of its part, accumulated into `_flat_param.grad`.
//! - **FULL_SHARD** frees the gathered parameters after the unit's forward. The tensors backward
//!   needs that are views of them (a linear layer saves its weight) are saved through
//!   saved-tensor hooks (Note [Saved tensor hooks] in autograd) as their place in the flat buffer;
//!   the first one unpacked in backward gathers the unit again, and the gather's backward frees
//!   it. **SHARD_GRAD_OP** keeps the gathered parameters from forward until the unit's backward
//!   (no second gather); **NO_SHARD** keeps the whole flat parameter on every rank and all-reduces
//!   its gradient (DDP through FSDP's machinery).
//! - **Prefetching**: the root records the order in which units ran forward. With
//!   `backward_prefetch` BACKWARD_PRE (the default), the unit that backward reaches next is
//!   gathered asynchronously as soon as the current unit's gather is taken, so the gather overlaps
//!   the current unit's gradient computation; BACKWARD_POST issues it after the current unit's
//!   gradients were reduced. `forward_prefetch` gathers the next unit of the previous
//!   iteration's order while the current one computes. Every rank runs the same graph, so all
//!   ranks issue the same collectives in the same order.
//!
//! Note [FSDP CPU offload]: PyTorch's `CPUOffload(offload_params=True)`. Each rank's shard (the
//! optimizer's parameter) and its gradient live on the CPU; the unit gathers its shards there
//! (the group's CPU backend) and copies the gathered flat parameter to the compute device
//! (`device_id`, else the parameters' device) for the module's forward and backward, where the
//! saved-tensor hooks find it as before. Backward lays the gradients out on the compute device,
//! copies them to the CPU and reduce-scatters there. So the compute device holds only the units
//! being computed (and a prefetched one) at any time: a model larger than a device's memory
//! trains when each unit fits. The root moves its input to the compute device.
//! - The module's buffers stay whole on every rank. [`FullyShardedDataParallel::full_state_dict`]
//!   gathers an ordinary state dict with the original names; [`crate::checkpoint`] saves and
//!   loads the shards themselves, at any world size.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use aten::Tensor;
use autograd::custom::{self, Function, FunctionCtx};
use autograd::saved::{saved_tensors_hooks, Packed};
use autograd::TensorAutograd;
use c10::{Device, Error, Result, ScalarType};
use nn::{Forward, Member, MemberMut, Module, Parameter, Sequential, StateDict};

use crate::process_group::{ProcessGroup, ReduceOp};
use crate::work::Work;

/// `torch.distributed.fsdp.ShardingStrategy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardingStrategy {
    /// Parameters, gradients and optimizer state sharded; parameters gathered again for backward.
    FullShard,
    /// Gradients and optimizer state sharded; the parameters gathered in forward are kept until
    /// the unit's backward.
    ShardGradOp,
    /// Nothing sharded: every rank keeps the whole model and all-reduces its gradients.
    NoShard,
}

/// `torch.distributed.fsdp.BackwardPrefetch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackwardPrefetch {
    /// Gather the next unit's parameters when the current unit's backward starts.
    BackwardPre,
    /// Gather the next unit's parameters after the current unit's gradients were reduced.
    BackwardPost,
}

/// Which children of a root `Sequential` become units of their own (PyTorch's
/// `size_based_auto_wrap_policy` and `ModuleWrapPolicy`).
#[derive(Clone, Debug)]
pub enum AutoWrapPolicy {
    /// Children with at least this many parameter elements.
    Size {
        /// `min_num_params` (PyTorch's default is 1e8).
        min_num_params: i64,
    },
    /// Children whose class name is one of these (`"Linear"`, `"TransformerEncoderLayer"`).
    ModuleTypes(Vec<String>),
}

impl AutoWrapPolicy {
    fn wraps(&self, m: &dyn Module) -> bool {
        match self {
            AutoWrapPolicy::Size { min_num_params } => m.num_parameters() >= *min_num_params,
            AutoWrapPolicy::ModuleTypes(names) => names.iter().any(|n| n == m.type_name()),
        }
    }
}

/// `torch.distributed.fsdp.MixedPrecision`: the dtypes FSDP computes and communicates in,
/// while the shards (and so the optimizer) stay in the parameters' own dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MixedPrecision {
    /// The dtype parameters are gathered and computed in (None: their own).
    pub param_dtype: Option<ScalarType>,
    /// The dtype gradients are reduced in (None: `param_dtype`, as PyTorch).
    pub reduce_dtype: Option<ScalarType>,
    /// Cast floating-point inputs of every unit's forward to `param_dtype` (false).
    pub cast_forward_inputs: bool,
    /// Cast floating-point inputs of the root's forward to `param_dtype` (true).
    pub cast_root_forward_inputs: bool,
}

impl Default for MixedPrecision {
    fn default() -> Self {
        MixedPrecision {
            param_dtype: None,
            reduce_dtype: None,
            cast_forward_inputs: false,
            cast_root_forward_inputs: true,
        }
    }
}

/// PyTorch's `CPUOffload` (Note [FSDP CPU offload]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuOffload {
    /// Keep each rank's shard and its gradient on the CPU (the optimizer steps there); a unit's
    /// gathered parameters are copied to the compute device for its forward and backward.
    pub offload_params: bool,
}

/// The options of [`FullyShardedDataParallel`], with PyTorch's defaults.
#[derive(Clone, Debug)]
pub struct FsdpOptions {
    /// FULL_SHARD.
    pub sharding_strategy: ShardingStrategy,
    /// None: the whole module is one unit.
    pub auto_wrap_policy: Option<AutoWrapPolicy>,
    /// BACKWARD_PRE.
    pub backward_prefetch: Option<BackwardPrefetch>,
    /// false.
    pub forward_prefetch: bool,
    /// Broadcast parameters and buffers from rank 0 at construction (false).
    pub sync_module_states: bool,
    /// Lower-precision computation and communication (None: the parameters' dtype throughout).
    pub mixed_precision: Option<MixedPrecision>,
    /// The group to shard over (the default group when `None`).
    pub process_group: Option<ProcessGroup>,
    /// Shards and gradients on the CPU (off).
    pub cpu_offload: CpuOffload,
    /// The device units compute on (PyTorch's `device_id`): the parameters' device when `None`.
    /// Without offload the shards and buffers move there.
    pub device_id: Option<Device>,
}

impl Default for FsdpOptions {
    fn default() -> Self {
        FsdpOptions {
            sharding_strategy: ShardingStrategy::FullShard,
            auto_wrap_policy: None,
            backward_prefetch: Some(BackwardPrefetch::BackwardPre),
            forward_prefetch: false,
            sync_module_states: false,
            mixed_precision: None,
            process_group: None,
            cpu_offload: CpuOffload::default(),
            device_id: None,
        }
    }
}

pub(crate) fn fsdp_error(msg: impl Into<String>) -> Error {
    Error::Distributed { op: "FullyShardedDataParallel".into(), msg: msg.into() }
}

/// One original parameter inside a unit's flat parameter.
#[derive(Clone, Debug)]
pub(crate) struct ParamInfo {
    /// Its names in the unit's module (several when the module shares it).
    pub(crate) names: Vec<String>,
    pub(crate) shape: Vec<i64>,
    pub(crate) numel: i64,
    /// Element offset in the flat parameter.
    pub(crate) offset: i64,
}

/// The order units ran forward in, kept by the root (Note [FSDP units and flat parameters]).
#[derive(Default)]
struct Order {
    current: Vec<Weak<Unit>>,
    last: Vec<Weak<Unit>>,
}

#[derive(Default)]
struct RootState {
    order: Mutex<Order>,
}

#[derive(Default)]
struct UnitState {
    /// The gathered flat parameter, while the unit holds it.
    full: Option<Tensor>,
    /// A gather in flight (prefetch) and its output.
    pending: Option<(Work, Tensor)>,
}

/// A unit's sharding state, shared by its wrapper, its autograd functions and its saved-tensor
/// hooks.
pub(crate) struct Unit {
    pub(crate) group: ProcessGroup,
    pub(crate) rank: usize,
    pub(crate) world: usize,
    pub(crate) strategy: ShardingStrategy,
    pub(crate) params: Vec<ParamInfo>,
    /// Elements of the flat parameter without and with padding.
    pub(crate) total: i64,
    pub(crate) padded: i64,
    pub(crate) shard_len: i64,
    pub(crate) dtype: ScalarType,
    /// The dtypes of the gathered parameters and of the gradient reduction
    /// ([`MixedPrecision`]; both `dtype` without it).
    param_dtype: ScalarType,
    reduce_dtype: ScalarType,
    mixed_precision: Option<MixedPrecision>,
    /// Where the shard lives: the CPU under [`CpuOffload`], else `compute_device`.
    pub(crate) device: Device,
    /// Where the gathered parameters live and the module computes (Note [FSDP CPU offload]).
    pub(crate) compute_device: Device,
    /// This rank's shard (`_flat_param`).
    pub(crate) shard: Parameter,
    /// The nested units directly inside this one, with their paths in this unit's module.
    pub(crate) children: Vec<(String, Arc<Unit>)>,
    /// The unit's module (its parameter slots hold `placeholder` between forwards).
    pub(crate) module: Arc<Mutex<dyn Forward>>,
    /// An empty tensor of the flat parameter's dtype on the compute device.
    placeholder: Tensor,
    backward_prefetch: Option<BackwardPrefetch>,
    forward_prefetch: bool,
    state: Mutex<UnitState>,
    own_root: Arc<RootState>,
    root: Mutex<Arc<RootState>>,
}

/// Every unit alive, for finding nested units by their shard.
static UNITS: Mutex<Vec<Weak<Unit>>> = Mutex::new(Vec::new());

/// The gathered flat parameters alive now, by the address of their storage, with their unit:
/// what the pack hook looks a saved tensor's storage up in (a few entries at any time).
static GATHERED: Mutex<Vec<(usize, Weak<Unit>)>> = Mutex::new(Vec::new());

fn gathered() -> MutexGuard<'static, Vec<(usize, Weak<Unit>)>> {
    GATHERED.lock().unwrap_or_else(|e| e.into_inner())
}

fn storage_key(t: &Tensor) -> usize {
    t.storage().data_ptr() as usize
}

fn units() -> Vec<Arc<Unit>> {
    let mut all = UNITS.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|u| u.strong_count() > 0);
    all.iter().filter_map(Weak::upgrade).collect()
}

impl Unit {
    fn lock(&self) -> MutexGuard<'_, UnitState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn root(&self) -> Arc<RootState> {
        self.root.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set_root(&self, root: &Arc<RootState>) {
        *self.root.lock().unwrap_or_else(|e| e.into_inner()) = root.clone();
        for (_, c) in &self.children {
            c.set_root(root);
        }
    }

    pub(crate) fn is_root(&self) -> bool {
        Arc::ptr_eq(&self.root(), &self.own_root)
    }

    /// The shard in `dtype` (itself when it has that dtype).
    fn shard_as(&self, dtype: ScalarType) -> Result<Tensor> {
        let s = self.shard.tensor().detach();
        if s.dtype() == dtype {
            Ok(s)
        } else {
            s.to(dtype).call()
        }
    }

    /// Starts gathering the flat parameter into a new buffer of `dtype`.
    fn start_gather_as(&self, dtype: ScalarType) -> Result<(Work, Tensor)> {
        let full = aten::ops::empty(&[self.padded], Some(dtype), None, Some(self.device), None, None)?;
        let work = self.group.all_gather_into_tensor(&full, &self.shard_as(dtype)?)?;
        Ok((work, full))
    }

    /// Starts gathering the flat parameter for computation (in `param_dtype`).
    fn start_gather(&self) -> Result<(Work, Tensor)> {
        self.start_gather_as(self.param_dtype)
    }

    /// The whole flat parameter in `dtype`, gathered now (not kept).
    pub(crate) fn gather_now_as(&self, dtype: ScalarType) -> Result<Tensor> {
        if self.strategy == ShardingStrategy::NoShard || self.padded == 0 {
            return self.shard_as(dtype);
        }
        let (work, full) = self.start_gather_as(dtype)?;
        work.wait()?;
        Ok(full)
    }

    /// The whole flat parameter for computation, gathered now (not kept).
    fn gather_now(&self) -> Result<Tensor> {
        self.gather_now_as(self.param_dtype)
    }

    /// Starts a prefetch unless the unit holds or is gathering its parameters.
    fn prefetch(&self) -> Result<()> {
        if self.strategy == ShardingStrategy::NoShard || self.padded == 0 {
            return Ok(());
        }
        let mut st = self.lock();
        if st.full.is_none() && st.pending.is_none() {
            st.pending = Some(self.start_gather()?);
        }
        Ok(())
    }

    /// The gathered flat parameter: the one held, a prefetch's, or a new gather; kept.
    fn take_full(self: &Arc<Unit>) -> Result<Tensor> {
        let mut st = self.lock();
        if let Some(f) = &st.full {
            return Ok(f.clone());
        }
        let full = match st.pending.take() {
            Some((work, full)) => {
                work.wait()?;
                full
            }
            None => {
                drop(st);
                let full = self.gather_now()?;
                st = self.lock();
                full
            }
        };
        let full = if full.device() == self.compute_device { full } else { full.to_device(self.compute_device)? };
        gathered().push((storage_key(&full), Arc::downgrade(self)));
        st.full = Some(full.clone());
        Ok(full)
    }

    /// Frees the gathered flat parameter (waiting out a prefetch nobody used, so the collective
    /// still completes on every rank).
    fn release(&self) -> Result<()> {
        let pending = {
            let mut st = self.lock();
            if let Some(full) = st.full.take() {
                let key = storage_key(&full);
                gathered().retain(|(k, _)| *k != key);
            }
            st.pending.take()
        };
        if let Some((work, _)) = pending {
            work.wait()?;
        }
        Ok(())
    }

    /// [`Unit::release`] of this unit and every unit nested in it.
    fn release_all(&self) -> Result<()> {
        self.release()?;
        self.children.iter().try_for_each(|(_, c)| c.release_all())
    }

    /// The unit that ran forward just before this one in this iteration (the next in backward).
    fn before_in_order(self: &Arc<Unit>) -> Option<Arc<Unit>> {
        let root = self.root();
        let order = root.order.lock().unwrap_or_else(|e| e.into_inner());
        let i = order.current.iter().position(|u| u.as_ptr() == Arc::as_ptr(self))?;
        i.checked_sub(1).and_then(|j| order.current[j].upgrade())
    }

    /// The unit that ran forward just after this one in the last iteration.
    fn after_in_last_order(self: &Arc<Unit>) -> Option<Arc<Unit>> {
        let root = self.root();
        let order = root.order.lock().unwrap_or_else(|e| e.into_inner());
        let i = order.last.iter().position(|u| u.as_ptr() == Arc::as_ptr(self))?;
        order.last.get(i + 1).and_then(Weak::upgrade)
    }

    /// The gathered parameters for backward (Note [FSDP units and flat parameters]), starting
    /// the BACKWARD_PRE prefetch of the next unit.
    fn full_for_backward(self: &Arc<Unit>) -> Result<Tensor> {
        let full = self.take_full()?;
        if self.backward_prefetch == Some(BackwardPrefetch::BackwardPre) {
            if let Some(next) = self.before_in_order() {
                next.prefetch()?;
            }
        }
        Ok(full)
    }

    /// The parameters as views of `full`.
    fn views(&self, full: &Tensor) -> Result<Vec<Tensor>> {
        self.params.iter().map(|p| full.narrow(0, p.offset, p.numel)?.view(p.shape.as_slice())).collect()
    }

    /// The range of the flat parameter rank `r` keeps.
    pub(crate) fn shard_range(&self, r: usize) -> (i64, i64) {
        match self.strategy {
            ShardingStrategy::NoShard => (0, self.total),
            _ => (r as i64 * self.shard_len, (r as i64 + 1) * self.shard_len),
        }
    }
}

/// What FSDP's pack hook keeps of a saved tensor.
enum SavedParam {
    Tensor(Tensor),
    /// A view of a unit's gathered flat parameter, by its place in it.
    View {
        unit: Arc<Unit>,
        sizes: Vec<i64>,
        strides: Vec<i64>,
        offset: i64,
    },
}

fn pack(t: &Tensor) -> Result<Packed> {
    let key = storage_key(t);
    let unit = gathered().iter().find(|(k, _)| *k == key).and_then(|(_, u)| u.upgrade());
    Ok(Box::new(match unit {
        Some(unit) => SavedParam::View {
            unit,
            sizes: t.sizes().to_vec(),
            strides: t.strides().to_vec(),
            offset: t.storage_offset(),
        },
        None => SavedParam::Tensor(t.clone()),
    }))
}

fn unpack(p: &Packed) -> Result<Tensor> {
    match p.downcast_ref::<SavedParam>() {
        Some(SavedParam::Tensor(t)) => Ok(t.clone()),
        Some(SavedParam::View { unit, sizes, strides, offset }) => {
            unit.full_for_backward()?.as_strided_with(sizes, strides, Some(*offset))
        }
        None => Err(fsdp_error("a saved tensor was packed by another hook")),
    }
}

/// The unit's all-gather as an autograd function: the shard in, the original parameters out;
/// backward reduce-scatters their gradients into the shard's.
struct AllGather {
    unit: Arc<Unit>,
}

impl Function for AllGather {
    fn name(&self) -> String {
        "FsdpAllGather".into()
    }

    fn forward(&self, _ctx: &mut FunctionCtx, _inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let full = self.unit.take_full()?;
        self.unit.views(&full)
    }

    fn backward(&self, _ctx: &FunctionCtx, grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let u = &self.unit;
        // The gathered parameters are not needed any more (Note [FSDP units and flat parameters]).
        u.release()?;
        let mut parts = Vec::with_capacity(u.params.len() + 1);
        for (p, g) in u.params.iter().zip(grads) {
            parts.push(match g {
                Some(g) => g.reshape(&[-1])?,
                None => aten::ops::zeros(&[p.numel], Some(u.param_dtype), None, Some(u.compute_device), None)?,
            });
        }
        if u.padded > u.total {
            parts.push(aten::ops::zeros(
                &[u.padded - u.total],
                Some(u.param_dtype),
                None,
                Some(u.compute_device),
                None,
            )?);
        }
        let mut flat = aten::ops::cat(&parts, 0)?;
        drop(parts);
        if flat.device() != u.device {
            // Offloaded: the gradient is reduced and kept on the CPU (Note [FSDP CPU offload]).
            flat = flat.to_device(u.device)?;
        }
        if flat.dtype() != u.reduce_dtype {
            flat = flat.to(u.reduce_dtype).call()?;
        }
        if u.backward_prefetch == Some(BackwardPrefetch::BackwardPost) {
            if let Some(next) = u.before_in_order() {
                next.prefetch()?;
            }
        }
        let grad = match u.strategy {
            ShardingStrategy::NoShard => {
                u.group.all_reduce(&flat, ReduceOp::Sum)?.wait()?;
                flat
            }
            _ => {
                let out = aten::ops::empty(&[u.shard_len], Some(u.reduce_dtype), None, Some(u.device), None, None)?;
                u.group.reduce_scatter_tensor(&out, &flat, ReduceOp::Sum)?.wait()?;
                out
            }
        };
        grad.div_(c10::Scalar::Int(u.world as i64)).call()?;
        let grad = if grad.dtype() == u.dtype { grad } else { grad.to(u.dtype).call()? };
        Ok(vec![Some(grad)])
    }
}

/// Lets a boxed child of a `Sequential` be a unit's module.
struct Boxed(Box<dyn Forward>);

impl Module for Boxed {
    fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
        self.0.for_each_member(f)
    }
    fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        self.0.for_each_member_mut(f)
    }
    fn type_name(&self) -> &'static str {
        self.0.type_name()
    }
    fn own_training(&self) -> Option<bool> {
        self.0.own_training()
    }
    fn set_own_training(&mut self, on: bool) {
        self.0.set_own_training(on)
    }
    fn hooks(&self) -> Option<&nn::Hooks> {
        self.0.hooks()
    }
}

impl Forward for Boxed {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.0.forward(x)
    }
}

/// `torch.distributed.fsdp.FullyShardedDataParallel` (Note [FSDP units and flat parameters]).
///
/// Its parameters ([`Module::parameters`]) are the shards of every unit inside it, the
/// `_flat_param`s, which is what an optimizer is given; [`Self::full_state_dict`] and
/// [`crate::checkpoint`] give the original parameters back.
pub struct FullyShardedDataParallel<M: Forward + 'static> {
    unit: Arc<Unit>,
    module: Arc<Mutex<M>>,
}

impl<M: Forward + 'static> FullyShardedDataParallel<M> {
    /// `FSDP(module)` with the default options over the default group.
    pub fn new(module: M) -> Result<Self> {
        Self::with_options(module, FsdpOptions::default())
    }

    /// `FSDP(module, sharding_strategy=..., auto_wrap_policy=..., ...)`. Every rank of the group
    /// must call it with the same model (sizes are checked).
    pub fn with_options(mut module: M, options: FsdpOptions) -> Result<Self> {
        let group = match &options.process_group {
            Some(g) => g.clone(),
            None => crate::api::default_group()?,
        };
        if !group.is_member() {
            return Err(fsdp_error("this rank is not a member of the process group"));
        }
        if let Some(policy) = &options.auto_wrap_policy {
            if let Some(seq) = (&mut module as &mut dyn Any).downcast_mut::<Sequential>() {
                let inner =
                    FsdpOptions { auto_wrap_policy: None, process_group: Some(group.clone()), ..options.clone() };
                for child in seq.take_modules() {
                    if policy.wraps(child.as_ref()) {
                        seq.push_boxed(Box::new(FullyShardedDataParallel::with_options(Boxed(child), inner.clone())?));
                    } else {
                        seq.push_boxed(child);
                    }
                }
            }
        }
        let module = Arc::new(Mutex::new(module));
        let dyn_module: Arc<Mutex<dyn Forward>> = module.clone();
        let unit = Arc::new(build_unit(dyn_module, group, &options)?);
        for (_, c) in &unit.children {
            c.set_root(&unit.own_root);
        }
        UNITS.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::downgrade(&unit));
        Ok(FullyShardedDataParallel { unit, module })
    }

    /// The wrapped module, locked (its parameter slots hold empty placeholders outside forward;
    /// its buffers are whole).
    pub fn module(&self) -> MutexGuard<'_, M> {
        self.module.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The sharding strategy.
    pub fn sharding_strategy(&self) -> ShardingStrategy {
        self.unit.strategy
    }

    /// The number of units: this one and every one nested in it.
    pub fn num_units(&self) -> usize {
        fn count(u: &Unit) -> usize {
            1 + u.children.iter().map(|(_, c)| count(c)).sum::<usize>()
        }
        count(&self.unit)
    }

    /// The unit (for the checkpoint functions).
    pub(crate) fn unit(&self) -> &Arc<Unit> {
        &self.unit
    }

    /// The model's state dict with the original names and whole tensors (PyTorch's
    /// `FULL_STATE_DICT`), on every rank. A collective: every rank must call it.
    pub fn full_state_dict(&self) -> Result<StateDict> {
        let mut out = StateDict::new();
        full_state(&self.unit, "", &mut out)?;
        Ok(out)
    }

    /// Loads an ordinary state dict (original names, whole tensors): each rank keeps its shard of
    /// it. Every name must be present with its shape; the module is unchanged on an error.
    pub fn load_full_state_dict(&self, state: &StateDict) -> Result<()> {
        let mut plan = Vec::new();
        plan_full_load(&self.unit, "", state, &mut plan)?;
        let _g = autograd::no_grad();
        for (dst, src) in plan {
            dst.copy_(&src).call()?;
        }
        Ok(())
    }
}

/// Builds a unit from a module (before it moves into the unit): finds nested units, flattens
/// the remaining parameters and keeps this rank's shard.
fn build_unit(module_arc: Arc<Mutex<dyn Forward>>, group: ProcessGroup, options: &FsdpOptions) -> Result<Unit> {
    let mut module = lock_module(&module_arc);
    let rank = group.rank().ok_or_else(|| fsdp_error("this rank is not a member of the process group"))?;
    let world = group.size();
    let all_units = units();
    // The nested units' shards are parameters named `..._flat_param`; the rest are ours.
    let mut children = Vec::new();
    let mut own: Vec<(String, Tensor)> = Vec::new();
    module.visit_tensors("", &mut |name, m| {
        if let Member::Parameter(p) = m {
            if let Some(u) = all_units.iter().find(|u| u.shard.tensor().is_same(p.tensor())) {
                let prefix = name.strip_suffix("_flat_param").unwrap_or(name).trim_end_matches('.').to_string();
                // Only direct children: a grandchild's prefix extends a child's.
                if u.is_root() {
                    children.push((prefix, u.clone()));
                }
            } else {
                own.push((name.to_string(), p.tensor().clone()));
            }
        }
    });
    // The parameters, shared ones once.
    let mut params: Vec<ParamInfo> = Vec::new();
    let mut data: Vec<Tensor> = Vec::new();
    let mut offset = 0;
    for (name, t) in &own {
        if let Some(i) = data.iter().position(|d| d.is_same(t)) {
            params[i].names.push(name.clone());
            continue;
        }
        if let Some(first) = data.first() {
            if first.dtype() != t.dtype() {
                return Err(fsdp_error(format!(
                    "Must flatten tensors with uniform dtype but got {} and {}",
                    first.dtype().name(),
                    t.dtype().name()
                )));
            }
            if first.requires_grad() != t.requires_grad() {
                return Err(fsdp_error(
                    "Must flatten tensors with uniform `requires_grad` when `use_orig_params=False`",
                ));
            }
            if first.device() != t.device() {
                return Err(fsdp_error(format!(
                    "Must flatten tensors on the same device but got both {} and {}",
                    first.device(),
                    t.device()
                )));
            }
        }
        params.push(ParamInfo { names: vec![name.clone()], shape: t.sizes().to_vec(), numel: t.numel(), offset });
        offset += t.numel();
        data.push(t.clone());
    }
    let total = offset;
    let (dtype, param_device) = data.first().map_or((ScalarType::F32, Device::CPU), |t| (t.dtype(), t.device()));
    // Note [FSDP CPU offload].
    let compute_device = options.device_id.unwrap_or(param_device);
    let device = if options.cpu_offload.offload_params { Device::CPU } else { compute_device };
    let strategy = options.sharding_strategy;
    let padded = match strategy {
        ShardingStrategy::NoShard => total,
        _ => (total + world as i64 - 1) / world as i64 * world as i64,
    };
    // Every rank must have the same model: compare the flat sizes.
    let sizes: Vec<i64> = crate::api::all_gather_object_in(&group, &total)?;
    if sizes.iter().any(|&n| n != total) {
        return Err(fsdp_error(format!(
            "FSDP expects same model across all ranks, but the units' flat parameters have {sizes:?} elements"
        )));
    }
    let flat = {
        let _g = autograd::no_grad();
        let mut parts: Vec<Tensor> = data.iter().map(|t| t.detach().reshape(&[-1])).collect::<Result<_>>()?;
        if padded > total {
            parts.push(aten::ops::zeros(&[padded - total], Some(dtype), None, Some(param_device), None)?);
        }
        if parts.is_empty() {
            aten::ops::empty(&[0], Some(dtype), None, Some(param_device), None, None)?
        } else {
            aten::ops::cat(&parts, 0)?
        }
    };
    if options.sync_module_states && padded > 0 {
        group.broadcast(&flat, 0)?.wait()?;
    }
    let shard_len = match strategy {
        ShardingStrategy::NoShard => total,
        _ => padded / world as i64,
    };
    let shard_data = aten::ops::empty(&[shard_len], Some(dtype), None, Some(device), None, None)?;
    let start = if strategy == ShardingStrategy::NoShard { 0 } else { rank as i64 * shard_len };
    shard_data.copy_(&flat.narrow(0, start, shard_len)?).call()?;
    drop(flat);
    let requires_grad = data.first().is_none_or(|t| t.requires_grad());
    let shard = Parameter::with_requires_grad(shard_data, requires_grad)?;
    drop(data);
    // The module's slots get placeholders; its buffers are whole (broadcast if asked) and on
    // the compute device.
    let placeholder = aten::ops::empty(&[0], Some(dtype), None, Some(compute_device), None, None)?;
    let own_names: std::collections::HashSet<&str> = own.iter().map(|(n, _)| n.as_str()).collect();
    let mut buffers = Vec::new();
    let mut moved: Result<()> = Ok(());
    module.visit_tensors_mut("", &mut |name, m| match m {
        MemberMut::Parameter(p) if own_names.contains(name) => *p = Parameter::replica(placeholder.detach()),
        // Nested units list no buffers: theirs are synchronised by their own construction.
        MemberMut::Buffer(b) => {
            if b.tensor().device() != compute_device && moved.is_ok() {
                match b.tensor().to_device(compute_device) {
                    Ok(t) => b.set(t),
                    Err(e) => moved = Err(e),
                }
            }
            buffers.push(b.tensor().clone())
        }
        _ => {}
    });
    moved?;
    if options.sync_module_states {
        for b in &buffers {
            group.broadcast(b, 0)?.wait()?;
        }
    }
    drop(module);
    let own_root = Arc::new(RootState::default());
    let mp = options.mixed_precision;
    let param_dtype = mp.and_then(|m| m.param_dtype).unwrap_or(dtype);
    let reduce_dtype = mp.and_then(|m| m.reduce_dtype).unwrap_or(param_dtype);
    for d in [param_dtype, reduce_dtype] {
        if !d.is_floating_point() {
            return Err(fsdp_error(format!("MixedPrecision dtypes must be floating point, got {}", d.name())));
        }
    }
    Ok(Unit {
        group,
        rank,
        world,
        strategy,
        params,
        total,
        padded,
        shard_len,
        dtype,
        param_dtype,
        reduce_dtype,
        mixed_precision: mp,
        device,
        compute_device,
        shard,
        children,
        placeholder,
        module: module_arc,
        backward_prefetch: options.backward_prefetch,
        forward_prefetch: options.forward_prefetch,
        state: Mutex::new(UnitState::default()),
        root: Mutex::new(own_root.clone()),
        own_root,
    })
}

fn lock_module<'a>(m: &'a Mutex<dyn Forward + 'static>) -> MutexGuard<'a, dyn Forward + 'static> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn full_state(unit: &Arc<Unit>, prefix: &str, out: &mut StateDict) -> Result<()> {
    let full = unit.gather_now_as(unit.dtype)?;
    let m = lock_module(&unit.module);
    let mut own: HashMap<&str, Tensor> = HashMap::new();
    for (p, v) in unit.params.iter().zip(unit.views(&full)?) {
        for n in &p.names {
            own.insert(n.as_str(), v.clone());
        }
    }
    let mut entries = Vec::new();
    m.visit_tensors("", &mut |name, mem| match mem {
        Member::Parameter(_) => {
            if let Some(v) = own.get(name) {
                entries.push((name.to_string(), v.clone()));
            }
        }
        Member::Buffer(b) if b.is_persistent() => entries.push((name.to_string(), b.tensor().detach())),
        _ => {}
    });
    drop(m);
    for (name, t) in entries {
        let copy = aten::ops::empty(t.sizes(), Some(t.dtype()), None, Some(t.device()), None, None)?;
        copy.copy_(&t).call()?;
        out.insert(format!("{prefix}{name}"), copy);
    }
    for (child_prefix, c) in &unit.children {
        full_state(c, &format!("{prefix}{child_prefix}."), out)?;
    }
    Ok(())
}

/// The copies that load `state` into `unit` (destination, source), checked before any is made.
fn plan_full_load(unit: &Arc<Unit>, prefix: &str, state: &StateDict, plan: &mut Vec<(Tensor, Tensor)>) -> Result<()> {
    let (lo, hi) = unit.shard_range(unit.rank);
    let shard = unit.shard.tensor().detach();
    for p in &unit.params {
        let name = format!("{prefix}{}", p.names[0]);
        let src = state.get(&name).ok_or_else(|| fsdp_error(format!("Missing key in state_dict: \"{name}\"")))?;
        if src.sizes() != p.shape.as_slice() {
            return Err(fsdp_error(format!(
                "size mismatch for {name}: copying a param with shape {:?} from checkpoint, the shape in current \
                 model is {:?}",
                src.sizes(),
                p.shape
            )));
        }
        let (a, b) = (p.offset.max(lo), (p.offset + p.numel).min(hi));
        if a < b {
            plan.push((shard.narrow(0, a - lo, b - a)?, src.reshape(&[-1])?.narrow(0, a - p.offset, b - a)?));
        }
    }
    let m = lock_module(&unit.module);
    let mut missing = None;
    m.visit_tensors("", &mut |name, mem| {
        if let Member::Buffer(b) = mem {
            if !b.is_persistent() {
                return;
            }
            match state.get(&format!("{prefix}{name}")) {
                Some(src) if src.sizes() == b.sizes() => plan.push((b.tensor().clone(), src.clone())),
                _ => missing = missing.take().or(Some(format!("{prefix}{name}"))),
            }
        }
    });
    drop(m);
    if let Some(name) = missing {
        return Err(fsdp_error(format!("Missing key in state_dict (or a size mismatch): \"{name}\"")));
    }
    for (child_prefix, c) in &unit.children {
        plan_full_load(c, &format!("{prefix}{child_prefix}."), state, plan)?;
    }
    Ok(())
}

impl<M: Forward + 'static> Module for FullyShardedDataParallel<M> {
    fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
        // This unit's shard, then every nested unit's, under their paths.
        fn walk<'a>(u: &'a Unit, prefix: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
            f(&format!("{prefix}_flat_param"), Member::Parameter(&u.shard));
            for (p, c) in &u.children {
                walk(c, &format!("{prefix}{p}."), f);
            }
        }
        walk(&self.unit, "", f)
    }

    fn for_each_member_mut<'a>(&'a mut self, _f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        // The shards are shared with the unit's autograd functions and cannot be replaced.
    }

    fn type_name(&self) -> &'static str {
        "FullyShardedDataParallel"
    }

    fn own_training(&self) -> Option<bool> {
        Some(self.module().is_training())
    }

    fn set_own_training(&mut self, on: bool) {
        self.module().train(on)
    }
}

impl<M: Forward + 'static> Forward for FullyShardedDataParallel<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let unit = &self.unit;
        let root = unit.root();
        if unit.is_root() {
            // A new iteration: what was gathered before it (a prefetch for a unit whose
            // backward never ran, say) predates the optimizer's step.
            unit.release_all()?;
            let mut order = root.order.lock().unwrap_or_else(|e| e.into_inner());
            order.last = std::mem::take(&mut order.current);
        }
        root.order.lock().unwrap_or_else(|e| e.into_inner()).current.push(Arc::downgrade(unit));
        let params = if unit.padded == 0 {
            Vec::new()
        } else {
            custom::apply(AllGather { unit: unit.clone() }, &[unit.shard.tensor().clone()])?
        };
        if unit.forward_prefetch {
            if let Some(next) = unit.after_in_last_order() {
                next.prefetch()?;
            }
        }
        let cast = unit.mixed_precision.and_then(|mp| {
            let on = if unit.is_root() { mp.cast_root_forward_inputs } else { mp.cast_forward_inputs };
            mp.param_dtype.filter(|&d| on && x.is_floating_point() && x.dtype() != d)
        });
        let x = match cast {
            Some(d) => x.to(d).call()?,
            None => x.clone(),
        };
        // The root moves its input to the compute device, as PyTorch's root pre-forward does.
        let x = if unit.is_root() && x.device() != unit.compute_device { x.to_device(unit.compute_device)? } else { x };
        let mut m = self.module();
        install(&mut *m, unit, Some(&params));
        let hooks = (unit.strategy == ShardingStrategy::FullShard && autograd::is_grad_enabled())
            .then(|| saved_tensors_hooks(Arc::new(pack), Arc::new(unpack)));
        let out = m.call(&x);
        drop(hooks);
        install(&mut *m, unit, None);
        drop(m);
        drop(params);
        if unit.strategy == ShardingStrategy::FullShard || !autograd::is_grad_enabled() {
            unit.release()?;
        }
        out
    }
}

/// Puts the gathered parameters (or, with `None`, empty placeholders) in the module's slots.
fn install<M2: Module + ?Sized>(m: &mut M2, unit: &Unit, values: Option<&[Tensor]>) {
    let mut slot: HashMap<&str, usize> = HashMap::new();
    for (i, p) in unit.params.iter().enumerate() {
        for n in &p.names {
            slot.insert(n.as_str(), i);
        }
    }
    m.visit_tensors_mut("", &mut |name, mem| {
        if let (MemberMut::Parameter(p), Some(&i)) = (mem, slot.get(name)) {
            let t = match values {
                Some(v) => v[i].clone(),
                None => unit.placeholder.detach(),
            };
            *p = Parameter::replica(t);
        }
    });
}
