//! `TensorIterator`: the device-generic machinery of elementwise kernels — broadcasting, type
//! promotion, output allocation on the operands' device that inherits the inputs' layout,
//! dimension reordering and coalescing — and, on the CPU, splitting the work over threads
//! (rayon, grain 32768 elements). The typed CPU loops over it live in `native/cpu/loops.rs`;
//! other devices read its shape and strides and launch their own (Note [Device-generic
//! operators] in `native/stub.rs`).
//!
//! Note [Iteration order]: after `build`, dimension 0 of the iterator is the *fastest* one (the
//! smallest strides), as in PyTorch. Kernels receive 1-d runs along it: one data pointer and one
//! byte stride per operand (outputs first) and a length. A contiguous run has stride ==
//! element size; a broadcast operand has stride 0.

use smallvec::SmallVec;

use c10::tensor_impl::DimVec;
use c10::{promote_types, Error, Result, ResultTypeState, ScalarType};

use crate::memory_overlap::{assert_no_internal_overlap, assert_no_partial_overlap};
use crate::parallel::SendPtr;
use crate::Tensor;

/// Most operands any kernel uses (outputs + inputs).
pub const MAX_OPERANDS: usize = 8;
/// Elements below which a loop runs on the calling thread.
pub const GRAIN_SIZE: i64 = 32768;

/// Side of the square blocks of Note [Tiled iteration], in elements.
const TILE: i64 = 64;

/// Data pointers of one 1-d run, outputs first.
pub type Ptrs = [*mut u8; MAX_OPERANDS];
/// Byte strides of one 1-d run, outputs first.
pub type Strides = [isize; MAX_OPERANDS];
/// The per-run kernel as the parallel driver sees it (Note [One parallel driver]).
type RunFn<'a> = dyn Fn(&Ptrs, &Strides, usize) + Sync + 'a;

/// What an iteration visits ([`TensorIterator::for_each`]).
enum Runs {
    /// No elements (or meta operands, which have no values).
    Empty,
    /// One run of `numel` elements: base pointers and byte strides.
    One(Ptrs, Strides),
    /// Several runs, or one too long for a single task.
    Many(SendPtr<Ptrs>),
}

/// An operand: borrowed from the caller, or owned by the iterator (allocated outputs and
/// inputs converted to the common dtype). Borrowing keeps reference-count traffic (an atomic
/// read-modify-write each) off the path of small operations.
#[derive(Debug)]
enum Operand<'a> {
    Borrowed(&'a Tensor),
    Owned(Tensor),
}

impl std::ops::Deref for Operand<'_> {
    type Target = Tensor;
    #[inline]
    fn deref(&self) -> &Tensor {
        match self {
            Operand::Borrowed(t) => t,
            Operand::Owned(t) => t,
        }
    }
}

/// How the iterator is set up (PyTorch's `TensorIteratorConfig`).
#[derive(Clone, Debug)]
pub struct TensorIteratorConfig<'a> {
    op: &'static str,
    outputs: SmallVec<[Option<&'a Tensor>; 2]>,
    inputs: SmallVec<[&'a Tensor; 4]>,
    promote_inputs_to_common_dtype: bool,
    promote_integer_inputs_to_float: bool,
    cast_common_dtype_to_outputs: bool,
    enforce_safe_casting_to_output: bool,
    check_all_same_dtype: bool,
    static_output_dtype: Option<ScalarType>,
    common_dtype_override: Option<ScalarType>,
    is_inplace: bool,
    allow_complex: bool,
}

impl<'a> TensorIteratorConfig<'a> {
    /// A configuration for operator `op` (used in error messages).
    #[inline]
    pub fn new(op: &'static str) -> Self {
        TensorIteratorConfig {
            op,
            outputs: SmallVec::new(),
            inputs: SmallVec::new(),
            promote_inputs_to_common_dtype: false,
            promote_integer_inputs_to_float: false,
            cast_common_dtype_to_outputs: false,
            enforce_safe_casting_to_output: false,
            check_all_same_dtype: true,
            static_output_dtype: None,
            common_dtype_override: None,
            is_inplace: false,
            allow_complex: false,
        }
    }

    /// PyTorch's `binary_op` preset: promote, cast to outputs, enforce safe casting.
    #[inline]
    pub fn binary_op(op: &'static str, out: Option<&'a Tensor>, a: &'a Tensor, b: &'a Tensor) -> Self {
        Self::new(op).add_output(out).add_input(a).add_input(b).promote_all()
    }

    /// Turns on promotion of inputs to the common dtype and casting of the result into outputs
    /// with a different (safely castable) dtype.
    #[inline]
    pub fn promote_all(mut self) -> Self {
        self.promote_inputs_to_common_dtype = true;
        self.cast_common_dtype_to_outputs = true;
        self.enforce_safe_casting_to_output = true;
        self.check_all_same_dtype = false;
        self
    }

    /// Adds an output; `None` lets the iterator allocate it.
    #[inline]
    pub fn add_output(mut self, t: Option<&'a Tensor>) -> Self {
        if let Some(t) = t {
            if self.inputs.iter().any(|i| i.is_same(t)) {
                self.is_inplace = true;
            }
        }
        self.outputs.push(t);
        self
    }

    /// Adds an input.
    #[inline]
    pub fn add_input(mut self, t: &'a Tensor) -> Self {
        if self.outputs.iter().flatten().any(|o| o.is_same(t)) {
            self.is_inplace = true;
        }
        self.inputs.push(t);
        self
    }

    /// Integer (and bool) common dtypes become the default float dtype (true division).
    #[inline]
    pub fn promote_integer_inputs_to_float(mut self, v: bool) -> Self {
        self.promote_integer_inputs_to_float = v;
        self
    }

    /// Whether all operands must share one dtype (off for `promote_all`).
    #[inline]
    pub fn check_all_same_dtype(mut self, v: bool) -> Self {
        self.check_all_same_dtype = v;
        self
    }

    /// The outputs get this dtype regardless of the inputs (comparisons give `Bool`).
    #[inline]
    pub fn static_output_dtype(mut self, d: ScalarType) -> Self {
        self.static_output_dtype = Some(d);
        self
    }

    /// Uses this common dtype instead of computing it from the inputs.
    #[inline]
    pub fn common_dtype(mut self, d: ScalarType) -> Self {
        self.common_dtype_override = Some(d);
        self
    }

    /// Lets complex operands in. Without it the iterator refuses them with PyTorch's
    /// `"op" not implemented for 'ComplexFloat'`, so a kernel that never learned complex
    /// arithmetic is never handed complex data (Note [Complex operands]).
    #[inline]
    pub fn allow_complex(mut self) -> Self {
        self.allow_complex = true;
        self
    }

    /// Builds the iterator.
    #[inline(always)]
    pub fn build(self) -> Result<TensorIterator<'a>> {
        TensorIterator::build(self)
    }
}

