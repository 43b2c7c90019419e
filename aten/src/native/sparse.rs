//! Sparse COO tensors: construction, conversion, coalescing and the operators with `SparseCPU`
//! and `SparseCUDA` kernels (PyTorch's `native/sparse/*.cpp`). See Note [Sparse tensors] in
//! c10 for the representation.
//!
//! Note [Sparse kernels from dense operators]: a sparse kernel works on the member tensors,
//! which are ordinary strided tensors. Index arithmetic (linearising, sorting, grouping) runs
//! on the host over the int64 indices; everything that touches values goes through the dense
//! operators (`index_add_`, `index_select`, `index_put_`, `mm`, ...), so one kernel serves every
//! dtype those operators take and every device they run on.
//!
//! Note [Indices are checked where they are used]: PyTorch checks index bounds only when asked
//! (`check_invariants=True`) and otherwise reads past its buffers on bad input. Every kernel
//! here that turns indices into positions checks them as it goes (one comparison per index), so
//! a bad index is an error wherever it is first used, never a stray read.

use std::sync::Arc;

use std::collections::HashMap;

use c10::scalar_type::can_cast;
use c10::sparse::{SparseImpl, SparseParts};
use c10::{Device, Error, Layout, MemoryFormat, Result, Scalar, ScalarType, TensorImpl};

use crate::native::reduce::reduced_dims;
use crate::native::shape::make_view;
use crate::{ops, wrap_dim, Tensor};

/// The member tensors of a COO tensor, as tensors.
#[derive(Clone, Debug)]
pub struct Coo {
    /// `[sparse_dim, nnz]` int64.
    pub indices: Tensor,
    /// `[nnz, *dense_sizes]`.
    pub values: Tensor,
    /// The number of sparse dimensions.
    pub sparse_dim: usize,
    /// The number of dense dimensions.
    pub dense_dim: usize,
    /// Whether the indices are known sorted and distinct.
    pub coalesced: bool,
}

impl Coo {
    /// The number of stored elements.
    pub fn nnz(&self) -> i64 {
        self.values.sizes()[0]
    }
}

/// The error PyTorch gives a COO-only function called on another layout.
fn expected_coo(op: &str, t: &Tensor) -> Error {
    Error::invalid(op, format!("{op} expected sparse coordinate tensor layout but got {}", t.layout().short_name()))
}

/// The parts of the COO tensor `t`, or `op`'s error for another layout.
pub fn coo(op: &str, t: &Tensor) -> Result<Coo> {
    let sp = t.sparse_impl().filter(|s| s.layout() == Layout::SparseCoo).ok_or_else(|| expected_coo(op, t))?;
    let p = sp.parts();
    Ok(Coo {
        indices: Tensor::from_arc(p.indices),
        values: Tensor::from_arc(p.values),
        sparse_dim: sp.sparse_dim() as usize,
        dense_dim: sp.dense_dim() as usize,
        coalesced: p.coalesced,
    })
}

/// `t` without its autograd metadata: a new tensor over the same memory and version counter,
/// as a sparse tensor keeps its members.
fn member(t: &Tensor) -> Arc<TensorImpl> {
    make_view(t, t.sizes(), t.strides(), t.storage_offset()).imp
}

/// A COO tensor of `sizes` over `indices` and `values`, unchecked (PyTorch's
/// `_sparse_coo_tensor_unsafe`): for kernels whose indices are right by construction.
pub fn new_coo(sizes: &[i64], indices: &Tensor, values: &Tensor, coalesced: bool) -> Result<Tensor> {
    // A tensor's element count must fit in int64, sparse or not (an error, not TensorImpl's
    // assertion, for sizes read from a file or a caller).
    c10::size::numel("sparse_coo_tensor", sizes)?;
    let sparse_dim = indices.sizes()[0];
    let dense_dim = values.dim() as i64 - 1;
    debug_assert_eq!(sparse_dim + dense_dim, sizes.len() as i64);
    let parts = SparseParts { indices: member(indices), col_indices: None, values: member(values), coalesced };
    let imp = SparseImpl::new(Layout::SparseCoo, sparse_dim, dense_dim, parts);
    Ok(Tensor::from_impl(TensorImpl::new_sparse(sizes, values.dtype(), values.device(), imp)))
}

/// Replaces the members of COO tensor `t` (the in-place operators).
fn set_coo(t: &Tensor, indices: &Tensor, values: &Tensor, coalesced: bool) {
    if let Some(sp) = t.sparse_impl() {
        sp.set_parts(SparseParts { indices: member(indices), col_indices: None, values: member(values), coalesced });
    }
    t.bump_version();
}

fn product(op: &str, sizes: &[i64]) -> Result<i64> {
    sizes
        .iter()
        .try_fold(1i64, |a, &s| a.checked_mul(s))
        .ok_or_else(|| Error::invalid(op, format!("{op}: the sparse sizes {sizes:?} have more than 2^63 positions")))
}

/// The indices as host integers, `[sparse_dim][nnz]` flattened row by row: borrowed when they
/// are a contiguous int64 CPU tensor already, copied otherwise.
fn host_indices(indices: &Tensor) -> Result<std::borrow::Cow<'_, [i64]>> {
    if indices.device().is_cpu() && indices.is_contiguous() && indices.dtype() == ScalarType::I64 {
        let p = indices.typed_data_ptr::<i64>()?;
        // SAFETY: a contiguous int64 tensor addresses `numel` adjacent elements from its data
        // pointer, alive while `indices` is borrowed; kernels never write a sparse tensor's
        // index members in place (in-place operators replace them).
        return Ok(std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(p, indices.numel() as usize) }));
    }
    Ok(std::borrow::Cow::Owned(indices.to_vec::<i64>()?))
}

/// Row-major position of each index column among the `sparse_sizes` positions, checking every
/// index (Note [Indices are checked where they are used]).
fn linear_index(op: &str, idx: &[i64], nnz: usize, sparse_sizes: &[i64]) -> Result<Vec<i64>> {
    product(op, sparse_sizes)?;
    let mut lin = vec![0i64; nnz];
    for (d, &size) in sparse_sizes.iter().enumerate() {
        let row = &idx[d * nnz..(d + 1) * nnz];
        for (l, &i) in lin.iter_mut().zip(row) {
            if i < 0 {
                return Err(Error::Index { op: op.into(), msg: format!("found negative index {i} for dim {d}") });
            }
            if i >= size {
                return Err(Error::Index {
                    op: op.into(),
                    msg: format!("size is inconsistent with indices: for dim {d}, size is {size} but found index {i}"),
                });
            }
            *l = *l * size + i;
        }
    }
    Ok(lin)
}

/// Host integers as an int64 tensor on `device` (`to_device` is the tensor itself on the CPU).
fn long_tensor(v: Vec<i64>, shape: &[i64], device: Device) -> Result<Tensor> {
    Tensor::from_vec(v, shape)?.to_device(device)
}

fn zeros(sizes: &[i64], dtype: ScalarType, device: Device) -> Result<Tensor> {
    ops::zeros(sizes, Some(dtype), None, Some(device), None)
}

/// `[n, *dense]` for values of another element count.
fn values_shape(values: &Tensor, n: i64) -> Vec<i64> {
    let mut s = values.sizes().to_vec();
    s[0] = n;
    s
}

// ---- construction ----------------------------------------------------------------------------

/// `_sparse_coo_tensor_with_dims_and_tensors(int sparse_dim, int dense_dim, SymInt[] size,
/// Tensor indices, Tensor values, *, ScalarType? dtype, Layout? layout, Device? device,
/// bool? pin_memory, bool? is_coalesced) -> Tensor`: PyTorch's checks of the shapes; the
/// bounds are checked by [`sparse_coo_tensor`] and by every kernel that reads an index.
#[allow(clippy::too_many_arguments)]
pub fn sparse_coo_tensor_with_dims_and_tensors(
    sparse_dim: i64,
    dense_dim: i64,
    size: &[i64],
    indices: &Tensor,
    values: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    _pin_memory: Option<bool>,
    is_coalesced: Option<bool>,
) -> Result<Tensor> {
    let op = "sparse_coo_tensor";
    if let Some(l) = layout.filter(|&l| l != Layout::SparseCoo) {
        return Err(Error::invalid(op, format!("expected sparse layout, but got layout {}", l.short_name())));
    }
    indices.check_strided(op)?;
    values.check_strided(op)?;
    if indices.dtype() != ScalarType::I64 {
        return Err(Error::invalid(
            op,
            format!("indices must be an int64 tensor, but got {}", indices.dtype().cpp_name()),
        ));
    }
    if indices.dim() != 2 {
        return Err(Error::shape(op, format!("indices must be sparse_dim x nnz, but got: {:?}", indices.sizes())));
    }
    if values.dim() == 0 {
        return Err(Error::shape(op, "values must have at least one dimension (nnz), but got a 0-dim tensor"));
    }
    if sparse_dim < 0 || dense_dim < 0 || sparse_dim.checked_add(dense_dim) != Some(size.len() as i64) {
        return Err(Error::shape(
            op,
            format!(
                "number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), but got {}",
                size.len()
            ),
        ));
    }
    if indices.sizes()[0] != sparse_dim {
        return Err(Error::shape(
            op,
            format!(
                "dimensionality of indices must match sparse_dim, but got indices.size(0) == {} and sparse_dim == {sparse_dim}",
                indices.sizes()[0]
            ),
        ));
    }
    if values.dim() as i64 != dense_dim + 1 {
        return Err(Error::shape(
            op,
            format!(
                "values has incorrect number of dimensions, expected dense_dim + 1 ({}) but got {}",
                dense_dim + 1,
                values.dim()
            ),
        ));
    }
    if indices.sizes()[1] != values.sizes()[0] {
        return Err(Error::shape(
            op,
            format!(
                "indices and values must have same nnz, but got nnz from indices: {}, nnz from values: {}",
                indices.sizes()[1],
                values.sizes()[0]
            ),
        ));
    }
    if values.sizes()[1..] != size[sparse_dim as usize..] {
        return Err(Error::shape(
            op,
            format!(
                "values has incorrect size, expected {:?}, got {:?}",
                [&[values.sizes()[0]], &size[sparse_dim as usize..]].concat(),
                values.sizes()
            ),
        ));
    }
    if size.iter().any(|&s| s < 0) {
        return Err(Error::shape(op, format!("Trying to create tensor with negative dimension: {size:?}")));
    }
    if indices.device() != values.device() {
        return Err(Error::invalid(
            op,
            format!("device of indices ({}) must match device of values ({})", indices.device(), values.device()),
        ));
    }
    let mut values = values.clone();
    let mut indices = indices.clone();
    if let Some(dt) = dtype.filter(|&d| d != values.dtype()) {
        values = ops::to(&values, dt, false, false, None)?;
    }
    if let Some(dev) = device.filter(|&d| d != values.device()) {
        values = values.to_device(dev)?;
        indices = indices.to_device(dev)?;
    }
    let nnz = values.sizes()[0];
    new_coo(size, &indices, &values, is_coalesced.unwrap_or(false) || nnz <= 1)
}

/// `sparse_coo_tensor.indices_size(Tensor indices, Tensor values, int[] size, *, ...)`: the
/// public constructor, which always checks the indices against `size`
/// (Note [Indices are checked where they are used]).
#[allow(clippy::too_many_arguments)]
pub fn sparse_coo_tensor(
    indices: &Tensor,
    values: &Tensor,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    is_coalesced: Option<bool>,
) -> Result<Tensor> {
    let op = "sparse_coo_tensor";
    if indices.dim() != 2 {
        return Err(Error::shape(op, format!("indices must be sparse_dim x nnz, but got: {:?}", indices.sizes())));
    }
    let sparse_dim = indices.sizes()[0];
    let dense_dim = values.dim() as i64 - 1;
    if sparse_dim + dense_dim != size.len() as i64 {
        return Err(Error::shape(
            op,
            format!(
                "number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), but got {}",
                size.len()
            ),
        ));
    }
    let t = ops::_sparse_coo_tensor_with_dims_and_tensors(
        sparse_dim,
        dense_dim,
        size,
        indices,
        values,
        dtype,
        layout,
        device,
        pin_memory,
        is_coalesced,
    )?;
    // Sizes and shapes were checked above; now every index.
    let nnz = indices.sizes()[1] as usize;
    let lin = linear_index(op, &host_indices(indices)?, nnz, &size[..sparse_dim as usize])?;
    if is_coalesced == Some(true) && lin.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::invalid(op, "`is_coalesced` is True but the indices are not sorted and distinct"));
    }
    Ok(t)
}

/// `sparse_coo_tensor.indices(Tensor indices, Tensor values, *, ...)`: sizes inferred, each
/// sparse size one past the largest index, the dense sizes from the values.
#[allow(clippy::too_many_arguments)]
pub fn sparse_coo_tensor_infer(
    indices: &Tensor,
    values: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    is_coalesced: Option<bool>,
) -> Result<Tensor> {
    let op = "sparse_coo_tensor";
    if indices.dim() != 2 {
        return Err(Error::shape(op, format!("indices must be sparse_dim x nnz, but got: {:?}", indices.sizes())));
    }
    if values.dim() == 0 {
        return Err(Error::shape(op, "values must have at least one dimension (nnz), but got a 0-dim tensor"));
    }
    let (sd, nnz) = (indices.sizes()[0] as usize, indices.sizes()[1] as usize);
    let idx =
        if indices.dtype() == ScalarType::I64 { host_indices(indices)? } else { std::borrow::Cow::Owned(Vec::new()) };
    // `indices` of `[2^40, 0]` names 2^40 sparse dims: a fallible buffer, an out-of-memory
    // error rather than an abort (Note [Fallible scratch buffers]).
    let mut size = c10::size::try_vec(sd.saturating_add(values.dim() - 1))?;
    for d in 0..sd {
        let row = idx.get(d * nnz..(d + 1) * nnz).unwrap_or(&[]);
        if let Some(&neg) = row.iter().find(|&&i| i < 0) {
            return Err(Error::Index { op: op.into(), msg: format!("found negative index {neg} for dim {d}") });
        }
        let max = row.iter().max().copied().unwrap_or(-1);
        // An index of i64::MAX leaves no size to infer (one more overflows).
        size.push(max.checked_add(1).ok_or_else(|| {
            Error::invalid(op, format!("found index {max} for dim {d}, so the size (one more) overflows int64"))
        })?);
    }
    size.extend_from_slice(&values.sizes()[1..]);
    sparse_coo_tensor(indices, values, &size, dtype, layout, device, pin_memory, is_coalesced)
}

/// `sparse_coo_tensor.size(int[] size, *, ...)`: an empty sparse tensor (no stored element).
pub fn sparse_coo_tensor_empty(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    _pin_memory: Option<bool>,
) -> Result<Tensor> {
    let op = "sparse_coo_tensor";
    if let Some(l) = layout.filter(|&l| l != Layout::SparseCoo) {
        return Err(Error::invalid(op, format!("expected sparse layout, but got layout {}", l.short_name())));
    }
    if size.iter().any(|&s| s < 0) {
        return Err(Error::shape(op, format!("Trying to create tensor with negative dimension: {size:?}")));
    }
    let dev = device.unwrap_or(Device::CPU);
    let dtype = dtype.unwrap_or(ScalarType::default_float());
    let indices = ops::empty(&[size.len() as i64, 0], Some(ScalarType::I64), None, Some(dev), None, None)?;
    let values = zeros(&[0], dtype, dev)?;
    new_coo(size, &indices, &values, true)
}

