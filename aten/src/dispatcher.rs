//! The dispatcher: one [`OperatorEntry`] per `name.overload`, each with a dispatch table of one
//! kernel slot per runtime dispatch key, filled from the registrations by PyTorch's precedence.
//!
//! Note [Dispatch table precedence]: for each runtime key the slot holds, in this order,
//! 1. a kernel registered for exactly that key;
//! 2. for backend keys (`CPU`, `CUDA`, ...), a `CompositeExplicitAutograd` kernel;
//! 3. for keys in the `CompositeImplicitAutograd` set, its kernel — except on an autograd key
//!    whose backend has a kernel of its own (step 1 or 2), where the backend kernel must run
//!    below autograd instead of the decomposition;
//! 4. for autograd keys, a kernel registered for the `Autograd` alias;
//! 5. the backend fallback registered for the key (one kernel for every operator);
//! 6. nothing: calling reports the operator, the key and the keys that have kernels.
//!
//! A slot whose kernel is a *fallthrough* is removed from the operator's key mask, so the key
//! computation skips it and the next key in priority order is used.
//!
//! Note [Lock-free dispatch]: tables are arrays of atomic pointers to immutable
//! [`KernelFunction`]s that are leaked once, when registered. Registration is rare and happens
//! under a mutex; the call path is an atomic load. The leak is bounded by the number of
//! registrations a program makes; a registry that frees would need reference counting or epochs
//! on the hot path, which we rejected.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Once, RwLock};

use c10::dispatch_key::{NUM_BACKENDS, NUM_RUNTIME_ENTRIES};
use c10::{DispatchKey, DispatchKeySet, Error, LocalDispatchKeySet, Result};
use schema::{parse_schema, FunctionSchema};

use crate::ivalue::{IValue, Stack};
use c10::record_function::{RecordFunction, RecordScope};

/// The boxed calling convention: arguments on the stack in schema order, returns pushed back.
pub type BoxedKernelFn = dyn Fn(&'static OperatorEntry, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync;

/// A kernel in a dispatch-table slot: a typed (unboxed) function pointer and/or a boxed
/// function, or the fallthrough marker. Copy: the functions themselves are leaked statics.
#[derive(Clone, Copy)]
pub struct KernelFunction {
    unboxed: Option<&'static (dyn Any + Send + Sync)>,
    /// The `TypeId` of the typed function's signature, kept beside it so the typed call path
    /// compares two constants instead of asking the trait object (a virtual call per dispatch).
    unboxed_type: Option<TypeId>,
    boxed: Option<&'static BoxedKernelFn>,
    fallthrough: bool,
}

impl fmt::Debug for KernelFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelFunction")
            .field("unboxed", &self.unboxed.is_some())
            .field("boxed", &self.boxed.is_some())
            .field("fallthrough", &self.fallthrough)
            .finish()
    }
}

impl KernelFunction {
    /// The fallthrough kernel: the key is skipped and dispatch continues below it.
    pub fn fallthrough() -> Self {
        KernelFunction { unboxed: None, unboxed_type: None, boxed: None, fallthrough: true }
    }

