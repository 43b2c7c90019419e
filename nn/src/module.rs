//! The `Module` trait: named parameters, buffers and children with PyTorch's dotted names, and
//! everything built on walking them (`state_dict`, `load_state_dict`, `train`/`eval`, `to`,
//! `zero_grad`, `named_modules`, hooks).
//!
//! A module lists its *direct* members through [`Module::for_each_member`] (and its `_mut`
//! twin); every recursive operation is a provided method that walks those lists, so
//! `#[derive(Module)]` only has to generate the two listings. Field order is registration
//! order, as in PyTorch, so `state_dict` keys come out in PyTorch's order.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};

use aten::Tensor;
use autograd::TensorAutograd;
use c10::{Device, Error, Result, ScalarType};

/// A tensor that is a module's parameter: it requires grad and is listed by
/// `named_parameters`. Cloning shares the tensor (optimizers hold clones).
#[derive(Clone)]
pub struct Parameter {
    tensor: Tensor,
}

impl Parameter {
    /// Wraps `t` (detached from any history) as a leaf that requires grad, like
    /// `nn.Parameter(t)`.
    pub fn new(t: Tensor) -> Result<Parameter> {
        Parameter::with_requires_grad(t, true)
    }

    /// `nn.Parameter(t, requires_grad=flag)`.
    pub fn with_requires_grad(t: Tensor, flag: bool) -> Result<Parameter> {
        let tensor = t.detach();
        let tensor = if flag && !tensor.is_floating_point() {
            return Err(Error::InvalidArgument {
                op: "Parameter".into(),
                msg: format!(
                    "Only Tensors of floating point dtype can require gradients (got {})",
                    tensor.dtype().name()
                ),
            });
        } else {
            tensor.requires_grad_(flag)?
        };
        Ok(Parameter { tensor })
    }

    /// The tensor (shares storage and autograd state with the parameter).
    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// A parameter slot holding `t` as it is, history included: a DataParallel replica's copy
    /// of a parameter, whose gradient flows back to the original (Note [DataParallel replicas]
    /// in `parallel.rs`), or FSDP's gathered parameter, a view of the all-gathered flat
    /// parameter whose gradient flows back to the rank's shard.
    pub fn replica(t: Tensor) -> Parameter {
        Parameter { tensor: t }
    }
}

impl std::ops::Deref for Parameter {
    type Target = Tensor;
    fn deref(&self) -> &Tensor {
        &self.tensor
    }
}

// A parameter or buffer passes where the front end takes a tensor or a number (`y.add(&bias)`),
// as it does through `Deref` where a call takes `&Tensor`.
impl<'a> From<&'a Parameter> for aten::front::TensorOrScalar<'a> {
    fn from(p: &'a Parameter) -> Self {
        aten::front::TensorOrScalar::Tensor(&p.tensor)
    }
}

impl<'a> From<&'a Buffer> for aten::front::TensorOrScalar<'a> {
    fn from(b: &'a Buffer) -> Self {
        aten::front::TensorOrScalar::Tensor(&b.tensor)
    }
}

impl fmt::Debug for Parameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Parameter containing:\n{}", self.tensor)
    }
}

/// A module's non-parameter state (BatchNorm's running statistics). Persistent buffers are part
/// of the `state_dict`; non-persistent ones are not (`register_buffer(..., persistent=False)`).
#[derive(Clone)]
pub struct Buffer {
    tensor: Tensor,
    persistent: bool,
}

impl Buffer {
    /// A persistent buffer.
    pub fn new(t: Tensor) -> Buffer {
        Buffer { tensor: t, persistent: true }
    }
    /// A buffer left out of the `state_dict`.
    pub fn non_persistent(t: Tensor) -> Buffer {
        Buffer { tensor: t, persistent: false }
    }
    /// The tensor.
    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }
    /// Replaces the tensor (a module updating its own state, e.g. `num_batches_tracked`).
    pub fn set(&mut self, t: Tensor) {
        self.tensor = t;
    }
    /// Whether the buffer is saved in the `state_dict`.
    pub fn is_persistent(&self) -> bool {
        self.persistent
    }
}

impl std::ops::Deref for Buffer {
    type Target = Tensor;
    fn deref(&self) -> &Tensor {
        &self.tensor
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer(persistent={}):\n{}", self.persistent, self.tensor)
    }
}