// ---- members and flags -----------------------------------------------------------------------

/// `_indices(Tensor(a) self) -> Tensor(a)`: the indices as stored (an alias).
pub fn _indices(self_: &Tensor) -> Result<Tensor> {
    Ok(alias(&coo("_indices", self_)?.indices))
}

/// Note [Member aliases]: the accessors of a sparse tensor's members (`_indices`, `_values`,
/// `indices`, `values`, `crow_indices`, `col_indices`) return a new tensor over the member's
/// memory and version counter (PyTorch's `alias`), never the member itself. Autograd marks the
/// result a view of the sparse tensor, and that view metadata must not land on the member the
/// sparse tensor holds: member -> base -> member was a reference cycle (a leak the `op_surface`
/// fuzz target found), and every call would have rewritten the member's metadata.
fn alias(member: &Tensor) -> Tensor {
    make_view(member, member.sizes(), member.strides(), member.storage_offset())
}

/// `_values(Tensor(a) self) -> Tensor(a)`: the values as stored (an alias).
pub fn _values(self_: &Tensor) -> Result<Tensor> {
    Ok(alias(&coo("_values", self_)?.values))
}

/// `indices(Tensor(a) self) -> Tensor(a)`: the indices of a coalesced tensor.
pub fn indices(self_: &Tensor) -> Result<Tensor> {
    let c = coo("indices", self_)?;
    if !c.coalesced {
        return Err(Error::invalid(
            "indices",
            "Cannot get indices on an uncoalesced tensor, please call .coalesce() first",
        ));
    }
    Ok(alias(&c.indices))
}

/// `values(Tensor(a) self) -> Tensor(a)`: the values of a coalesced tensor.
pub fn values(self_: &Tensor) -> Result<Tensor> {
    let c = coo("values", self_)?;
    if !c.coalesced {
        return Err(Error::invalid(
            "values",
            "Cannot get values on an uncoalesced tensor, please call .coalesce() first",
        ));
    }
    Ok(alias(&c.values))
}

/// `_nnz(Tensor self) -> int`.
pub fn _nnz(self_: &Tensor) -> Result<i64> {
    match self_.sparse_impl() {
        Some(sp) => Ok(sp.nnz()),
        None => Err(expected_coo("_nnz", self_)),
    }
}

/// `sparse_dim(Tensor self) -> int`: 0 for a strided tensor, as PyTorch's default.
pub fn sparse_dim(self_: &Tensor) -> Result<i64> {
    Ok(self_.sparse_impl().map_or(0, |s| s.sparse_dim()))
}

/// `dense_dim(Tensor self) -> int`: every dimension of a strided tensor.
pub fn dense_dim(self_: &Tensor) -> Result<i64> {
    Ok(self_.sparse_impl().map_or(self_.dim() as i64, |s| s.dense_dim()))
}

/// `is_coalesced(Tensor self) -> bool`.
pub fn is_coalesced(self_: &Tensor) -> Result<bool> {
    Ok(coo("is_coalesced", self_)?.coalesced)
}

/// `_coalesced_(Tensor(a!) self, bool coalesced) -> Tensor(a!)`: sets the flag, unchecked.
pub fn _coalesced_(self_: &Tensor, coalesced: bool) -> Result<Tensor> {
    coo("_coalesced_", self_)?;
    if let Some(sp) = self_.sparse_impl() {
        sp.set_coalesced(coalesced);
    }
    Ok(self_.clone())
}

// ---- coalescing and conversion ---------------------------------------------------------------

/// `_coalesce(Tensor self) -> Tensor`: the index columns sorted and made distinct, the values
/// of equal columns summed (in their stored order). Always a new tensor.
pub fn _coalesce(self_: &Tensor) -> Result<Tensor> {
    let op = "coalesce";
    let c = coo(op, self_)?;
    let nnz = c.nnz() as usize;
    if c.coalesced || nnz <= 1 {
        let v = ops::clone(&c.values, None)?;
        let i = ops::clone(&c.indices, None)?;
        return new_coo(self_.sizes(), &i, &v, true);
    }
    let sparse_sizes = &self_.sizes()[..c.sparse_dim];
    if !self_.device().is_cpu() && c.values.dtype().is_floating_point() {
        return coalesce_on_device(self_, &c);
    }
    let idx = host_indices(&c.indices)?;
    let lin = linear_index(op, &idx, nnz, sparse_sizes)?;
    // Sorted by (position, stored order): each group's elements stay in stored order.
    let mut keyed: Vec<(i64, usize)> = lin.iter().enumerate().map(|(k, &l)| (l, k)).collect();
    if nnz >= 1 << 16 && crate::parallel::get_num_threads() > 1 {
        use rayon::slice::ParallelSliceMut;
        crate::parallel::warm();
        keyed.par_sort_unstable();
    } else {
        keyed.sort_unstable();
    }
    // The group of each stored element, and the first element of each group.
    let mut group = vec![0i64; nnz];
    let mut firsts: Vec<usize> = Vec::with_capacity(nnz);
    let mut prev = None;
    for &(l, k) in &keyed {
        if prev != Some(l) {
            firsts.push(k);
            prev = Some(l);
        }
        group[k] = firsts.len() as i64 - 1;
    }
    let u = firsts.len();
    let mut new_idx = vec![0i64; c.sparse_dim * u];
    for d in 0..c.sparse_dim {
        for (j, &k) in firsts.iter().enumerate() {
            new_idx[d * u + j] = idx[d * nnz + k];
        }
    }
    let dev = self_.device();
    let indices = long_tensor(new_idx, &[c.sparse_dim as i64, u as i64], dev)?;
    let values = if u == nnz {
        let perm = long_tensor(keyed.iter().map(|&(_, k)| k as i64).collect(), &[nnz as i64], dev)?;
        ops::index_select(&c.values, 0, &perm)?
    } else {
        let g = long_tensor(group, &[nnz as i64], dev)?;
        let out = zeros(&values_shape(&c.values, u as i64), c.values.dtype(), dev)?;
        ops::index_add_(&out, 0, &g, &c.values, Scalar::Int(1))?
    };
    new_coo(self_.sizes(), &indices, &values, true)
}

/// `_coalesce` of a floating tensor on a device, grouping there (Note [Grouping on the device]):
/// each group's first index column, and its values summed in stored order by the device's
/// grouped-sum loop, as the CPU sums them.
fn coalesce_on_device(self_: &Tensor, c: &Coo) -> Result<Tensor> {
    let op = "coalesce";
    let dev = self_.device();
    let lin = device_linear_index(op, &c.indices, &self_.sizes()[..c.sparse_dim])?;
    let g = crate::native::sort::device_groups(op, &lin)?;
    let u = g.keys.numel();
    let heads = ops::index_select(&g.order, 0, &ops::narrow(&g.starts, 0, 0, u)?)?;
    let indices = ops::index_select(&c.indices, 1, &heads)?;
    let cols = c.values.sizes()[1..].iter().product::<i64>();
    let values = ops::reshape(&ops::contiguous(&c.values, MemoryFormat::Contiguous)?, &[c.nnz(), cols])?;
    let sums = zeros(&[u, cols], values.dtype(), dev)?;
    if sums.numel() > 0 {
        let rows = ops::arange(Scalar::Int(u), Some(ScalarType::I64), None, Some(dev), None)?;
        crate::native::stub::run_embedding_backward(&sums, &values, &g.order, &g.starts, &rows, false)?;
    }
    new_coo(self_.sizes(), &indices, &ops::reshape(&sums, &values_shape(&c.values, u))?, true)
}

/// The row-major positions of a device tensor's `[sparse_dim, nnz]` index columns, computed on
/// the device, after checking every index through each row's minimum and maximum (the numbers
/// PyTorch's `check_invariants` reports; `2 * sparse_dim` of them come to the host).
fn device_linear_index(op: &str, indices: &Tensor, sparse_sizes: &[i64]) -> Result<Tensor> {
    product(op, sparse_sizes)?;
    let dev = indices.device();
    if indices.sizes()[1] > 0 {
        let lo = ops::amin(indices, &[1], false)?.to_vec::<i64>()?;
        let hi = ops::amax(indices, &[1], false)?.to_vec::<i64>()?;
        for (d, &size) in sparse_sizes.iter().enumerate() {
            if lo[d] < 0 {
                return Err(Error::Index { op: op.into(), msg: format!("found negative index {} for dim {d}", lo[d]) });
            }
            if hi[d] >= size {
                return Err(Error::Index {
                    op: op.into(),
                    msg: format!(
                        "size is inconsistent with indices: for dim {d}, size is {size} but found index {}",
                        hi[d]
                    ),
                });
            }
        }
    }
    let mut strides = vec![1i64; sparse_sizes.len()];
    for d in (0..sparse_sizes.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * sparse_sizes[d + 1];
    }
    let sd = sparse_sizes.len() as i64;
    let st = long_tensor(strides, &[sd, 1], dev)?;
    ops::sum_dim_intlist(&ops::mul(indices, &st)?, Some(&[0]), false, None)
}

/// `coalesce(Tensor(a) self) -> Tensor(a)`: `self` when already coalesced, else `_coalesce`.
pub fn coalesce(self_: &Tensor) -> Result<Tensor> {
    if coo("coalesce", self_)?.coalesced {
        return Ok(self_.clone());
    }
    ops::_coalesce(self_)
}

/// `_to_dense(Tensor self, ScalarType? dtype=None, bool? masked_grad=None) -> Tensor`: zeros
/// with every stored value added at its position (duplicates add up).
pub fn _to_dense(self_: &Tensor, dtype: Option<ScalarType>, _masked_grad: Option<bool>) -> Result<Tensor> {
    let op = "to_dense";
    let c = coo(op, self_)?;
    let sizes = self_.sizes();
    let sparse_sizes = &sizes[..c.sparse_dim];
    let n = product(op, sparse_sizes)?;
    let mut flat = vec![n];
    flat.extend_from_slice(&sizes[c.sparse_dim..]);
    let out = zeros(&flat, c.values.dtype(), self_.device())?;
    let nnz = c.nnz() as usize;
    if nnz > 0 && !self_.device().is_cpu() && c.values.dtype().is_floating_point() {
        // Each position's sum written by the device's grouped-sum loop (Note [Grouping on the
        // device]): no index leaves the device.
        let lin = device_linear_index(op, &c.indices, sparse_sizes)?;
        let cols = sizes[c.sparse_dim..].iter().product::<i64>();
        let rows = ops::reshape(&out, &[n, cols])?;
        let values = ops::reshape(&ops::contiguous(&c.values, MemoryFormat::Contiguous)?, &[nnz as i64, cols])?;
        crate::native::indexing::sum_groups_on_device(op, &rows, &values, &lin, None, false)?;
    } else if nnz > 0 {
        let lin = linear_index(op, &host_indices(&c.indices)?, nnz, sparse_sizes)?;
        let lin = long_tensor(lin, &[nnz as i64], self_.device())?;
        ops::index_add_(&out, 0, &lin, &c.values, Scalar::Int(1))?;
    }
    converted(&ops::reshape(&out, sizes)?, dtype)
}

/// `to_dense(Tensor self, ScalarType? dtype=None, *, bool? masked_grad=None) -> Tensor`: a
/// strided tensor comes back as it is (converted to `dtype` if given).
pub fn to_dense(self_: &Tensor, dtype: Option<ScalarType>, masked_grad: Option<bool>) -> Result<Tensor> {
    if self_.layout() == Layout::Strided {
        return converted(self_, dtype);
    }
    ops::_to_dense(self_, dtype, masked_grad)
}

/// `to_dense_backward(Tensor grad, Tensor input, bool? masked_grad=None) -> Tensor`: the
/// gradient of `to_dense`, masked to the input's pattern (PyTorch's default for sparse inputs)
/// or the dense gradient made sparse over every position (`masked_grad=False`).
pub fn to_dense_backward(grad: &Tensor, input: &Tensor, masked_grad: Option<bool>) -> Result<Tensor> {
    if input.layout() == Layout::Strided {
        return Ok(grad.clone());
    }
    let sd = input.sparse_impl().map_or(0, |s| s.sparse_dim());
    if masked_grad.unwrap_or(true) {
        let mask = ops::coalesce(input)?;
        ops::sparse_mask(grad, &mask)
    } else {
        ops::_to_sparse(grad, sd)
    }
}

/// `_to_sparse.sparse_dim(Tensor self, int sparse_dim) -> Tensor`: the positions over the
/// first `sparse_dim` dimensions where any element is non-zero, coalesced.
pub fn dense_to_sparse(self_: &Tensor, sparse_dim: i64) -> Result<Tensor> {
    let op = "to_sparse";
    if self_.layout() == Layout::SparseCoo {
        let have = self_.sparse_impl().map_or(0, |s| s.sparse_dim());
        if have != sparse_dim {
            return Err(Error::invalid(
                op,
                "to_sparse: conversion from Sparse to Sparse with sparse_dim argument !=self.sparse_dim() is not supported",
            ));
        }
        return Ok(self_.clone());
    }
    self_.check_strided(op)?;
    let dim = self_.dim() as i64;
    if sparse_dim < 0 || sparse_dim > dim {
        return Err(Error::invalid(
            op,
            format!("sparse_dim argument must be in [0,{dim}] range, but {sparse_dim} is given"),
        ));
    }
    let sd = sparse_dim as usize;
    let dev = self_.device();
    if sd == 0 {
        let indices = ops::empty(&[0, 1], Some(ScalarType::I64), None, Some(dev), None, None)?;
        let values = ops::clone(&ops::unsqueeze(self_, 0)?, None)?;
        return new_coo(self_.sizes(), &indices, &values, true);
    }
    let nz = ops::ne_scalar(self_, Scalar::Int(0))?;
    let mask = if sd < self_.dim() {
        let dims: Vec<i64> = (sparse_dim..dim).collect();
        ops::amax(&ops::to(&nz, ScalarType::U8, false, false, None)?, &dims, false)?
    } else {
        nz
    };
    let positions = ops::nonzero(&mask)?; // [nnz, sd], row-major order
    let indices = ops::clone(&ops::t(&positions)?, Some(MemoryFormat::Contiguous))?;
    let rows: Vec<Option<Tensor>> =
        (0..sd).map(|d| ops::select(&indices, 0, d as i64).map(Some)).collect::<Result<_>>()?;
    let values = ops::index(self_, &rows)?;
    new_coo(self_.sizes(), &indices, &values, true)
}

/// `to_sparse.sparse_dim(Tensor self, int sparse_dim) -> Tensor`.
pub fn to_sparse_sparse_dim(self_: &Tensor, sparse_dim: i64) -> Result<Tensor> {
    ops::_to_sparse(self_, sparse_dim)
}