    /// A kernel that only has the boxed convention (fallbacks, test kernels, the JIT).
    pub fn from_boxed(
        f: impl Fn(&'static OperatorEntry, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        KernelFunction { unboxed: None, unboxed_type: None, boxed: Some(Box::leak(Box::new(f))), fallthrough: false }
    }

    /// A typed kernel plus its boxed adapter. `F` is the operator's signature type (a `fn`
    /// pointer type generated per operator, `ops::add_Tensor::Sig`); the typed call path looks
    /// it up by type, so a kernel registered with the wrong signature is never called unboxed.
    pub fn from_unboxed<F: Any + Send + Sync + Copy>(
        f: F,
        boxed: impl Fn(&'static OperatorEntry, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        KernelFunction {
            unboxed: Some(Box::leak(Box::new(f))),
            unboxed_type: Some(TypeId::of::<F>()),
            boxed: Some(Box::leak(Box::new(boxed))),
            fallthrough: false,
        }
    }

    /// Whether this is the fallthrough marker.
    #[inline]
    pub fn is_fallthrough(&self) -> bool {
        self.fallthrough
    }

    /// The typed function if the kernel has one of signature `F`.
    #[inline]
    pub fn unboxed<F: Any + Copy>(&self) -> Option<F> {
        if self.unboxed_type != Some(TypeId::of::<F>()) {
            return None;
        }
        let f = self.unboxed?;
        // SAFETY: `unboxed_type` is the `TypeId` of the value behind `unboxed`: both are set
        // together in `from_unboxed` from the same `F`, so the value is an `F`.
        Some(unsafe { *(f as *const (dyn Any + Send + Sync) as *const F) })
    }

    /// Whether a boxed function is present.
    #[inline]
    pub fn has_boxed(&self) -> bool {
        self.boxed.is_some()
    }

    /// Calls through the boxed convention.
    pub fn call_boxed(&self, op: &'static OperatorEntry, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
        match self.boxed {
            Some(f) => f(op, ks, stack),
            None => Err(Error::invalid(op.name(), "kernel has no boxed form")),
        }
    }
}

/// The kernel a generated `call` runs while RecordFunction ranges are observed: it opens the
/// operator's range and calls the operator's real kernel through the boxed convention.
///
/// Note [Recording through the boxed path]: the generated typed `call` checks
/// [`c10::record_function::is_active`] and, when it is on, hands its arguments to this one
/// shared kernel through the typed→boxed adapter every operator already has, instead of a
/// recording variant of its own. 922 recording functions (one per operator, the first design)
/// changed how thin LTO inlined the CPU kernels next to them: `W1.add1` ran 99–149 more
/// instructions per call in `add_impl`, code the change did not touch (callgrind; BENCHMARKS.md,
/// November 29 second session). Boxing costs an allocation per call while profiling, which the
/// profiler's own bookkeeping outweighs.
pub fn recording_kernel() -> &'static KernelFunction {
    static K: LazyLock<KernelFunction> = LazyLock::new(|| {
        KernelFunction::from_boxed(|op: &'static OperatorEntry, ks: DispatchKeySet, stack: &mut Stack| {
            let _range = record_op(op, ks, || stack.clone());
            op.lookup(ks)?.call_boxed(op, ks, stack)
        })
    });
    &K
}

/// Starts the RecordFunction range of an operator call (the generated `call` and
/// [`OperatorEntry::call_boxed`] take this path only while [`c10::record_function::is_active`]).
/// The range carries the autograd sequence number its node will get when the call reaches an
/// autograd kernel first and grad mode is on (calls below autograd, in backward passes and under
/// `no_grad` carry -1, as in PyTorch's traces), and the inputs' shapes when asked for.
#[inline(never)]
pub fn record_op(op: &'static OperatorEntry, ks: DispatchKeySet, args: impl FnOnce() -> Stack) -> RecordFunction {
    let top = ks.highest_priority_type_id();
    let autograd_first =
        top.to_functionality() == DispatchKey::AutogradFunctionality || top == DispatchKey::AutogradOther;
    let seq = if autograd_first && c10::grad_mode::is_enabled() {
        c10::record_function::sequence_number::peek() as i64
    } else {
        -1
    };
    RecordFunction::start(RecordScope::Function, op.record_name.as_str(), seq, || {
        args().iter().map(IValue::input_meta).collect()
    })
}

/// What has been registered for an operator, per key (runtime or alias). The dispatch table is
/// computed from this.
#[derive(Default)]
struct Registrations {
    kernels: HashMap<DispatchKey, &'static KernelFunction>,
}

/// One operator (`add.Tensor`): its schema, registrations and dispatch table.
pub struct OperatorEntry {
    name: String,
    /// `aten::add`: the name its RecordFunction ranges carry (PyTorch's event names).
    record_name: String,
    schema: RwLock<Option<Arc<FunctionSchema>>>,
    table: [AtomicPtr<KernelFunction>; NUM_RUNTIME_ENTRIES],
    /// Per backend (indexed by the highest backend bit of the call's keys; the last entry is for
    /// calls without a backend bit): keys whose slot is not a fallthrough. Per backend because
    /// `AutogradCPU` may fall through while `AutogradCUDA` has a kernel, and both share one
    /// functionality bit (PyTorch's `nonFallthroughKeysPerBackend_`).
    masks: [AtomicU64; NUM_BACKENDS + 1],
    registrations: Mutex<Registrations>,
}

