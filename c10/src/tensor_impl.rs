//! `TensorImpl`: the shared state behind a tensor handle: storage, sizes, strides (in
//! elements), storage offset, dtype, dispatch key set, version counter, autograd slot, and the
//! wrapped-number flag. Views are new `TensorImpl`s over the same storage and version counter.

use std::any::Any;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Arc;

use smallvec::SmallVec;

use crate::allocator::DataPtr;
use crate::set_once::SetOnce;
use crate::sparse::SparseImpl;
use crate::{BackendComponent, Device, DeviceType, DispatchKey, DispatchKeySet, Layout, ScalarType, Storage};

/// Sizes and strides are inline up to five dimensions (the common case), heap beyond.
pub type DimVec = SmallVec<[i64; DIMVEC_INLINE]>;
/// How many dimensions a [`DimVec`] holds without a heap allocation.
pub const DIMVEC_INLINE: usize = 5;

/// Note [Version counter sharing]: a view and its base share one counter, so an in-place write
/// through either bumps the version seen by both; autograd compares it with the version saved at
/// forward time to detect "modified by an inplace operation". Inference tensors have none.
#[derive(Clone, Debug, Default)]
pub struct VersionCounter(Arc<AtomicU32>);

impl VersionCounter {
    /// A fresh counter at version 0.
    pub fn new() -> Self {
        Self::default()
    }
    /// The current version.
    #[inline]
    pub fn current(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }
    /// Increments the version (called by every in-place operation).
    #[inline]
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
    /// True when both handles are the same counter.
    pub fn is_same(&self, other: &VersionCounter) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

thread_local! {
    static INFERENCE_MODE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether tensors created on this thread now are inference tensors (`torch.inference_mode`).
#[inline]
pub fn is_inference_mode() -> bool {
    INFERENCE_MODE.with(|m| m.get())
}

/// Makes every tensor created on this thread an inference tensor (no version counter, no
/// autograd keys) until dropped; the previous state comes back on drop. `autograd`'s
/// `inference_mode()` guard holds one.
#[must_use = "inference tensors are created only while the guard lives"]
#[derive(Debug)]
pub struct InferenceTensorsGuard {
    prev: bool,
}

impl InferenceTensorsGuard {
    /// Enters the mode.
    pub fn new() -> Self {
        InferenceTensorsGuard { prev: INFERENCE_MODE.with(|m| m.replace(true)) }
    }
}

impl Default for InferenceTensorsGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for InferenceTensorsGuard {
    fn drop(&mut self) {
        INFERENCE_MODE.with(|m| m.set(self.prev));
    }
}

/// The interface `autograd` implements for its per-tensor metadata (requires_grad, grad,
/// grad_fn, hooks, view info). `c10` only stores it.
pub trait AutogradMetaInterface: Any + Send + Sync + std::fmt::Debug {
    /// Whether gradients are tracked for the tensor.
    fn requires_grad(&self) -> bool;
    /// Whether the tensor has no `grad_fn` (autocast caches casts of leaves only).
    fn is_leaf(&self) -> bool;
    /// Whether the tensor is a differentiable view of another.
    fn is_view(&self) -> bool;
    /// Downcasting support for the implementing crate.
    fn as_any(&self) -> &dyn Any;
}

/// The state behind a tensor. Immutable after construction except for the version counter and
/// the autograd slot (both designed for shared mutation).
///
/// Note [Immutable geometry]: sizes, strides, offset and storage never change in place. View ops
/// make new impls; `out=` arguments must already have the result's shape. Making geometry
/// mutable (PyTorch's `resize_`, `set_`) would put a lock or a data race on every read of the
/// hot path; we rejected that.
#[derive(Debug)]
pub struct TensorImpl {
    storage: Storage,
    sizes: DimVec,
    strides: DimVec,
    storage_offset: i64,
    numel: i64,
    key_set: DispatchKeySet,
    /// Set when first needed (a view is made, a version is bumped or read by autograd), so fresh
    /// results of out-of-place operators never allocate one. Empty forever for inference tensors.
    /// A view is made with its base's counter: a `SetOnce` made full costs a store, where
    /// `OnceLock::from` went through `Once::call` (Note [SetOnce instead of OnceLock]; 3% of a
    /// GRU loop's time was that call for the views of each step's `addmm`).
    version_counter: SetOnce<VersionCounter>,
    is_inference: bool,
    /// Written once (Note [SetOnce instead of OnceLock]).
    autograd_meta: SetOnce<Box<dyn AutogradMetaInterface>>,
    dtype: ScalarType,
    is_wrapped_number: bool,
    is_contiguous: bool,
    /// The Python object wrapping this tensor, if a front end made one (Note [The Python slot]).
    pyobj: AtomicPtr<()>,
    /// The member tensors of a sparse tensor; `None` for strided ones (Note [Sparse tensors]).
    sparse: Option<Box<SparseImpl>>,
}

// Note [TensorImpl size]: every tensor carries one of these; keep it within three cache lines.
const _: () = assert!(std::mem::size_of::<TensorImpl>() <= 192);

/// The keys of a fresh (non-inference) tensor per backend: the dense key plus ADInplaceOrView
/// and the backend's autograd key.
const FRESH_KEYS: [DispatchKeySet; 4] = {
    let mut t = [DispatchKeySet::EMPTY; 4];
    let tys = [DeviceType::Cpu, DeviceType::Cuda, DeviceType::Meta, DeviceType::PrivateUse1];
    let mut i = 0;
    while i < 4 {
        let b = backend_of(tys[i]);
        let dense = DispatchKeySet::from_key(DispatchKey::to_runtime_per_backend_const(DispatchKey::Dense, b));
        let ad = DispatchKeySet::from_key(DispatchKey::ADInplaceOrView);
        let ag =
            DispatchKeySet::from_key(DispatchKey::to_runtime_per_backend_const(DispatchKey::AutogradFunctionality, b));
        let ac = DispatchKeySet::autocast_related_keyset_from_backend(b);
        t[b as usize] = DispatchKeySet::from_raw(dense.raw() | ad.raw() | ag.raw() | ac.raw());
        i += 1;
    }
    t
};

/// The backend component of a device type.
pub const fn backend_of(ty: DeviceType) -> BackendComponent {
    match ty {
        DeviceType::Cpu => BackendComponent::CPU,
        DeviceType::Cuda => BackendComponent::CUDA,
        DeviceType::Meta => BackendComponent::Meta,
        DeviceType::PrivateUse1 => BackendComponent::PrivateUse1,
    }
}

/// Row-major (C-contiguous) strides for a shape.
#[inline]
pub fn contiguous_strides(sizes: &[i64]) -> DimVec {
    // Filled in below; `from_buf_and_len` avoids the iterator path of `from_elem` for the
    // common inline case (a measurable share of a one-element operation).
    let n = sizes.len();
    let mut strides: DimVec =
        if n <= DIMVEC_INLINE { SmallVec::from_buf_and_len([1; DIMVEC_INLINE], n) } else { SmallVec::from_elem(1, n) };
    let mut acc = 1i64;
    for i in (0..sizes.len()).rev() {
        strides[i] = acc;
        // No stride of a shape whose count fits in i64 wraps (See Note [Checked sizes]); only an
        // empty tensor with huge other dims can get a wrapped stride, which addresses nothing.
        acc = acc.wrapping_mul(sizes[i].max(1));
    }
    strides
}

/// PyTorch's `is_contiguous` rule: dims of size 1 are ignored; an empty tensor is contiguous.
pub fn compute_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.contains(&0) {
        return true;
    }
    let mut expected = 1i64;
    for i in (0..sizes.len()).rev() {
        let s = sizes[i];
        if s != 1 {
            if strides[i] != expected {
                return false;
            }
            expected *= s;
        }
    }
    true
}

impl TensorImpl {
    /// A tensor over `storage`. `version_counter: None` makes an inference tensor, which also
    /// loses the autograd keys.
    pub fn new(
        storage: Storage,
        sizes: DimVec,
        strides: DimVec,
        storage_offset: i64,
        dtype: ScalarType,
        version_counter: Option<VersionCounter>,
    ) -> Self {
        debug_assert_eq!(sizes.len(), strides.len());
        // Callers check the counts of geometries they choose (See Note [Checked sizes]).
        // Note [Wrapping numel]: with that check no product of sizes wraps, except the partial
        // products of an empty shape such as [2^31, 2^32, 0], whose final 0 is still right;
        // `product()` would panic there in debug builds.
        debug_assert!(crate::size::numel("TensorImpl", &sizes).is_ok());
        let numel = sizes.iter().fold(1i64, |n, &s| n.wrapping_mul(s)); // See Note [Wrapping numel].
        let b = backend_of(storage.device().ty);
        let mut key_set = DispatchKeySet::from_key(DispatchKey::to_runtime_per_backend(DispatchKey::Dense, b))
            | DispatchKeySet::autocast_related_keyset_from_backend(b);
        if version_counter.is_some() {
            key_set |= DispatchKeySet::autograd_related_keyset_from_backend(b);
        }
        let is_contiguous = compute_contiguous(&sizes, &strides);
        TensorImpl {
            storage,
            sizes,
            strides,
            storage_offset,
            numel,
            key_set,
            is_inference: version_counter.is_none(),
            version_counter: version_counter.map_or_else(SetOnce::new, SetOnce::with),
            autograd_meta: SetOnce::new(),
            dtype,
            is_wrapped_number: false,
            pyobj: AtomicPtr::new(std::ptr::null_mut()),
            is_contiguous,
            sparse: None,
        }
    }