/// `to_sparse(Tensor self, *, Layout? layout=None, int[2]? blocksize=None, int? dense_dim=None)`:
/// COO over every dimension (less `dense_dim`).
pub fn dense_to_sparse_layout(
    self_: &Tensor,
    layout: Option<Layout>,
    blocksize: Option<&[i64]>,
    dense_dim: Option<i64>,
) -> Result<Tensor> {
    let op = "to_sparse";
    if blocksize.is_some() {
        return Err(Error::NotImplemented { op: op.into(), msg: "block sparse layouts (blocksize)".into() });
    }
    match layout.unwrap_or(Layout::SparseCoo) {
        Layout::SparseCoo => {
            let (n, dd) = (self_.dim() as i64, dense_dim.unwrap_or(0));
            if !(0..=n).contains(&dd) {
                return Err(Error::invalid(
                    op,
                    format!("to_sparse: dense_dim argument must be in [0, {n}], but got {dd}"),
                ));
            }
            ops::_to_sparse(self_, n - dd)
        }
        Layout::SparseCsr => ops::_to_sparse_csr(self_, dense_dim),
        Layout::Strided => Err(Error::invalid(op, "to_sparse: expected a sparse layout, got Strided")),
    }
}

/// `sparse_mask(Tensor self, Tensor mask) -> Tensor`: `self`'s elements at `mask`'s stored
/// positions, as a COO tensor with `mask`'s indices (so its coalesced flag too).
pub fn sparse_mask(self_: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let op = "sparse_mask";
    let m = coo(op, mask)?;
    if self_.sizes() != mask.sizes() {
        return Err(Error::shape(
            op,
            format!(
                "sparse_mask(): operands have incompatible sizes; self has size {:?} but mask has size {:?}",
                self_.sizes(),
                mask.sizes()
            ),
        ));
    }
    same_device(op, self_, mask)?;
    let values = project(op, self_, &m.indices, mask.sizes())?;
    new_coo(mask.sizes(), &m.indices, &values, m.coalesced)
}

/// The `[nnz, *dense]` elements of `src` at the index columns `indices` of a tensor of `sizes`:
/// gathered from a strided `src`; from a sparse one, its coalesced values at the positions it
/// stores and zeros elsewhere, found by binary search, so it is never made dense (a gradient
/// on a [100000, 100000] pattern stays nnz-sized).
fn project(op: &str, src: &Tensor, indices: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let sd = indices.sizes()[0] as usize;
    let s = match src.layout() {
        Layout::Strided => return gather_cols(op, src, indices, sizes),
        Layout::SparseCsr => csr_to_coo(op, src)?,
        Layout::SparseCoo => ops::coalesce(src)?,
    };
    let c = coo(op, &s)?;
    if c.sparse_dim != sd {
        return gather_cols(op, &_to_dense(&s, None, None)?, indices, sizes);
    }
    let sparse_sizes = &sizes[..sd];
    let want = linear_index(op, &host_indices(indices)?, indices.sizes()[1] as usize, sparse_sizes)?;
    let have = linear_index(op, &host_indices(&c.indices)?, c.nnz() as usize, sparse_sizes)?;
    // Row `nnz` of the padded values is the zero for positions `src` does not store.
    let none = c.nnz();
    let pos: Vec<i64> = want.iter().map(|l| have.binary_search(l).map_or(none, |p| p as i64)).collect();
    let padded = ops::cat(&[c.values.clone(), zeros(&values_shape(&c.values, 1), c.values.dtype(), s.device())?], 0)?;
    ops::index_select(&padded, 0, &long_tensor(pos, &[want.len() as i64], s.device())?)
}

/// The `[nnz, *dense]` elements of strided `dense` (of `sizes`) at the columns of `indices`.
fn gather_cols(op: &str, dense: &Tensor, indices: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let (sd, nnz) = (indices.sizes()[0] as usize, indices.sizes()[1] as usize);
    let sparse_sizes = &sizes[..sd];
    let lin = linear_index(op, &host_indices(indices)?, nnz, sparse_sizes)?;
    let mut flat = vec![product(op, sparse_sizes)?];
    flat.extend_from_slice(&sizes[sd..]);
    let lin = long_tensor(lin, &[nnz as i64], dense.device())?;
    ops::index_select(&ops::reshape(dense, &flat)?, 0, &lin)
}

// ---- copies ----------------------------------------------------------------------------------

/// A sparse tensor of either layout like `t`, each index member through `fi` and the values
/// through `fv` (same sizes, layout and coalesced flag).
fn map_members(
    op: &str,
    t: &Tensor,
    fi: impl Fn(&Tensor) -> Result<Tensor>,
    fv: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let sp = t.sparse_impl().ok_or_else(|| expected_coo(op, t))?;
    let p = sp.parts();
    let indices = fi(&Tensor::from_arc(p.indices))?;
    let values = fv(&Tensor::from_arc(p.values))?;
    match p.col_indices {
        Some(col) => new_csr(t.sizes(), &indices, &fi(&Tensor::from_arc(col))?, &values),
        None => new_coo(t.sizes(), &indices, &values, p.coalesced),
    }
}

/// `clone` of a sparse tensor (COO or CSR): new members with the same pattern and flag.
pub fn sparse_clone(self_: &Tensor, memory_format: Option<MemoryFormat>) -> Result<Tensor> {
    if let Some(f) = memory_format.filter(|&f| f != MemoryFormat::Preserve) {
        return Err(Error::invalid("clone", format!("unsupported memory format option {f:?}")));
    }
    map_members("clone", self_, |i| ops::clone(i, None), |v| ops::clone(v, None))
}

/// `_to_copy` of a sparse tensor (COO or CSR): the members converted and moved.
#[allow(clippy::too_many_arguments)]
pub fn sparse_to_copy(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    non_blocking: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let op = "_to_copy";
    if let Some(l) = layout.filter(|&l| l != self_.layout()) {
        return Err(Error::invalid(op, format!("to(options) doesn't support converting to a different layout, but got self.layout being {} and options.layout set as {}", self_.layout().short_name(), l.short_name())));
    }
    map_members(
        op,
        self_,
        |i| ops::_to_copy(i, None, None, device, pin_memory, non_blocking, None),
        |v| ops::_to_copy(v, dtype, None, device, pin_memory, non_blocking, memory_format),
    )
}

/// `zero_` of a COO tensor: no stored element left.
pub fn sparse_zero_(self_: &Tensor) -> Result<Tensor> {
    let c = coo("zero_", self_)?;
    let indices = ops::empty(&[c.sparse_dim as i64, 0], Some(ScalarType::I64), None, Some(self_.device()), None, None)?;
    let values = zeros(&values_shape(&c.values, 0), c.values.dtype(), self_.device())?;
    set_coo(self_, &indices, &values, true);
    Ok(self_.clone())
}

/// `copy_` into a COO tensor from another of the same sizes (the values converted to `self`'s
/// dtype); into a strided tensor from a COO one, its dense form.
pub fn sparse_copy_(self_: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    let op = "copy_";
    if self_.layout() == Layout::Strided {
        let d = ops::_to_dense(src, None, None)?;
        return ops::copy_(self_, &d, non_blocking);
    }
    let c = coo(op, src)?;
    let dst = coo(op, self_)?;
    if self_.sizes() != src.sizes() || dst.sparse_dim != c.sparse_dim {
        return Err(Error::invalid(
            op,
            format!(
                "copy_(): a sparse tensor of size {:?} (sparse_dim {}) cannot be copied into one of size {:?} (sparse_dim {})",
                src.sizes(),
                c.sparse_dim,
                self_.sizes(),
                dst.sparse_dim
            ),
        ));
    }
    let values = ops::_to_copy(&c.values, Some(self_.dtype()), None, Some(self_.device()), None, non_blocking, None)?;
    let indices = ops::_to_copy(&c.indices, None, None, Some(self_.device()), None, non_blocking, None)?;
    set_coo(self_, &indices, &values, c.coalesced);
    Ok(self_.clone())
}

// ---- arithmetic ------------------------------------------------------------------------------

fn same_device(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.device() != b.device() {
        return Err(Error::DeviceMismatch { op: op.into(), a: a.device().to_string(), b: b.device().to_string() });
    }
    Ok(())
}

/// PyTorch's check of an in-place result: its dtype `result` must cast to `out`'s (`canCast`).
fn check_in_place(op: &str, result: ScalarType, out: &Tensor) -> Result<()> {
    if can_cast(result, out.dtype()) {
        Ok(())
    } else {
        Err(Error::UnsafeCast { op: op.into(), from: result, to: out.dtype() })
    }
}

/// New values for in-place `out`: checked by [`check_in_place`], then in `out`'s dtype.
fn in_place_values(op: &str, values: &Tensor, out: &Tensor) -> Result<Tensor> {
    check_in_place(op, values.dtype(), out)?;
    scaled(values, &Scalar::Int(1), out.dtype())
}

fn scaled(values: &Tensor, alpha: &Scalar, dtype: ScalarType) -> Result<Tensor> {
    let v = if values.dtype() != dtype { ops::to(values, dtype, false, false, None)? } else { values.clone() };
    if matches!(alpha, Scalar::Int(1)) || matches!(alpha, Scalar::Float(x) if *x == 1.0) {
        Ok(v)
    } else {
        ops::mul_scalar(&v, *alpha)
    }
}

/// PyTorch's refusal to broadcast in additions with a sparse operand.
fn check_add_sizes(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.sizes() == b.sizes() {
        return Ok(());
    }
    Err(Error::shape(
        op,
        format!(
            "add: expected 'self' and 'other' to have same size, but self has size {:?} while other has size {:?} (FYI: dense-sparse addition does not currently support broadcasting)",
            a.sizes(),
            b.sizes()
        ),
    ))
}

/// `sparse + alpha * sparse` as PyTorch's CPU kernel stores it (Note [The pattern of a sparse
/// sum]).
fn add_sparse_sparse(op: &str, a: &Tensor, b: &Tensor, alpha: &Scalar) -> Result<(Tensor, Tensor, bool)> {
    let (ca, cb) = (coo(op, a)?, coo(op, b)?);
    check_add_sizes(op, a, b)?;
    if ca.sparse_dim != cb.sparse_dim {
        return Err(Error::shape(
            op,
            format!("add: expected same number of sparse dimensions, but got {} and {}", ca.sparse_dim, cb.sparse_dim),
        ));
    }
    same_device(op, a, b)?;
    let dtype = c10::promote_types(a.dtype(), b.dtype());
    let sparse_sizes = &a.sizes()[..ca.sparse_dim];
    let (na, nb) = (ca.nnz() as usize, cb.nnz() as usize);
    if nb == 0 {
        return Ok((ca.indices.clone(), scaled(&ca.values, &Scalar::Int(1), dtype)?, ca.coalesced));
    }
    if na == 0 {
        return Ok((cb.indices.clone(), scaled(&cb.values, alpha, dtype)?, cb.coalesced));
    }
    if !ca.values.is_contiguous() || !cb.values.is_contiguous() {
        let indices = ops::cat(&[ca.indices.clone(), cb.indices.clone()], 1)?;
        let values = ops::cat(&[scaled(&ca.values, &Scalar::Int(1), dtype)?, scaled(&cb.values, alpha, dtype)?], 0)?;
        if (na + nb) as i64 > a.numel() {
            let c = coo(op, &_coalesce(&new_coo(a.sizes(), &indices, &values, false)?)?)?;
            return Ok((c.indices, c.values, true));
        }
        return Ok((indices, values, false));
    }
    let (ia, ib) = (host_indices(&ca.indices)?, host_indices(&cb.indices)?);
    let la = linear_index(op, &ia, na, sparse_sizes)?;
    let lb = linear_index(op, &ib, nb, sparse_sizes)?;
    // Each result entry's source column in `a` and/or `b`.
    let (mut from_a, mut to_a, mut from_b, mut to_b) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut cols: Vec<(bool, usize)> = Vec::with_capacity(na + nb);
    let (mut i, mut j) = (0, 0);
    while i < na || j < nb {
        let n = cols.len() as i64;
        if j >= nb || (i < na && la[i] < lb[j]) {
            from_a.push(i as i64);
            to_a.push(n);
            cols.push((true, i));
            i += 1;
        } else if i >= na || lb[j] < la[i] {
            from_b.push(j as i64);
            to_b.push(n);
            cols.push((false, j));
            j += 1;
        } else {
            from_a.push(i as i64);
            to_a.push(n);
            from_b.push(j as i64);
            to_b.push(n);
            cols.push((true, i));
            i += 1;
            j += 1;
        }
    }
    let n = cols.len();
    let sd = ca.sparse_dim;
    let mut idx = vec![0i64; sd * n];
    for (q, &(in_a, k)) in cols.iter().enumerate() {
        for d in 0..sd {
            idx[d * n + q] = if in_a { ia[d * na + k] } else { ib[d * nb + k] };
        }
    }
    let dev = a.device();
    let indices = long_tensor(idx, &[sd as i64, n as i64], dev)?;
    let out = zeros(&values_shape(&ca.values, n as i64), dtype, dev)?;
    let va = ops::index_select(
        &scaled(&ca.values, &Scalar::Int(1), dtype)?,
        0,
        &long_tensor(from_a, &[to_a.len() as i64], dev)?,
    )?;
    ops::index_add_(&out, 0, &long_tensor(to_a, &[va.sizes()[0]], dev)?, &va, Scalar::Int(1))?;
    let vb =
        ops::index_select(&scaled(&cb.values, alpha, dtype)?, 0, &long_tensor(from_b, &[to_b.len() as i64], dev)?)?;
    ops::index_add_(&out, 0, &long_tensor(to_b, &[vb.sizes()[0]], dev)?, &vb, Scalar::Int(1))?;
    Ok((indices, out, ca.coalesced && cb.coalesced))
}

// Note [The pattern of a sparse sum]: which entries `sparse + sparse` stores depends, in
// PyTorch, on its kernel's path, and we follow it so a result has PyTorch's pattern as well as
// its values. With contiguous values on both sides the two index lists are merged: walked
// together in stored order, the smaller position taken first, the two values added where the
// positions are equal; on coalesced inputs that is the coalesced sum, on others it keeps the
// stored order. With non-contiguous values (an embedding's gradient of an expanded
// `grad_output`) the lists are concatenated, and coalesced once there are more entries than
// elements. The result is flagged coalesced only when both inputs were. An empty side gives the
// other side's pattern.

/// Adds `alpha * sparse` into strided `dense` in place (`index_put_` with accumulation).
fn add_sparse_into_dense(op: &str, dense: &Tensor, s: &Tensor, alpha: &Scalar) -> Result<()> {
    let c = coo(op, s)?;
    check_add_sizes(op, dense, s)?;
    same_device(op, dense, s)?;
    if c.nnz() == 0 {
        return Ok(());
    }
    if !dense.device().is_cpu() {
        // Off the CPU through the sparse tensor's dense form (`index_add` on the device).
        let d = scaled(&_to_dense(s, None, None)?, alpha, dense.dtype())?;
        ops::add_(dense, &d, Scalar::Int(1))?;
        return Ok(());
    }
    let nnz = c.nnz() as usize;
    // Checks every index (Note [Indices are checked where they are used]).
    let lin = linear_index(op, &host_indices(&c.indices)?, nnz, &s.sizes()[..c.sparse_dim])?;
    if dense.is_contiguous() && dense.dtype() == c.values.dtype() {
        // In place, row by row: no copy of `dense` (an optimizer's update of a large table
        // touches only the rows the gradient holds).
        match dense.dtype() {
            ScalarType::F32 => return add_rows::<f32>(dense, &lin, &c.values, alpha.to::<f32>()),
            ScalarType::F64 => return add_rows::<f64>(dense, &lin, &c.values, alpha.to::<f64>()),
            _ => {}
        }
    }
    let rows: Vec<Option<Tensor>> =
        (0..c.sparse_dim).map(|d| ops::select(&c.indices, 0, d as i64).map(Some)).collect::<Result<_>>()?;
    let v = scaled(&c.values, alpha, dense.dtype())?;
    ops::index_put_(dense, &rows, &v, true)?;
    Ok(())
}