/// A built iterator: operands (outputs first), the iteration shape with dimension 0 fastest, and
/// per-operand byte strides.
#[derive(Debug)]
pub struct TensorIterator<'a> {
    op: &'static str,
    operands: SmallVec<[Operand<'a>; 4]>,
    /// For outputs computed into a temporary of the common dtype: the user's tensor to copy into.
    write_back: SmallVec<[(usize, &'a Tensor); 1]>,
    num_outputs: usize,
    shape: DimVec,
    /// Byte strides, operand-major: `strides[k * ndim + d]` for operand `k`, dimension `d`.
    strides: SmallVec<[isize; 12]>,
    common_dtype: ScalarType,
    numel: i64,
}

/// Broadcasts shapes right-aligned (`infer_size`).
pub fn broadcast_shapes(op: &str, a: &[i64], b: &[i64]) -> Result<DimVec> {
    let n = a.len().max(b.len());
    let mut out = DimVec::from_elem(1, n);
    for i in 0..n {
        let da = if i < n - a.len() { 1 } else { a[i - (n - a.len())] };
        let db = if i < n - b.len() { 1 } else { b[i - (n - b.len())] };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Broadcast { op: op.to_string(), a: da, b: db, dim: i });
        };
    }
    Ok(out)
}

impl<'a> TensorIterator<'a> {
    /// Whether PyTorch's `fast_set_up` applies: every input is contiguous with one shape, dtype
    /// and device, no promotion or cast is needed, and every given output already has that
    /// shape, the output dtype and a contiguous layout.
    #[inline(always)]
    fn fast_eligible(cfg: &TensorIteratorConfig<'a>) -> bool {
        let Some(first) = cfg.inputs.first() else { return false };
        if cfg.inputs.len() + cfg.outputs.len() > MAX_OPERANDS {
            return false;
        }
        let (sizes, dtype, device) = (first.sizes(), first.dtype(), first.device());
        // Shapes are compared element by element: `==` on slices calls `memcmp`, which costs
        // more than the comparison itself for the few dimensions a tensor has.
        let same_sizes = |s: &[i64]| s.len() == sizes.len() && s.iter().zip(sizes).all(|(x, y)| x == y);
        if !cfg
            .inputs
            .iter()
            .all(|t| t.is_contiguous() && same_sizes(t.sizes()) && t.dtype() == dtype && t.device() == device)
        {
            return false;
        }
        let common = cfg.common_dtype_override.unwrap_or(dtype);
        if common != dtype || (cfg.promote_integer_inputs_to_float && !dtype.is_floating_point() && !dtype.is_complex())
        {
            return false;
        }
        let out_dtype = cfg.static_output_dtype.unwrap_or(common);
        if (dtype.is_complex() || out_dtype.is_complex()) && !cfg.allow_complex {
            // The general set-up gives the error (Note [Complex operands]).
            return false;
        }
        cfg.outputs
            .iter()
            .flatten()
            .all(|o| o.is_contiguous() && same_sizes(o.sizes()) && o.dtype() == out_dtype && o.device() == device)
    }