/// One direct member of a module, as listed by [`Module::for_each_member`].
pub enum Member<'a> {
    /// A parameter.
    Parameter(&'a Parameter),
    /// A buffer.
    Buffer(&'a Buffer),
    /// A child module.
    Module(&'a dyn Module),
}

/// One direct member of a module, mutably.
pub enum MemberMut<'a> {
    /// A parameter.
    Parameter(&'a mut Parameter),
    /// A buffer.
    Buffer(&'a mut Buffer),
    /// A child module.
    Module(&'a mut dyn Module),
}

/// A field type `#[derive(Module)]` knows how to list: parameters, buffers, child modules,
/// `Option`s and `Vec`s of those, and plain configuration values (listed as nothing).
pub trait Members {
    /// Lists the members under `name`.
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>));
    /// Lists the members under `name`, mutably.
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>));
}

impl Members for Parameter {
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        f(name, Member::Parameter(self))
    }
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        f(name, MemberMut::Parameter(self))
    }
}

impl Members for Buffer {
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        f(name, Member::Buffer(self))
    }
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        f(name, MemberMut::Buffer(self))
    }
}

impl<T: Members> Members for Option<T> {
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        if let Some(m) = self {
            m.members(name, f)
        }
    }
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        if let Some(m) = self {
            m.members_mut(name, f)
        }
    }
}

/// A `Vec` of members is listed as `name.0`, `name.1`, ... (PyTorch's `ModuleList` /
/// `ParameterList` naming).
impl<T: Members> Members for Vec<T> {
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        for (i, m) in self.iter().enumerate() {
            m.members(&join(name, &i.to_string()), f)
        }
    }
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        for (i, m) in self.iter_mut().enumerate() {
            m.members_mut(&join(name, &i.to_string()), f)
        }
    }
}

impl Members for Box<dyn Module> {
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        f(name, Member::Module(self.as_ref()))
    }
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        f(name, MemberMut::Module(self.as_mut()))
    }
}