/// `dense.view(rows, -1)[lin[k]] += alpha * values[k]` for every stored element, in stored
/// order, on a contiguous CPU `dense` whose dtype the values have.
fn add_rows<T>(dense: &Tensor, lin: &[i64], values: &Tensor, alpha: T) -> Result<()>
where
    T: c10::Element + Copy + std::ops::Mul<Output = T> + std::ops::AddAssign,
{
    // A copy when the values live in `dense`'s own memory, so the rows read and written never
    // overlap.
    let v = if values.storage().is_same(dense.storage()) {
        ops::clone(values, Some(MemoryFormat::Contiguous))?
    } else {
        ops::contiguous(values, MemoryFormat::Contiguous)?
    };
    let cols = (v.numel() as usize).checked_div(lin.len()).unwrap_or(0);
    let rows = (dense.numel() as usize).checked_div(cols).unwrap_or(0);
    let d = dense.typed_data_ptr::<T>()?;
    let vp = v.typed_data_ptr::<T>()?;
    for (k, &r) in lin.iter().enumerate() {
        // Every position was checked against the sparse sizes (`linear_index`), whose product
        // is `rows`, and `dense` has the sparse tensor's sizes.
        debug_assert!((r as usize) < rows);
        // SAFETY: `dense` is contiguous with `rows * cols` elements and row `r < rows`; `v` is
        // contiguous with `lin.len() * cols` elements, in another storage than `dense` (copied
        // above otherwise), so the two slices do not overlap.
        let (drow, vrow) = unsafe {
            (
                std::slice::from_raw_parts_mut(d.add(r as usize * cols), cols),
                std::slice::from_raw_parts(vp.add(k * cols), cols),
            )
        };
        for (a, &b) in drow.iter_mut().zip(vrow) {
            *a += alpha * b;
        }
    }
    dense.bump_version();
    Ok(())
}

/// `add.Tensor` with a sparse operand: sparse + sparse is sparse, dense + sparse is dense;
/// sparse + dense is refused as PyTorch refuses it.
pub fn add_sparse(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let op = "add";
    match (self_.layout(), other.layout()) {
        (Layout::SparseCoo, Layout::SparseCoo) => {
            let (i, v, c) = add_sparse_sparse(op, self_, other, &alpha)?;
            new_coo(self_.sizes(), &i, &v, c)
        }
        (Layout::Strided, Layout::SparseCoo) => {
            let dtype = c10::promote_types(self_.dtype(), other.dtype());
            let out = ops::_to_copy(self_, Some(dtype), None, None, None, false, Some(MemoryFormat::Contiguous))?;
            add_sparse_into_dense(op, &out, other, &alpha)?;
            Ok(out)
        }
        (Layout::SparseCoo, Layout::Strided) => {
            Err(Error::invalid(op, "add(sparse, dense) is not supported. Use add(dense, sparse) instead."))
        }
        _ => Err(expected_coo(op, other)),
    }
}

/// `add_.Tensor` with a sparse operand: into a dense `self` in place, or a sparse `self` whose
/// members become the sum's.
pub fn add_sparse_(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let op = "add_";
    match (self_.layout(), other.layout()) {
        (Layout::SparseCoo, Layout::SparseCoo) => {
            check_in_place(op, c10::promote_types(self_.dtype(), other.dtype()), self_)?;
            let (i, v, c) = add_sparse_sparse(op, self_, other, &alpha)?;
            set_coo(self_, &i, &in_place_values(op, &v, self_)?, c);
            Ok(self_.clone())
        }
        (Layout::Strided, Layout::SparseCoo) => {
            check_in_place(op, c10::promote_types(self_.dtype(), other.dtype()), self_)?;
            add_sparse_into_dense(op, self_, other, &alpha)?;
            Ok(self_.clone())
        }
        (Layout::SparseCoo, Layout::Strided) => {
            Err(Error::invalid(op, "add(sparse, dense) is not supported. Use add(dense, sparse) instead."))
        }
        _ => Err(expected_coo(op, other)),
    }
}

/// `sparse * sparse`: the intersection of the two patterns (both coalesced first).
fn mul_sparse_sparse(op: &str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.sizes() != b.sizes() {
        return Err(Error::shape(
            op,
            format!("mul(sparse, sparse): operands have incompatible sizes {:?} and {:?}", a.sizes(), b.sizes()),
        ));
    }
    same_device(op, a, b)?;
    let ca = coo(op, &ops::coalesce(a)?)?;
    let cb = coo(op, &ops::coalesce(b)?)?;
    if ca.sparse_dim != cb.sparse_dim {
        return Err(Error::shape(
            op,
            format!("mul: expected same number of sparse dimensions, but got {} and {}", ca.sparse_dim, cb.sparse_dim),
        ));
    }
    let sparse_sizes = &a.sizes()[..ca.sparse_dim];
    let (na, nb) = (ca.nnz() as usize, cb.nnz() as usize);
    let ia = host_indices(&ca.indices)?;
    let la = linear_index(op, &ia, na, sparse_sizes)?;
    let lb = linear_index(op, &host_indices(&cb.indices)?, nb, sparse_sizes)?;
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < na && j < nb {
        match la[i].cmp(&lb[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                pa.push(i as i64);
                pb.push(j as i64);
                i += 1;
                j += 1;
            }
        }
    }
    let dev = a.device();
    let n = pa.len() as i64;
    let pa = long_tensor(pa, &[n], dev)?;
    let pb = long_tensor(pb, &[n], dev)?;
    let indices = ops::index_select(&ca.indices, 1, &pa)?;
    let values = ops::mul(&ops::index_select(&ca.values, 0, &pa)?, &ops::index_select(&cb.values, 0, &pb)?)?;
    new_coo(a.sizes(), &indices, &values, true)
}

/// `mul.Tensor` with a sparse operand: sparse * sparse (intersection), sparse * 0-dim (each
/// value scaled), sparse * dense of the same sizes (each value times the dense element at its
/// position), in either order.
pub fn mul_sparse(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let op = "mul";
    match (self_.layout(), other.layout()) {
        (Layout::SparseCoo, Layout::SparseCoo) => mul_sparse_sparse(op, self_, other),
        (Layout::SparseCoo, Layout::Strided) => mul_sparse_dense(op, self_, other),
        (Layout::Strided, Layout::SparseCoo) => mul_sparse_dense(op, other, self_),
        _ => Err(expected_coo(op, self_)),
    }
}

fn mul_sparse_dense(op: &str, s: &Tensor, d: &Tensor) -> Result<Tensor> {
    let c = coo(op, s)?;
    if d.dim() == 0 {
        let v = ops::mul(&c.values, d)?;
        return new_coo(s.sizes(), &c.indices, &v, c.coalesced);
    }
    if d.sizes() != s.sizes() {
        return Err(Error::shape(
            op,
            format!("mul(sparse, dense): operands have incompatible sizes {:?} and {:?}", s.sizes(), d.sizes()),
        ));
    }
    same_device(op, s, d)?;
    let g = gather_cols(op, d, &c.indices, s.sizes())?;
    let v = ops::mul(&c.values, &g)?;
    new_coo(s.sizes(), &c.indices, &v, c.coalesced)
}

/// `mul_.Tensor` on a sparse `self`: by a 0-dim tensor or a sparse tensor.
pub fn mul_sparse_(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let op = "mul_";
    if self_.layout() != Layout::SparseCoo {
        return Err(Error::invalid(op, "mul_(dense, sparse) is not supported: multiply out of place"));
    }
    let c = coo(op, &mul_sparse(self_, other)?)?;
    set_coo(self_, &c.indices, &in_place_values(op, &c.values, self_)?, c.coalesced);
    Ok(self_.clone())
}

/// `mul.Scalar` of a COO tensor: each stored value scaled.
pub fn mul_sparse_scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    map_values("mul", self_, true, |v| ops::mul_scalar(v, other))
}

/// `mul_.Scalar` of a COO tensor, in place.
pub fn mul_sparse_scalar_(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    let c = coo("mul_", self_)?;
    let v = in_place_values("mul_", &ops::mul_scalar(&c.values, other)?, self_)?;
    set_coo(self_, &c.indices, &v, c.coalesced);
    Ok(self_.clone())
}

/// A zero-preserving function applied to the stored values; `linear` ones (f(a) + f(b) =
/// f(a + b)) keep duplicates, others coalesce first so each position's value is whole.
fn map_values(op: &str, self_: &Tensor, linear: bool, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let s = if linear { self_.clone() } else { ops::coalesce(self_)? };
    let c = coo(op, &s)?;
    let v = f(&c.values)?;
    new_coo(self_.sizes(), &c.indices, &v, c.coalesced)
}

/// `neg` of a COO tensor.
pub fn neg_sparse(self_: &Tensor) -> Result<Tensor> {
    map_values("neg", self_, true, ops::neg)
}

/// `abs` of a COO tensor.
pub fn abs_sparse(self_: &Tensor) -> Result<Tensor> {
    map_values("abs", self_, false, ops::abs)
}

/// `sqrt` of a COO tensor.
pub fn sqrt_sparse(self_: &Tensor) -> Result<Tensor> {
    map_values("sqrt", self_, false, ops::sqrt)
}

/// `pow.Tensor_Scalar` of a COO tensor; a zero exponent would fill every position with one, so
/// PyTorch refuses it.
pub fn pow_sparse_scalar(self_: &Tensor, exponent: Scalar) -> Result<Tensor> {
    if exponent.to_f64() == 0.0 {
        return Err(Error::invalid(
            "pow",
            "pow: cannot raise to zeroth power on sparse tensor; it would make the result tensor dense",
        ));
    }
    map_values("pow", self_, false, |v| ops::pow_tensor_scalar(v, exponent))
}

// ---- reductions ------------------------------------------------------------------------------

/// `sum(Tensor self, *, ScalarType? dtype=None)` of a sparse tensor (COO or CSR): the sum of
/// its values.
pub fn sum_sparse(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    let sp = self_.sparse_impl().ok_or_else(|| expected_coo("sum", self_))?;
    ops::sum(&Tensor::from_arc(sp.parts().values), dtype)
}

/// `_sparse_sum(Tensor self) -> Tensor`: the sum of every element, a 0-dim strided tensor.
pub fn _sparse_sum(self_: &Tensor) -> Result<Tensor> {
    // Through `values()` so the gradient is sparse on `self`'s pattern, as PyTorch's.
    ops::sum(&ops::values(&ops::coalesce(self_)?)?, None)
}

/// `_sparse_sum.dim(Tensor self, int[1] dim) -> Tensor`: summed over `dim`. When every sparse
/// dimension is summed the result is strided (the dense dimensions left); otherwise it is a
/// coalesced COO tensor over the sparse dimensions left.
pub fn _sparse_sum_dim(self_: &Tensor, dim: &[i64]) -> Result<Tensor> {
    let op = "sparse.sum";
    let c = coo(op, self_)?;
    let red = reduced_dims(op, self_, Some(dim))?;
    let sd = c.sparse_dim;
    let dense_red: Vec<i64> = (sd..self_.dim()).filter(|&d| red[d]).map(|d| (d - sd + 1) as i64).collect();
    let values = if dense_red.is_empty() {
        c.values.clone()
    } else {
        ops::sum_dim_intlist(&c.values, Some(&dense_red), false, None)?
    };
    let keep: Vec<usize> = (0..sd).filter(|&d| !red[d]).collect();
    if keep.is_empty() {
        return ops::sum_dim_intlist(&values, Some(&[0]), false, None);
    }
    let sizes: Vec<i64> = (0..self_.dim()).filter(|&d| !red[d]).map(|d| self_.sizes()[d]).collect();
    let kept = long_tensor(keep.iter().map(|&d| d as i64).collect(), &[keep.len() as i64], self_.device())?;
    let indices = ops::index_select(&c.indices, 0, &kept)?;
    let r = new_coo(&sizes, &indices, &values, false)?;
    ops::_coalesce(&r)
}

/// `_sparse_sum_backward(Tensor grad, Tensor self, int[] dim) -> Tensor`: the gradient of
/// `_sparse_sum.dim` on `self`'s pattern: each stored element gets the gradient at the
/// position it was summed into.
pub fn _sparse_sum_backward(grad: &Tensor, self_: &Tensor, dim: &[i64]) -> Result<Tensor> {
    let op = "_sparse_sum_backward";
    let c = coo(op, self_)?;
    let red = reduced_dims(op, self_, Some(dim))?;
    let sd = c.sparse_dim;
    let keep: Vec<usize> = (0..sd).filter(|&d| !red[d]).collect();
    let g = to_dense(grad, None, None)?;
    // The gradient per stored element, over the dense dimensions kept.
    let mut g = if keep.is_empty() {
        // Every sparse dimension was summed: the same gradient for every element.
        ops::unsqueeze(&g, 0)?
    } else {
        let kept = long_tensor(keep.iter().map(|&d| d as i64).collect(), &[keep.len() as i64], self_.device())?;
        let sub = ops::index_select(&c.indices, 0, &kept)?;
        let gs: Vec<i64> = (0..self_.dim()).filter(|&d| !red[d]).map(|d| self_.sizes()[d]).collect();
        gather_cols(op, &g, &sub, &gs)?
    };
    // Re-insert the summed dense dimensions and expand to the values' shape.
    for (d, _) in red.iter().enumerate().skip(sd).filter(|(_, &r)| r) {
        g = ops::unsqueeze(&g, (d - sd + 1) as i64)?;
    }
    let g = ops::expand(&g, c.values.sizes(), false)?;
    let v = ops::clone(&g, Some(MemoryFormat::Contiguous))?;
    new_coo(self_.sizes(), &c.indices, &v, c.coalesced)
}