    /// A sparse tensor of `sizes` on `device` over `parts` (Note [Sparse tensors]): no storage
    /// (an empty one stands in, so strided reads find nothing to read), the `Sparse` or
    /// `SparseCsr` key of the device's backend instead of the dense one, and autograd keys
    /// unless created in inference mode.
    pub fn new_sparse(sizes: &[i64], dtype: ScalarType, device: Device, parts: SparseImpl) -> Self {
        // SAFETY: a dangling, never-dereferenced address with no deleter; the storage says it
        // has zero usable bytes, so no reader may touch it.
        let data = unsafe { DataPtr::from_raw(std::ptr::NonNull::dangling(), std::ptr::null_mut(), None, device) };
        let functionality = match parts.layout() {
            Layout::SparseCsr => DispatchKey::SparseCsr,
            _ => DispatchKey::Sparse,
        };
        let mut t = TensorImpl::new(
            Storage::from_data_ptr(data, 0),
            DimVec::from_slice(sizes),
            contiguous_strides(sizes),
            0,
            dtype,
            None,
        );
        let b = backend_of(device.ty);
        t.key_set = DispatchKeySet::from_key(DispatchKey::to_runtime_per_backend(functionality, b))
            | DispatchKeySet::autocast_related_keyset_from_backend(b);
        if !is_inference_mode() {
            t.is_inference = false;
            t.key_set |= DispatchKeySet::autograd_related_keyset_from_backend(b);
        }
        t.is_contiguous = false;
        t.sparse = Some(Box::new(parts));
        t
    }

