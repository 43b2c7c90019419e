//! `Tensor`: a cheap, clonable handle (`Arc<TensorImpl>`) with zero-copy constructors, typed
//! element access and the geometry accessors. Operators are methods generated in
//! `generated/methods.rs`; views share storage and version counter (see `native/shape.rs`).

use std::ptr::NonNull;
use std::sync::{Arc, Weak};

use c10::allocator::DataPtr;
use c10::tensor_impl::{contiguous_strides, DimVec};
use c10::{Device, DispatchKeySet, Element, Error, Result, Scalar, ScalarType, Storage, TensorImpl};

/// A multi-dimensional array on a device. Cloning the handle is cheap and shares the data;
/// use [`Tensor::clone_tensor`] (PyTorch's `clone()`) for a deep copy.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub(crate) imp: Arc<TensorImpl>,
}

/// A weak handle to a tensor (see [`Tensor::downgrade`]).
#[derive(Clone, Debug)]
pub struct WeakTensor {
    imp: Weak<TensorImpl>,
}

impl WeakTensor {
    /// The tensor, if some [`Tensor`] handle still holds it.
    #[inline]
    pub fn upgrade(&self) -> Option<Tensor> {
        self.imp.upgrade().map(|imp| Tensor { imp })
    }
}

/// Frees the `Vec<T>` behind a zero-copy tensor.
///
/// # Safety
/// `ctx` must be a `Box<Vec<T>>` turned into a raw pointer by `Tensor::from_vec`.
unsafe fn drop_boxed_vec<T>(_data: *mut u8, ctx: *mut ()) {
    // SAFETY: per the contract, ctx came from Box::into_raw(Box<Vec<T>>) and is dropped once.
    drop(unsafe { Box::from_raw(ctx as *mut Vec<T>) });
}

/// Runs the user's deleter of a `from_blob` tensor.
///
/// # Safety
/// `ctx` must be a `Box<Box<dyn FnOnce() + Send>>` from `Tensor::from_blob`.
unsafe fn run_blob_deleter(_data: *mut u8, ctx: *mut ()) {
    // SAFETY: per the contract, ctx is the boxed deleter, taken back exactly once.
    let f = unsafe { Box::from_raw(ctx as *mut Box<dyn FnOnce() + Send>) };
    f()
}

/// Checks a shape (non-negative sizes whose product fits in an `i64`) and returns its element
/// count. See Note [Checked sizes].
pub(crate) fn checked_numel(op: &str, shape: &[i64]) -> Result<i64> {
    c10::size::numel(op, shape)
}

impl Tensor {
    /// Wraps an implementation.
    pub fn from_impl(imp: TensorImpl) -> Tensor {
        Tensor { imp: Arc::new(imp) }
    }

    /// A handle to a shared implementation (a sparse tensor's member, Note [Sparse tensors]).
    pub fn from_arc(imp: Arc<TensorImpl>) -> Tensor {
        Tensor { imp }
    }

    /// The implementation behind the handle.
    #[inline]
    pub fn imp(&self) -> &TensorImpl {
        &self.imp
    }

    /// How many handles share this tensor (not counting views, which are tensors of their own
    /// over the same storage). Autograd uses it to take over a gradient nobody else holds.
    #[inline]
    pub fn use_count(&self) -> usize {
        Arc::strong_count(&self.imp)
    }

    /// A handle that does not keep the tensor alive (PyTorch's weak tensor references).
    /// Autograd's leaf accumulators hold their leaf this way.
    #[inline]
    pub fn downgrade(&self) -> WeakTensor {
        WeakTensor { imp: Arc::downgrade(&self.imp) }
    }

    /// Takes ownership of a `Vec` without copying and views it with `shape`.
    ///
    /// ```
    /// let t = aten::Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2]).unwrap();
    /// assert_eq!(t.sizes(), &[2, 2]);
    /// ```
    pub fn from_vec<T: Element>(v: Vec<T>, shape: &[i64]) -> Result<Tensor> {
        Tensor::from_vec_of(v, shape, T::DTYPE)
    }