/// The norm of a COO tensor (`norm` with PyTorch's `norm_sparse`): the norm of its coalesced
/// values, so positions stored twice count once, with their sum, and unstored ones not at all
/// (as PyTorch, the -inf and 0 norms look at the stored values only). Full reductions only:
/// `dim` must be empty or name every dimension, and `keepdim` false, as PyTorch requires.
fn norm_sparse_impl(
    self_: &Tensor,
    p: Option<Scalar>,
    dim: &[i64],
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<Tensor> {
    let op = "norm";
    coo(op, self_)?;
    let n = self_.dim();
    let mut seen = vec![false; n];
    for &d in dim {
        seen[wrap_dim(op, d, n)?] = true;
    }
    if keepdim {
        return Err(Error::invalid(op, "norm_sparse currently does not support keepdim=True"));
    }
    if !dim.is_empty() && seen.iter().any(|&s| !s) {
        return Err(Error::invalid(
            op,
            "norm_sparse currently only supports full reductions, so 'dim' must either be empty or contain all dimensions of the input",
        ));
    }
    let values = coo(op, &ops::coalesce(self_)?)?.values;
    match dtype {
        Some(d) => ops::norm_scalaropt_dtype(&values, p, d),
        None => ops::norm_scalaropt_dim(&values, p, &[], false),
    }
}

/// `norm.Scalar(Tensor self, Scalar p=2) -> Tensor` of a COO tensor (see [`norm_sparse_impl`]).
pub fn norm_sparse(self_: &Tensor, p: Scalar) -> Result<Tensor> {
    norm_sparse_impl(self_, Some(p), &[], false, None)
}

/// `norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False)` of a COO tensor.
pub fn norm_sparse_dim(self_: &Tensor, p: Option<Scalar>, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    norm_sparse_impl(self_, p, dim, keepdim, None)
}

/// `norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType
/// dtype)` of a COO tensor.
pub fn norm_sparse_dim_dtype(
    self_: &Tensor,
    p: Option<Scalar>,
    dim: &[i64],
    keepdim: bool,
    dtype: ScalarType,
) -> Result<Tensor> {
    norm_sparse_impl(self_, p, dim, keepdim, Some(dtype))
}

/// `norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype)` of a COO tensor.
pub fn norm_sparse_dtype(self_: &Tensor, p: Option<Scalar>, dtype: ScalarType) -> Result<Tensor> {
    norm_sparse_impl(self_, p, &[], false, Some(dtype))
}

// ---- softmax ---------------------------------------------------------------------------------

// Note [Sparse softmax]: `torch.sparse.softmax` normalises over the stored elements only: an
// element the tensor does not store counts as -inf and takes no share (it stays unstored).
// Along a dense dimension that is the dense softmax of the values; along a sparse dimension the
// elements whose indices agree everywhere but at `dim` form a group, normalised together at
// each dense position. The input is coalesced first and the result has its pattern, flagged
// coalesced, as PyTorch's. The gradient reads the incoming gradient at the result's pattern
// (zero where it stores nothing) and has that pattern too. Groups are found and summed on the
// host, in float64, from the maximum as a dense softmax is.

/// The groups of coalesced `c`'s elements along sparse dim `d` of a tensor of `sizes`, as runs
/// of `order` (positions of elements): `(order, starts)` with group `g` the elements
/// `order[starts[g]..starts[g + 1]]`, in stored order.
fn sparse_dim_groups(op: &str, c: &Coo, sizes: &[i64], d: usize) -> Result<(Vec<usize>, Vec<usize>)> {
    let nnz = c.nnz() as usize;
    let idx = host_indices(&c.indices)?;
    let lin = linear_index(op, &idx, nnz, &sizes[..c.sparse_dim])?;
    let stride: i64 = sizes[d + 1..c.sparse_dim].iter().product();
    // The position with `d`'s coordinate taken out: equal exactly within a group.
    let mut keyed: Vec<(i64, usize)> = (0..nnz).map(|e| (lin[e] - idx[d * nnz + e] * stride, e)).collect();
    keyed.sort_unstable();
    let mut starts = vec![0];
    for k in 1..nnz {
        if keyed[k].0 != keyed[k - 1].0 {
            starts.push(k);
        }
    }
    starts.push(nnz);
    if nnz == 0 {
        starts.truncate(1);
    }
    Ok((keyed.into_iter().map(|(_, e)| e).collect(), starts))
}

/// Calls `f` with the flat positions (into `[nnz, inner]` values) of each softmax line: a
/// group's elements (`order[starts[g]..starts[g + 1]]`) at one dense position.
fn for_each_line(order: &[usize], starts: &[usize], inner: usize, mut f: impl FnMut(&[usize])) {
    let mut line = Vec::new();
    for g in starts.windows(2) {
        for j in 0..inner {
            line.clear();
            line.extend(order[g[0]..g[1]].iter().map(|&e| e * inner + j));
            f(&line);
        }
    }
}

/// The float dtypes of PyTorch's sparse softmax, and its refusal of `half_to_float`.
fn check_softmax(op: &str, t: &Tensor, half_to_float: bool) -> Result<()> {
    if half_to_float {
        return Err(Error::invalid(
            op,
            format!("{op}: softmax with half to float conversion is not supported on a sparse tensor"),
        ));
    }
    if !matches!(t.dtype(), ScalarType::F32 | ScalarType::F64) {
        return Err(Error::unsupported_dtype(op, t.dtype()));
    }
    Ok(())
}

/// `[nnz, inner]` host values of `values` (`inner` the product of the dense sizes) in float64.
fn host_rows(values: &Tensor) -> Result<(Vec<f64>, usize)> {
    let nnz = values.sizes()[0] as usize;
    let v = values.to_vec::<f64>()?;
    let inner = v.len().checked_div(nnz).unwrap_or(0);
    Ok((v, inner))
}

/// Host results shaped like `like` (its dtype and device).
fn rows_like(v: Vec<f64>, like: &Tensor) -> Result<Tensor> {
    ops::to_device(&Tensor::from_vec(v, like.sizes())?, like.device(), like.dtype(), false, false, None)
}

fn sparse_softmax_impl(op: &str, self_: &Tensor, dim: i64, half_to_float: bool, log: bool) -> Result<Tensor> {
    coo(op, self_)?;
    check_softmax(op, self_, half_to_float)?;
    let d = wrap_dim(op, dim, self_.dim())?;
    let s = ops::coalesce(self_)?;
    let c = coo(op, &s)?;
    let values = if d >= c.sparse_dim {
        let vd = (d - c.sparse_dim + 1) as i64;
        if log {
            ops::log_softmax(&c.values, vd, None)?
        } else {
            ops::softmax(&c.values, vd, None)?
        }
    } else {
        let (order, starts) = sparse_dim_groups(op, &c, self_.sizes(), d)?;
        let (v, inner) = host_rows(&c.values)?;
        let mut out = vec![0f64; v.len()];
        for_each_line(&order, &starts, inner, |line| {
            let m = line.iter().map(|&i| v[i]).fold(f64::NEG_INFINITY, f64::max);
            let total: f64 = line.iter().map(|&i| (v[i] - m).exp()).sum();
            for &i in line {
                let x = v[i] - m;
                out[i] = if log { x - total.ln() } else { x.exp() / total };
            }
        });
        rows_like(out, &c.values)?
    };
    new_coo(self_.sizes(), &c.indices, &values, true)
}

fn sparse_softmax_backward_impl(op: &str, grad: &Tensor, output: &Tensor, dim: i64, log: bool) -> Result<Tensor> {
    let c = coo(op, output)?;
    same_device(op, grad, output)?;
    if grad.sizes() != output.sizes() {
        return Err(Error::shape(
            op,
            format!(
                "{op}: grad_output of shape {:?} does not match output of shape {:?}",
                grad.sizes(),
                output.sizes()
            ),
        ));
    }
    let d = wrap_dim(op, dim, output.dim())?;
    let g = scaled(&project(op, grad, &c.indices, output.sizes())?, &Scalar::Int(1), output.dtype())?;
    let values = if d >= c.sparse_dim {
        let vd = (d - c.sparse_dim + 1) as i64;
        let y = &c.values;
        if log {
            let total = ops::sum_dim_intlist(&g, Some(&[vd]), true, None)?;
            ops::sub(&g, &ops::mul(&ops::exp(y)?, &total)?, Scalar::Int(1))?
        } else {
            let total = ops::sum_dim_intlist(&ops::mul(&g, y)?, Some(&[vd]), true, None)?;
            ops::mul(y, &ops::sub(&g, &total, Scalar::Int(1))?)?
        }
    } else {
        let (order, starts) = sparse_dim_groups(op, &c, output.sizes(), d)?;
        let (y, inner) = host_rows(&c.values)?;
        let (gv, _) = host_rows(&g)?;
        let mut out = vec![0f64; y.len()];
        for_each_line(&order, &starts, inner, |line| {
            if log {
                let total: f64 = line.iter().map(|&i| gv[i]).sum();
                for &i in line {
                    out[i] = gv[i] - y[i].exp() * total;
                }
            } else {
                let total: f64 = line.iter().map(|&i| gv[i] * y[i]).sum();
                for &i in line {
                    out[i] = y[i] * (gv[i] - total);
                }
            }
        });
        rows_like(out, &c.values)?
    };
    new_coo(output.sizes(), &c.indices, &values, true)
}

/// `_sparse_softmax(Tensor self, int dim, bool half_to_float) -> Tensor` (Note [Sparse softmax]).
pub fn _sparse_softmax(self_: &Tensor, dim: i64, half_to_float: bool) -> Result<Tensor> {
    sparse_softmax_impl("_sparse_softmax", self_, dim, half_to_float, false)
}

/// `_sparse_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor`.
pub fn _sparse_log_softmax(self_: &Tensor, dim: i64, half_to_float: bool) -> Result<Tensor> {
    sparse_softmax_impl("_sparse_log_softmax", self_, dim, half_to_float, true)
}

/// `_sparse_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor`: `self`
/// converted to `dtype` first when given (`torch.sparse.softmax`).
pub fn _sparse_softmax_int(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    ops::_sparse_softmax_op(&converted(self_, dtype)?, dim, false)
}

/// `_sparse_log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor`.
pub fn _sparse_log_softmax_int(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    ops::_sparse_log_softmax_op(&converted(self_, dtype)?, dim, false)
}

/// `t` converted to `dtype` when given and different (`t` itself otherwise).
fn converted(t: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    match dtype {
        Some(dt) if dt != t.dtype() => ops::to(t, dt, false, false, None),
        _ => Ok(t.clone()),
    }
}

/// `_sparse_softmax_backward_data(Tensor grad_output, Tensor output, int dim, Tensor self) -> Tensor`.
pub fn _sparse_softmax_backward_data(
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    _self: &Tensor,
) -> Result<Tensor> {
    sparse_softmax_backward_impl("_sparse_softmax_backward_data", grad_output, output, dim, false)
}

/// `_sparse_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, Tensor self) -> Tensor`.
pub fn _sparse_log_softmax_backward_data(
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    _self: &Tensor,
) -> Result<Tensor> {
    sparse_softmax_backward_impl("_sparse_log_softmax_backward_data", grad_output, output, dim, true)
}

// ---- shape -----------------------------------------------------------------------------------

/// `transpose.int` of a COO tensor: two sparse dimensions swap their index rows (a new tensor,
/// not a view, as PyTorch's); PyTorch refuses dense dimensions.
pub fn transpose_sparse(self_: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    let op = "transpose";
    let c = coo(op, self_)?;
    let d = wrap_dim(op, dim0, self_.dim())?;
    let e = wrap_dim(op, dim1, self_.dim())?;
    let mut sizes = self_.sizes().to_vec();
    sizes.swap(d, e);
    if d == e {
        return new_coo(&sizes, &c.indices, &c.values, c.coalesced);
    }
    let sd = c.sparse_dim;
    if d >= sd || e >= sd {
        return Err(Error::invalid(
            op,
            format!("sparse transpose: transposed dimensions must be sparse Got sparse_dim: {sd}, d0: {d}, d1: {e}"),
        ));
    }
    let mut order: Vec<i64> = (0..sd as i64).collect();
    order.swap(d, e);
    let ord = long_tensor(order, &[sd as i64], self_.device())?;
    let indices = ops::index_select(&c.indices, 0, &ord)?;
    new_coo(&sizes, &indices, &c.values, false)
}

/// `t` of a COO tensor (at most two dimensions).
pub fn t_sparse(self_: &Tensor) -> Result<Tensor> {
    let n = self_.dim();
    if n > 2 {
        return Err(Error::invalid(
            "t",
            format!("t() expects a tensor with <= 2 sparse and 0 dense dimensions, but self is {n}D"),
        ));
    }
    if n < 2 {
        return crate::native::shape::alias(self_);
    }
    transpose_sparse(self_, 0, 1)
}

/// `index_select` of a COO tensor: along a sparse dimension, the stored elements whose index is
/// selected (once per selection, renumbered); along a dense one, the values' slices.
pub fn index_select_sparse(self_: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let op = "index_select";
    let c = coo(op, self_)?;
    let d = wrap_dim(op, dim, self_.dim())?;
    if index.dim() > 1 {
        return Err(Error::invalid(op, "index_select(): Index is supposed to be a vector"));
    }
    if !matches!(index.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(Error::invalid(op, "index_select(): Expected dtype int32 or int64 for index"));
    }
    let sel: Vec<i64> = index.to_vec::<i64>()?;
    let size = self_.sizes()[d];
    for &s in &sel {
        if s < -size || s >= size {
            return Err(Error::IndexOutOfRange { op: op.into(), index: s, dim: d as i64, size });
        }
    }
    let sel: Vec<i64> = sel.into_iter().map(|s| if s < 0 { s + size } else { s }).collect();
    let mut sizes = self_.sizes().to_vec();
    sizes[d] = sel.len() as i64;
    let dev = self_.device();
    if d >= c.sparse_dim {
        let ix = long_tensor(sel, &[sizes[d]], dev)?;
        let v = ops::index_select(&c.values, (d - c.sparse_dim + 1) as i64, &ix)?;
        return new_coo(&sizes, &c.indices, &v, c.coalesced);
    }
    let nnz = c.nnz() as usize;
    let idx = host_indices(&c.indices)?;
    linear_index(op, &idx, nnz, &self_.sizes()[..c.sparse_dim])?;
    // For each selected position, the stored elements at that index (in stored order); a map,
    // as the dimension may be far longer than the tensor stores.
    let mut at: HashMap<i64, Vec<usize>> = sel.iter().map(|&s| (s, Vec::new())).collect();
    for k in 0..nnz {
        if let Some(v) = at.get_mut(&idx[d * nnz + k]) {
            v.push(k);
        }
    }
    let (mut picks, mut new_pos) = (Vec::new(), Vec::new());
    for (j, s) in sel.iter().enumerate() {
        for &k in &at[s] {
            picks.push(k as i64);
            new_pos.push(j as i64);
        }
    }
    let n = picks.len();
    let mut new_idx = vec![0i64; c.sparse_dim * n];
    for r in 0..c.sparse_dim {
        for (q, &k) in picks.iter().enumerate() {
            new_idx[r * n + q] = if r == d { new_pos[q] } else { idx[r * nnz + k as usize] };
        }
    }
    let p = long_tensor(picks, &[n as i64], dev)?;
    let v = ops::index_select(&c.values, 0, &p)?;
    let indices = long_tensor(new_idx, &[c.sparse_dim as i64, n as i64], dev)?;
    new_coo(&sizes, &indices, &v, false)
}

/// `narrow_copy` of a COO tensor: the stored elements inside `[start, start + length)` along
/// `dim`, re-based.
pub fn narrow_copy_sparse(self_: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let op = "narrow_copy";
    let d = wrap_dim(op, dim, self_.dim())?;
    let size = self_.sizes()[d];
    let start = if start < 0 { start + size } else { start };
    if start < 0 || length < 0 || start > size - length {
        return Err(Error::invalid(
            op,
            format!("start ({start}) + length ({length}) exceeds dimension size ({size})."),
        ));
    }
    let ix = long_tensor((start..start + length).collect(), &[length], self_.device())?;
    let r = index_select_sparse(self_, d as i64, &ix)?;
    let was = coo(op, self_)?.coalesced;
    if let Some(sp) = r.sparse_impl() {
        // A contiguous range keeps the stored order, so a coalesced input stays coalesced.
        sp.set_coalesced(was);
    }
    Ok(r)
}

/// `cat` of COO tensors along `dim`: indices shifted along a sparse dimension, values
/// concatenated along a dense one.
pub fn cat_sparse(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let op = "cat";
    let Some(first) = tensors.first() else {
        return Err(Error::Value { op: op.into(), msg: "torch.cat(): expected a non-empty list of Tensors".into() });
    };
    let parts: Vec<Coo> = tensors.iter().map(|t| coo(op, t)).collect::<Result<_>>()?;
    let d = wrap_dim(op, dim, first.dim())?;
    let sd = parts[0].sparse_dim;
    for (i, (t, p)) in tensors.iter().zip(&parts).enumerate() {
        same_device(op, first, t)?;
        let ok = t.dim() == first.dim()
            && p.sparse_dim == sd
            && t.sizes().iter().zip(first.sizes()).enumerate().all(|(k, (a, b))| k == d || a == b);
        if !ok {
            return Err(Error::shape(
                op,
                format!(
                    "concatenating sparse tensors, but they don't have the same sizes except along dim {d}: tensor 0 has size {:?} and tensor {i} has size {:?} (sparse_dim {sd} and {})",
                    first.sizes(),
                    t.sizes(),
                    p.sparse_dim
                ),
            ));
        }
    }
    let dtype = tensors.iter().skip(1).fold(first.dtype(), |a, t| c10::promote_types(a, t.dtype()));
    let mut sizes = first.sizes().to_vec();
    sizes[d] = tensors.iter().map(|t| t.sizes()[d]).sum();
    if d < sd {
        let mut idxs = Vec::new();
        let mut vals = Vec::new();
        let mut offset = 0i64;
        for (t, p) in tensors.iter().zip(&parts) {
            let mut shift = vec![0i64; sd];
            shift[d] = offset;
            let sh = ops::unsqueeze(&long_tensor(shift, &[sd as i64], first.device())?, 1)?;
            idxs.push(ops::add(&p.indices, &sh, Scalar::Int(1))?);
            vals.push(scaled(&p.values, &Scalar::Int(1), dtype)?);
            offset += t.sizes()[d];
        }
        let indices = ops::cat(&idxs, 1)?;
        let values = ops::cat(&vals, 0)?;
        return new_coo(&sizes, &indices, &values, false);
    }
    // Along a dense dimension: each input's values padded with zeros to the others' positions.
    let vd = (d - sd + 1) as i64;
    let mut idxs = Vec::new();
    let mut vals = Vec::new();
    let mut offset = 0i64;
    for (t, p) in tensors.iter().zip(&parts) {
        let mut vs = values_shape(&p.values, p.nnz());
        vs[vd as usize] = sizes[d];
        let v = zeros(&vs, dtype, first.device())?;
        let slot = ops::narrow(&v, vd, offset, t.sizes()[d])?;
        ops::copy_(&slot, &p.values, false)?;
        idxs.push(p.indices.clone());
        vals.push(v);
        offset += t.sizes()[d];
    }
    let indices = ops::cat(&idxs, 1)?;
    let values = ops::cat(&vals, 0)?;
    new_coo(&sizes, &indices, &values, false)
}

// ---- matrix products -------------------------------------------------------------------------

fn check_mm_operands(op: &str, s: &Tensor, c: &Coo, d: &Tensor) -> Result<()> {
    if c.sparse_dim != 2 || c.dense_dim != 0 {
        return Err(Error::invalid(
            op,
            format!(
                "{op}: matrices expected, got {}D tensor (sparse_dim {}, dense_dim {})",
                s.dim(),
                c.sparse_dim,
                c.dense_dim
            ),
        ));
    }
    check_matrix_product(op, s, d)
}

/// `mat1 @ mat2`'s inner sizes agree, or PyTorch's error.
fn check_inner_sizes(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.sizes()[1] == b.sizes()[0] {
        return Ok(());
    }
    Err(Error::shape(
        op,
        format!(
            "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            a.sizes()[0],
            a.sizes()[1],
            b.sizes()[0],
            b.sizes()[1]
        ),
    ))
}

/// The checks of a sparse matrix `s` times a strided matrix `d`, in PyTorch's words.
fn check_matrix_product(op: &str, s: &Tensor, d: &Tensor) -> Result<()> {
    if d.dim() != 2 || d.layout() != Layout::Strided {
        return Err(Error::invalid(op, format!("{op}: matrices expected, got {}D tensor", d.dim())));
    }
    check_inner_sizes(op, s, d)?;
    if s.dtype() != d.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "expected mat1 and mat2 to have the same dtype, but got: {} != {}",
                s.dtype().cpp_name(),
                d.dtype().cpp_name()
            ),
        ));
    }
    same_device(op, s, d)
}