    /// A new (non-inference) tensor over `storage` whose version counter is created when first
    /// needed. See Note [Version counter sharing].
    pub fn fresh(storage: Storage, sizes: DimVec, strides: DimVec, storage_offset: i64, dtype: ScalarType) -> Self {
        let mut t = TensorImpl::new(storage, sizes, strides, storage_offset, dtype, None);
        if !is_inference_mode() {
            t.is_inference = false;
            t.key_set = FRESH_KEYS[backend_of(t.storage.device().ty) as usize];
        }
        t
    }

    /// A fresh contiguous tensor of `sizes` over `storage` (offset 0), in a new `Arc`: the
    /// constructor of every operator output. It skips the contiguity check and key computation
    /// of [`TensorImpl::new`], and writes the fields straight into the allocation.
    ///
    /// Note [Building in place]: `Arc::new(TensorImpl { .. })` builds the value on the stack and
    /// then copies its 176 bytes into the allocation with a call to `memcpy`; every operator
    /// output paid for that copy (about 2% of the instructions of a chain of one-element
    /// operations with autograd). Writing field by field into `Arc::new_uninit` has no copy.
    pub fn new_contiguous_arc(storage: Storage, sizes: &[i64], dtype: ScalarType) -> Arc<TensorImpl> {
        debug_assert!(
            crate::size::contiguous_nbytes("TensorImpl", sizes, dtype.size()).is_ok_and(|n| n <= storage.nbytes())
        );
        let numel = sizes.iter().fold(1i64, |n, &s| n.wrapping_mul(s)); // See Note [Wrapping numel].
        let b = backend_of(storage.device().ty);
        let is_inference = is_inference_mode();
        let key_set = if is_inference {
            DispatchKeySet::from_raw(
                DispatchKeySet::from_key(DispatchKey::to_runtime_per_backend(DispatchKey::Dense, b)).raw()
                    | DispatchKeySet::autocast_related_keyset_from_backend(b).raw(),
            )
        } else {
            FRESH_KEYS[b as usize]
        };
        let (sizes, strides) = (DimVec::from_slice(sizes), contiguous_strides(sizes));
        let mut slot = Arc::<TensorImpl>::new_uninit();
        let Some(uninit) = Arc::get_mut(&mut slot) else { unreachable!("a new Arc has one handle") };
        let p = uninit.as_mut_ptr();
        // SAFETY: `p` points into the new allocation, aligned and valid for writes of a
        // `TensorImpl`. Every field is written exactly once below, by plain writes of values
        // made above (nothing here can panic), so the value is whole when `assume_init` runs,
        // and no other handle to it exists before.
        unsafe {
            std::ptr::addr_of_mut!((*p).storage).write(storage);
            std::ptr::addr_of_mut!((*p).sizes).write(sizes);
            std::ptr::addr_of_mut!((*p).strides).write(strides);
            std::ptr::addr_of_mut!((*p).storage_offset).write(0);
            std::ptr::addr_of_mut!((*p).numel).write(numel);
            std::ptr::addr_of_mut!((*p).key_set).write(key_set);
            std::ptr::addr_of_mut!((*p).version_counter).write(SetOnce::new());
            std::ptr::addr_of_mut!((*p).is_inference).write(is_inference);
            std::ptr::addr_of_mut!((*p).autograd_meta).write(SetOnce::new());
            std::ptr::addr_of_mut!((*p).dtype).write(dtype);
            std::ptr::addr_of_mut!((*p).is_wrapped_number).write(false);
            std::ptr::addr_of_mut!((*p).is_contiguous).write(true);
            std::ptr::addr_of_mut!((*p).pyobj).write(AtomicPtr::new(std::ptr::null_mut()));
            std::ptr::addr_of_mut!((*p).sparse).write(None);
            slot.assume_init()
        }
    }