    /// A complex tensor (complex64 for `Complex<f32>`, complex128 for `Complex<f64>`) that takes
    /// ownership of a `Vec` without copying, viewed with `shape`.
    ///
    /// ```
    /// use c10::Complex;
    /// let t = aten::Tensor::from_complex_vec(vec![Complex::new(1.0f32, 2.0)], &[1]).unwrap();
    /// assert_eq!(t.dtype(), c10::ScalarType::C64);
    /// ```
    pub fn from_complex_vec<R: crate::native::complex::Real>(v: Vec<c10::Complex<R>>, shape: &[i64]) -> Result<Tensor> {
        Tensor::from_vec_of(v, shape, R::COMPLEX)
    }

    /// The elements in row-major order as complex numbers of parts `R` (a real tensor's values
    /// get a zero imaginary part).
    pub fn to_complex_vec<R: crate::native::complex::Real>(&self) -> Result<Vec<c10::Complex<R>>> {
        let t =
            if self.dtype() == R::COMPLEX { self.clone() } else { crate::native::copy::to_dtype(self, R::COMPLEX)? };
        let t = if t.device().is_cpu() { t } else { t.to_device(Device::CPU)? };
        let t = t.contiguous().call()?;
        // SAFETY: a contiguous CPU tensor of dtype R::COMPLEX addresses numel adjacent
        // `Complex<R>` (two `R`s, `repr(C)`) from its data pointer, inside its storage.
        let all = unsafe { std::slice::from_raw_parts(t.data_ptr() as *const c10::Complex<R>, t.numel() as usize) };
        let mut out = c10::size::try_vec(all.len())?;
        out.extend_from_slice(all);
        Ok(out)
    }