/// Offsets of each row's elements among `rows` grouped by row (`crow_indices` of the rows):
/// `nrows + 1` entries, row `r`'s elements counted from `offsets[r]`.
fn row_offsets(rows: &[i64], nrows: usize) -> Result<Vec<i64>> {
    let mut offsets = c10::size::try_vec_filled(0i64, nrows.saturating_add(1))?;
    for &r in rows {
        offsets[r as usize + 1] += 1;
    }
    for r in 0..nrows {
        offsets[r + 1] += offsets[r];
    }
    Ok(offsets)
}

/// `sparse @ dense` into a new `[rows, cols]` tensor: per stored element `(r, k, v)`, `v` times
/// row `k` of `dense` added to row `r`. f32 and f64 run a direct loop over the rows (in
/// parallel, each row's elements in stored order); other dtypes gather and `index_add_`.
fn spmm(op: &str, s: &Tensor, c: &Coo, d: &Tensor) -> Result<Tensor> {
    let (m, n) = (s.sizes()[0], d.sizes()[1]);
    let nnz = c.nnz() as usize;
    let idx = host_indices(&c.indices)?;
    linear_index(op, &idx, nnz, &s.sizes()[..2])?;
    let dev = d.device();
    let cpu = dev.is_cpu() && matches!(d.dtype(), ScalarType::F32 | ScalarType::F64);
    let device = if cpu { None } else { device_spmm(d) };
    if cpu || device.is_some() {
        // The row loop: the rows' offsets and (uncoalesced) the elements grouped by row, in
        // stored order, from the checked host indices (a coalesced tensor's are grouped).
        let start = row_offsets(&idx[..nnz], m as usize)?;
        let order = if c.coalesced { Vec::new() } else { group_by_row(&idx[..nnz], &start) };
        let Some(run) = device else {
            return cpu_spmm(m, d, &c.values, &idx[nnz..], &start, &order);
        };
        let crow = long_tensor(start, &[m + 1], dev)?;
        let order = (!order.is_empty()).then(|| long_tensor(order, &[nnz as i64], dev)).transpose()?;
        let col = ops::contiguous(&ops::select(&c.indices, 0, 1)?, MemoryFormat::Contiguous)?;
        return run_device_spmm(run, m, d, &c.values, &crow, &col, order.as_ref());
    }
    let cols = ops::select(&c.indices, 0, 1)?;
    let rows = ops::select(&c.indices, 0, 0)?;
    let gathered = ops::mul(&ops::index_select(d, 0, &cols)?, &ops::unsqueeze(&c.values, 1)?)?;
    let out = zeros(&[m, n], d.dtype(), dev)?;
    ops::index_add_(&out, 0, &rows, &gathered, Scalar::Int(1))
}

/// The elements grouped by row, in stored order within a row: positions `start[r]..start[r +
/// 1]` of the result list row `r`'s elements (`start` from [`row_offsets`] of `rows`).
fn group_by_row(rows: &[i64], start: &[i64]) -> Vec<i64> {
    let mut fill = start[..start.len() - 1].to_vec();
    let mut by_row = vec![0i64; rows.len()];
    for (k, &r) in rows.iter().enumerate() {
        by_row[fill[r as usize] as usize] = k as i64;
        fill[r as usize] += 1;
    }
    by_row
}

/// The device's sparse @ dense loop for a strided `d` off the CPU, when its backend has one
/// for `d`'s dtype (the floating dtypes).
fn device_spmm(d: &Tensor) -> Option<crate::native::stub::SpmmLoop> {
    let float = matches!(d.dtype(), ScalarType::F32 | ScalarType::F64 | ScalarType::F16 | ScalarType::BF16);
    (!d.device().is_cpu() && float).then(|| crate::native::stub::spmm_loop(d.device(), d.dtype())).flatten()
}

/// `sparse @ dense` on the CPU (f32 or f64) into a new `[m, n]` tensor: row `r` sums
/// `values[k] * d[cols[k]]` over its elements `k`, which are `order[start[r]..start[r + 1]]`
/// (the positions themselves when `order` is empty: the elements already grouped by row), in
/// that order (`vec::spmm_row_*`, vectorised for the CPU at hand). Every column index was
/// checked against `d`'s rows.
fn cpu_spmm(m: i64, d: &Tensor, values: &Tensor, cols: &[i64], start: &[i64], order: &[i64]) -> Result<Tensor> {
    use crate::native::cpu::vec;
    let out = zeros(&[m, d.sizes()[1]], d.dtype(), d.device())?;
    let dd = ops::contiguous(d, MemoryFormat::Contiguous)?;
    let vals = ops::contiguous(values, MemoryFormat::Contiguous)?;
    match out.dtype() {
        ScalarType::F32 => spmm_rows::<f32>(&out, &dd, &vals, cols, start, order, vec::spmm_row_f32)?,
        _ => spmm_rows::<f64>(&out, &dd, &vals, cols, start, order, vec::spmm_row_f64)?,
    }
    Ok(out)
}

/// The device's loop (Note [Row-wise sparse products] in kernels-cuda) into a new `[m, n]`
/// tensor on `d`'s device, with the row offsets `crow` and (when given) `order` as int64 device
/// tensors (see [`crate::native::stub::SpmmLoop`]).
fn run_device_spmm(
    run: crate::native::stub::SpmmLoop,
    m: i64,
    d: &Tensor,
    values: &Tensor,
    crow: &Tensor,
    col: &Tensor,
    order: Option<&Tensor>,
) -> Result<Tensor> {
    let out = ops::empty(&[m, d.sizes()[1]], Some(d.dtype()), None, Some(d.device()), None, None)?;
    let vals = ops::contiguous(values, MemoryFormat::Contiguous)?;
    run(&out, &ops::contiguous(d, MemoryFormat::Contiguous)?, &vals, crow, col, order)?;
    Ok(out)
}

type SpmmRow<T> = fn(&mut [T], &[T], &[T], &[i64], std::ops::Range<usize>, &[i64]);

/// The rows of [`cpu_spmm`] in parallel, through `row` for `T`: `out` is a fresh contiguous
/// `[m, n]` tensor of zeros, `dense` and `vals` contiguous.
fn spmm_rows<T: c10::Element + Copy + Send + Sync>(
    out: &Tensor,
    dense: &Tensor,
    vals: &Tensor,
    cols: &[i64],
    start: &[i64],
    order: &[i64],
    row: SpmmRow<T>,
) -> Result<()> {
    use rayon::prelude::*;
    let n = out.sizes()[1] as usize;
    if n == 0 || start.len() < 2 {
        return Ok(());
    }
    let (o, d, v) = (out.typed_data_ptr::<T>()?, dense.typed_data_ptr::<T>()?, vals.typed_data_ptr::<T>()?);
    // SAFETY: the three are contiguous tensors of `T` (checked by `typed_data_ptr`'s dtype
    // check), each addressing `numel` adjacent elements alive while borrowed; `out` is a fresh
    // tensor no other slice aliases.
    let (o, d, v) = unsafe {
        (
            std::slice::from_raw_parts_mut(o, out.numel() as usize),
            std::slice::from_raw_parts(d, dense.numel() as usize),
            std::slice::from_raw_parts(v, vals.numel() as usize),
        )
    };
    let body = |(r, orow): (usize, &mut [T])| row(orow, d, v, cols, start[r] as usize..start[r + 1] as usize, order);
    if cols.len() * n >= 1 << 15 && crate::parallel::get_num_threads() > 1 {
        crate::parallel::warm();
        o.par_chunks_mut(n).enumerate().for_each(body);
    } else {
        o.chunks_mut(n).enumerate().for_each(body);
    }
    Ok(())
}

/// `sparse @ sparse` (both 2-D, no dense dimensions): a coalesced COO product.
fn spspmm(op: &str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let ca = coo(op, &ops::coalesce(a)?)?;
    let cb = coo(op, &ops::coalesce(b)?)?;
    if ca.sparse_dim != 2 || cb.sparse_dim != 2 || ca.dense_dim != 0 || cb.dense_dim != 0 {
        return Err(Error::invalid(op, format!("{op}: sparse matrices expected (2 sparse dimensions, no dense ones)")));
    }
    check_inner_sizes(op, a, b)?;
    same_device(op, a, b)?;
    let (m, n) = (a.sizes()[0], b.sizes()[1]);
    let dtype = c10::promote_types(a.dtype(), b.dtype());
    let ia = host_indices(&ca.indices)?;
    let ib = host_indices(&cb.indices)?;
    let (na, nb) = (ca.nnz() as usize, cb.nnz() as usize);
    linear_index(op, &ia, na, a.sizes())?;
    linear_index(op, &ib, nb, b.sizes())?;
    // The product's pattern: for each (i, k) in a and (k, j) in b, a pair (a elt, b elt) at
    // (i, j). b is coalesced, so its elements are sorted by row: row k's are found by binary
    // search (no table as long as b's rows, which may far outnumber its elements).
    let brows = &ib[..nb];
    let (mut out_lin, mut pa, mut pb) = (Vec::new(), Vec::new(), Vec::new());
    for p in 0..na {
        let (i, k) = (ia[p], ia[na + p]);
        let lo = brows.partition_point(|&r| r < k);
        let hi = brows.partition_point(|&r| r <= k);
        for q in lo..hi {
            out_lin.push(i * n + ib[nb + q]);
            pa.push(p as i64);
            pb.push(q as i64);
        }
    }
    let np = out_lin.len();
    let dev = a.device();
    let va = ops::index_select(&scaled(&ca.values, &Scalar::Int(1), dtype)?, 0, &long_tensor(pa, &[np as i64], dev)?)?;
    let vb = ops::index_select(&scaled(&cb.values, &Scalar::Int(1), dtype)?, 0, &long_tensor(pb, &[np as i64], dev)?)?;
    let prod = ops::mul(&va, &vb)?;
    let mut idx = vec![0i64; 2 * np];
    for (q, &l) in out_lin.iter().enumerate() {
        idx[q] = l / n.max(1);
        idx[np + q] = l % n.max(1);
    }
    let r = new_coo(&[m, n], &long_tensor(idx, &[2, np as i64], dev)?, &prod, false)?;
    ops::_coalesce(&r)
}