    /// A view: same storage and version counter, new geometry, no autograd metadata.
    pub fn view_of(&self, sizes: DimVec, strides: DimVec, storage_offset: i64) -> Self {
        self.view_of_dtype(sizes, strides, storage_offset, self.dtype)
    }

    /// [`Self::view_of`] reading the storage as another dtype (`view_as_real`, whose sizes,
    /// strides and offset the caller has converted to elements of `dtype`).
    pub fn view_of_dtype(&self, sizes: DimVec, strides: DimVec, storage_offset: i64, dtype: ScalarType) -> Self {
        let mut t = TensorImpl::new(
            self.storage.clone(),
            sizes,
            strides,
            storage_offset,
            dtype,
            self.version_counter().cloned(),
        );
        t.key_set = self.key_set;
        if let Some(sp) = &self.sparse {
            // A sparse tensor's alias (detach) shares its members, in-place changes included.
            t.sparse = Some(Box::new(sp.alias()));
            t.is_contiguous = false;
        }
        t
    }

    /// Marks the tensor as a wrapped number (a Rust scalar turned into a zero-dim tensor), which
    /// has the lowest priority in type promotion.
    pub fn with_wrapped_number(mut self, wrapped: bool) -> Self {
        self.is_wrapped_number = wrapped;
        self
    }