    fn from_vec_of<T: Copy + Send + 'static>(v: Vec<T>, shape: &[i64], dtype: ScalarType) -> Result<Tensor> {
        debug_assert_eq!(std::mem::size_of::<T>(), dtype.size());
        let numel = checked_numel("from_vec", shape)?;
        if numel as usize != v.len() {
            return Err(Error::shape("from_vec", format!("shape {shape:?} is invalid for input of size {}", v.len())));
        }
        let nbytes = v.len() * std::mem::size_of::<T>();
        let mut boxed = Box::new(v);
        let ptr = NonNull::new(boxed.as_mut_ptr() as *mut u8).expect("Vec pointers are non-null");
        let ctx = Box::into_raw(boxed) as *mut ();
        // SAFETY: the pointer is the Vec's buffer, which lives until `drop_boxed_vec` drops the
        // boxed Vec (ctx) exactly once; moving the Box does not move the heap buffer.
        let data = unsafe { DataPtr::from_raw(ptr, ctx, Some(drop_boxed_vec::<T>), Device::CPU) };
        Ok(Tensor::from_storage(Storage::from_data_ptr(data, nbytes), shape, contiguous_strides(shape), 0, dtype))
    }

    /// A 1-D tensor copied from a slice.
    pub fn from_slice<T: Element>(v: &[T]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len() as i64]).expect("length matches")
    }

    /// A zero-dim tensor holding one value.
    pub fn scalar_tensor<T: Element>(v: T) -> Tensor {
        Tensor::from_vec(vec![v], &[]).expect("one element")
    }

    /// A zero-dim tensor from a Scalar, marked as a wrapped number (lowest promotion priority),
    /// which is how PyTorch passes Python numbers to tensor-tensor kernels.
    pub fn wrapped_scalar(s: Scalar) -> Tensor {
        let t = match s {
            Scalar::Bool(b) => Tensor::scalar_tensor(b),
            Scalar::Int(i) => Tensor::scalar_tensor(i),
            Scalar::Float(f) => Tensor::scalar_tensor(f),
        };
        let imp = Arc::try_unwrap(t.imp).expect("fresh tensor is unique");
        Tensor::from_impl(imp.with_wrapped_number(true))
    }

    /// Views external memory without copying. `deleter` runs exactly once, after the last
    /// tensor (including views) using the memory is dropped.
    ///
    /// # Safety
    /// `data` must point to memory valid for reads and writes of every element addressed by
    /// `sizes`/`strides` (in elements of `dtype`) until `deleter` runs, aligned for `dtype`, and
    /// not accessed through other references while tensors use it.
    pub unsafe fn from_blob(
        data: NonNull<u8>,
        sizes: &[i64],
        strides: &[i64],
        dtype: ScalarType,
        deleter: impl FnOnce() + Send + 'static,
    ) -> Result<Tensor> {
        if sizes.len() != strides.len() {
            return Err(Error::shape("from_blob", "sizes and strides must have the same length"));
        }
        // Negative strides are allowed here (the caller vouches for the memory); the storage
        // records the bytes the geometry spans either way.
        let abs_strides: DimVec = strides.iter().map(|s| s.saturating_abs()).collect();
        let nbytes = c10::size::strided_nbytes("from_blob", sizes, &abs_strides, 0, dtype.size())?;
        let boxed: Box<Box<dyn FnOnce() + Send>> = Box::new(Box::new(deleter));
        let ctx = Box::into_raw(boxed) as *mut ();
        // SAFETY: the caller guarantees validity until the deleter runs; run_blob_deleter takes
        // the boxed closure back exactly once, when the storage is dropped.
        let dp = unsafe { DataPtr::from_raw(data, ctx, Some(run_blob_deleter), Device::CPU) };
        Ok(Tensor::from_storage(Storage::from_data_ptr(dp, nbytes), sizes, DimVec::from_slice(strides), 0, dtype))
    }

    /// A tensor over existing storage with a fresh version counter.
    pub fn from_storage(storage: Storage, sizes: &[i64], strides: DimVec, offset: i64, dtype: ScalarType) -> Tensor {
        Tensor::from_impl(TensorImpl::fresh(storage, DimVec::from_slice(sizes), strides, offset, dtype))
    }

    /// A new uninitialised contiguous tensor (the raw allocation behind `empty`).
    pub fn empty_uninit(sizes: &[i64], dtype: ScalarType, device: Device) -> Result<Tensor> {
        let nbytes = c10::size::contiguous_nbytes("empty", sizes, dtype.size())?;
        let storage = Storage::new(nbytes, device)?;
        Ok(Tensor { imp: TensorImpl::new_contiguous_arc(storage, sizes, dtype) })
    }

    /// A new uninitialised tensor with explicit strides (used to inherit an input's layout).
    pub fn empty_strided_uninit(sizes: &[i64], strides: &[i64], dtype: ScalarType, device: Device) -> Result<Tensor> {
        let nbytes = c10::size::strided_nbytes("empty_strided", sizes, strides, 0, dtype.size())?;
        let storage = Storage::new(nbytes, device)?;
        Ok(Tensor::from_storage(storage, sizes, DimVec::from_slice(strides), 0, dtype))
    }

    /// Sizes per dimension.
    #[inline]
    pub fn sizes(&self) -> &[i64] {
        self.imp.sizes()
    }
    /// Alias of [`Tensor::sizes`] (PyTorch's `shape`).
    #[inline]
    pub fn shape(&self) -> &[i64] {
        self.imp.sizes()
    }
    /// Size of one dimension (negative dims count from the end).
    pub fn size(&self, dim: i64) -> Result<i64> {
        let d = crate::wrap_dim("size", dim, self.dim())?;
        Ok(self.sizes()[d])
    }
    /// Strides in elements.
    #[inline]
    pub fn strides(&self) -> &[i64] {
        self.imp.strides()
    }
    /// Number of dimensions.
    #[inline]
    pub fn dim(&self) -> usize {
        self.imp.dim()
    }
    /// Number of elements.
    #[inline]
    pub fn numel(&self) -> i64 {
        self.imp.numel()
    }
    /// Element type.
    #[inline]
    pub fn dtype(&self) -> ScalarType {
        self.imp.dtype()
    }
    /// Alias of [`Tensor::dtype`].
    #[inline]
    pub fn scalar_type(&self) -> ScalarType {
        self.imp.dtype()
    }
    /// Device of the data.
    #[inline]
    pub fn device(&self) -> Device {
        self.imp.storage().device()
    }
    /// Offset of element 0 in the storage.
    #[inline]
    pub fn storage_offset(&self) -> i64 {
        self.imp.storage_offset()
    }
    /// The storage shared with views.
    #[inline]
    pub fn storage(&self) -> &Storage {
        self.imp.storage()
    }
    /// Dispatch keys of the tensor.
    #[inline]
    pub fn key_set(&self) -> DispatchKeySet {
        self.imp.key_set()
    }
    /// Whether the tensor is C-contiguous.
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        self.imp.is_contiguous()
    }
    /// Whether this zero-dim tensor stands for a Rust scalar in promotion.
    #[inline]
    pub fn is_wrapped_number(&self) -> bool {
        self.imp.is_wrapped_number()
    }
    /// True for floating dtypes.
    pub fn is_floating_point(&self) -> bool {
        self.dtype().is_floating_point()
    }
    /// The version counter's current value (0 for inference tensors).
    pub fn version(&self) -> u32 {
        self.imp.version()
    }
    /// Records an in-place modification (bumps the shared version counter).
    pub fn bump_version(&self) {
        if let Some(v) = self.imp.version_counter() {
            v.bump();
        }
    }
    /// True when both handles are the same tensor object.
    pub fn is_same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.imp, &other.imp)
    }
    /// Address of element 0.
    #[inline]
    pub fn data_ptr(&self) -> *mut u8 {
        self.imp.data_ptr()
    }

    /// The layout (`torch.strided`, `torch.sparse_coo`, `torch.sparse_csr`).
    #[inline]
    pub fn layout(&self) -> c10::Layout {
        self.imp.layout()
    }
    /// Whether this is a sparse COO tensor (PyTorch's `is_sparse`).
    #[inline]
    pub fn is_sparse(&self) -> bool {
        self.layout() == c10::Layout::SparseCoo
    }
    /// Whether this is a sparse CSR tensor (`is_sparse_csr`).
    #[inline]
    pub fn is_sparse_csr(&self) -> bool {
        self.layout() == c10::Layout::SparseCsr
    }
    /// The member tensors of a sparse tensor (Note [Sparse tensors] in c10); `None` when strided.
    pub fn sparse_impl(&self) -> Option<&c10::sparse::SparseImpl> {
        self.imp.sparse()
    }
    /// An error unless the tensor is strided: what paths that read elements through sizes and
    /// strides say to a sparse tensor instead of reading memory it does not have.
    #[inline]
    pub fn check_strided(&self, op: &str) -> Result<()> {
        if self.imp.sparse().is_none() {
            return Ok(());
        }
        Err(Error::invalid(
            op,
            format!(
                "{op}: expected a strided tensor, but got a tensor with layout {} (sparse tensors do not have strides)",
                self.layout().short_name()
            ),
        ))
    }

    /// PyTorch's error for reading the elements of a tensor without storage (a sparse one).
    fn check_storage(&self, op: &str) -> Result<()> {
        if self.imp.sparse().is_none() {
            return Ok(());
        }
        Err(Error::invalid(op, "Cannot access data pointer of Tensor that doesn't have storage"))
    }

    /// The elements of a contiguous strided CPU tensor of `T`'s dtype, borrowed from its storage
    /// (row-major); an error naming `op` for any other tensor (another dtype or device, a
    /// non-contiguous view, a sparse tensor). The one checked way CPU kernels read a whole
    /// tensor in place.
    pub fn as_slice<T: Element>(&self, op: &str) -> Result<&[T]> {
        if !(self.is_contiguous()
            && self.dtype() == T::DTYPE
            && self.device().is_cpu()
            && self.layout() == c10::Layout::Strided)
        {
            return Err(Error::invalid(
                op,
                format!(
                    "expected a contiguous strided CPU tensor of {:?}, got {:?} on {}{}",
                    T::DTYPE,
                    self.dtype(),
                    self.device(),
                    if self.is_contiguous() { "" } else { " (not contiguous)" }
                ),
            ));
        }
        // SAFETY: a contiguous strided CPU tensor of dtype T addresses numel adjacent Ts from
        // its data pointer, inside its storage (invariant of TensorImpl construction), and the
        // storage lives at least as long as the borrow of `self`.
        Ok(unsafe { std::slice::from_raw_parts(self.data_ptr() as *const T, self.numel() as usize) })
    }

    /// Element 0 as a typed pointer, checking the dtype.
    pub fn typed_data_ptr<T: Element>(&self) -> Result<*mut T> {
        self.check_storage("data_ptr")?;
        if self.dtype() != T::DTYPE {
            return Err(Error::DtypeMismatch { op: "data_ptr".into(), expected: T::DTYPE, actual: self.dtype() });
        }
        Ok(self.data_ptr() as *mut T)
    }

    /// Copies the elements out in row-major order, converting to `T` with PyTorch's cast rules.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        // PyTorch's tolist() of a sparse tensor fails the same way.
        self.check_storage("tolist")?;
        if !self.device().is_cpu() {
            // Through the device's copy kernel (PyTorch's `tolist()` works on any device).
            return crate::ops::_to_copy(self, None, None, Some(Device::CPU), None, false, None)?.to_vec();
        }
        // An expanded tensor can have far more elements than memory holds: an error, not an abort.
        let mut out = c10::size::try_vec(self.numel() as usize)?;
        if self.dtype() == T::DTYPE && self.is_contiguous() {
            out.extend_from_slice(self.as_slice::<T>("tolist")?);
            return Ok(out);
        }
        c10::dispatch_all_types!(self.dtype(), S => {
            let base = self.data_ptr() as *const S;
            crate::native::cpu::loops::for_each_offset(self.sizes(), self.strides(), |off| {
                // SAFETY: offsets come from sizes/strides of a tensor whose storage covers
                // every addressed element (invariant of TensorImpl construction).
                let v = unsafe { *base.offset(off) };
                out.push(v.cast::<T>());
            });
        });
        Ok(out)
    }

    /// The value of a one-element tensor, converted to `T`.
    pub fn item<T: Element>(&self) -> Result<T> {
        // While tracing, the read goes through the dispatcher too, so the tracer records it and
        // warns that the trace depends on a value (Note [Value-dependent traces], jit).
        let tls = c10::LocalDispatchKeySet::get();
        if tls.included.has(c10::DispatchKey::Tracer) && !tls.excluded.has(c10::DispatchKey::Tracer) {
            crate::ops::item(self)?;
        }
        if self.numel() != 1 {
            return Err(Error::invalid(
                "item",
                format!("a Tensor with {} elements cannot be converted to Scalar", self.numel()),
            ));
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// The value of a one-element tensor as a Scalar of the tensor's kind.
    pub fn item_scalar(&self) -> Result<Scalar> {
        let d = self.dtype();
        if d == ScalarType::Bool {
            Ok(Scalar::Bool(self.item::<bool>()?))
        } else if d.is_floating_point() {
            Ok(Scalar::Float(self.item::<f64>()?))
        } else {
            Ok(Scalar::Int(self.item::<i64>()?))
        }
    }
}