/// `addmm` with a sparse `mat1`: `beta * self + alpha * (mat1 @ mat2)`, strided.
pub fn addmm_sparse(self_: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    let op = "addmm";
    if mat2.layout() != Layout::Strided || self_.layout() != Layout::Strided {
        return Err(Error::invalid(op, "addmm: only a sparse mat1 with strided self and mat2 is supported"));
    }
    let c = coo(op, mat1)?;
    check_mm_operands(op, mat1, &c, mat2)?;
    addmm_from_product(self_, spmm(op, mat1, &c, mat2)?, beta, alpha)
}

/// `beta * self + alpha * prod`, `self` broadcast to the product's shape and ignored when `beta`
/// is zero (the end of every sparse `addmm`).
fn addmm_from_product(self_: &Tensor, prod: Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    let prod = scaled(&prod, &alpha, prod.dtype())?;
    if beta.to_f64() == 0.0 {
        return Ok(prod);
    }
    ops::add(&prod, &ops::expand(self_, prod.sizes(), false)?, beta)
}

/// `mm` with a sparse operand: sparse @ dense is strided, sparse @ sparse is sparse.
pub fn mm_sparse(self_: &Tensor, mat2: &Tensor) -> Result<Tensor> {
    let op = "mm";
    match (self_.layout(), mat2.layout()) {
        (Layout::SparseCoo, Layout::Strided) => {
            let c = coo(op, self_)?;
            check_mm_operands(op, self_, &c, mat2)?;
            spmm(op, self_, &c, mat2)
        }
        (Layout::SparseCoo, Layout::SparseCoo) => spspmm(op, self_, mat2),
        (Layout::Strided, Layout::SparseCoo) => {
            // dense @ sparse = (sparse^T @ dense^T)^T
            let st = transpose_sparse(mat2, 0, 1)?;
            let c = coo(op, &st)?;
            let dt = ops::t(self_)?;
            check_mm_operands(op, &st, &c, &dt)?;
            ops::t(&spmm(op, &st, &c, &dt)?)
        }
        _ => Err(expected_coo(op, self_)),
    }
}

/// `mv` with a sparse matrix (COO or CSR): `mm` with the vector as a column, strided.
pub fn mv_sparse(self_: &Tensor, vec: &Tensor) -> Result<Tensor> {
    if vec.dim() != 1 || self_.dim() != 2 {
        return Err(Error::invalid(
            "mv",
            format!("vector + matrix @ vector expected, got {}, {}, {}", 1, self_.dim(), vec.dim()),
        ));
    }
    ops::squeeze_dim(&ops::mm(self_, &ops::unsqueeze(vec, 1)?)?, 1)
}

/// The rows of `mat1 @ mat2` that can be nonzero: mat1's (sparse COO matrix) distinct stored
/// rows in increasing order, and the product's `[rows, n]` values for them (the row loop of
/// [`spmm`] on mat1 with its rows renumbered).
fn stored_row_products(op: &str, mat1: &Tensor, mat2: &Tensor) -> Result<(Vec<i64>, Tensor)> {
    let c = coo(op, mat1)?;
    check_mm_operands(op, mat1, &c, mat2)?;
    let c = coo(op, &ops::coalesce(mat1)?)?;
    let nnz = c.nnz() as usize;
    let idx = host_indices(&c.indices)?;
    linear_index(op, &idx, nnz, &mat1.sizes()[..2])?;
    // Coalesced: the rows are sorted, so renumbering is a count of distinct ones so far.
    let mut rows: Vec<i64> = Vec::new();
    let mut renumbered = idx.to_vec();
    for (k, &r) in idx[..nnz].iter().enumerate() {
        if rows.last() != Some(&r) {
            rows.push(r);
        }
        renumbered[k] = rows.len() as i64 - 1;
    }
    let u = rows.len() as i64;
    let dev = mat1.device();
    let compact = new_coo(&[u, mat1.sizes()[1]], &long_tensor(renumbered, &[2, nnz as i64], dev)?, &c.values, true)?;
    let cc = coo(op, &compact)?;
    Ok((rows, spmm(op, &compact, &cc, mat2)?))
}

/// `hspmm(Tensor mat1, Tensor mat2) -> Tensor`: sparse @ dense as a hybrid COO tensor (one
/// sparse and one dense dimension) holding the product's rows that can be nonzero: mat1's
/// stored rows, in increasing order (flagged uncoalesced, as PyTorch flags it).
pub fn hspmm(mat1: &Tensor, mat2: &Tensor) -> Result<Tensor> {
    let op = "hspmm";
    let (rows, values) = stored_row_products(op, mat1, mat2)?;
    let u = rows.len() as i64;
    new_coo(&[mat1.sizes()[0], mat2.sizes()[1]], &long_tensor(rows, &[1, u], mat1.device())?, &values, false)
}

/// `sspaddmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor`:
/// `beta * self + alpha * (mat1 @ mat2)` as a sparse COO tensor, with PyTorch's pattern:
/// `self`'s elements as stored, then every column of each row of mat1 that stores something,
/// uncoalesced.
pub fn sspaddmm(self_: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    let op = "sspaddmm";
    let t = coo(op, self_)?;
    let (m, n) = (mat1.sizes().first().copied().unwrap_or(0), mat2.sizes().get(1).copied().unwrap_or(0));
    if t.sparse_dim != 2 || t.dense_dim != 0 || self_.sizes() != [m, n] {
        return Err(Error::shape(
            op,
            format!("sspaddmm: self of shape {:?} does not match the product's [{m}, {n}]", self_.sizes()),
        ));
    }
    if self_.dtype() != mat1.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "sspaddmm: expected self and mat1 to have the same dtype, but got: {} != {}",
                self_.dtype().cpp_name(),
                mat1.dtype().cpp_name()
            ),
        ));
    }
    same_device(op, self_, mat1)?;
    let (rows, values) = stored_row_products(op, mat1, mat2)?;
    let u = rows.len();
    let nu = (u as i64).checked_mul(n).ok_or_else(|| Error::invalid(op, "sspaddmm: nnz overflows"))?;
    let mut idx = vec![0i64; 2 * nu as usize];
    for (p, &r) in rows.iter().enumerate() {
        for j in 0..n as usize {
            idx[p * n as usize + j] = r;
            idx[nu as usize + p * n as usize + j] = j as i64;
        }
    }
    let dev = self_.device();
    let indices = ops::cat(&[t.indices.clone(), long_tensor(idx, &[2, nu], dev)?], 1)?;
    let values = ops::cat(
        &[scaled(&t.values, &beta, self_.dtype())?, scaled(&ops::reshape(&values, &[nu])?, &alpha, self_.dtype())?],
        0,
    )?;
    new_coo(&[m, n], &indices, &values, false)
}

/// `_sparse_addmm(Tensor self, Tensor sparse, Tensor dense, *, Scalar beta=1, Scalar alpha=1)`:
/// `addmm` whose gradient for the sparse operand keeps its pattern (`torch.sparse.mm`).
pub fn _sparse_addmm(self_: &Tensor, sparse: &Tensor, dense: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    addmm_sparse(self_, sparse, dense, beta, alpha)
}

/// `_sparse_mm(Tensor sparse, Tensor dense) -> Tensor` (`torch.sparse.mm`): sparse @ sparse is
/// sparse; sparse @ dense goes through `_sparse_addmm`, whose gradient is masked.
pub fn _sparse_mm(sparse: &Tensor, dense: &Tensor) -> Result<Tensor> {
    if sparse.layout() != Layout::SparseCoo || dense.layout() == Layout::SparseCoo {
        return ops::mm(sparse, dense);
    }
    let z = zeros(&[sparse.sizes()[0], dense.sizes().get(1).copied().unwrap_or(0)], dense.dtype(), dense.device())?;
    ops::_sparse_addmm(&z, sparse, dense, Scalar::Int(0), Scalar::Int(1))
}

/// The gradient of `_sparse_addmm` for its sparse operand: `alpha * grad @ dense^T` at the
/// sparse operand's stored positions.
///
/// Only the sampled products are computed: for a stored `(i, k)`, the dot product of row `i` of
/// `grad` with row `k` of `dense` (never the dense `[rows, k]` product, which for a large sparse
/// operand would not fit in memory).
pub fn mm_mat1_sparse_backward(grad: &Tensor, mat1: &Tensor, mat2: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    let op = "mm_mat1_sparse_backward";
    let c = coo(op, &ops::coalesce(mat1)?)?;
    let grad = to_dense(grad, None, None)?;
    let rows = ops::index_select(&grad, 0, &ops::select(&c.indices, 0, 0)?)?;
    let cols = ops::index_select(mat2, 0, &ops::select(&c.indices, 0, 1)?)?;
    let v = ops::sum_dim_intlist(&ops::mul(&rows, &cols)?, Some(&[1]), false, None)?;
    let v = scaled(&v, alpha, v.dtype())?;
    // Sorted and distinct, but flagged otherwise, as PyTorch's.
    new_coo(mat1.sizes(), &c.indices, &v, false)
}

/// `sparse_constructor_values_backward`: the gradient of a COO constructor for its values, the
/// (dense or sparse) gradient read at each index column.
pub fn sparse_constructor_values_backward(grad: &Tensor, indices: &Tensor, size: &[i64]) -> Result<Tensor> {
    project("sparse_coo_tensor_backward", grad, indices, size)
}

/// `values_backward`: the gradient of `values()` as a sparse tensor on `self`'s pattern.
pub fn values_backward(grad: &Tensor, self_: &Tensor) -> Result<Tensor> {
    let c = coo("values_backward", self_)?;
    new_coo(self_.sizes(), &c.indices, grad, c.coalesced)
}

// ---- embeddings ------------------------------------------------------------------------------

/// `embedding_sparse_backward(Tensor grad, Tensor indices, int num_weights, int padding_idx,
/// bool scale_grad_by_freq) -> Tensor`: the gradient of an embedding table as an uncoalesced COO
/// tensor, one stored row per looked-up position (the padding index's dropped);
/// `scale_grad_by_freq` is refused, as PyTorch refuses it.
pub fn embedding_sparse_backward(
    grad: &Tensor,
    indices: &Tensor,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let op = "embedding_backward";
    if !matches!(indices.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(Error::invalid(
            op,
            format!(
                "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got {} instead",
                indices.dtype().cpp_name()
            ),
        ));
    }
    if scale_grad_by_freq {
        // PyTorch 2.15 refuses the combination with these words.
        return Err(Error::invalid(op, "embedding_backward: scale_grad_by_freq not supported with sparse gradients"));
    }
    let dim = grad.sizes().last().copied().unwrap_or(1);
    let ids: Vec<i64> = indices.to_vec::<i64>()?;
    for &i in &ids {
        if i < 0 || i >= num_weights {
            return Err(Error::IndexOutOfRange { op: op.into(), index: i, dim: 0, size: num_weights });
        }
    }
    let keep: Vec<i64> = (0..ids.len() as i64).filter(|&k| ids[k as usize] != padding_idx).collect();
    let kept_ids: Vec<i64> = keep.iter().map(|&k| ids[k as usize]).collect();
    let dev = grad.device();
    let n = keep.len() as i64;
    let g = ops::reshape(grad, &[ids.len() as i64, dim])?;
    let values = if keep.len() == ids.len() {
        // A view of the incoming gradient where it is one, as PyTorch's (Note [The pattern of
        // a sparse sum]).
        g
    } else {
        ops::index_select(&g, 0, &long_tensor(keep, &[n], dev)?)?
    };
    let idx = long_tensor(kept_ids, &[1, n], dev)?;
    new_coo(&[num_weights, dim], &idx, &values, false)
}

// ---- compressed rows (CSR) -------------------------------------------------------------------

/// The members of a CSR tensor, with `batch` leading batch dimensions (every batch stores the
/// same number of elements, as PyTorch requires).
#[derive(Clone, Debug)]
pub struct Csr {
    /// `[*batch, nrows + 1]` row offsets.
    pub crow: Tensor,
    /// `[*batch, nnz]` column of each stored element, sorted and distinct within a row.
    pub col: Tensor,
    /// `[*batch, nnz, *dense_sizes]`.
    pub values: Tensor,
}

impl Csr {
    /// The number of batch dimensions.
    pub fn batch_dims(&self) -> usize {
        self.crow.dim().saturating_sub(1)
    }
}

/// The parts of the CSR tensor `t`, or `op`'s error for another layout.
pub fn csr(op: &str, t: &Tensor) -> Result<Csr> {
    let sp = t.sparse_impl().filter(|s| s.layout() == Layout::SparseCsr).ok_or_else(|| {
        Error::invalid(op, format!("{op} expected sparse compressed tensor layout but got {}", t.layout().short_name()))
    })?;
    let p = sp.parts();
    let col = p.col_indices.ok_or_else(|| Error::invalid(op, "a CSR tensor without column indices"))?;
    Ok(Csr { crow: Tensor::from_arc(p.indices), col: Tensor::from_arc(col), values: Tensor::from_arc(p.values) })
}

/// A CSR tensor over checked members (see [`validate_csr`]).
pub fn new_csr(sizes: &[i64], crow: &Tensor, col: &Tensor, values: &Tensor) -> Result<Tensor> {
    c10::size::numel("sparse_csr_tensor", sizes)?;
    let batch = crow.dim() as i64 - 1;
    let dense_dim = values.dim() as i64 - 1 - batch;
    let parts =
        SparseParts { indices: member(crow), col_indices: Some(member(col)), values: member(values), coalesced: true };
    let imp = SparseImpl::new(Layout::SparseCsr, 2, dense_dim, parts);
    Ok(Tensor::from_impl(TensorImpl::new_sparse(sizes, values.dtype(), values.device(), imp)))
}