impl fmt::Debug for OperatorEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OperatorEntry(aten::{})", self.name)
    }
}

impl OperatorEntry {
    fn new(name: &str) -> Self {
        let base = name.split('.').next().unwrap_or(name);
        OperatorEntry {
            name: name.to_string(),
            record_name: if base.contains("::") { base.to_string() } else { format!("aten::{base}") },
            schema: RwLock::new(None),
            table: [const { AtomicPtr::new(std::ptr::null_mut()) }; NUM_RUNTIME_ENTRIES],
            masks: [const { AtomicU64::new(u64::MAX) }; NUM_BACKENDS + 1],
            registrations: Mutex::new(Registrations::default()),
        }
    }

    /// `name.overload` (without the `aten::` namespace).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name without overload, with its namespace (`aten::add`), as profiles show it.
    pub fn record_name(&self) -> &str {
        &self.record_name
    }

    /// The schema, once `def` has been called for the operator.
    pub fn schema(&self) -> Option<Arc<FunctionSchema>> {
        self.schema.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The key mask that removes this operator's fallthrough keys for a call with keys `ks`.
    #[inline]
    pub fn mask_for(&self, ks: DispatchKeySet) -> DispatchKeySet {
        let i = ks.highest_backend().map_or(NUM_BACKENDS, |b| b as usize);
        DispatchKeySet::from_raw(self.masks[i].load(Ordering::Relaxed))
    }

    /// `computeDispatchKeySet`: the keys of the arguments with the thread's included keys added,
    /// its excluded keys and the operator's fallthrough keys removed.
    #[inline]
    pub fn compute_key_set(&self, args: DispatchKeySet) -> DispatchKeySet {
        let ks = LocalDispatchKeySet::apply(args, DispatchKeySet::from_raw(u64::MAX));
        ks & self.mask_for(ks)
    }

    /// The kernel for a key set (after masking), or the missing-kernel error.
    #[inline]
    pub fn lookup(&'static self, ks: DispatchKeySet) -> Result<KernelFunction> {
        let idx = ks.dispatch_table_index();
        let p = self.table[idx].load(Ordering::Acquire);
        if p.is_null() {
            return Err(self.missing_kernel(ks.highest_priority_type_id()));
        }
        // SAFETY: non-null slots point to KernelFunctions leaked at registration and never freed
        // (Note [Lock-free dispatch]).
        Ok(unsafe { *p })
    }

    /// The error for a key without kernel, naming the keys that have one.
    fn missing_kernel(&self, key: DispatchKey) -> Error {
        let regs = self.registrations.lock().unwrap_or_else(|e| e.into_inner());
        let mut keys: Vec<&str> = regs.kernels.iter().filter(|(_, k)| !k.fallthrough).map(|(k, _)| k.name()).collect();
        keys.sort_unstable();
        Error::MissingKernel {
            op: format!("aten::{}", self.name),
            key: key.name().to_string(),
            available: keys.join(", "),
        }
    }

    /// Calls the operator through the boxed convention with keys computed from the stack.
    pub fn call_boxed(&'static self, stack: &mut Stack) -> Result<()> {
        let args = stack.iter().fold(DispatchKeySet::EMPTY, |s, v| s | v.key_set());
        let ks = self.compute_key_set(args);
        let _range = c10::record_function::is_active().then(|| record_op(self, ks, || stack.clone()));
        self.lookup(ks)?.call_boxed(self, ks, stack)
    }

    /// Calls the boxed convention with an explicit key set (masked by the operator's mask only):
    /// what a boxed fallback uses to continue below its own key.
    pub fn redispatch_boxed(&'static self, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
        let ks = ks & self.mask_for(ks);
        self.lookup(ks)?.call_boxed(self, ks, stack)
    }

    /// Whether a kernel (not a fallthrough) is registered directly for `key`.
    pub fn has_kernel_for(&self, key: DispatchKey) -> bool {
        let regs = self.registrations.lock().unwrap_or_else(|e| e.into_inner());
        regs.kernels.get(&key).is_some_and(|k| !k.fallthrough)
    }

    /// The kernel that fills `key`'s slot, by Note [Dispatch table precedence].
    fn compute_entry(
        regs: &Registrations,
        key: DispatchKey,
        fallbacks: &[Option<&'static KernelFunction>],
        slot: usize,
    ) -> Option<&'static KernelFunction> {
        if let Some(k) = regs.kernels.get(&key) {
            return Some(k);
        }
        let in_alias = |alias: DispatchKey| DispatchKeySet::runtime_set_of(alias).has(key);
        // Note [Explicit composites stop at the dense keys] (c10's dispatch_key_set).
        let backend_key = in_alias(DispatchKey::CompositeExplicitAutograd);
        if backend_key || key == DispatchKey::Undefined {
            for alias in [DispatchKey::CompositeExplicitAutogradNonFunctional, DispatchKey::CompositeExplicitAutograd] {
                if let Some(k) = regs.kernels.get(&alias) {
                    return Some(k);
                }
            }
        }
        let is_autograd =
            key.to_functionality() == DispatchKey::AutogradFunctionality || key == DispatchKey::AutogradOther;
        if let Some(k) = regs.kernels.get(&DispatchKey::CompositeImplicitAutograd) {
            if (key == DispatchKey::Undefined || in_alias(DispatchKey::CompositeImplicitAutograd))
                && !(is_autograd && Self::has_backend_kernel_for_autograd_key(regs, key))
            {
                return Some(k);
            }
        }
        if is_autograd {
            if let Some(k) = regs.kernels.get(&DispatchKey::Autograd) {
                return Some(k);
            }
        }
        // Note [Calls without tensors]: a call whose arguments carry no keys at all (`cat([])`,
        // `stack([])`) has nothing to dispatch on. Its kernel on the default device (the CPU, as
        // for factories) runs and reports the empty input in PyTorch's words ("torch.cat():
        // expected a non-empty list of Tensors") instead of "could not run with arguments from
        // the 'Undefined' backend".
        if key == DispatchKey::Undefined {
            let cpu = DispatchKey::to_runtime_per_backend(DispatchKey::Dense, c10::BackendComponent::CPU);
            if let Some(k) = regs.kernels.get(&cpu) {
                return Some(k);
            }
        }
        fallbacks[slot]
    }

    /// For `AutogradX`: is there a kernel for backend X (directly or through
    /// CompositeExplicitAutograd)?
    fn has_backend_kernel_for_autograd_key(regs: &Registrations, key: DispatchKey) -> bool {
        if regs.kernels.contains_key(&DispatchKey::CompositeExplicitAutograd)
            || regs.kernels.contains_key(&DispatchKey::CompositeExplicitAutogradNonFunctional)
        {
            return true;
        }
        match key.to_backend_component() {
            Some(b) => regs.kernels.contains_key(&DispatchKey::to_runtime_per_backend(DispatchKey::Dense, b)),
            // AutogradOther stands for backends without an autograd key of their own.
            None => false,
        }
    }

    /// Recomputes every slot and the fallthrough mask from the registrations and fallbacks.
    fn recompute(&self, fallbacks: &[Option<&'static KernelFunction>]) {
        let regs = self.registrations.lock().unwrap_or_else(|e| e.into_inner());
        let mut masks = [u64::MAX; NUM_BACKENDS + 1];
        for (slot, &key) in RUNTIME_KEYS.iter().enumerate() {
            let entry = Self::compute_entry(&regs, key, fallbacks, slot);
            let ptr = match entry {
                Some(k) => {
                    if k.fallthrough && key != DispatchKey::Undefined {
                        let bit = DispatchKeySet::from_key(key.to_functionality()).raw()
                            & !DispatchKeySet::from_raw((1 << NUM_BACKENDS) - 1).raw();
                        match key.to_backend_component() {
                            Some(b) => masks[b as usize] &= !bit,
                            None => masks.iter_mut().for_each(|m| *m &= !bit),
                        }
                    }
                    k as *const KernelFunction as *mut KernelFunction
                }
                None => std::ptr::null_mut(),
            };
            self.table[slot].store(ptr, Ordering::Release);
        }
        for (m, v) in self.masks.iter().zip(masks) {
            m.store(v, Ordering::Relaxed);
        }
    }
}

/// The runtime key of every dispatch-table slot.
static RUNTIME_KEYS: LazyLock<Vec<DispatchKey>> =
    LazyLock::new(|| (0..NUM_RUNTIME_ENTRIES).map(DispatchKey::from_runtime_index).collect());

/// The registry of operators and backend fallbacks.
pub struct Dispatcher {
    ops: RwLock<HashMap<String, &'static OperatorEntry>>,
    fallbacks: Mutex<Vec<Option<&'static KernelFunction>>>,
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.ops.read().map(|m| m.len()).unwrap_or(0);
        write!(f, "Dispatcher({n} operators)")
    }
}

/// A function that registers operators, kernels or fallbacks. Crates submit these with
/// `inventory::submit!`; they all run once, the first time the dispatcher is used, so users of
/// the CPU and autograd crates never call an init function.
pub struct Registrar(pub fn(&Dispatcher));
inventory::collect!(Registrar);

static RAW: LazyLock<Dispatcher> = LazyLock::new(|| Dispatcher {
    ops: RwLock::new(HashMap::new()),
    fallbacks: Mutex::new(vec![None; NUM_RUNTIME_ENTRIES]),
});
static INIT: Once = Once::new();

/// The process-wide dispatcher, with every submitted [`Registrar`] applied.
///
/// Registrars receive the dispatcher as an argument and must not call operators (the
/// registration is still running).
#[inline]
pub fn dispatcher() -> &'static Dispatcher {
    let d = &*RAW;
    INIT.call_once(|| {
        // Operator calls check `is_active` from now on: let tracing tell it about subscribers.
        c10::record_function::register_tracing_callsites();
        for r in inventory::iter::<Registrar> {
            (r.0)(d);
        }
    });
    d
}