    /// Replaces the key set (used by backends and tests that build special tensors).
    pub fn with_key_set(mut self, ks: DispatchKeySet) -> Self {
        self.key_set = ks;
        self
    }

    /// The shared storage.
    #[inline]
    pub fn storage(&self) -> &Storage {
        &self.storage
    }
    /// Sizes per dimension.
    #[inline]
    pub fn sizes(&self) -> &[i64] {
        &self.sizes
    }
    /// Strides per dimension, in elements.
    #[inline]
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }
    /// Number of dimensions.
    #[inline]
    pub fn dim(&self) -> usize {
        self.sizes.len()
    }
    /// Offset of element 0 in the storage, in elements.
    #[inline]
    pub fn storage_offset(&self) -> i64 {
        self.storage_offset
    }
    /// Number of elements.
    #[inline]
    pub fn numel(&self) -> i64 {
        self.numel
    }
    /// Element type.
    #[inline]
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }
    /// Dispatch keys of the tensor.
    #[inline]
    pub fn key_set(&self) -> DispatchKeySet {
        self.key_set
    }
    /// The layout: strided, or the sparse layout of [`Self::sparse`].
    #[inline]
    pub fn layout(&self) -> Layout {
        self.sparse.as_ref().map_or(Layout::Strided, |s| s.layout())
    }
    /// The member tensors of a sparse tensor (Note [Sparse tensors]); `None` when strided.
    #[inline]
    pub fn sparse(&self) -> Option<&SparseImpl> {
        self.sparse.as_deref()
    }
    /// Whether the layout is C-contiguous (false for sparse tensors).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        self.is_contiguous
    }
    /// Whether this is a wrapped number.
    #[inline]
    pub fn is_wrapped_number(&self) -> bool {
        self.is_wrapped_number
    }

    // Note [The Python slot]: PyTorch keeps the one Python object of a tensor in its TensorImpl
    // (PyObjectSlot), so the same tensor always comes back to Python as the same object
    // (`x.grad is x.grad`). Ours is a plain pointer the Python front end owns the meaning of:
    // it stores its object's address when it makes the object and clears it (compare-and-swap,
    // so only its own address) when the object dies; both happen with the interpreter's lock
    // held, which is also held by every reader, so a non-null value always names a live
    // object. c10 never dereferences it.
    /// The Python object stored by [`set_pyobj`](Self::set_pyobj), or null.
    #[inline]
    pub fn pyobj(&self) -> *mut () {
        self.pyobj.load(Ordering::Acquire)
    }
    /// Stores `obj` if the slot is empty; returns the slot's value before the call (null when
    /// `obj` was stored).
    pub fn set_pyobj(&self, obj: *mut ()) -> *mut () {
        match self.pyobj.compare_exchange(std::ptr::null_mut(), obj, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => std::ptr::null_mut(),
            Err(current) => current,
        }
    }
    /// Empties the slot if it holds `obj` (an object that is going away).
    pub fn clear_pyobj(&self, obj: *mut ()) {
        let _ = self.pyobj.compare_exchange(obj, std::ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed);
    }
    /// The version counter (None for inference tensors).
    #[inline]
    pub fn version_counter(&self) -> Option<&VersionCounter> {
        if self.is_inference {
            return None;
        }
        Some(self.version_counter.get_or_set_with(VersionCounter::new))
    }
    /// The current version without creating a counter (0 when none exists yet).
    #[inline]
    pub fn version(&self) -> u32 {
        self.version_counter.get().map_or(0, |v| v.current())
    }
    /// True for tensors created in inference mode.
    #[inline]
    pub fn is_inference(&self) -> bool {
        self.is_inference
    }
    /// Address of element 0 (storage base plus offset).
    #[inline]
    pub fn data_ptr(&self) -> *mut u8 {
        self.storage.data_ptr().wrapping_add(self.storage_offset as usize * self.dtype.size())
    }
    /// The autograd metadata, if autograd attached any.
    #[inline]
    pub fn autograd_meta(&self) -> Option<&dyn AutogradMetaInterface> {
        self.autograd_meta.get().map(|b| b.as_ref())
    }
    /// Attaches autograd metadata once; returns the metadata that is in place afterwards (the
    /// argument is dropped if another was attached first).
    pub fn get_or_init_autograd_meta(
        &self,
        init: impl FnOnce() -> Box<dyn AutogradMetaInterface>,
    ) -> &dyn AutogradMetaInterface {
        self.autograd_meta.get_or_set_with(init).as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    #[test]
    fn the_python_slot_starts_empty_and_keeps_only_its_owner() {
        // Both constructors, including the in-place one (Note [Building in place]).
        let a = TensorImpl::new_contiguous_arc(Storage::new(8, Device::CPU).unwrap(), &[2], ScalarType::F32);
        let b = TensorImpl::new(
            Storage::new(8, Device::CPU).unwrap(),
            DimVec::from_slice(&[2]),
            contiguous_strides(&[2]),
            0,
            ScalarType::F32,
            None,
        );
        for t in [&*a, &b] {
            assert!(t.pyobj().is_null());
            let (x, y) = (0x1000 as *mut (), 0x2000 as *mut ());
            assert!(t.set_pyobj(x).is_null());
            assert_eq!(t.set_pyobj(y), x, "a filled slot is not overwritten");
            t.clear_pyobj(y);
            assert_eq!(t.pyobj(), x, "only the owner clears it");
            t.clear_pyobj(x);
            assert!(t.pyobj().is_null());
        }
    }

    #[test]
    fn keys_and_views() {
        let st = Storage::new(24, Device::CPU).unwrap();
        let t = TensorImpl::new(
            st,
            DimVec::from_slice(&[2, 3]),
            contiguous_strides(&[2, 3]),
            0,
            ScalarType::F32,
            Some(VersionCounter::new()),
        );
        assert!(t.key_set().has(DispatchKey::CPU));
        assert!(t.key_set().has(DispatchKey::AutogradCPU));
        assert!(t.key_set().has(DispatchKey::ADInplaceOrView));
        assert!(t.is_contiguous());
        let v = t.view_of(DimVec::from_slice(&[3, 2]), DimVec::from_slice(&[1, 3]), 0);
        assert!(!v.is_contiguous());
        assert!(v.storage().is_same(t.storage()));
        assert!(v.version_counter().unwrap().is_same(t.version_counter().unwrap()));
        v.version_counter().unwrap().bump();
        assert_eq!(t.version_counter().unwrap().current(), 1);
        let inf = TensorImpl::new(t.storage().clone(), DimVec::new(), DimVec::new(), 0, ScalarType::F32, None);
        assert!(!inf.key_set().has(DispatchKey::AutogradCPU));
        assert!(inf.is_inference());
    }

    #[test]
    fn empty_shapes_with_huge_dims_have_no_elements() {
        // The partial product 2^63 wraps; the count is still 0 (Note [Wrapping numel]), and
        // debug builds must not panic on it.
        let sizes = [1i64 << 31, 1 << 32, 0];
        let st = Storage::new(0, Device::CPU).unwrap();
        let t = TensorImpl::new(
            st.clone(),
            DimVec::from_slice(&sizes),
            contiguous_strides(&sizes),
            0,
            ScalarType::F32,
            None,
        );
        assert_eq!(t.numel(), 0);
        assert_eq!(TensorImpl::new_contiguous_arc(st, &sizes, ScalarType::F32).numel(), 0);
    }

    #[test]
    fn contiguity_rule() {
        assert!(compute_contiguous(&[2, 1, 3], &[3, 100, 1]));
        assert!(compute_contiguous(&[0, 3], &[7, 9]));
        assert!(!compute_contiguous(&[2, 3], &[1, 2]));
        assert_eq!(contiguous_strides(&[2, 3, 4]).as_slice(), &[12, 4, 1]);
    }
}