/// PyTorch's checks of compressed-row members (`_validate_sparse_compressed_tensor_args`), in
/// its order and words, always run (Note [Indices are checked where they are used]); each
/// batch's offsets and columns are checked on their own.
fn validate_csr(op: &str, crow: &Tensor, col: &Tensor, values: &Tensor, size: &[i64]) -> Result<()> {
    let bad = |m: &str| Err(Error::invalid(op, m.to_string()));
    if crow.dtype() != col.dtype() || !matches!(crow.dtype(), ScalarType::I64 | ScalarType::I32) {
        return bad(&format!(
            "crow_indices and col_indices must have the same dtype, bot got {} and {}, respectively",
            crow.dtype().cpp_name(),
            col.dtype().cpp_name()
        ));
    }
    if crow.dim() == 0 {
        return bad("crow_indices must have dimensionality >= 1 but got 0");
    }
    if crow.dim() != col.dim() {
        return bad(&format!(
            "crow_indices and col_indices dimensionalities must be equal but got {} and {}, respectively",
            crow.dim(),
            col.dim()
        ));
    }
    let b = crow.dim() - 1;
    if values.dim() < b + 1 {
        return bad(&format!(
            "values must have dimensionality > sum of batch and block dimensionalities (={b} + 0) but got {}",
            values.dim()
        ));
    }
    let dense_dim = values.dim() - 1 - b;
    if size.len() != b + 2 + dense_dim {
        return bad(&format!(
            "tensor dimensionality must be sum of batch, base, and dense dimensionalities (={b} + 2 + {dense_dim}) but got {}",
            size.len()
        ));
    }
    if size.iter().any(|&s| s < 0) {
        return bad(&format!("Trying to create tensor with negative dimension: {size:?}"));
    }
    let batch = &size[..b];
    if crow.sizes()[..b] != *batch || col.sizes()[..b] != *batch || values.sizes()[..b] != *batch {
        return bad(&format!(
            "all batch dimensions of crow_indices (={:?}), col_indices (={:?}), and values (={:?}) must be equal to tensor batch dimensions (={batch:?})",
            &crow.sizes()[..b],
            &col.sizes()[..b],
            &values.sizes()[..b]
        ));
    }
    let (nrows, ncols) = (size[b], size[b + 1]);
    if crow.sizes()[b] != nrows + 1 {
        return bad(&format!(
            "crow_indices.shape[-1] must be equal to the number of rows + 1 (={}), but got {}",
            nrows + 1,
            crow.sizes()[b]
        ));
    }
    let nnz = values.sizes()[b];
    if col.sizes()[b] != nnz {
        return bad(&format!(
            "col_indices.shape[-1] must be equal to nnz (={nnz}) as defined by values.shape[{b}], but got {}",
            col.sizes()[b]
        ));
    }
    if values.sizes()[b + 1..] != size[b + 2..] {
        return bad(&format!(
            "values.shape[{}:] must be the dense sizes {:?}, but got {:?}",
            b + 1,
            &size[b + 2..],
            &values.sizes()[b + 1..]
        ));
    }
    if crow.device() != values.device() || col.device() != values.device() {
        return bad("crow_indices, col_indices and values must be on the same device");
    }
    let all_r = crow.to_vec::<i64>()?;
    let all_c = col.to_vec::<i64>()?;
    let (rn, cn) = (nrows as usize + 1, nnz as usize);
    for (r, c) in all_r.chunks(rn).zip(all_c.chunks(cn.max(1)).chain(std::iter::repeat(&[][..]))) {
        if r[0] != 0 {
            return bad("`crow_indices[..., 0] == 0` is not satisfied.");
        }
        if r[nrows as usize] != nnz {
            return bad("`crow_indices[..., -1] == nnz` is not satisfied.");
        }
        if r.windows(2).any(|w| w[1] - w[0] < 0 || w[1] - w[0] > ncols) {
            return bad("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied.");
        }
        if c.iter().any(|&x| x < 0 || x >= ncols) {
            return bad("`0 <= col_indices < ncols` is not satisfied.");
        }
        for w in r.windows(2) {
            if c[w[0] as usize..w[1] as usize].windows(2).any(|p| p[0] >= p[1]) {
                return bad("`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, ..., nrows are sorted and distinct along the last dimension values` is not satisfied.");
            }
        }
    }
    Ok(())
}

/// `sparse_csr_tensor.crow_col_value_size(Tensor crow_indices, Tensor col_indices, Tensor
/// values, int[] size, *, ...)`: a CSR tensor, its members checked.
#[allow(clippy::too_many_arguments)]
pub fn sparse_csr_tensor(
    crow_indices: &Tensor,
    col_indices: &Tensor,
    values: &Tensor,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    _pin_memory: Option<bool>,
) -> Result<Tensor> {
    let op = "sparse_csr_tensor";
    if let Some(l) = layout.filter(|&l| l != Layout::SparseCsr) {
        return Err(Error::invalid(op, format!("expected sparse_csr layout, but got layout {}", l.short_name())));
    }
    for t in [crow_indices, col_indices, values] {
        t.check_strided(op)?;
    }
    validate_csr(op, crow_indices, col_indices, values, size)?;
    let mut v = values.clone();
    let (mut r, mut c) = (crow_indices.clone(), col_indices.clone());
    if let Some(dt) = dtype.filter(|&d| d != v.dtype()) {
        v = ops::to(&v, dt, false, false, None)?;
    }
    if let Some(dev) = device.filter(|&d| d != v.device()) {
        v = v.to_device(dev)?;
        r = r.to_device(dev)?;
        c = c.to_device(dev)?;
    }
    new_csr(size, &r, &c, &v)
}

/// `sparse_csr_tensor.crow_col_value(...)`: the batch sizes and the number of rows from
/// `crow_indices`, of columns one past the largest column index.
#[allow(clippy::too_many_arguments)]
pub fn sparse_csr_tensor_infer(
    crow_indices: &Tensor,
    col_indices: &Tensor,
    values: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let op = "sparse_csr_tensor";
    let b = crow_indices.dim().saturating_sub(1);
    if crow_indices.dim() == 0 || col_indices.dim() != crow_indices.dim() || values.dim() < b + 1 {
        // The full checks word the error.
        return sparse_csr_tensor(crow_indices, col_indices, values, &[], dtype, layout, device, pin_memory);
    }
    if crow_indices.sizes()[b] == 0 {
        return Err(Error::invalid(op, "crow_indices must have at least one element (nrows + 1)"));
    }
    let max_col =
        if col_indices.numel() == 0 { -1 } else { col_indices.to_vec::<i64>()?.into_iter().max().unwrap_or(-1) };
    // A column index of i64::MAX leaves no column count to infer (PyTorch's `max + 1` wraps).
    let ncols = max_col.checked_add(1).ok_or_else(|| {
        Error::invalid(op, format!("col_indices holds {max_col}, so the number of columns (one more) overflows int64"))
    })?;
    let mut size = crow_indices.sizes()[..b].to_vec();
    size.extend([crow_indices.sizes()[b] - 1, ncols]);
    size.extend_from_slice(&values.sizes()[b + 1..]);
    sparse_csr_tensor(crow_indices, col_indices, values, &size, dtype, layout, device, pin_memory)
}

/// `crow_indices(Tensor(a) self) -> Tensor(a)`.
pub fn crow_indices(self_: &Tensor) -> Result<Tensor> {
    Ok(alias(&csr("crow_indices", self_)?.crow))
}

/// `col_indices(Tensor(a) self) -> Tensor(a)`.
pub fn col_indices(self_: &Tensor) -> Result<Tensor> {
    Ok(alias(&csr("col_indices", self_)?.col))
}

/// `values` of a CSR tensor: its stored values.
pub fn csr_values(self_: &Tensor) -> Result<Tensor> {
    Ok(alias(&csr("values", self_)?.values))
}

/// The COO form of a CSR tensor: its batch coordinates and one row index per stored element,
/// coalesced (batches and rows in order, columns sorted within them); `batch + 2` sparse
/// dimensions.
fn csr_to_coo(op: &str, t: &Tensor) -> Result<Tensor> {
    let c = csr(op, t)?;
    let b = c.batch_dims();
    let batch = &t.sizes()[..b];
    let batches = product(op, batch)? as usize;
    let r = c.crow.to_vec::<i64>()?;
    let nnz = c.values.sizes()[b] as usize;
    let total = batches * nnz;
    let mut idx = Vec::with_capacity((b + 2) * total);
    // The batch coordinates of each element, one row per batch dimension.
    for d in 0..b {
        let inner: usize = batch[d + 1..].iter().product::<i64>() as usize;
        for i in 0..batches {
            idx.extend(std::iter::repeat_n((i / inner) as i64 % batch[d], nnz));
        }
    }
    for offsets in r.chunks(t.sizes()[b] as usize + 1) {
        for (row, w) in offsets.windows(2).enumerate() {
            idx.extend(std::iter::repeat_n(row as i64, (w[1] - w[0]) as usize));
        }
    }
    idx.extend(c.col.to_vec::<i64>()?);
    let indices = long_tensor(idx, &[b as i64 + 2, total as i64], t.device())?;
    let mut vshape = vec![total as i64];
    vshape.extend_from_slice(&c.values.sizes()[b + 1..]);
    new_coo(t.sizes(), &indices, &ops::reshape(&c.values, &vshape)?, true)
}

/// `_to_sparse.sparse_dim` of a CSR tensor: its COO form (two sparse dimensions, and the
/// batch dimensions).
pub fn csr_to_sparse(self_: &Tensor, sparse_dim: i64) -> Result<Tensor> {
    let b = csr("to_sparse", self_)?.batch_dims() as i64;
    if sparse_dim != 2 + b {
        return Err(Error::invalid(
            "to_sparse",
            format!("to_sparse: conversion from SparseCsr to Sparse with sparse_dim argument {sparse_dim} != 2 is not supported"),
        ));
    }
    csr_to_coo("to_sparse", self_)
}

/// `_to_dense` of a CSR tensor.
pub fn csr_to_dense(self_: &Tensor, dtype: Option<ScalarType>, masked_grad: Option<bool>) -> Result<Tensor> {
    _to_dense(&csr_to_coo("to_dense", self_)?, dtype, masked_grad)
}

/// `_to_sparse_csr(Tensor self, int? dense_dim=None) -> Tensor` of a strided or COO tensor:
/// the coalesced COO form's rows counted into offsets. Sparse dimensions before the last two
/// are batch dimensions, each batch storing the same number of elements (PyTorch's rule).
pub fn to_sparse_csr_impl(self_: &Tensor, dense_dim: Option<i64>) -> Result<Tensor> {
    let op = "to_sparse_csr";
    if self_.layout() == Layout::SparseCsr {
        return Ok(self_.clone());
    }
    let dd = dense_dim.unwrap_or(0);
    let s = match self_.layout() {
        Layout::SparseCoo => ops::coalesce(self_)?,
        _ => {
            // `dim - 2 < dd`, not `dim < 2 + dd`: a dense_dim near i64::MAX must not overflow.
            if dd < 0 || (self_.dim() as i64) - 2 < dd {
                return Err(Error::invalid(
                    op,
                    format!(
                        "to_sparse_csr: expected at least {} dimensions (2 sparse dimensions and {dd} dense), got {}-d",
                        dd.saturating_add(2),
                        self_.dim()
                    ),
                ));
            }
            ops::_to_sparse(self_, self_.dim() as i64 - dd)?
        }
    };
    let c = coo(op, &s)?;
    if c.sparse_dim < 2 {
        return Err(Error::invalid(op, format!("to_sparse_csr: expected 2 sparse dimensions, got {}", c.sparse_dim)));
    }
    let b = c.sparse_dim - 2;
    let sizes = s.sizes();
    let batches = product(op, &sizes[..b])? as usize;
    let nnz = c.nnz() as usize;
    let idx = host_indices(&c.indices)?;
    // Each element's batch (row-major over the batch dims); coalesced, so batches are in order.
    let mut batch_of = vec![0usize; nnz];
    for d in 0..b {
        for (k, bo) in batch_of.iter_mut().enumerate() {
            *bo = *bo * sizes[d] as usize + idx[d * nnz + k] as usize;
        }
    }
    let per = nnz.checked_div(batches).unwrap_or(0);
    let mut counts = c10::size::try_vec_filled(0usize, batches)?;
    for &bo in &batch_of {
        counts[bo] += 1;
    }
    if counts.iter().any(|&n| n != per) {
        return Err(Error::invalid(op, "Expect the same number of specified elements per batch."));
    }
    let nrows = sizes[b] as usize;
    let rows = &idx[b * nnz..(b + 1) * nnz];
    // Sized from the shape, not the stored elements: `[2^40, 3]` with one element asks for 2^40
    // row offsets, an out-of-memory error as in PyTorch (Note [Fallible scratch buffers]).
    let mut crow = c10::size::try_vec(batches.saturating_mul(nrows.saturating_add(1)))?;
    for i in 0..batches {
        crow.extend(row_offsets(&rows[i * per..(i + 1) * per], nrows)?);
    }
    let dev = s.device();
    let lead = &sizes[..b];
    let crow = long_tensor(crow, &[lead, &[nrows as i64 + 1]].concat(), dev)?;
    let col = long_tensor(idx[(b + 1) * nnz..].to_vec(), &[lead, &[per as i64]].concat(), dev)?;
    let mut vshape = [lead, &[per as i64]].concat();
    vshape.extend_from_slice(&c.values.sizes()[1..]);
    new_csr(sizes, &crow, &col, &ops::reshape(&c.values, &vshape)?)
}

/// `to_sparse_csr(Tensor self, int? dense_dim=None) -> Tensor`.
pub fn to_sparse_csr(self_: &Tensor, dense_dim: Option<i64>) -> Result<Tensor> {
    ops::_to_sparse_csr(self_, dense_dim)
}

/// `mul.Scalar` of a CSR tensor: each stored value scaled.
pub fn csr_mul_scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    let c = csr("mul", self_)?;
    new_csr(self_.sizes(), &c.crow, &c.col, &ops::mul_scalar(&c.values, other)?)
}

/// `add.Tensor` with a CSR operand: dense + CSR is dense, CSR + CSR is CSR (through the COO
/// forms).
pub fn csr_add(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let op = "add";
    let to_coo = |t: &Tensor| if t.layout() == Layout::SparseCsr { csr_to_coo(op, t) } else { Ok(t.clone()) };
    let r = ops::add(&to_coo(self_)?, &to_coo(other)?, alpha)?;
    if r.layout() == Layout::Strided {
        return Ok(r);
    }
    to_sparse_csr_impl(&r, None)
}

/// `add_.Tensor` into a dense tensor from a CSR one.
pub fn csr_add_(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    if self_.layout() != Layout::Strided {
        return Err(Error::invalid("add_", "add_: in-place addition into a sparse compressed tensor is not supported"));
    }
    ops::add_(self_, &csr_to_coo("add_", other)?, alpha)
}

/// `sparse_csr @ dense` into a new `[rows, cols]` tensor: each row's stored elements in order
/// (the rows are already grouped, so the loop of [`spmm_rows`] runs on the offsets directly).
fn csr_spmm(op: &str, s: &Tensor, c: &Csr, d: &Tensor) -> Result<Tensor> {
    if s.dim() != 2 {
        // Batched or hybrid: PyTorch's CPU kernels take neither.
        return Err(Error::invalid(op, format!("addmm: self must be a matrix, got {}-D tensor", s.dim())));
    }
    check_matrix_product(op, s, d)?;
    if let Some(run) = device_spmm(d) {
        // The members were checked at construction (validate_csr): offsets within nnz,
        // columns within the matrix; the loop reads them on the device as they are.
        let long =
            |t: &Tensor| ops::contiguous(&ops::to(t, ScalarType::I64, false, false, None)?, MemoryFormat::Contiguous);
        return run_device_spmm(run, s.sizes()[0], d, &c.values, &long(&c.crow)?, &long(&c.col)?, None);
    }
    if !(d.device().is_cpu() && matches!(d.dtype(), ScalarType::F32 | ScalarType::F64)) {
        let coo_form = csr_to_coo(op, s)?;
        let cc = coo(op, &coo_form)?;
        return spmm(op, &coo_form, &cc, d);
    }
    // The members were checked at construction (validate_csr): offsets within nnz, columns
    // within the matrix.
    cpu_spmm(s.sizes()[0], d, &c.values, &host_indices(&c.col)?, &host_indices(&c.crow)?, &[])
}

/// `mm` with a CSR `self`: strided.
pub fn csr_mm(self_: &Tensor, mat2: &Tensor) -> Result<Tensor> {
    let c = csr("mm", self_)?;
    csr_spmm("mm", self_, &c, mat2)
}

/// `addmm` with a CSR `mat1`: `beta * self + alpha * (mat1 @ mat2)`.
pub fn csr_addmm(self_: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    let c = csr("addmm", mat1)?;
    addmm_from_product(self_, csr_spmm("addmm", mat1, &c, mat2)?, beta, alpha)
}