    /// PyTorch's `fast_set_up` (for a configuration [`Self::fast_eligible`] accepted): the
    /// iteration is one flat run and the outputs are plain contiguous tensors. This skips
    /// broadcasting, permutation and coalescing, which dominate the cost of small operations.
    /// The iterator is built in the return slot (no intermediate `Option`), so small operations
    /// do not pay for copying it around.
    #[inline(always)]
    fn fast_setup(cfg: &TensorIteratorConfig<'a>) -> Result<TensorIterator<'a>> {
        let first = cfg.inputs[0];
        let (sizes, dtype, device) = (first.sizes(), first.dtype(), first.device());
        let common = cfg.common_dtype_override.unwrap_or(dtype);
        let out_dtype = cfg.static_output_dtype.unwrap_or(common);
        let mut operands: SmallVec<[Operand<'a>; 4]> = SmallVec::new();
        let mut strides: SmallVec<[isize; 12]> = SmallVec::new();
        for o in &cfg.outputs {
            operands.push(match o {
                Some(t) => Operand::Borrowed(t),
                None => Operand::Owned(Tensor::empty_uninit(sizes, out_dtype, device)?),
            });
            strides.push(out_dtype.size() as isize);
        }
        for t in &cfg.inputs {
            operands.push(Operand::Borrowed(t));
            strides.push(dtype.size() as isize);
        }
        let numel = first.numel();
        Ok(TensorIterator {
            op: cfg.op,
            operands,
            write_back: SmallVec::new(),
            num_outputs: cfg.outputs.len(),
            shape: smallvec::smallvec![numel],
            strides,
            common_dtype: common,
            numel,
        })
    }

    #[inline(always)]
    fn build(cfg: TensorIteratorConfig<'a>) -> Result<TensorIterator<'a>> {
        if cfg.outputs.iter().any(Option::is_some) {
            Self::check_mem_overlaps(&cfg)?;
        }
        if Self::fast_eligible(&cfg) {
            return Self::fast_setup(&cfg);
        }
        Self::build_general(cfg)
    }

    /// PyTorch's `compute_mem_overlaps` for the outputs the caller gave (in-place and `out=`):
    /// no output may write one address twice, nor partly overlap an input. See Note [Memory
    /// overlap checks].
    #[inline(never)]
    fn check_mem_overlaps(cfg: &TensorIteratorConfig<'a>) -> Result<()> {
        for o in cfg.outputs.iter().flatten() {
            assert_no_internal_overlap(cfg.op, o)?;
            for i in cfg.inputs.iter().filter(|i| !i.is_same(o)) {
                assert_no_partial_overlap(cfg.op, o, i)?;
            }
        }
        Ok(())
    }

    /// Broadcasting, promotion, permutation, allocation and coalescing (the general set-up).
    #[inline(never)]
    fn build_general(cfg: TensorIteratorConfig<'a>) -> Result<TensorIterator<'a>> {
        let op = cfg.op;
        for t in cfg.outputs.iter().flatten().chain(cfg.inputs.iter()) {
            t.check_strided(op)?;
        }
        // Devices: every operand on one device, except that a 0-dim CPU input may join tensors
        // of another device (PyTorch's CPU scalars); it is copied there below.
        let cpu_scalar = |t: &Tensor| t.dim() == 0 && t.device().is_cpu();
        let all = || cfg.outputs.iter().flatten().chain(cfg.inputs.iter());
        let dev = all().find(|t| !cpu_scalar(t)).or_else(|| all().next()).map(|t| t.device());
        let device = dev.unwrap_or(c10::Device::CPU);
        for o in cfg.outputs.iter().flatten() {
            if o.device() != device {
                return Err(Error::DeviceMismatch { op: op.into(), a: device.to_string(), b: o.device().to_string() });
            }
        }
        for t in &cfg.inputs {
            if t.device() != device && !cpu_scalar(t) {
                return Err(Error::DeviceMismatch { op: op.into(), a: device.to_string(), b: t.device().to_string() });
            }
        }

        // Shape.
        let mut shape = DimVec::new();
        for t in &cfg.inputs {
            shape = broadcast_shapes(op, &shape, t.sizes())?;
        }
        if cfg.inputs.is_empty() {
            // An output-only iteration (fill): the output's shape.
            if let Some(o) = cfg.outputs.iter().flatten().next() {
                shape = DimVec::from_slice(o.sizes());
            }
        }
        for o in cfg.outputs.iter().flatten() {
            if o.sizes() != shape.as_slice() {
                if cfg.is_inplace || cfg.inputs.is_empty() {
                    return Err(Error::shape(
                        op,
                        format!(
                            "output with shape {:?} doesn't match the broadcast shape {:?}",
                            o.sizes(),
                            shape.as_slice()
                        ),
                    ));
                }
                return Err(Error::shape(
                    op,
                    format!(
                        "out= tensor has shape {:?} but the result has shape {:?} (out tensors are not resized)",
                        o.sizes(),
                        shape.as_slice()
                    ),
                ));
            }
        }

        // Dtypes.
        let common = if let Some(d) = cfg.common_dtype_override {
            d
        } else if cfg.check_all_same_dtype && !cfg.promote_inputs_to_common_dtype {
            let first = cfg
                .inputs
                .first()
                .map(|t| t.dtype())
                .or_else(|| cfg.outputs.iter().flatten().next().map(|t| t.dtype()));
            let d = first.unwrap_or(ScalarType::F32);
            for t in cfg.inputs.iter().chain(cfg.outputs.iter().flatten()) {
                if t.dtype() != d && cfg.static_output_dtype.is_none() {
                    return Err(Error::invalid(
                        op,
                        format!("expected all tensors to have dtype {d}, but found {}", t.dtype()),
                    ));
                }
            }
            d
        } else {
            let mut st = ResultTypeState::default();
            for t in &cfg.inputs {
                st.update(t.dtype(), t.dim(), t.is_wrapped_number());
            }
            st.result().unwrap_or(ScalarType::F32)
        };
        let common = if cfg.promote_integer_inputs_to_float && !common.is_floating_point() && !common.is_complex() {
            ScalarType::default_float()
        } else {
            common
        };
        let out_dtype = cfg.static_output_dtype.unwrap_or(common);
        if !cfg.allow_complex {
            // Note [Complex operands]: the element loops of most kernels are written for the
            // real dtypes. An iterator is the one door they share, so the refusal is here: a
            // complex input, output or result dtype is an error unless the kernel opted in.
            let all = cfg.inputs.iter().copied().chain(cfg.outputs.iter().flatten().copied());
            if let Some(d) = all.map(|t| t.dtype()).chain([common, out_dtype]).find(|d| d.is_complex()) {
                return Err(Error::unsupported_dtype(op, d));
            }
        }

        let mut operands: SmallVec<[Option<Operand<'a>>; 4]> = SmallVec::new();
        let mut write_back = SmallVec::new();
        for (i, o) in cfg.outputs.iter().enumerate() {
            match *o {
                Some(t) if t.dtype() != out_dtype => {
                    if !cfg.cast_common_dtype_to_outputs {
                        return Err(Error::invalid(
                            op,
                            format!("expected out tensor to have dtype {out_dtype}, but got {} instead", t.dtype()),
                        ));
                    }
                    if cfg.enforce_safe_casting_to_output && !c10::scalar_type::can_cast(out_dtype, t.dtype()) {
                        return Err(Error::UnsafeCast { op: op.into(), from: out_dtype, to: t.dtype() });
                    }
                    write_back.push((i, t));
                    operands.push(None);
                }
                Some(t) => operands.push(Some(Operand::Borrowed(t))),
                None => operands.push(None),
            }
        }
        for &t in &cfg.inputs {
            let dtype = if cfg.promote_inputs_to_common_dtype { common } else { t.dtype() };
            operands.push(Some(if t.device() != device {
                // A CPU scalar joining another device (checked above).
                Operand::Owned(crate::ops::_to_copy(t, Some(dtype), None, Some(device), None, false, None)?)
            } else if dtype != t.dtype() {
                Operand::Owned(if device.is_cpu() {
                    crate::native::copy::to_dtype(t, dtype)?
                } else {
                    crate::ops::_to_copy(t, Some(dtype), None, None, None, false, None)?
                })
            } else {
                Operand::Borrowed(t)
            }));
        }
        let num_outputs = cfg.outputs.len();
        let ndim = shape.len();

        // Element strides of every defined operand over the broadcast shape.
        let elem_strides = |t: &Tensor| -> SmallVec<[i64; 6]> {
            let off = ndim - t.dim();
            (0..ndim)
                .map(|d| if d < off || t.sizes()[d - off] == 1 && shape[d] != 1 { 0 } else { t.strides()[d - off] })
                .collect()
        };

        // Permutation: perm[0] is the fastest dimension (Note [Iteration order]).
        let mut perm: SmallVec<[usize; 6]> = (0..ndim).rev().collect();
        {
            let defined: SmallVec<[SmallVec<[i64; 6]>; 4]> =
                operands.iter().flatten().map(|o| elem_strides(o)).collect();
            // should_swap(d0, d1) > 0 when d0 should come after d1 (it is slower).
            let should_swap = |d0: usize, d1: usize| -> i32 {
                for s in &defined {
                    let (s0, s1) = (s[d0], s[d1]);
                    if s0 == 0 || s1 == 0 {
                        continue;
                    }
                    if s0 < s1 {
                        return -1;
                    }
                    if s0 > s1 {
                        return 1;
                    }
                    if shape[d0] > shape[d1] {
                        return 1;
                    }
                }
                0
            };
            for i in 1..ndim {
                let mut d1 = i;
                let mut d0 = i as isize - 1;
                while d0 >= 0 {
                    let c = should_swap(perm[d0 as usize], perm[d1]);
                    if c > 0 {
                        perm.swap(d0 as usize, d1);
                        d1 = d0 as usize;
                    } else if c < 0 {
                        break;
                    }
                    d0 -= 1;
                }
            }
        }

        // Allocate missing outputs: contiguous in permuted order, so they inherit the layout.
        let numel = c10::size::numel(op, &shape)?;
        let mut out_strides = DimVec::from_elem(0, ndim);
        let mut acc = 1i64;
        for &d in perm.iter() {
            out_strides[d] = acc;
            // Saturating: only an empty shape has a product past int64 (numel checked above).
            acc = acc.saturating_mul(shape[d].max(1));
        }
        for slot in operands.iter_mut().take(num_outputs) {
            if slot.is_none() {
                *slot = Some(Operand::Owned(Tensor::empty_strided_uninit(&shape, &out_strides, out_dtype, device)?));
            }
        }
        let operands: SmallVec<[Operand<'a>; 4]> =
            operands.into_iter().map(|t| t.expect("all operands defined")).collect();
        if operands.len() > MAX_OPERANDS {
            return Err(Error::invalid(op, format!("too many operands ({})", operands.len())));
        }

        // Byte strides in permuted order, then coalescing of adjacent dimensions.
        let mut it_shape: DimVec = perm.iter().map(|&d| shape[d]).collect();
        let mut per_op: SmallVec<[SmallVec<[isize; 6]>; 4]> = operands
            .iter()
            .map(|t| {
                let es = elem_strides(t);
                let sz = t.dtype().size() as isize;
                // Wrapping: a stride this large only belongs to a dimension of size 0 or 1 (the
                // storage of anything else was checked), which no element is read through.
                perm.iter().map(|&d| (es[d] as isize).wrapping_mul(sz)).collect()
            })
            .collect();
        if it_shape.is_empty() {
            it_shape.push(1);
            for s in per_op.iter_mut() {
                s.push(0);
            }
        }
        coalesce(&mut it_shape, &mut per_op);
        let strides = per_op.iter().flat_map(|s| s.iter().copied()).collect();
        Ok(TensorIterator {
            op,
            operands,
            write_back,
            num_outputs,
            shape: it_shape,
            strides,
            common_dtype: common,
            numel,
        })
    }

    /// The operator name.
    pub fn op(&self) -> &'static str {
        self.op
    }
    /// The dtype inputs were promoted to.
    pub fn common_dtype(&self) -> ScalarType {
        self.common_dtype
    }
    /// The dtype of output 0.
    pub fn output_dtype(&self) -> ScalarType {
        self.operands[0].dtype()
    }
    /// Operand `i` (outputs first).
    pub fn operand(&self, i: usize) -> &Tensor {
        &self.operands[i]
    }
    /// The dtype of input `i`.
    pub fn input_dtype(&self, i: usize) -> ScalarType {
        self.operands[self.num_outputs + i].dtype()
    }
    /// Number of elements iterated.
    pub fn numel(&self) -> i64 {
        self.numel
    }
    /// The coalesced iteration shape (dimension 0 fastest).
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }
    /// Operand `k`'s byte strides over [`Self::shape`] (dimension 0 fastest).
    pub fn strides(&self, k: usize) -> &[isize] {
        let nd = self.shape.len();
        &self.strides[k * nd..(k + 1) * nd]
    }
    /// Number of operands, outputs first.
    pub fn noperands(&self) -> usize {
        self.operands.len()
    }
    /// Number of outputs.
    pub fn noutputs(&self) -> usize {
        self.num_outputs
    }
    /// The device every operand is on (Note [Device-generic operators]).
    pub fn device(&self) -> c10::Device {
        self.operands[0].device()
    }
    /// Whether the loops run on the CPU; otherwise the operator runs its device loop
    /// ([`crate::native::stub::run`]).
    #[inline]
    pub fn is_cpu(&self) -> bool {
        self.operands[0].device().is_cpu()
    }

    /// Runs `f` over every 1-d run, in parallel above [`GRAIN_SIZE`] elements.
    ///
    /// Only the single-run case calls `f` directly; everything else goes through
    /// `for_each_runs`, which takes `f` as a trait object (Note [One parallel driver]).
    #[inline]
    pub fn for_each(&self, f: impl Fn(&Ptrs, &Strides, usize) + Sync) {
        match self.runs() {
            Runs::Empty => {}
            Runs::One(base, strides0) => f(&base, &strides0, self.numel as usize),
            Runs::Many(base) => self.for_each_runs(base, &f),
        }
    }

    /// What [`Self::for_each`] has to visit: nothing, one run from the operands' first
    /// elements, or many runs.
    fn runs(&self) -> Runs {
        if self.numel == 0 || self.device().is_meta() {
            // Meta tensors have no values: the iterator's shapes, dtypes and outputs are the
            // whole result (Note [Meta loops]).
            return Runs::Empty;
        }
        // An internal invariant, not an input check: operators on other devices run their
        // device loop instead (Note [Device-generic operators]).
        assert!(self.is_cpu(), "{}: a CPU loop over {} memory", self.op, self.device());
        let mut base: Ptrs = [std::ptr::null_mut(); MAX_OPERANDS];
        for (i, t) in self.operands.iter().enumerate() {
            base[i] = t.data_ptr();
        }
        if self.numel < GRAIN_SIZE && self.shape.len() == 1 {
            // One run: the common case of small contiguous operations.
            let mut strides0: Strides = [0; MAX_OPERANDS];
            strides0[..self.operands.len()].copy_from_slice(&self.strides);
            return Runs::One(base, strides0);
        }
        Runs::Many(SendPtr(base))
    }

    // Note [One parallel driver]
    // ~~~~~~~~~~~~~~~~~~~~~~~~~~
    // Every typed loop (a kernel closure per operator and dtype, about a thousand of them) goes
    // through `for_each`. If the walk over runs, the tiling and the parallel region were generic
    // over the closure, each of those instantiations would carry its own copy of rayon's job
    // machinery: measured with `cargo llvm-lines`, that was 45% of aten's LLVM IR and most of
    // its release build time. So the driver below is compiled once and calls the kernel
    // through `&dyn Fn`, one indirect call per run (a run is a whole innermost dimension, or a
    // TILE-long column of a tile), while the kernel's own loop over the run stays monomorphic
    // and vectorised.

    /// The runs of a multi-run (or large) iteration, tiled or in row-major order, split over
    /// rayon above [`GRAIN_SIZE`] elements.
    #[inline(never)]
    fn for_each_runs(&self, base: SendPtr<Ptrs>, f: &RunFn<'_>) {
        // The pointers address tensor storage kept alive by the iterator for the whole parallel
        // region; workers write disjoint element ranges of the outputs and only read inputs
        // (Note [Sharing raw pointers with workers]).
        if self.wants_tiling() {
            self.run_tiled(&base, f);
            return;
        }
        if self.numel < GRAIN_SIZE || rayon::current_num_threads() <= 1 {
            self.run_range(&base.0, 0, self.numel, f);
            return;
        }
        let chunks = (self.numel / GRAIN_SIZE).min(rayon::current_num_threads() as i64 * 4).max(1);
        let per = (self.numel + chunks - 1) / chunks;
        let base = &base;
        crate::parallel::for_each(chunks as usize, |c| {
            let (begin, end) = (c as i64 * per, ((c as i64 + 1) * per).min(self.numel));
            if begin < end {
                self.run_range(&base.0, begin, end, f);
            }
        });
    }

    /// Whether the two fastest dimensions should be visited in square tiles: some operand walks
    /// dimension 0 with a stride longer than a cache line while stepping through dimension 1
    /// more tightly (a transposed operand, e.g. `a.t() + b`), and every output writes each
    /// element once (no reduction), so the visiting order cannot change a result.
    /// See Note [Tiled iteration].
    #[doc(hidden)]
    pub fn wants_tiling(&self) -> bool {
        let nd = self.shape.len();
        if nd < 2 || self.shape[0] < 2 * TILE || self.shape[1] < 2 || self.numel < GRAIN_SIZE {
            return false;
        }
        let s = |k: usize, d: usize| self.strides[k * nd + d].unsigned_abs();
        let outputs_dense = (0..self.num_outputs).all(|k| s(k, 0) != 0 && s(k, 1) != 0);
        let transposed = (0..self.operands.len()).any(|k| s(k, 0) > 64 && s(k, 1) < s(k, 0));
        outputs_dense && transposed
    }

    // Note [Tiled iteration]
    // ~~~~~~~~~~~~~~~~~~~~~~
    // Row-major visiting is right when every operand is laid out like the iteration shape. When
    // an input is transposed against the others (`a.t() + b`), a run along dimension 0 touches a
    // new cache line (and, at 4096 columns, a new page) per element of that input. Instead the
    // two fastest dimensions are visited in TILE x TILE blocks, and each transposed input whose
    // elements are adjacent along dimension 1 is first staged: the block is copied, reading it
    // row by row in its own memory order, into a small buffer laid out along dimension 0. The
    // kernel then sees contiguous runs for every operand (its vectorised path), and the
    // transposed input is read sequentially. Outputs are never staged: they are written in
    // place, in their own layout (which is the iteration order). Work items are (outer index,
    // block of dimension 1), split over rayon.
    fn run_tiled(&self, base: &SendPtr<Ptrs>, f: &RunFn<'_>) {
        let nd = self.shape.len();
        let nops = self.operands.len();
        let (d0, d1) = (self.shape[0], self.shape[1]);
        let outer: i64 = self.shape[2..].iter().product();
        let col_blocks = (d1 + TILE - 1) / TILE;
        let items = outer * col_blocks;
        let mut strides0: Strides = [0; MAX_OPERANDS];
        for (k, s) in strides0.iter_mut().enumerate().take(nops) {
            *s = self.strides[k * nd];
        }
        // Inputs to stage, with their element size; their run stride becomes the element size.
        let mut staged: SmallVec<[(usize, usize); MAX_OPERANDS]> = SmallVec::new();
        let mut run_strides = strides0;
        for (k, run_stride) in run_strides.iter_mut().enumerate().take(nops).skip(self.num_outputs) {
            let elem = self.operands[k].dtype().size();
            let (s0, s1) = (self.strides[k * nd], self.strides[k * nd + 1]);
            if s0.unsigned_abs() > 64 && s1 == elem as isize && matches!(elem, 1 | 2 | 4 | 8) {
                staged.push((k, elem));
                *run_stride = elem as isize;
            }
        }
        let run_item = |item: i64| {
            let (mut o, jb) = (item / col_blocks, item % col_blocks);
            let mut ptrs: Ptrs = [std::ptr::null_mut(); MAX_OPERANDS];
            let mut outer_off: SmallVec<[isize; MAX_OPERANDS]> = SmallVec::from_elem(0, nops);
            for d in 2..nd {
                let i = (o % self.shape[d]) as isize;
                o /= self.shape[d];
                for (k, off) in outer_off.iter_mut().enumerate() {
                    *off += i * self.strides[k * nd + d];
                }
            }
            // One TILE x TILE block per staged input, as u64 words so every element size is
            // aligned.
            let mut bufs: SmallVec<[Vec<u64>; 2]> =
                staged.iter().map(|&(_, elem)| vec![0u64; (TILE * TILE) as usize * elem / 8 + 1]).collect();
            let (j_begin, j_end) = (jb * TILE, ((jb + 1) * TILE).min(d1));
            let cols = (j_end - j_begin) as usize;
            let mut i0 = 0;
            while i0 < d0 {
                let run = (d0 - i0).min(TILE) as usize;
                for (b, &(k, elem)) in bufs.iter_mut().zip(&staged) {
                    let src = base.0[k].wrapping_offset(
                        outer_off[k] + i0 as isize * strides0[k] + j_begin as isize * self.strides[k * nd + 1],
                    );
                    // SAFETY: `src` addresses `run` rows of `cols` adjacent elements (stride
                    // strides0[k] between rows) inside the operand's live storage, and the
                    // buffer holds TILE * TILE elements of `elem` bytes.
                    unsafe { stage_block(src, strides0[k], run, cols, elem, b.as_mut_ptr().cast()) };
                }
                for j in j_begin..j_end {
                    for k in 0..nops {
                        let off = outer_off[k] + i0 as isize * strides0[k] + j as isize * self.strides[k * nd + 1];
                        ptrs[k] = base.0[k].wrapping_offset(off);
                    }
                    for (b, &(k, elem)) in bufs.iter_mut().zip(&staged) {
                        let col = (j - j_begin) as usize;
                        ptrs[k] = b.as_mut_ptr().cast::<u8>().wrapping_add(col * run * elem);
                    }
                    f(&ptrs, &run_strides, run);
                }
                i0 += TILE;
            }
        };
        let threads = rayon::current_num_threads() as i64;
        if threads <= 1 || items < 2 {
            (0..items).for_each(run_item);
            return;
        }
        let chunks = items.min(threads * 4);
        let per = (items + chunks - 1) / chunks;
        crate::parallel::for_each(chunks as usize, |c| {
            let (begin, end) = (c as i64 * per, ((c as i64 + 1) * per).min(items));
            (begin..end).for_each(&run_item);
        });
    }

    /// Runs the linear element range `[begin, end)` (row-major over the iteration shape with
    /// dimension 0 fastest).
    fn run_range(&self, base: &Ptrs, begin: i64, end: i64, f: &RunFn<'_>) {
        let nd = self.shape.len();
        let nops = self.operands.len();
        let mut strides0: Strides = [0; MAX_OPERANDS];
        for (k, s) in strides0.iter_mut().enumerate().take(nops) {
            *s = self.strides[k * nd];
        }
        // Multi-index of `begin`.
        let mut idx: SmallVec<[i64; 6]> = SmallVec::from_elem(0, nd);
        let mut rem = begin;
        for d in 0..nd {
            idx[d] = rem % self.shape[d];
            rem /= self.shape[d];
        }
        let mut pos = begin;
        let mut ptrs: Ptrs = [std::ptr::null_mut(); MAX_OPERANDS];
        while pos < end {
            for k in 0..nops {
                let mut off = 0isize;
                for d in 0..nd {
                    off += idx[d] as isize * self.strides[k * nd + d];
                }
                ptrs[k] = base[k].wrapping_offset(off);
            }
            let run = ((self.shape[0] - idx[0]).min(end - pos)) as usize;
            f(&ptrs, &strides0, run);
            pos += run as i64;
            idx[0] += run as i64;
            // Carry into the outer dimensions.
            let mut d = 0;
            while d + 1 < nd && idx[d] >= self.shape[d] {
                idx[d] = 0;
                idx[d + 1] += 1;
                d += 1;
            }
        }
    }

    /// The result: output `i`, after copying temporaries back into user outputs of other dtypes.
    #[inline]
    pub fn output(mut self, i: usize) -> Result<Tensor> {
        self.take_output(i)
    }

    /// Output `i` taken out of an iterator the caller keeps in place (see [`Self::output`]), so
    /// a small operation does not copy the iterator into a by-value call. Call it once, as the
    /// last use of the iterator: it reorders the operands.
    #[inline]
    pub(crate) fn take_output(&mut self, i: usize) -> Result<Tensor> {
        for &(j, user) in &self.write_back {
            if j == i {
                if user.device().is_cpu() {
                    crate::native::copy::copy_into(user, &self.operands[i])?;
                } else {
                    crate::ops::copy_(user, &self.operands[i], false)?;
                }
                return Ok(user.clone());
            }
        }
        match self.operands.swap_remove(i) {
            Operand::Owned(t) => Ok(t),
            Operand::Borrowed(t) => Ok(t.clone()),
        }
    }
}

/// Copies `rows` rows of `cols` adjacent `elem`-byte elements (rows `row_stride` bytes apart)
/// into `dst` transposed: element (r, c) goes to `dst[c * rows + r]`.
///
/// # Safety
/// `src` must address that block inside live storage, `dst` must have room for `rows * cols`
/// elements and be aligned for them, and the two must not overlap.
unsafe fn stage_block(src: *const u8, row_stride: isize, rows: usize, cols: usize, elem: usize, dst: *mut u8) {
    macro_rules! copy_as {
        ($T:ty) => {{
            let d = dst.cast::<$T>();
            for r in 0..rows {
                let row = src.wrapping_offset(r as isize * row_stride).cast::<$T>();
                for c in 0..cols {
                    // SAFETY: in bounds per the function's contract; the source may be
                    // unaligned for $T (storage offsets are in elements, so it is aligned in
                    // practice), hence the unaligned read.
                    unsafe { *d.add(c * rows + r) = row.add(c).read_unaligned() };
                }
            }
        }};
    }
    match elem {
        1 => copy_as!(u8),
        2 => copy_as!(u16),
        4 => copy_as!(u32),
        8 => copy_as!(u64),
        // complex128
        _ => copy_as!([u64; 2]),
    }
}

/// Merges dimension d+1 into d when every operand steps through them as one (stride[d+1] ==
/// shape[d] * stride[d]); size-1 dimensions merge with anything.
fn coalesce(shape: &mut DimVec, strides: &mut SmallVec<[SmallVec<[isize; 6]>; 4]>) {
    if shape.len() <= 1 {
        return;
    }
    let mut prev = 0usize;
    for d in 1..shape.len() {
        // Checked and saturating: an empty iteration (a zero in another dim) may have dims whose
        // products pass int64; its loops never run.
        let can = |s: &SmallVec<[isize; 6]>| {
            shape[prev] == 1 || shape[d] == 1 || (shape[prev] as isize).checked_mul(s[prev]) == Some(s[d])
        };
        if strides.iter().all(can) {
            if shape[prev] == 1 {
                for s in strides.iter_mut() {
                    s[prev] = s[d];
                }
            }
            shape[prev] = shape[prev].saturating_mul(shape[d]);
        } else {
            prev += 1;
            if prev != d {
                shape[prev] = shape[d];
                for s in strides.iter_mut() {
                    s[prev] = s[d];
                }
            }
        }
    }
    shape.truncate(prev + 1);
    for s in strides.iter_mut() {
        s.truncate(prev + 1);
    }
}

/// The dtype of `a op b` under promotion (exposed for kernels that pick a loop early).
pub fn binary_result_dtype(a: &Tensor, b: &Tensor) -> ScalarType {
    let mut st = ResultTypeState::default();
    st.update(a.dtype(), a.dim(), a.is_wrapped_number());
    st.update(b.dtype(), b.dim(), b.is_wrapped_number());
    st.result().unwrap_or_else(|| promote_types(a.dtype(), b.dtype()))
}