macro_rules! config_members {
    ($($t:ty),*) => {$(
        impl Members for $t {
            fn members<'a>(&'a self, _: &str, _: &mut dyn FnMut(&str, Member<'a>)) {}
            fn members_mut<'a>(&'a mut self, _: &str, _: &mut dyn FnMut(&str, MemberMut<'a>)) {}
        }
    )*};
}
config_members!(bool, i64, i32, u64, u32, usize, f64, f32, String, ScalarType, Hooks);
impl<const N: usize> Members for [i64; N] {
    fn members<'a>(&'a self, _: &str, _: &mut dyn FnMut(&str, Member<'a>)) {}
    fn members_mut<'a>(&'a mut self, _: &str, _: &mut dyn FnMut(&str, MemberMut<'a>)) {}
}

pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// The state of a module: names to tensors in registration order (PyTorch's `OrderedDict`).
#[derive(Clone, Default)]
pub struct StateDict {
    entries: Vec<(String, Tensor)>,
}

impl StateDict {
    /// An empty dict.
    pub fn new() -> StateDict {
        StateDict::default()
    }
    /// Inserts or replaces `name`.
    pub fn insert(&mut self, name: impl Into<String>, t: Tensor) {
        let name = name.into();
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 = t,
            None => self.entries.push((name, t)),
        }
    }
    /// The tensor stored under `name`.
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
    /// Removes `name`, returning its tensor.
    pub fn remove(&mut self, name: &str) -> Option<Tensor> {
        let i = self.entries.iter().position(|(n, _)| n == name)?;
        Some(self.entries.remove(i).1)
    }
    /// Whether `name` is present.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
    /// The names in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }
    /// `(name, tensor)` pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.entries.iter().map(|(n, t)| (n.as_str(), t))
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl FromIterator<(String, Tensor)> for StateDict {
    fn from_iter<I: IntoIterator<Item = (String, Tensor)>>(iter: I) -> StateDict {
        let mut d = StateDict::new();
        for (n, t) in iter {
            d.insert(n, t);
        }
        d
    }
}

impl IntoIterator for StateDict {
    type Item = (String, Tensor);
    type IntoIter = std::vec::IntoIter<(String, Tensor)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl fmt::Debug for StateDict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.entries.iter().map(|(n, t)| (n, t.sizes().to_vec()))).finish()
    }
}

/// What a non-strict `load_state_dict` did not match (PyTorch's `_IncompatibleKeys`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IncompatibleKeys {
    /// Keys the module expects that the dict lacks.
    pub missing_keys: Vec<String>,
    /// Keys in the dict the module does not have.
    pub unexpected_keys: Vec<String>,
}

/// A forward pre-hook: sees the input and may replace it.
pub type ForwardPreHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// A forward hook: sees input and output and may replace the output.
pub type ForwardHook = Arc<dyn Fn(&Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// A full backward hook: `(grad_input, grad_output)`; may replace `grad_input`.
pub type BackwardHook =
    Arc<dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;

#[derive(Default)]
struct HookTable {
    next_id: u64,
    pre: Vec<(u64, ForwardPreHook)>,
    post: Vec<(u64, ForwardHook)>,
    backward: Vec<(u64, BackwardHook)>,
}

/// The hooks of one module (a field of type `Hooks` is picked up by `#[derive(Module)]`; every
/// layer of this crate has one). Cloning a module gives it its own, empty, table.
#[derive(Default)]
pub struct Hooks {
    table: Mutex<HookTable>,
}

impl Clone for Hooks {
    fn clone(&self) -> Hooks {
        Hooks::default()
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.lock();
        write!(f, "Hooks(pre={}, post={}, backward={})", t.pre.len(), t.post.len(), t.backward.len())
    }
}

/// Removes the hook it was returned for (PyTorch's `RemovableHandle`).
#[derive(Clone)]
pub struct HookHandle {
    id: u64,
}

impl Hooks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HookTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn next_id(t: &mut HookTable) -> u64 {
        t.next_id += 1;
        t.next_id
    }
    /// Whether no hook is registered.
    pub fn is_empty(&self) -> bool {
        let t = self.lock();
        t.pre.is_empty() && t.post.is_empty() && t.backward.is_empty()
    }
    /// Removes the hook with this handle (no-op if already removed).
    pub fn remove(&self, handle: &HookHandle) {
        let mut t = self.lock();
        t.pre.retain(|(i, _)| *i != handle.id);
        t.post.retain(|(i, _)| *i != handle.id);
        t.backward.retain(|(i, _)| *i != handle.id);
    }
    pub(crate) fn add_pre(&self, h: ForwardPreHook) -> HookHandle {
        let mut t = self.lock();
        let id = Self::next_id(&mut t);
        t.pre.push((id, h));
        HookHandle { id }
    }
    pub(crate) fn add_post(&self, h: ForwardHook) -> HookHandle {
        let mut t = self.lock();
        let id = Self::next_id(&mut t);
        t.post.push((id, h));
        HookHandle { id }
    }
    pub(crate) fn add_backward(&self, h: BackwardHook) -> HookHandle {
        let mut t = self.lock();
        let id = Self::next_id(&mut t);
        t.backward.push((id, h));
        HookHandle { id }
    }
    fn snapshot(&self) -> (Vec<ForwardPreHook>, Vec<ForwardHook>, Vec<BackwardHook>) {
        let t = self.lock();
        (
            t.pre.iter().map(|(_, h)| h.clone()).collect(),
            t.post.iter().map(|(_, h)| h.clone()).collect(),
            t.backward.iter().map(|(_, h)| h.clone()).collect(),
        )
    }
}

/// A module: a tree of named parameters, buffers and child modules.
///
/// Implement it with `#[derive(Module)]`; the forward computation is a separate trait
/// ([`Forward`]) or an inherent method when the signature is not tensor-to-tensor.
///
/// ```
/// use nn::{Linear, Module, Forward};
/// let fc = Linear::new(4, 2).unwrap();
/// let names: Vec<String> = fc.state_dict().keys().map(String::from).collect();
/// assert_eq!(names, ["weight", "bias"]);
/// assert_eq!(fc.num_parameters(), 10);
/// ```
pub trait Module: Send + Sync {
    /// Lists the direct members (parameters, buffers, children) in registration order.
    fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>));
    /// Lists the direct members mutably.
    fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>));
    /// The class name shown in errors (`Linear`).
    fn type_name(&self) -> &'static str;
    /// This module's own training flag, if it has one (a `training: bool` field).
    fn own_training(&self) -> Option<bool> {
        None
    }
    /// Sets this module's own training flag, if it has one.
    fn set_own_training(&mut self, _on: bool) {}
    /// This module's hooks, if it has a `Hooks` field.
    fn hooks(&self) -> Option<&Hooks> {
        None
    }

    /// Whether the module is in training mode: its own flag, else its first child's, else true.
    fn is_training(&self) -> bool {
        if let Some(t) = self.own_training() {
            return t;
        }
        let mut found = None;
        self.for_each_member(&mut |_, m| {
            if let (None, Member::Module(c)) = (found, m) {
                found = Some(c.is_training());
            }
        });
        found.unwrap_or(true)
    }

    /// `module.train(mode)`: sets training mode on this module and every descendant.
    fn train(&mut self, mode: bool) {
        self.set_own_training(mode);
        self.for_each_member_mut(&mut |_, m| {
            if let MemberMut::Module(c) = m {
                c.train(mode)
            }
        });
    }

    /// `module.eval()`.
    fn eval(&mut self) {
        self.train(false)
    }

    /// Walks every parameter and buffer of the tree with its dotted name.
    fn visit_tensors<'a>(&'a self, prefix: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        self.for_each_member(&mut |name, m| {
            let full = join(prefix, name);
            match m {
                Member::Module(c) => c.visit_tensors(&full, f),
                other => f(&full, other),
            }
        });
    }

    /// Walks every parameter and buffer of the tree mutably.
    fn visit_tensors_mut<'a>(&'a mut self, prefix: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        self.for_each_member_mut(&mut |name, m| {
            let full = join(prefix, name);
            match m {
                MemberMut::Module(c) => c.visit_tensors_mut(&full, f),
                other => f(&full, other),
            }
        });
    }

    /// `named_parameters()`: every parameter with its dotted name, shared parameters once.
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let mut out: Vec<(String, Parameter)> = Vec::new();
        self.visit_tensors("", &mut |name, m| {
            if let Member::Parameter(p) = m {
                if !out.iter().any(|(_, q)| q.is_same(p)) {
                    out.push((name.to_string(), p.clone()));
                }
            }
        });
        out
    }

    /// `parameters()`.
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters().into_iter().map(|(_, p)| p).collect()
    }

    /// `named_buffers()`.
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        self.visit_tensors("", &mut |name, m| {
            if let Member::Buffer(b) = m {
                out.push((name.to_string(), b.tensor().clone()));
            }
        });
        out
    }

    /// `named_modules()`: this module (name `""`) and every descendant, depth first.
    fn named_modules(&self) -> Vec<(String, &dyn Module)>
    where
        Self: Sized,
    {
        let mut out: Vec<(String, &dyn Module)> = vec![(String::new(), self as &dyn Module)];
        collect_modules(self, "", &mut out);
        out
    }

    /// `named_children()`: the direct child modules.
    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        let mut out = Vec::new();
        self.for_each_member(&mut |name, m| {
            if let Member::Module(c) = m {
                out.push((name.to_string(), c));
            }
        });
        out
    }

    /// The number of parameter elements (`sum(p.numel() for p in m.parameters())`).
    fn num_parameters(&self) -> i64 {
        self.parameters().iter().map(|p| p.numel()).sum()
    }

    /// `state_dict()`: parameters and persistent buffers, detached, sharing storage.
    fn state_dict(&self) -> StateDict {
        let mut d = StateDict::new();
        self.visit_tensors("", &mut |name, m| match m {
            Member::Parameter(p) => d.insert(name, p.tensor().detach()),
            Member::Buffer(b) if b.is_persistent() => d.insert(name, b.tensor().detach()),
            _ => {}
        });
        d
    }

    /// `load_state_dict(state, strict)`. Every entry is checked (names, shapes) before anything
    /// is copied, so a load that fails leaves the module unchanged. Strict mode reports missing
    /// and unexpected keys as an error; non-strict mode returns them.
    fn load_state_dict(&mut self, state: &StateDict, strict: bool) -> Result<IncompatibleKeys> {
        let mut expected: Vec<(String, Tensor)> = Vec::new();
        self.visit_tensors("", &mut |name, m| match m {
            Member::Parameter(p) => expected.push((name.to_string(), p.tensor().clone())),
            Member::Buffer(b) if b.is_persistent() => expected.push((name.to_string(), b.tensor().clone())),
            _ => {}
        });
        let names: BTreeSet<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
        let keys = IncompatibleKeys {
            missing_keys: expected.iter().filter(|(n, _)| !state.contains_key(n)).map(|(n, _)| n.clone()).collect(),
            unexpected_keys: state.keys().filter(|k| !names.contains(k)).map(String::from).collect(),
        };
        let mut errors = Vec::new();
        for (name, current) in &expected {
            if let Some(src) = state.get(name) {
                if src.sizes() != current.sizes() {
                    errors.push(format!(
                        "size mismatch for {name}: copying a param with shape {:?} from checkpoint, the shape in current model is {:?}.",
                        src.sizes(),
                        current.sizes()
                    ));
                }
            }
        }
        if strict {
            if !keys.unexpected_keys.is_empty() {
                errors.insert(0, format!("Unexpected key(s) in state_dict: {}. ", quoted(&keys.unexpected_keys)));
            }
            if !keys.missing_keys.is_empty() {
                errors.insert(0, format!("Missing key(s) in state_dict: {}. ", quoted(&keys.missing_keys)));
            }
        }
        if !errors.is_empty() {
            return Err(Error::InvalidArgument {
                op: "load_state_dict".into(),
                msg: format!("Error(s) in loading state_dict for {}:\n\t{}", self.type_name(), errors.join("\n\t")),
            });
        }
        let _g = autograd::no_grad();
        for (name, current) in &expected {
            if let Some(src) = state.get(name) {
                current.copy_(src).call()?;
            }
        }
        Ok(keys)
    }

    /// `zero_grad(set_to_none)`: clears (or zeroes) every parameter's `.grad`.
    fn zero_grad(&self, set_to_none: bool) -> Result<()> {
        for p in self.parameters() {
            if set_to_none {
                p.set_grad(None)?;
            } else if let Some(g) = p.grad() {
                let g = g.detach();
                g.zero_()?;
            }
        }
        Ok(())
    }

    /// `requires_grad_(flag)` on every parameter.
    fn requires_grad_(&self, flag: bool) -> Result<()> {
        for p in self.parameters() {
            p.tensor().clone().requires_grad_(flag)?;
        }
        Ok(())
    }

    /// The seeds' `_apply`: replaces every parameter and buffer by `f(tensor)` (parameters keep
    /// requiring grad; their `.grad` is mapped too).
    fn apply_tensors(&mut self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<()> {
        let mut result = Ok(());
        self.visit_tensors_mut("", &mut |_, m| {
            if result.is_err() {
                return;
            }
            let r = (|| -> Result<()> {
                match m {
                    MemberMut::Parameter(p) => {
                        let new = {
                            let _g = autograd::no_grad();
                            f(p.tensor())?
                        };
                        let grad = p.grad();
                        let flag = p.requires_grad();
                        let np = Parameter::with_requires_grad(new, flag)?;
                        if let Some(g) = grad {
                            let _g = autograd::no_grad();
                            np.set_grad(Some(f(&g)?))?;
                        }
                        *p = np;
                    }
                    MemberMut::Buffer(b) => {
                        let _g = autograd::no_grad();
                        let new = f(b.tensor())?;
                        b.set(new);
                    }
                    MemberMut::Module(_) => {}
                }
                Ok(())
            })();
            result = r;
        });
        result
    }

    /// `module.to(dtype)`: floating-point parameters and buffers take the dtype.
    fn to_dtype(&mut self, dtype: ScalarType) -> Result<()> {
        if !dtype.is_floating_point() {
            return Err(Error::InvalidArgument {
                op: "Module.to".into(),
                msg: format!(
                    "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={}",
                    dtype.name()
                ),
            });
        }
        self.apply_tensors(&mut |t| if t.is_floating_point() { t.to(dtype).call() } else { Ok(t.clone()) })
    }

    /// `module.to(device)`: every parameter and buffer (and every parameter's `.grad`) on
    /// `device`; tensors already there are kept as they are.
    fn to_device(&mut self, device: Device) -> Result<()> {
        self.apply_tensors(&mut |t| t.to_device(device))
    }

    /// `module.cuda()`: [`Module::to_device`] with the current CUDA device.
    fn cuda(&mut self) -> Result<()> {
        self.to_device(Device::new(c10::DeviceType::Cuda, -1))
    }

    /// `module.cpu()`: [`Module::to_device`] with the CPU.
    fn cpu(&mut self) -> Result<()> {
        self.to_device(Device::CPU)
    }

    /// `register_forward_pre_hook`: `hook(input)` runs before `forward` when the module is
    /// invoked through [`Forward::call`]; returning `Some` replaces the input.
    fn register_forward_pre_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<HookHandle>
    where
        Self: Sized,
    {
        Ok(hooks_of(self)?.add_pre(Arc::new(hook)))
    }

    /// `register_forward_hook`: `hook(input, output)` runs after `forward`; returning `Some`
    /// replaces the output.
    fn register_forward_hook(
        &self,
        hook: impl Fn(&Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<HookHandle>
    where
        Self: Sized,
    {
        Ok(hooks_of(self)?.add_post(Arc::new(hook)))
    }

    /// `register_full_backward_hook`: `hook(grad_input, grad_output)` runs when the gradient
    /// with respect to the module's input has been computed; returning `Some` replaces
    /// `grad_input`.
    fn register_full_backward_hook(
        &self,
        hook: impl Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync + 'static,
    ) -> Result<HookHandle>
    where
        Self: Sized,
    {
        Ok(hooks_of(self)?.add_backward(Arc::new(hook)))
    }

    /// Removes a hook registered on this module.
    fn remove_hook(&self, handle: &HookHandle) -> Result<()>
    where
        Self: Sized,
    {
        hooks_of(self)?.remove(handle);
        Ok(())
    }
}

fn hooks_of<M: Module>(m: &M) -> Result<&Hooks> {
    m.hooks().ok_or_else(|| Error::InvalidArgument {
        op: "register_hook".into(),
        msg: format!(
            "{} does not take module hooks: they see the single tensor a `Forward` module takes, and this module \
             either takes several inputs or has no `hooks: nn::Hooks` field",
            m.type_name()
        ),
    })
}

fn collect_modules<'a>(m: &'a dyn Module, prefix: &str, out: &mut Vec<(String, &'a dyn Module)>) {
    m.for_each_member(&mut |name, mem| {
        if let Member::Module(c) = mem {
            let full = join(prefix, name);
            out.push((full.clone(), c));
            collect_modules(c, &full, out);
        }
    });
}

fn quoted(keys: &[String]) -> String {
    keys.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ")
}

/// A module whose forward maps one tensor to one tensor (most layers). `call` is PyTorch's
/// `module(x)`: forward pre-hooks, `forward`, forward hooks, and the full backward hooks.
pub trait Forward: Module {
    /// The computation.
    fn forward(&self, x: &Tensor) -> Result<Tensor>;

    /// Runs the module with its hooks.
    fn call(&self, x: &Tensor) -> Result<Tensor> {
        let Some(hooks) = self.hooks() else { return self.forward(x) };
        if hooks.is_empty() {
            return self.forward(x);
        }
        let (pre, post, backward) = hooks.snapshot();
        let mut input = x.clone();
        for h in &pre {
            if let Some(new) = h(&input)? {
                input = new;
            }
        }
        let state = (!backward.is_empty()).then(|| crate::hooks::BackwardHookState::new(backward));
        if let Some(s) = &state {
            input = s.wrap_input(&input)?;
        }
        let mut out = self.forward(&input)?;
        for h in &post {
            if let Some(new) = h(&input, &out)? {
                out = new;
            }
        }
        if let Some(s) = &state {
            out = s.wrap_output(&out)?;
        }
        Ok(out)
    }
}

impl Module for Box<dyn Module> {
    fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
        self.as_ref().for_each_member(f)
    }
    fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        self.as_mut().for_each_member_mut(f)
    }
    fn type_name(&self) -> &'static str {
        self.as_ref().type_name()
    }
    fn own_training(&self) -> Option<bool> {
        self.as_ref().own_training()
    }
    fn set_own_training(&mut self, on: bool) {
        self.as_mut().set_own_training(on)
    }
    fn hooks(&self) -> Option<&Hooks> {
        self.as_ref().hooks()
    }
}