impl Dispatcher {
    /// The operator of that name (`add.Tensor`; an `aten::` prefix is accepted), if known.
    pub fn find(&self, name: &str) -> Option<&'static OperatorEntry> {
        let name = name.strip_prefix("aten::").unwrap_or(name);
        self.ops.read().unwrap_or_else(|e| e.into_inner()).get(name).copied()
    }

    /// The operator of that name, created without schema if it does not exist yet (kernels may
    /// be registered before the schema, as in PyTorch).
    pub fn find_or_create(&self, name: &str) -> &'static OperatorEntry {
        let name = name.strip_prefix("aten::").unwrap_or(name);
        if let Some(op) = self.find(name) {
            return op;
        }
        let mut ops = self.ops.write().unwrap_or_else(|e| e.into_inner());
        if let Some(op) = ops.get(name) {
            return op;
        }
        let entry: &'static OperatorEntry = Box::leak(Box::new(OperatorEntry::new(name)));
        let fallbacks = self.fallbacks.lock().unwrap_or_else(|e| e.into_inner());
        entry.recompute(&fallbacks);
        ops.insert(name.to_string(), entry);
        entry
    }

    /// An operator that has a schema, or `UnknownOperator`.
    pub fn find_schema(&self, name: &str) -> Result<(&'static OperatorEntry, Arc<FunctionSchema>)> {
        let op = self.find(name).ok_or_else(|| Error::UnknownOperator(name.to_string()))?;
        let schema = op.schema().ok_or_else(|| Error::UnknownOperator(name.to_string()))?;
        Ok((op, schema))
    }

    /// Declares an operator from its schema string (`TORCH_LIBRARY`'s `def`). Declaring the same
    /// schema again is a no-op; a different schema under the same name is an error.
    pub fn def(&self, schema: &str) -> Result<&'static OperatorEntry> {
        let parsed = parse_schema(schema).map_err(|e| Error::Schema(format!("{schema}: {e}")))?;
        let op = self.find_or_create(&parsed.full_name());
        let mut slot = op.schema.write().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Some(existing) if **existing != parsed => {
                return Err(Error::Schema(format!(
                    "operator aten::{} is already defined with schema '{existing}', not '{parsed}'",
                    op.name
                )))
            }
            Some(_) => {}
            None => *slot = Some(Arc::new(parsed)),
        }
        Ok(op)
    }

    /// Registers a kernel for a runtime key or an alias key (`CompositeImplicitAutograd`, ...).
    /// Registering again for the same key replaces the kernel.
    pub fn register_kernel(&self, op_name: &str, key: DispatchKey, kernel: KernelFunction) -> Result<()> {
        if key.is_per_backend_functionality() {
            return Err(Error::invalid(
                "register_kernel",
                format!("{key} is a functionality; register for a runtime key such as CPU or AutogradCPU"),
            ));
        }
        let op = self.find_or_create(op_name);
        op.registrations.lock().unwrap_or_else(|e| e.into_inner()).kernels.insert(key, Box::leak(Box::new(kernel)));
        let fallbacks = self.fallbacks.lock().unwrap_or_else(|e| e.into_inner());
        op.recompute(&fallbacks);
        Ok(())
    }

    /// Registers the kernel used for every operator on `key` that has no kernel of its own.
    /// A per-backend functionality (`AutogradFunctionality`) registers for all its runtime keys.
    pub fn register_fallback(&self, key: DispatchKey, kernel: KernelFunction) -> Result<()> {
        let keys: Vec<DispatchKey> = match key.per_backend_block() {
            Some(block) => block.to_vec(),
            None if key.is_alias() => {
                return Err(Error::invalid("register_fallback", format!("{key} is an alias key")))
            }
            None => vec![key],
        };
        let kernel: &'static KernelFunction = Box::leak(Box::new(kernel));
        {
            let mut fb = self.fallbacks.lock().unwrap_or_else(|e| e.into_inner());
            for k in keys {
                let slot = k.runtime_index().expect("runtime key");
                fb[slot] = Some(kernel);
            }
        }
        let ops: Vec<&'static OperatorEntry> =
            self.ops.read().unwrap_or_else(|e| e.into_inner()).values().copied().collect();
        let fb = self.fallbacks.lock().unwrap_or_else(|e| e.into_inner());
        for op in ops {
            op.recompute(&fb);
        }
        Ok(())
    }

    /// Whether a fallback (fallthrough included) is registered for the runtime key `key`, or for
    /// every runtime key of the per-backend functionality `key`.
    pub fn has_fallback(&self, key: DispatchKey) -> bool {
        let keys: Vec<DispatchKey> = match key.per_backend_block() {
            Some(block) => block.to_vec(),
            None => vec![key],
        };
        let fb = self.fallbacks.lock().unwrap_or_else(|e| e.into_inner());
        keys.iter().all(|k| k.runtime_index().is_some_and(|i| fb[i].is_some()))
    }

    /// Calls any operator by schema name through the boxed convention. The stack holds every
    /// argument in schema order (defaults already applied); on success it holds the returns.
    pub fn call_boxed(&self, name: &str, stack: &mut Stack) -> Result<()> {
        let op = self.find(name).ok_or_else(|| Error::UnknownOperator(name.to_string()))?;
        op.call_boxed(stack)
    }

    /// Names of every operator with a schema, sorted.
    /// How many operators have a schema (what [`Dispatcher::operator_names`] would list), without
    /// listing them: a cheap way to notice new definitions.
    pub fn operator_count(&self) -> usize {
        self.ops.read().unwrap_or_else(|e| e.into_inner()).values().filter(|o| o.schema().is_some()).count()
    }

    /// Every operator with a schema, by name, sorted.
    pub fn operator_names(&self) -> Vec<String> {
        let ops = self.ops.read().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<String> = ops.values().filter(|o| o.schema().is_some()).map(|o| o.name.clone()).collect();
        v.sort();
        v
    }
}
