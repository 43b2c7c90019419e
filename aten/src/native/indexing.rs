//! Indexing operators: advanced indexing (`index.Tensor`, `index_put`), `index_select`,
//! `gather`, the `scatter` family, `index_add`/`index_copy`/`index_fill`, `take`,
//! `masked_select`/`masked_scatter`, `nonzero`/`count_nonzero`, `embedding` and `one_hot`.
//!
//! Every kernel turns its index arguments into flat (row-major) positions in a contiguous copy
//! of the data and moves elements by those positions (See Note [Reference data movement]).
//! In-place variants compute the result and copy it back into `self`; `out=` variants check the
//! out tensor's shape and dtype (out tensors are not resized).

use c10::tensor_impl::contiguous_strides;
use c10::{Device, Error, MemoryFormat, Result, Scalar, ScalarType};

use crate::native::copy::copy_into;
use crate::native::cpu::gather::{
    dim_map, for_each_index, identity_map, scalar_as, separable_index, take_all, zeros_of, ElemArith,
};
use crate::native::join::write_out;
use crate::native::tensor_iterator::broadcast_shapes;
use crate::{ops, wrap_dim, Tensor};

/// Writes `r` into `self_` and returns `self_` (the tail of every in-place variant).
fn assign(self_: &Tensor, r: &Tensor) -> Result<Tensor> {
    copy_into(self_, r)?;
    Ok(self_.clone())
}

/// The values of an index tensor, which must have one of the `allowed` dtypes (else the error
/// says `msg`, then `, but got <dtype>` when `but_got`).
fn index_values(op: &str, t: &Tensor, allowed: &[ScalarType], msg: &str, but_got: bool) -> Result<Vec<i64>> {
    if !allowed.contains(&t.dtype()) {
        let got = if but_got { format!(", but got {}", t.dtype().cpp_name()) } else { String::new() };
        return Err(Error::invalid(op, format!("{msg}{got}")));
    }
    t.to_vec::<i64>()
}

/// Sizes with a zero-dim tensor seen as one element along one dimension (`ensure_nonempty`).
fn nonempty_sizes(t: &Tensor) -> Vec<i64> {
    if t.dim() == 0 {
        vec![1]
    } else {
        t.sizes().to_vec()
    }
}

/// Checks `0 <= i < size` (or `-size <= i < size` when `wrap`) and returns the wrapped index.
fn check_index(op: &str, i: i64, dim: usize, size: i64, wrap: bool) -> Result<i64> {
    let lo = if wrap { -size } else { 0 };
    if i < lo || i >= size {
        return Err(Error::IndexOutOfRange { op: op.into(), index: i, dim: dim as i64, size });
    }
    Ok(if i < 0 { i + size } else { i })
}

// ---- index_select, gather, take ---------------------------------------------------------------

fn index_select_impl(self_: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let op = "index_select";
    if index.dim() > 1 {
        return Err(Error::invalid(op, "index_select(): Index is supposed to be a vector"));
    }
    if !self_.device().is_cpu() {
        return index_select_on_device(self_, dim, index);
    }
    let idx = index_values(
        op,
        index,
        &[ScalarType::I64, ScalarType::I32],
        "index_select(): Expected dtype int32 or int64 for index",
        false,
    )?;
    let d = wrap_dim(op, dim, self_.dim())?;
    let sizes = nonempty_sizes(self_);
    let map = idx.iter().map(|&i| check_index(op, i, d, sizes[d], false).map(Some)).collect::<Result<Vec<_>>>()?;
    let mut out_sizes = sizes.clone();
    out_sizes[d] = map.len() as i64;
    if self_.dim() == 0 {
        out_sizes.clear();
        if idx.len() != 1 {
            return Err(Error::invalid(op, "index_select(): Index to scalar can have only 1 value"));
        }
    }
    if c10::size::numel(op, &out_sizes)? == 0 {
        // The other dims' maps are as long as those dims, which can be huge when empty.
        return zeros_of(&out_sizes, self_.dtype());
    }
    if self_.is_contiguous() && self_.dim() > 0 && !self_.dtype().is_complex() {
        if let Some(rows) = map.iter().map(|m| m.map(|i| i as usize)).collect::<Option<Vec<usize>>>() {
            return select_slabs(self_, d, &rows, &out_sizes);
        }
    }
    let mut maps: Vec<Vec<Option<i64>>> = sizes.iter().map(|&n| identity_map(n)).collect::<Result<_>>()?;
    maps[d] = map;
    let pos: Vec<usize> = separable_index(&sizes, &maps)?.into_iter().flatten().collect();
    take_all(self_, &pos, &out_sizes)
}

/// `index_select` of a contiguous CPU tensor: for each outer position, the selected slabs
/// (`inner` elements each) copied as bytes, without reading the rest of `self` (an embedding
/// lookup reads only the rows it looks up, not the whole table).
fn select_slabs(self_: &Tensor, d: usize, map: &[usize], out_sizes: &[i64]) -> Result<Tensor> {
    let sizes = self_.sizes();
    let outer: usize = sizes[..d].iter().product::<i64>() as usize;
    let inner: usize = sizes[d + 1..].iter().product::<i64>() as usize;
    let esize = self_.dtype().size();
    let (n, k) = (sizes[d] as usize, map.len());
    let out = Tensor::empty_uninit(out_sizes, self_.dtype(), self_.device())?;
    let src = self_.data_ptr() as *const u8;
    let dst = out.data_ptr();
    let slab = inner * esize;
    for o in 0..outer {
        for (j, &i) in map.iter().enumerate() {
            // SAFETY: `self_` is contiguous with `outer * n * inner` elements and `i < n` (checked
            // by `check_index`); `out` is a fresh contiguous `outer * k * inner` tensor. The two
            // are different allocations.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.add(((o * n + i) * inner) * esize),
                    dst.add((o * k + j) * slab),
                    slab,
                );
            }
        }
    }
    Ok(out)
}

/// `index_select` on a device other than the CPU (Note [Device gathers]): the same checks,
/// the index's range checked from its minimum and maximum (two numbers copied to the host, as
/// PyTorch's CUDA kernel checks on the device), then the index itself is the gather map of `dim`.
fn index_select_on_device(self_: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let op = "index_select";
    if index.device() != self_.device() {
        return Err(Error::DeviceMismatch {
            op: op.into(),
            a: self_.device().to_string(),
            b: index.device().to_string(),
        });
    }
    if !matches!(index.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(Error::invalid(op, "index_select(): Expected dtype int32 or int64 for index"));
    }
    let d = wrap_dim(op, dim, self_.dim())?;
    let sizes = nonempty_sizes(self_);
    let n = index.numel();
    if self_.dim() == 0 && n != 1 {
        return Err(Error::invalid(op, "index_select(): Index to scalar can have only 1 value"));
    }
    if n > 0 && !index.device().is_meta() {
        for extreme in [crate::ops::amin(index, &[], false)?, crate::ops::amax(index, &[], false)?] {
            check_index(op, extreme.item::<i64>()?, d, sizes[d], false)?;
        }
    }
    let mut out_sizes = sizes.clone();
    out_sizes[d] = n;
    if self_.dim() == 0 {
        out_sizes.clear();
    }
    let map = crate::ops::contiguous(
        &crate::ops::reshape(&index.to(ScalarType::I64).call()?, &[-1])?,
        MemoryFormat::Contiguous,
    )?;
    let src = crate::ops::reshape(self_, &sizes)?;
    let mut offsets = vec![None; sizes.len()];
    offsets[d] = Some(0);
    // The loop's output has the source's rank: a zero-dim source reads through a one-element view.
    let gather_sizes = if self_.dim() == 0 { vec![1] } else { out_sizes.clone() };
    let out = crate::native::shape_ops::gather_on_device(op, &src, &gather_sizes, &map, &offsets, Scalar::Int(0))?;
    crate::ops::view(&out, &out_sizes)
}

/// `index_select(Tensor self, int dim, Tensor index) -> Tensor`
pub fn index_select(self_: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    index_select_impl(self_, dim, index)
}
/// `index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)`
pub fn index_select_out(self_: &Tensor, dim: i64, index: &Tensor, out: &Tensor) -> Result<Tensor> {
    write_out("index_select", out, &index_select_impl(self_, dim, index)?)
}

/// Checks the shapes of `gather`/`scatter` (`scatter_gather_shape_check`): `index` has the
/// rank of `self` (and of `src`), is no larger than `src`, and no larger than `self` outside
/// `dim`.
fn scatter_gather_check(op: &str, self_: &Tensor, dim: usize, index: &Tensor, src: Option<&Tensor>) -> Result<()> {
    // An empty index is accepted whatever its dtype (PyTorch checks the dtype of a non-empty one).
    if index.numel() == 0 {
        return Ok(());
    }
    if !matches!(index.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(Error::invalid(op, format!("{op}(): Expected dtype int32/int64 for index")));
    }
    let (s, i) = (nonempty_sizes(self_), nonempty_sizes(index));
    if i.len() != s.len() {
        return Err(Error::shape(op, "Index tensor must have the same number of dimensions as input tensor"));
    }
    let r = src.map(nonempty_sizes);
    if let Some(r) = &r {
        if r.len() != i.len() {
            return Err(Error::shape(op, "Index tensor must have the same number of dimensions as src tensor"));
        }
    }
    for d in 0..s.len() {
        let too_big = (d != dim && i[d] > s[d]) || r.as_ref().is_some_and(|r| i[d] > r[d]);
        if too_big {
            let msg = match &r {
                Some(r) => format!(
                    "Expected index {:?} to be smaller than self {:?} apart from dimension {dim} and to be smaller size than src {r:?}",
                    index.sizes(),
                    self_.sizes()
                ),
                None => format!(
                    "Size does not match at dimension {d} expected index {:?} to be smaller than self {:?} apart from dimension {dim}",
                    index.sizes(),
                    self_.sizes()
                ),
            };
            return Err(Error::shape(op, msg));
        }
    }
    Ok(())
}

/// For every element of `index` (row-major): the flat position in `self` it addresses along
/// `dim`, and the flat position of the same multi-index in a tensor of sizes `src` (for reading
/// a scatter's source; 0 without one).
fn scatter_gather_positions(
    op: &str,
    self_: &Tensor,
    dim: usize,
    index: &Tensor,
    src: Option<&[i64]>,
) -> Result<Vec<(usize, usize)>> {
    let s = nonempty_sizes(self_);
    let cs = contiguous_strides(&s);
    let src_cs = src.map(contiguous_strides);
    let idx = index.to_vec::<i64>()?;
    let mut out = Vec::with_capacity(idx.len());
    let mut k = 0;
    let mut err = None;
    for_each_index(&nonempty_sizes(index), |m| {
        if err.is_some() {
            return;
        }
        match check_index(op, idx[k], dim, s[dim], false) {
            Ok(i) => {
                let pos: i64 = m.iter().enumerate().map(|(d, &c)| if d == dim { i } else { c } * cs[d]).sum();
                let sp: i64 = src_cs.as_ref().map_or(0, |scs| m.iter().zip(scs.iter()).map(|(a, b)| a * b).sum());
                out.push((pos as usize, sp as usize));
            }
            // PyTorch's gather and scatter check with TORCH_CHECK: a RuntimeError, same words.
            Err(e) => err = Some(Error::invalid(op, e.pytorch_message())),
        }
        k += 1;
    });
    match err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

// Note [Gather and scatter on a device]: `gather` and the `scatter` family address `self` at
// the flat positions `sum_{k != dim} m[k] * cs[k] + index[m] * cs[dim]` (`cs` the contiguous
// strides of `self`'s shape) for every multi-index `m` of `index`. On a device those positions
// are computed as an int64 tensor from aranges and the index (its range checked from its minimum
// and maximum: two numbers to the host, where PyTorch's CUDA kernel asserts on the device).
// `gather` is then `index_select` of the flattened `self`. `scatter_add` sums the values per
// position with the device's grouped, position-ordered sums (Note [Grouping on the device]), so
// duplicates add in index order, as on the CPU, on every run. `scatter` keeps, for each position,
// the value of the last index naming it (the CPU's order), and writes those through the same
// loop with one value per group. The grouped sums are floating only, as their loop.

/// The flat positions in `self_` of every element of `index` along dim `d` (index-shaped
/// int64 on the index's device), after checking the index's range.
fn device_positions(op: &str, self_: &Tensor, d: usize, index: &Tensor) -> Result<Tensor> {
    if index.device() != self_.device() {
        return Err(Error::DeviceMismatch {
            op: op.into(),
            a: self_.device().to_string(),
            b: index.device().to_string(),
        });
    }
    let sizes = nonempty_sizes(self_);
    for extreme in [crate::ops::amin(index, &[], false)?, crate::ops::amax(index, &[], false)?] {
        check_index(op, extreme.item::<i64>()?, d, sizes[d], false)
            .map_err(|e| Error::invalid(op, e.pytorch_message()))?;
    }
    let cs = contiguous_strides(&sizes);
    let isz = nonempty_sizes(index);
    let long = crate::native::copy::to_dtype(&crate::ops::reshape(index, &isz)?, ScalarType::I64)?;
    let mut pos = crate::ops::mul_scalar(&long, Scalar::Int(cs[d]))?;
    for (k, &len) in isz.iter().enumerate() {
        if k == d || len == 1 {
            continue;
        }
        let mut shape = vec![1; isz.len()];
        shape[k] = len;
        let along = crate::ops::arange(Scalar::Int(len), Some(ScalarType::I64), None, Some(index.device()), None)?;
        let along = crate::ops::reshape(&crate::ops::mul_scalar(&along, Scalar::Int(cs[k]))?, &shape)?;
        pos = crate::ops::add(&pos, &along, Scalar::Int(1))?;
    }
    Ok(pos)
}

/// `gather` on a device (Note [Gather and scatter on a device]).
fn gather_on_device(self_: &Tensor, d: usize, index: &Tensor) -> Result<Tensor> {
    if index.numel() == 0 {
        return Tensor::empty_uninit(index.sizes(), self_.dtype(), self_.device());
    }
    let pos = crate::ops::reshape(&device_positions("gather", self_, d, index)?, &[-1])?;
    let out = crate::ops::index_select(&crate::ops::reshape(self_, &[-1])?, 0, &pos)?;
    crate::ops::reshape(&out, index.sizes())
}

/// `scatter`, `scatter_add` and `scatter.value` on a device (Note [Gather and scatter on a
/// device]); the arguments were checked.
fn scatter_on_device(op: &str, self_: &Tensor, d: usize, index: &Tensor, src: Src, reduce: Reduce) -> Result<Tensor> {
    let dtype = self_.dtype();
    if !dtype.is_floating_point() {
        return Err(Error::unsupported_dtype(op, dtype));
    }
    if reduce == Reduce::Mul {
        return Err(Error::NotImplemented {
            op: op.into(),
            msg: format!("there is no {} kernel for reduce='multiply'", self_.device().ty.name()),
        });
    }
    if index.numel() == 0 {
        return crate::ops::clone(self_, None);
    }
    let pos = crate::ops::reshape(&device_positions(op, self_, d, index)?, &[-1])?;
    let n = pos.numel();
    let values = match src {
        Src::Tensor(t) => {
            if t.device() != self_.device() {
                return Err(Error::DeviceMismatch {
                    op: op.into(),
                    a: self_.device().to_string(),
                    b: t.device().to_string(),
                });
            }
            // The source's elements at the index's multi-indices.
            let mut v = crate::ops::reshape(t, &nonempty_sizes(t))?;
            for (k, &len) in nonempty_sizes(index).iter().enumerate() {
                v = crate::ops::narrow(&v, k as i64, 0, len)?;
            }
            crate::ops::reshape(&crate::ops::contiguous(&v, MemoryFormat::Contiguous)?, &[n, 1])?
        }
        Src::Value(s) => crate::ops::full(&[n, 1], s, Some(dtype), None, Some(self_.device()), None)?,
    };
    let numel = self_.numel();
    if reduce == Reduce::Add {
        let addend = crate::ops::zeros(&[numel, 1], Some(dtype), None, Some(self_.device()), None)?;
        sum_groups_on_device(op, &addend, &values, &pos, None, false)?;
        return crate::ops::add(self_, &crate::ops::reshape(&addend, self_.sizes())?, Scalar::Int(1));
    }
    // The last value written to each position.
    let g = crate::native::sort::device_groups(op, &pos)?;
    let u = g.keys.numel();
    let ends = crate::ops::sub(
        &crate::ops::narrow(&g.starts, 0, 1, u)?,
        &Tensor::wrapped_scalar(Scalar::Int(1)),
        Scalar::Int(1),
    )?;
    let last = crate::ops::index_select(&g.order, 0, &ends)?;
    // One-position groups (each key's last writer), written by the grouped-sum loop directly:
    // the keys are grouped already.
    let starts = crate::ops::arange(Scalar::Int(u + 1), Some(ScalarType::I64), None, Some(self_.device()), None)?;
    let out = crate::ops::clone(self_, Some(MemoryFormat::Contiguous))?;
    let rows = crate::ops::reshape(&out, &[numel, 1])?;
    crate::native::stub::run_embedding_backward(&rows, &values, &last, &starts, &g.keys, false)?;
    Ok(out)
}

fn gather_impl(self_: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = wrap_dim("gather", dim, self_.dim())?;
    scatter_gather_check("gather", self_, d, index, None)?;
    if crate::native::on_device(self_) {
        return gather_on_device(self_, d, index);
    }
    let pos: Vec<usize> = scatter_gather_positions("gather", self_, d, index, None)?.into_iter().map(|p| p.0).collect();
    take_all(self_, &pos, index.sizes())
}

/// `gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor`
pub fn gather(self_: &Tensor, dim: i64, index: &Tensor, _sparse_grad: bool) -> Result<Tensor> {
    gather_impl(self_, dim, index)
}
/// `gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out) -> Tensor(a!)`
pub fn gather_out(self_: &Tensor, dim: i64, index: &Tensor, _sparse_grad: bool, out: &Tensor) -> Result<Tensor> {
    write_out("gather", out, &gather_impl(self_, dim, index)?)
}

/// `take(Tensor self, Tensor index) -> Tensor`: elements of the flattened `self`.
pub fn take(self_: &Tensor, index: &Tensor) -> Result<Tensor> {
    if index.dtype() != ScalarType::I64 {
        return Err(Error::invalid(
            "take",
            format!("take(): Expected a long tensor for index, but got {}", index.dtype().cpp_name()),
        ));
    }
    let n = self_.numel();
    let pos = index
        .to_vec::<i64>()?
        .into_iter()
        .map(|i| {
            if i < -n || i >= n {
                return Err(Error::invalid(
                    "take",
                    format!("out of range: tried to access index {i} on a tensor of {n} elements."),
                ));
            }
            Ok(if i < 0 { i + n } else { i } as usize)
        })
        .collect::<Result<Vec<_>>>()?;
    take_all(self_, &pos, index.sizes())
}

// ---- scatter ------------------------------------------------------------------------------------

/// How a scattered value combines with the value already there.
#[derive(Clone, Copy, PartialEq)]
enum Reduce {
    Assign,
    Add,
    Mul,
}

fn parse_reduce(op: &str, reduce: &str) -> Result<Reduce> {
    match reduce {
        "add" => Ok(Reduce::Add),
        "multiply" => Ok(Reduce::Mul),
        other => Err(Error::invalid(op, format!("reduce argument must be either add or multiply, got {other}"))),
    }
}

fn combine<T: ElemArith>(dst: &mut T, v: T, reduce: Reduce) {
    *dst = match reduce {
        Reduce::Assign => v,
        Reduce::Add => dst.add(v),
        Reduce::Mul => dst.mul(v),
    };
}

/// The source of a scatter: a tensor read at the index's multi-index, or one value.
enum Src<'a> {
    Tensor(&'a Tensor),
    Value(Scalar),
}

/// PyTorch's overlap checks for an operation that writes `self_` in place while reading
/// `index` (and `src`): `self_` has no internal overlap and shares no memory with them.
fn check_written(op: &str, self_: &Tensor, index: &Tensor, src: Option<&Tensor>) -> Result<()> {
    crate::memory_overlap::assert_no_internal_overlap(op, self_)?;
    crate::memory_overlap::assert_no_overlap(op, self_, index)?;
    match src {
        Some(t) => crate::memory_overlap::assert_no_overlap(op, self_, t),
        None => Ok(()),
    }
}

fn scatter_impl(
    op: &'static str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: Src,
    reduce: Reduce,
) -> Result<Tensor> {
    let d = wrap_dim(op, dim, self_.dim())?;
    let src_t = match src {
        Src::Tensor(t) => Some(t),
        Src::Value(_) => None,
    };
    if let Some(t) = src_t {
        if t.dtype() != self_.dtype() {
            return Err(Error::invalid(
                op,
                format!(
                    "{op}(): Expected self.dtype to be equal to src.dtype, got {} and {}",
                    self_.dtype().cpp_name(),
                    t.dtype().cpp_name()
                ),
            ));
        }
    }
    scatter_gather_check(op, self_, d, index, src_t)?;
    if crate::native::on_device(self_) {
        return scatter_on_device(op, self_, d, index, src, reduce);
    }
    let src_sizes = src_t.map(nonempty_sizes);
    let positions = if index.numel() == 0 {
        Vec::new()
    } else {
        scatter_gather_positions(op, self_, d, index, src_sizes.as_deref())?
    };
    c10::dispatch_all_types!(self_.dtype(), T => {
        let mut v = self_.to_vec::<T>()?;
        match src {
            Src::Tensor(t) => {
                let sv = t.to_vec::<T>()?;
                for &(pos, sp) in &positions {
                    combine(&mut v[pos], sv[sp], reduce);
                }
            }
            Src::Value(s) => {
                let x: T = scalar_as(s);
                for (pos, _) in &positions {
                    combine(&mut v[*pos], x, reduce);
                }
            }
        }
        Tensor::from_vec(v, self_.sizes())
    })
}

/// `scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor`
pub fn scatter_src(self_: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    scatter_impl("scatter", self_, dim, index, Src::Tensor(src), Reduce::Assign)
}
/// `scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)`
pub fn scatter_src_(self_: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    check_written("scatter_", self_, index, Some(src))?;
    assign(self_, &scatter_impl("scatter_", self_, dim, index, Src::Tensor(src), Reduce::Assign)?)
}
/// `scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)`
pub fn scatter_src_out(self_: &Tensor, dim: i64, index: &Tensor, src: &Tensor, out: &Tensor) -> Result<Tensor> {
    write_out("scatter", out, &scatter_impl("scatter", self_, dim, index, Src::Tensor(src), Reduce::Assign)?)
}
/// `scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor`
pub fn scatter_value(self_: &Tensor, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
    scatter_impl("scatter", self_, dim, index, Src::Value(value), Reduce::Assign)
}
/// `scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)`
pub fn scatter_value_(self_: &Tensor, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
    check_written("scatter_", self_, index, None)?;
    assign(self_, &scatter_impl("scatter_", self_, dim, index, Src::Value(value), Reduce::Assign)?)
}
/// `scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor`
pub fn scatter_reduce(self_: &Tensor, dim: i64, index: &Tensor, src: &Tensor, reduce: &str) -> Result<Tensor> {
    let r = parse_reduce("scatter", reduce)?;
    scatter_impl("scatter", self_, dim, index, Src::Tensor(src), r)
}
/// `scatter_.reduce(Tensor(a!) self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor(a!)`
pub fn scatter_reduce_(self_: &Tensor, dim: i64, index: &Tensor, src: &Tensor, reduce: &str) -> Result<Tensor> {
    let r = parse_reduce("scatter_", reduce)?;
    check_written("scatter_", self_, index, Some(src))?;
    assign(self_, &scatter_impl("scatter_", self_, dim, index, Src::Tensor(src), r)?)
}
/// `scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor`
pub fn scatter_value_reduce(self_: &Tensor, dim: i64, index: &Tensor, value: Scalar, reduce: &str) -> Result<Tensor> {
    let r = parse_reduce("scatter", reduce)?;
    scatter_impl("scatter", self_, dim, index, Src::Value(value), r)
}
/// `scatter_.value_reduce(Tensor(a!) self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor(a!)`
pub fn scatter_value_reduce_(self_: &Tensor, dim: i64, index: &Tensor, value: Scalar, reduce: &str) -> Result<Tensor> {
    let r = parse_reduce("scatter_", reduce)?;
    check_written("scatter_", self_, index, None)?;
    assign(self_, &scatter_impl("scatter_", self_, dim, index, Src::Value(value), r)?)
}
/// `scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor`
pub fn scatter_add(self_: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    scatter_impl("scatter_add", self_, dim, index, Src::Tensor(src), Reduce::Add)
}
/// `scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)`
pub fn scatter_add_(self_: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    check_written("scatter_add_", self_, index, Some(src))?;
    assign(self_, &scatter_impl("scatter_add_", self_, dim, index, Src::Tensor(src), Reduce::Add)?)
}
/// `scatter_add.out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)`
pub fn scatter_add_out(self_: &Tensor, dim: i64, index: &Tensor, src: &Tensor, out: &Tensor) -> Result<Tensor> {
    write_out("scatter_add", out, &scatter_impl("scatter_add", self_, dim, index, Src::Tensor(src), Reduce::Add)?)
}

// ---- index_add, index_copy, index_fill ---------------------------------------------------------

/// Combines `source` (or `value`) into `self` at `index` along `dim`: element `m` of `source`
/// goes to `self[..., index[m[dim]], ...]`.
fn index_along(
    op: &'static str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    source: Src,
    reduce: Reduce,
    alpha: Option<Scalar>,
) -> Result<Tensor> {
    let d = wrap_dim(op, dim, self_.dim())?;
    if index.dim() > 1 {
        return Err(Error::invalid(op, format!("{op}(): Index is supposed to be a vector")));
    }
    let allowed: &[ScalarType] =
        if op.starts_with("index_add") { &[ScalarType::I64, ScalarType::I32] } else { &[ScalarType::I64] };
    let idx = index_values(op, index, allowed, &format!("{op}(): Expected a long tensor for index"), true)?;
    let s = nonempty_sizes(self_);
    let idx = idx.iter().map(|&i| check_index(op, i, d, s[d], true)).collect::<Result<Vec<i64>>>()?;
    let cs = contiguous_strides(&s);
    // The region written: self's shape with `dim` replaced by the number of indices.
    let mut region = s.clone();
    region[d] = idx.len() as i64;
    if let Src::Tensor(src) = source {
        if src.dtype() != self_.dtype() {
            return Err(Error::invalid(
                op,
                format!(
                    "{op}(): self ({}) and source ({}) must have the same scalar type",
                    self_.dtype().cpp_name(),
                    src.dtype().cpp_name()
                ),
            ));
        }
        let r = nonempty_sizes(src);
        if r != region && !(src.numel() == idx.len() as i64 && self_.dim() <= 1 && src.dim() <= 1) {
            return Err(Error::shape(
                op,
                format!(
                    "{op}(): Source/destination tensor must have same slice shapes. Destination slice shape: {:?} at dimension {d} and source slice shape: {:?} at dimension 0. (source shape {:?}, index of {} elements)",
                    self_.sizes(),
                    src.sizes(),
                    src.sizes(),
                    idx.len()
                ),
            ));
        }
    }
    let mut pos = c10::size::try_vec(c10::size::numel(op, &region)? as usize)?;
    for_each_index(&region, |m| {
        let p: i64 = m.iter().enumerate().map(|(k, &c)| if k == d { idx[c as usize] } else { c } * cs[k]).sum();
        pos.push(p as usize);
    });
    c10::dispatch_all_types!(self_.dtype(), T => {
        let mut v = self_.to_vec::<T>()?;
        let a: Option<T> = alpha.map(scalar_as);
        match source {
            Src::Tensor(src) => {
                let sv = src.to_vec::<T>()?;
                for (&p, &x) in pos.iter().zip(&sv) {
                    let x = match a { Some(a) => x.mul(a), None => x };
                    combine(&mut v[p], x, reduce);
                }
            }
            Src::Value(s) => {
                let x: T = scalar_as(s);
                for &p in &pos {
                    combine(&mut v[p], x, reduce);
                }
            }
        }
        Tensor::from_vec(v, self_.sizes())
    })
}

fn alpha_of(alpha: Scalar) -> Option<Scalar> {
    match alpha {
        Scalar::Int(1) => None,
        a => Some(a),
    }
}

/// `index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor`
pub fn index_add(self_: &Tensor, dim: i64, index: &Tensor, source: &Tensor, alpha: Scalar) -> Result<Tensor> {
    index_along("index_add", self_, dim, index, Src::Tensor(source), Reduce::Add, alpha_of(alpha))
}
/// `index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)`
pub fn index_add_(self_: &Tensor, dim: i64, index: &Tensor, source: &Tensor, alpha: Scalar) -> Result<Tensor> {
    assign(self_, &index_along("index_add_", self_, dim, index, Src::Tensor(source), Reduce::Add, alpha_of(alpha))?)
}
/// `index_add.out(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)`
pub fn index_add_out(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    alpha: Scalar,
    out: &Tensor,
) -> Result<Tensor> {
    let r = index_along("index_add", self_, dim, index, Src::Tensor(source), Reduce::Add, alpha_of(alpha))?;
    write_out("index_add", out, &r)
}
/// What `index_add` adds to `self` on a device: `alpha` times `source`'s slices summed per
/// index into a zero tensor of `self`'s shape. The sums run through the embedding gradient's
/// loop (Note [Deterministic embedding backward] in kernels-cuda): positions grouped by index
/// on the device, each group summed in position order, no atomics, so the result is the same on
/// every run. Floating dtypes only, as that loop.
fn index_add_addend(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    alpha: Scalar,
) -> Result<Tensor> {
    let n = self_.dim() as i64;
    let d = if dim < 0 { dim + n.max(1) } else { dim };
    if d < 0 || d >= n.max(1) {
        return Err(Error::DimOutOfRange { op: op.into(), dim, min: -n.max(1), max: n.max(1) - 1 });
    }
    if index.dim() > 1 || !matches!(index.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(Error::invalid(op, "index_add_(): Index is supposed to be a vector of int64 or int32"));
    }
    if source.dim() != self_.dim() {
        return Err(Error::invalid(op, "index_add_(): self and source must have the same number of dimensions"));
    }
    let k = index.numel();
    let same_rest = (0..self_.dim()).all(|i| i as i64 == d || self_.sizes()[i] == source.sizes()[i]);
    if source.dim() > 0 && (source.sizes()[d as usize] != k || !same_rest) {
        return Err(Error::shape(
            op,
            format!(
                "index_add_(): source {:?} does not fit self {:?} with {k} indices along dim {d}",
                source.sizes(),
                self_.sizes()
            ),
        ));
    }
    if !self_.dtype().is_floating_point() {
        return Err(Error::unsupported_dtype(op, self_.dtype()));
    }
    if self_.dim() == 0 {
        // A scalar `self` is one slot that every index (all 0) adds to.
        let one = crate::ops::reshape(self_, &[1])?;
        let a = index_add_addend(op, &one, 0, index, &crate::ops::reshape(source, &[-1])?, alpha)?;
        return crate::ops::reshape(&a, &[]);
    }
    if k == 0 {
        return crate::ops::zeros(self_.sizes(), Some(self_.dtype()), None, Some(self_.device()), None);
    }
    let src = crate::ops::transpose(&crate::ops::to(source, self_.dtype(), false, false, None)?, 0, d)?;
    let moved: Vec<i64> = src.sizes().to_vec();
    let cols = moved[1..].iter().product::<i64>();
    let src = crate::ops::reshape(&crate::ops::contiguous(&src, MemoryFormat::Contiguous)?, &[k, cols])?;
    let idx = crate::ops::to(&crate::ops::reshape(index, &[k])?, ScalarType::I64, false, false, None)?;
    let rows = self_.sizes()[d as usize];
    let sums = embedding_dense_backward(&src, &idx, rows, -1, false)?;
    let mut shape = moved;
    shape[0] = rows;
    let sums = crate::ops::transpose(&crate::ops::reshape(&sums, &shape)?, 0, d)?;
    if alpha.to_f64() == 1.0 {
        Ok(sums)
    } else {
        crate::ops::mul_scalar(&sums, alpha)
    }
}

/// `index_add` on a device (see [`index_add_addend`]).
pub fn index_add_device(self_: &Tensor, dim: i64, index: &Tensor, source: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let a = index_add_addend("index_add", self_, dim, index, source, alpha)?;
    crate::ops::add(self_, &a, Scalar::Int(1))
}

/// `index_add_` on a device (see [`index_add_addend`]).
pub fn index_add_device_(self_: &Tensor, dim: i64, index: &Tensor, source: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let a = index_add_addend("index_add_", self_, dim, index, source, alpha)?;
    crate::ops::add_(self_, &a, Scalar::Int(1))
}

/// `index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor`
pub fn index_copy(self_: &Tensor, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
    index_along("index_copy", self_, dim, index, Src::Tensor(source), Reduce::Assign, None)
}
/// `index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)`
pub fn index_copy_(self_: &Tensor, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
    assign(self_, &index_along("index_copy_", self_, dim, index, Src::Tensor(source), Reduce::Assign, None)?)
}
/// `index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor`
pub fn index_fill_int_scalar(self_: &Tensor, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
    index_along("index_fill", self_, dim, index, Src::Value(value), Reduce::Assign, None)
}
/// `index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)`
pub fn index_fill_int_scalar_(self_: &Tensor, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
    assign(self_, &index_along("index_fill_", self_, dim, index, Src::Value(value), Reduce::Assign, None)?)
}

fn fill_value(op: &str, value: &Tensor) -> Result<Scalar> {
    if value.dim() != 0 {
        return Err(Error::invalid(
            op,
            format!(
                "{op} only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.dim()
            ),
        ));
    }
    value.item_scalar()
}

/// `index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor`
pub fn index_fill_int_tensor(self_: &Tensor, dim: i64, index: &Tensor, value: &Tensor) -> Result<Tensor> {
    index_fill_int_scalar(self_, dim, index, fill_value("index_fill_", value)?)
}
/// `index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> Tensor(a!)`
pub fn index_fill_int_tensor_(self_: &Tensor, dim: i64, index: &Tensor, value: &Tensor) -> Result<Tensor> {
    index_fill_int_scalar_(self_, dim, index, fill_value("index_fill_", value)?)
}

// ---- advanced indexing ---------------------------------------------------------------------------

/// The flat positions in `self` (row-major) that `self[indices]` reads, and the result's shape
/// (PyTorch's advanced indexing: bool masks become their nonzero coordinates, index tensors
/// broadcast together, and the broadcast dimensions replace the indexed ones in place when the
/// indexed dimensions are adjacent, else go first).
fn resolve_index(op: &str, self_: &Tensor, indices: &[Option<Tensor>]) -> Result<(Vec<usize>, Vec<i64>)> {
    let n = self_.dim();
    let too_many = |got: usize| Error::invalid(op, format!("too many indices for tensor of dimension {n} (got {got})"));
    // Per indexed dimension: the index values and their shape.
    let mut per_dim: Vec<Option<(Vec<i64>, Vec<i64>)>> = Vec::with_capacity(n);
    for idx in indices {
        let d = per_dim.len();
        match idx {
            None => per_dim.push(None),
            Some(t) if matches!(t.dtype(), ScalarType::Bool | ScalarType::U8) => {
                let k = t.dim();
                if k == 0 {
                    return Err(Error::NotImplemented {
                        op: op.into(),
                        msg: "indexing with a zero-dim boolean mask".into(),
                    });
                }
                if d + k > n {
                    return Err(too_many(d + k));
                }
                for j in 0..k {
                    if t.sizes()[j] != self_.sizes()[d + j] {
                        return Err(Error::invalid(
                            op,
                            format!(
                                "The shape of the mask {:?} at index {j} does not match the shape of the indexed tensor {:?} at index {}",
                                t.sizes(),
                                self_.sizes(),
                                d + j
                            ),
                        ));
                    }
                }
                let mask = t.to_vec::<bool>()?;
                let mut coords: Vec<Vec<i64>> = vec![Vec::new(); k];
                let mut flat = 0;
                for_each_index(t.sizes(), |m| {
                    if mask[flat] {
                        for (c, &x) in coords.iter_mut().zip(m) {
                            c.push(x);
                        }
                    }
                    flat += 1;
                });
                for c in coords {
                    let len = c.len() as i64;
                    per_dim.push(Some((c, vec![len])));
                }
            }
            Some(t) if matches!(t.dtype(), ScalarType::I64 | ScalarType::I32) => {
                if d >= n {
                    return Err(too_many(indices.len()));
                }
                per_dim.push(Some((t.to_vec::<i64>()?, t.sizes().to_vec())));
            }
            Some(_) => {
                return Err(Error::invalid(op, "tensors used as indices must be long, int, byte or bool tensors"));
            }
        }
    }
    if per_dim.len() > n {
        return Err(too_many(per_dim.len()));
    }
    per_dim.resize(n, None);
    let sizes = self_.sizes();
    let cs = contiguous_strides(sizes);
    let defined: Vec<usize> = (0..n).filter(|&d| per_dim[d].is_some()).collect();
    if defined.is_empty() {
        let mut pos = c10::size::try_vec(self_.numel() as usize)?;
        for_each_index(sizes, |m| pos.push(m.iter().zip(cs.iter()).map(|(a, b)| a * b).sum::<i64>() as usize));
        return Ok((pos, sizes.to_vec()));
    }
    // Broadcast the index shapes; check and wrap the values; expand each to the broadcast shape.
    let mut bshape: Vec<i64> = Vec::new();
    for &d in &defined {
        let s = &per_dim[d].as_ref().map(|p| p.1.clone()).unwrap_or_default();
        bshape = broadcast_shapes(op, &bshape, s)
            .map_err(|_| {
                let shapes: Vec<String> =
                    defined.iter().filter_map(|&d| per_dim[d].as_ref().map(|p| format!("{:?}", p.1))).collect();
                Error::shape(
                    op,
                    format!(
                        "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                        shapes.join(", ")
                    ),
                )
            })?
            .to_vec();
    }
    let mut expanded: Vec<Vec<i64>> = vec![Vec::new(); n];
    for &d in &defined {
        let Some((vals, shape)) = &per_dim[d] else { continue };
        let lead = bshape.len() - shape.len();
        let maps: Vec<Vec<Option<i64>>> = bshape
            .iter()
            .enumerate()
            .map(|(j, &b)| {
                let own = if j < lead { 1 } else { shape[j - lead] };
                dim_map(b, |o| Some(if own == 1 { 0 } else { o }))
            })
            .collect::<Result<_>>()?;
        let padded: Vec<i64> = std::iter::repeat_n(1, lead).chain(shape.iter().copied()).collect();
        expanded[d] = separable_index(&padded, &maps)?
            .into_iter()
            .flatten()
            .map(|p| check_index(op, vals[p], d, sizes[d], true))
            .collect::<Result<_>>()?;
    }
    // Lay out the result: which output dims are plain dims of self and which are the broadcast block.
    let adjacent = defined.windows(2).all(|w| w[1] == w[0] + 1);
    #[derive(Clone, Copy)]
    enum Role {
        Dim(usize),
        Block(usize),
    }
    let mut roles = Vec::new();
    let block = (0..bshape.len()).map(Role::Block);
    if adjacent {
        roles.extend((0..defined[0]).map(Role::Dim));
        roles.extend(block);
        roles.extend((defined[defined.len() - 1] + 1..n).map(Role::Dim));
    } else {
        roles.extend(block);
        roles.extend((0..n).filter(|d| per_dim[*d].is_none()).map(Role::Dim));
    }
    let out_shape: Vec<i64> = roles
        .iter()
        .map(|r| match *r {
            Role::Dim(d) => sizes[d],
            Role::Block(j) => bshape[j],
        })
        .collect();
    let mut pos = c10::size::try_vec(c10::size::numel(op, &out_shape)? as usize)?;
    for_each_index(&out_shape, |m| {
        let mut p = 0i64;
        let mut b = 0usize;
        for (r, &c) in roles.iter().zip(m) {
            match *r {
                Role::Dim(d) => p += c * cs[d],
                Role::Block(j) => b = b * bshape[j] as usize + c as usize,
            }
        }
        for &d in &defined {
            p += expanded[d][b] * cs[d];
        }
        pos.push(p as usize);
    });
    Ok((pos, out_shape))
}

/// `index.Tensor(Tensor self, Tensor?[] indices) -> Tensor`
pub fn index(self_: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor> {
    let (pos, shape) = resolve_index("index", self_, indices)?;
    if crate::native::on_device(self_) {
        let flat = flat_on_device(self_)?;
        let map = positions_on(&pos, self_)?;
        let out = crate::native::shape_ops::gather_on_device(
            "index",
            &flat,
            &[map.numel()],
            &map,
            &[Some(0)],
            Scalar::Int(0),
        )?;
        return crate::ops::view(&out, &shape);
    }
    take_all(self_, &pos, &shape)
}

// Note [Advanced indexing on a device]: the index tensors (on the CPU or on `self`'s device) are
// resolved on the host, as on the CPU: masks become coordinates, the indices broadcast, are
// checked and wrapped, and each result element's flat position in `self` is known. PyTorch's
// CUDA kernel reads masks back too (through `nonzero`); integer indices it checks on the device.
// The positions then travel to the device once, and the data never leaves it: `index` gathers
// `self`'s elements through them; `index_put` writes the values through them, floats by the
// device scatter (which keeps the last value written to a position, as the CPU loop does, or
// sums them with `accumulate`), other dtypes by one gather from the values followed by `self`.

/// `self` as a contiguous 1-d tensor on its device (a zero-dim `self` has one element).
fn flat_on_device(self_: &Tensor) -> Result<Tensor> {
    crate::ops::reshape(&crate::ops::contiguous(self_, MemoryFormat::Contiguous)?, &[-1])
}

/// Host positions as an int64 tensor on `like`'s device.
fn positions_on(pos: &[usize], like: &Tensor) -> Result<Tensor> {
    let v = c10::size::try_collect(pos.len(), pos.iter().map(|&p| p as i64))?;
    Tensor::from_vec(v, &[pos.len() as i64])?.to_device(like.device())
}

/// `index_put` on a device (Note [Advanced indexing on a device]): `vals` is already expanded
/// to the indexing result's shape, `pos` are its elements' positions in `self`.
fn index_put_on_device(op: &str, self_: &Tensor, pos: &[usize], vals: &Tensor, accumulate: bool) -> Result<Tensor> {
    if vals.device() != self_.device() {
        return Err(Error::DeviceMismatch {
            op: op.into(),
            a: self_.device().to_string(),
            b: vals.device().to_string(),
        });
    }
    let flat = flat_on_device(self_)?;
    let vflat = flat_on_device(vals)?;
    if pos.is_empty() {
        return crate::ops::clone(self_, Some(MemoryFormat::Contiguous));
    }
    if self_.dtype().is_floating_point() {
        let map = positions_on(pos, self_)?;
        let reduce = if accumulate { Reduce::Add } else { Reduce::Assign };
        let out = scatter_on_device(op, &flat, 0, &map, Src::Tensor(&vflat), reduce)?;
        return crate::ops::reshape(&out, self_.sizes());
    }
    if accumulate {
        // The device's grouped sums are floating-point loops.
        return Err(Error::unsupported_dtype(op, self_.dtype()));
    }
    // Every element of the result read from [values, self]: the last value written to a
    // position, else `self`'s own element.
    let nv = vflat.numel();
    let mut map = c10::size::try_collect(flat.numel() as usize, (0..flat.numel()).map(|p| nv + p))?;
    for (k, &p) in pos.iter().enumerate() {
        map[p] = k as i64;
    }
    let both = crate::ops::cat(&[vflat, flat.clone()], 0)?;
    let map = Tensor::from_vec(map, &[flat.numel()])?.to_device(self_.device())?;
    let out = crate::native::shape_ops::gather_on_device(op, &both, &[flat.numel()], &map, &[Some(0)], Scalar::Int(0))?;
    crate::ops::view(&out, self_.sizes())
}

fn index_put_impl(
    op: &str,
    self_: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    if values.dtype() != self_.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
                self_.dtype().cpp_name(),
                values.dtype().cpp_name()
            ),
        ));
    }
    let (pos, shape) = resolve_index(op, self_, indices)?;
    // A zero-dim value on the CPU is a scalar to any device, as PyTorch accepts it.
    let moved;
    let values = if crate::native::on_device(self_) && values.dim() == 0 && values.device().is_cpu() {
        moved = values.to_device(self_.device())?;
        &moved
    } else {
        values
    };
    let vals = crate::native::shape::expand(values, &shape, false).map_err(|_| {
        Error::shape(
            op,
            format!(
                "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {shape:?}",
                values.sizes()
            ),
        )
    })?;
    if crate::native::on_device(self_) {
        return index_put_on_device(op, self_, &pos, &vals, accumulate);
    }
    c10::dispatch_all_types!(self_.dtype(), T => {
        let mut v = self_.to_vec::<T>()?;
        let src = vals.to_vec::<T>()?;
        for (&p, &x) in pos.iter().zip(&src) {
            combine(&mut v[p], x, if accumulate { Reduce::Add } else { Reduce::Assign });
        }
        Tensor::from_vec(v, self_.sizes())
    })
}

/// `index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor`
pub fn index_put(self_: &Tensor, indices: &[Option<Tensor>], values: &Tensor, accumulate: bool) -> Result<Tensor> {
    index_put_impl("index_put", self_, indices, values, accumulate)
}
/// `index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)`
pub fn index_put_(self_: &Tensor, indices: &[Option<Tensor>], values: &Tensor, accumulate: bool) -> Result<Tensor> {
    // PyTorch's checks: the written tensor shares no memory with the values or the indices.
    crate::memory_overlap::assert_no_internal_overlap("index_put_", self_)?;
    crate::memory_overlap::assert_no_overlap("index_put_", self_, values)?;
    for i in indices.iter().flatten() {
        crate::memory_overlap::assert_no_overlap("index_put_", self_, i)?;
    }
    assign(self_, &index_put_impl("index_put_", self_, indices, values, accumulate)?)
}

// ---- masks ---------------------------------------------------------------------------------------

fn check_bool_mask(op: &str, mask: &Tensor) -> Result<()> {
    if mask.dtype() != ScalarType::Bool {
        return Err(Error::invalid(
            op,
            format!("{op}: expected BoolTensor for mask, but got {}", mask.dtype().cpp_name()),
        ));
    }
    Ok(())
}

/// `masked_select(Tensor self, Tensor mask) -> Tensor`
pub fn masked_select(self_: &Tensor, mask: &Tensor) -> Result<Tensor> {
    check_bool_mask("masked_select", mask)?;
    let shape = broadcast_shapes("masked_select", self_.sizes(), mask.sizes())?;
    let s = crate::native::shape::expand(self_, &shape, false)?;
    let m = crate::native::shape::expand(mask, &shape, false)?.to_vec::<bool>()?;
    let pos: Vec<usize> = (0..m.len()).filter(|&i| m[i]).collect();
    let n = pos.len() as i64;
    take_all(&s, &pos, &[n])
}

fn masked_scatter_impl(op: &str, self_: &Tensor, mask: &Tensor, source: &Tensor, inplace: bool) -> Result<Tensor> {
    check_bool_mask(op, mask)?;
    if source.dtype() != self_.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "masked_scatter_: expected self and source to have same dtypes but got {} and {}",
                self_.dtype().cpp_name(),
                source.dtype().cpp_name()
            ),
        ));
    }
    let shape =
        if inplace { self_.sizes().to_vec() } else { broadcast_shapes(op, self_.sizes(), mask.sizes())?.to_vec() };
    let s = crate::native::shape::expand(self_, &shape, false)?;
    let m = crate::native::shape::expand(mask, &shape, false)?.to_vec::<bool>()?;
    let count = m.iter().filter(|&&b| b).count();
    if (source.numel() as usize) < count {
        return Err(Error::invalid(op, "Number of elements of source < number of ones in mask"));
    }
    c10::dispatch_all_types!(self_.dtype(), T => {
        let mut v = s.to_vec::<T>()?;
        let src = source.to_vec::<T>()?;
        let mut k = 0;
        for (x, &b) in v.iter_mut().zip(&m) {
            if b {
                *x = src[k];
                k += 1;
            }
        }
        Tensor::from_vec(v, &shape)
    })
}

/// `masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor`
pub fn masked_scatter(self_: &Tensor, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
    masked_scatter_impl("masked_scatter", self_, mask, source, false)
}
/// `masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)`
pub fn masked_scatter_(self_: &Tensor, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
    assign(self_, &masked_scatter_impl("masked_scatter_", self_, mask, source, true)?)
}

/// `nonzero` on a device: the count of nonzero elements comes to the host (it is the output's
/// size, as in PyTorch's CUDA `nonzero`); their flat positions, in order, are the first `count`
/// keys after a stable sort of `where(nonzero, position, numel)`; each dim's coordinate is
/// `position / stride % size` in int64, all on the device.
fn nonzero_on_device(self_: &Tensor) -> Result<Tensor> {
    let (n, nd, device) = (self_.numel(), self_.dim() as i64, self_.device());
    let mask = crate::ops::reshape(&crate::native::copy::to_dtype(self_, ScalarType::Bool)?, &[n])?;
    let count = crate::ops::sum(&crate::native::copy::to_dtype(&mask, ScalarType::I64)?, None)?.item::<i64>()?;
    if count == 0 || nd == 0 {
        return crate::ops::zeros(&[count, nd], Some(ScalarType::I64), None, Some(device), None);
    }
    let position = crate::ops::arange(Scalar::Int(n), Some(ScalarType::I64), None, Some(device), None)?;
    let keys = crate::ops::where_self(&mask, &position, &Tensor::wrapped_scalar(Scalar::Int(n)))?;
    let flat = crate::ops::narrow(&crate::ops::sort_stable(&keys, Some(true), 0, false)?.0, 0, 0, count)?;
    let strides = contiguous_strides(self_.sizes());
    let coords = (0..self_.dim())
        .map(|d| {
            let q = crate::ops::div_scalar_mode(&flat, Scalar::Int(strides[d]), Some("floor"))?;
            crate::ops::remainder(&q, &Tensor::wrapped_scalar(Scalar::Int(self_.sizes()[d])))
        })
        .collect::<Result<Vec<_>>>()?;
    crate::ops::stack(&coords, 1)
}

/// `nonzero(Tensor self) -> Tensor`: the coordinates of the non-zero elements, one row each.
pub fn nonzero(self_: &Tensor) -> Result<Tensor> {
    if crate::native::on_device(self_) {
        return nonzero_on_device(self_);
    }
    let v = self_.to_vec::<bool>()?;
    let n = self_.dim();
    let mut coords = Vec::new();
    let mut k = 0;
    for_each_index(self_.sizes(), |m| {
        if v[k] {
            coords.extend_from_slice(m);
        }
        k += 1;
    });
    let rows = coords.len().checked_div(n).unwrap_or_else(|| v.iter().filter(|&&b| b).count());
    Tensor::from_vec(coords, &[rows as i64, n as i64])
}
/// `nonzero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`
pub fn nonzero_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    write_out("nonzero", out, &nonzero(self_)?)
}

/// `count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor`
pub fn count_nonzero_dim_intlist(self_: &Tensor, dim: &[i64]) -> Result<Tensor> {
    let b = crate::native::copy::to_dtype(self_, ScalarType::Bool)?;
    let dims: Vec<i64> = if dim.is_empty() { (0..self_.dim() as i64).collect() } else { dim.to_vec() };
    if dims.is_empty() {
        return crate::native::copy::to_dtype(&b, ScalarType::I64);
    }
    crate::ops::sum_dim_intlist(&b, Some(&dims), false, Some(ScalarType::I64))
}
/// `count_nonzero(Tensor self, int? dim=None) -> Tensor`
pub fn count_nonzero(self_: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    match dim {
        Some(d) => count_nonzero_dim_intlist(self_, &[d]),
        None => count_nonzero_dim_intlist(self_, &[]),
    }
}

// ---- embedding, one_hot --------------------------------------------------------------------------

/// `embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False,
/// int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False)
/// -> (Tensor, Tensor, Tensor, Tensor)`: [`embedding_bag_padding_idx`] without padding.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    embedding_bag_padding_idx(
        weight,
        indices,
        offsets,
        scale_grad_by_freq,
        mode,
        sparse,
        per_sample_weights,
        include_last_offset,
        None,
    )
}

/// `embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, ..., int mode, ...,
/// int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)`: the sums (`mode` 0), means (1) or
/// maxima (2) of the rows of `weight` that each bag of the 1-D `indices` looks up, a bag
/// starting at each of `offsets` (with `include_last_offset` the last offset ends the last bag);
/// entries equal to `padding_idx` (negative counts from the end) are left out and an empty bag
/// gives zeros. `per_sample_weights` (mode 0 only) scales each row. What `F.embedding_bag`
/// and `nn.EmbeddingBag` compute, and what their scripted and traced forms call.
///
/// Every kept entry is looked up once with `embedding` (so the weight's gradient, sparse with
/// `sparse`, comes from it); sums and means add the rows into their bags with one `index_add`,
/// maxima reduce each bag's (contiguous) rows. The other three outputs are PyTorch's
/// bookkeeping for its backward, with its shapes, dtype (int64) and CPU values:
/// `offset2bag` (the bag of each entry; empty for sums of a float, half or bfloat16 table
/// without padding, PyTorch's fast path), `bag_size` (the kept entries per bag; zeros for sums)
/// and `max_indices` (the row each maximum came from, zero for an empty bag; `bag_size` for
/// the other modes).
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag_padding_idx(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let op = "embedding_bag";
    let bad = |msg: String| Error::invalid(op, msg);
    if weight.dim() != 2 {
        return Err(bad(format!("weight has to be a 2D Tensor, but got Tensor of dimension {}", weight.dim())));
    }
    if !(0..=2).contains(&mode) {
        return Err(bad("`mode` must be sum, mean, or max.".into()));
    }
    if per_sample_weights.is_some() && mode != 0 {
        return Err(bad("embedding_bag: per_sample_weights only supported with mode='sum'".into()));
    }
    if indices.dim() != 1 {
        return Err(bad(format!("input has to be a 1D Tensor, but got Tensor of dimension {}", indices.dim())));
    }
    if offsets.dim() != 1 {
        return Err(bad(format!("offsets has to be a 1D Tensor, but got Tensor of dimension {}", offsets.dim())));
    }
    if !matches!(indices.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(bad(format!("expected indices of type Long or Int, got {:?}", indices.dtype())));
    }
    let num = weight.sizes()[0];
    let padding_idx = match padding_idx {
        None => None,
        Some(p) if (-num..num).contains(&p) => Some(if p < 0 { p + num } else { p }),
        Some(p) => {
            return Err(bad(format!(
                "padding_idx must be within the number of embeddings, -{num} through {}, but got {p}",
                num - 1
            )))
        }
    };
    let n = indices.numel();
    let host = |t: &Tensor| ops::to(t, ScalarType::I64, false, false, None)?.to_device(Device::CPU)?.to_vec::<i64>();
    let mut bounds = host(offsets)?;
    if include_last_offset {
        if bounds.is_empty() {
            return Err(bad("include_last_offset: number of offset should be at least 1".into()));
        }
    } else {
        bounds.push(n);
    }
    if bounds.len() > 1 && bounds[0] != 0 {
        return Err(bad(format!(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. \
             However, got {}",
            bounds[0]
        )));
    }
    let idx = host(indices)?;
    let bags = bounds.len() - 1;
    // Kept entries (not padding) in input order, with the bag of each; bags are contiguous.
    let (mut pos, mut bag_of, mut counts) = (Vec::new(), Vec::new(), vec![0i64; bags]);
    let mut offset2bag = vec![0i64; n as usize];
    for b in 0..bags {
        let (s, e) = (bounds[b], bounds[b + 1]);
        if s < 0 || s > e || e > n {
            return Err(bad(format!("offsets must be non-decreasing and within the input, got start {s} end {e}")));
        }
        for i in s..e {
            offset2bag[i as usize] = b as i64;
            if Some(idx[i as usize]) != padding_idx {
                pos.push(i);
                bag_of.push(b as i64);
                counts[b] += 1;
            }
        }
    }
    let dim = weight.sizes()[1];
    let k = pos.len() as i64;
    // The bookkeeping above ran on the host; its tensors go to the table's device.
    let dev = weight.device();
    let on_dev = |v: Vec<i64>, shape: &[i64]| Tensor::from_vec(v, shape)?.to_device(dev);
    let pos = on_dev(pos, &[k])?;
    let looked_up = ops::index_select(indices, 0, &pos)?;
    let mut rows = ops::embedding(weight, &looked_up, -1, scale_grad_by_freq, sparse)?;
    if let Some(w) = per_sample_weights {
        if w.numel() != n {
            return Err(bad(format!(
                "expected per_sample_weights of {n} elements (one per index), got shape {:?}",
                w.sizes()
            )));
        }
        rows = ops::mul(&rows, &ops::unsqueeze(&ops::index_select(&ops::reshape(w, &[n])?, 0, &pos)?, 1)?)?;
    }
    let zeros = ops::zeros(&[bags as i64, dim], Some(rows.dtype()), None, Some(dev), None)?;
    let bag_size = on_dev(if mode == 0 { vec![0; bags] } else { counts.clone() }, &[bags as i64])?;
    // PyTorch's CPU sums of a float, half or bfloat16 table without padding (its fast path)
    // leave offset2bag empty.
    let fast_sum = mode == 0
        && matches!(weight.dtype(), ScalarType::F32 | ScalarType::F16 | ScalarType::BF16)
        && padding_idx.is_none()
        && weight.strides()[1] == 1;
    let offset2bag = if fast_sum { on_dev(Vec::new(), &[0])? } else { on_dev(offset2bag, &[n])? };
    let (out, max_indices) = if mode == 2 {
        let (mut out, mut arg) = (Vec::with_capacity(bags), Vec::with_capacity(bags));
        let mut start = 0;
        for (b, &c) in counts.iter().enumerate() {
            if c == 0 {
                out.push(ops::select(&zeros, 0, b as i64)?);
                arg.push(ops::zeros(&[dim], Some(ScalarType::I64), None, Some(dev), None)?);
            } else {
                let (m, i) = ops::max_dim(&ops::narrow(&rows, 0, start, c)?, 0, false)?;
                out.push(m);
                // The position in the bag, as the row of the table it came from.
                arg.push(ops::index_select(&ops::narrow(&looked_up, 0, start, c)?, 0, &i)?);
            }
            start += c;
        }
        if bags == 0 {
            (zeros, ops::zeros(&[0, dim], Some(ScalarType::I64), None, Some(dev), None)?)
        } else {
            (ops::stack(&out, 0)?, ops::stack(&arg, 0)?)
        }
    } else {
        let sums = ops::index_add(&zeros, 0, &on_dev(bag_of, &[k])?, &rows, Scalar::Int(1))?;
        let out = if mode == 0 {
            sums
        } else {
            let divisors: Vec<f64> = counts.iter().map(|&c| c.max(1) as f64).collect();
            let divisors = ops::to(
                &Tensor::from_vec(divisors, &[bags as i64, 1])?.to_device(dev)?,
                rows.dtype(),
                false,
                false,
                None,
            )?;
            ops::div(&sums, &divisors)?
        };
        (out, bag_size.clone())
    };
    Ok((out, offset2bag, bag_size, max_indices))
}

/// `embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor`
pub fn embedding(
    weight: &Tensor,
    indices: &Tensor,
    _padding_idx: i64,
    _scale_grad_by_freq: bool,
    _sparse: bool,
) -> Result<Tensor> {
    if weight.dim() != 2 {
        return Err(Error::invalid("embedding", "'weight' must be 2-D"));
    }
    if !matches!(indices.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(Error::invalid(
            "embedding",
            format!(
                "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead",
                indices.dtype().cpp_name()
            ),
        ));
    }
    let flat = crate::ops::reshape(indices, &[-1])?;
    let rows = index_select_impl(weight, 0, &flat)?;
    let mut shape = indices.sizes().to_vec();
    shape.push(weight.sizes()[1]);
    crate::ops::view(&rows, &shape)
}

/// `embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor`
///
/// The gradient of an embedding table: row `i` is the sum of the gradient rows of the positions
/// that looked up `i` (none for `padding_idx`), each sum divided by `i`'s count in the batch
/// with `scale_grad_by_freq`. The positions are grouped by index (on the host for the CPU, on
/// the device otherwise: Note [Grouping on the device]) and summed in position order, in
/// `float` for the 32- and 16-bit floats and `double` for `float64`, on the CPU and on a device
/// alike (Note [Deterministic embedding backward] in kernels-cuda): the same numbers on both,
/// on every run.
pub fn embedding_dense_backward(
    grad_output: &Tensor,
    indices: &Tensor,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let op = "embedding_dense_backward";
    if !matches!(indices.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(Error::invalid(
            op,
            format!(
                "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got {} instead",
                indices.dtype().cpp_name()
            ),
        ));
    }
    let dtype = grad_output.dtype();
    if !dtype.is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype });
    }
    if grad_output.device() != indices.device() {
        return Err(Error::DeviceMismatch {
            op: op.into(),
            a: grad_output.device().to_string(),
            b: indices.device().to_string(),
        });
    }
    if num_weights < 0 {
        return Err(Error::invalid(op, format!("num_weights must be non-negative, got {num_weights}")));
    }
    let n = indices.numel();
    let cols = match grad_output.dim() {
        0 => 1,
        d => grad_output.sizes()[d - 1],
    };
    let mut want = indices.sizes().to_vec();
    want.push(cols);
    if grad_output.sizes() != want.as_slice() {
        return Err(Error::shape(
            op,
            format!(
                "grad_output of shape {:?} does not match indices of shape {:?}",
                grad_output.sizes(),
                indices.sizes()
            ),
        ));
    }
    let grad = crate::ops::contiguous(&crate::ops::reshape(grad_output, &[n, cols])?, MemoryFormat::Contiguous)?;
    if !grad.device().is_cpu() {
        return embedding_backward_on_device(op, &grad, indices, num_weights, padding_idx, scale_grad_by_freq);
    }
    let idx = indices.to_vec::<i64>()?;
    for &i in &idx {
        check_index(op, i, 0, num_weights, false)?;
    }
    // Positions grouped by index (a stable sort keeps each group in position order).
    let mut order: Vec<i64> = c10::size::try_vec(idx.len())?;
    order.extend((0..n).filter(|&p| idx[p as usize] != padding_idx));
    order.sort_by_key(|&p| idx[p as usize]);
    let mut starts: Vec<i64> = vec![0];
    let mut rows: Vec<i64> = Vec::new();
    for (k, &p) in order.iter().enumerate() {
        let i = idx[p as usize];
        if rows.last() != Some(&i) {
            if k > 0 {
                starts.push(k as i64);
            }
            rows.push(i);
        }
    }
    starts.push(order.len() as i64);
    if rows.is_empty() {
        starts.truncate(1);
    }
    // The sums as the device computes them: rounded to f32 after every step unless float64.
    let round = |x: f64| if dtype == ScalarType::F64 { x } else { x as f32 as f64 };
    let g = grad.to_vec::<f64>()?;
    let total = (num_weights as usize)
        .checked_mul(cols as usize)
        .ok_or_else(|| Error::invalid(op, "numel: integer multiplication overflow"))?;
    let mut out = c10::size::try_vec_filled(0f64, total)?;
    let cols = cols as usize;
    for (w, &row) in rows.iter().enumerate() {
        let group = &order[starts[w] as usize..starts[w + 1] as usize];
        for c in 0..cols {
            let mut acc = 0f64;
            for &p in group {
                acc = round(acc + g[p as usize * cols + c]);
            }
            if scale_grad_by_freq {
                acc = round(acc / group.len() as f64);
            }
            out[row as usize * cols + c] = acc;
        }
    }
    Tensor::from_vec(out, &[num_weights, cols as i64])?.to(dtype).call()
}

/// Embedding's gradient on a device (`grad` contiguous `[n, cols]`): the indices checked through
/// their minimum and maximum (two numbers to the host), grouped on the device (Note [Grouping on
/// the device]) with the padding positions keyed past every row, so that they form the last
/// group, which is left out; then summed by the device's embedding loop.
fn embedding_backward_on_device(
    op: &str,
    grad: &Tensor,
    indices: &Tensor,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let (n, cols) = (grad.sizes()[0], grad.sizes()[1]);
    let device = grad.device();
    let out = crate::ops::zeros(&[num_weights, cols], Some(grad.dtype()), None, Some(device), None)?;
    if n == 0 || cols == 0 {
        return Ok(out);
    }
    let idx = crate::ops::to(&crate::ops::reshape(indices, &[n])?, ScalarType::I64, false, false, None)?;
    check_index(op, crate::ops::amin(&idx, &[], false)?.item::<i64>()?, 0, num_weights, false)?;
    check_index(op, crate::ops::amax(&idx, &[], false)?.item::<i64>()?, 0, num_weights, false)?;
    let padded = (0..num_weights).contains(&padding_idx);
    let keys = if padded {
        let pad = crate::ops::to(
            &crate::ops::eq_scalar(&idx, Scalar::Int(padding_idx))?,
            ScalarType::I64,
            false,
            false,
            None,
        )?;
        crate::ops::add(&idx, &crate::ops::mul_scalar(&pad, Scalar::Int(num_weights - padding_idx))?, Scalar::Int(1))?
    } else {
        idx
    };
    sum_groups_on_device(op, &out, grad, &keys, padded.then_some(num_weights), scale_grad_by_freq)?;
    Ok(out)
}

/// Writes into row `k` of the contiguous `out` (`[rows, cols]`) the sum of the rows of `grad`
/// (contiguous `[n, cols]`) whose int64 key is `k` (divided by their count with
/// `scale_by_freq`), in position order, grouping on the device (Note [Grouping on the
/// device]); other rows are left as they are. Every key must lie in `0..rows`, except
/// `skip`'s, whose rows are left out.
pub(crate) fn sum_groups_on_device(
    op: &str,
    out: &Tensor,
    grad: &Tensor,
    keys: &Tensor,
    skip: Option<i64>,
    scale_by_freq: bool,
) -> Result<()> {
    if keys.numel() == 0 || out.numel() == 0 {
        return Ok(());
    }
    let g = crate::native::sort::device_groups(op, keys)?;
    let mut u = g.keys.numel();
    // The skipped key is the largest: its group, if any, is the last.
    if let Some(k) = skip {
        if u > 0 && crate::ops::select(&g.keys, 0, u - 1)?.item::<i64>()? == k {
            u -= 1;
        }
    }
    if u > 0 {
        let (starts, rows) = (crate::ops::narrow(&g.starts, 0, 0, u + 1)?, crate::ops::narrow(&g.keys, 0, 0, u)?);
        crate::native::stub::run_embedding_backward(out, grad, &g.order, &starts, &rows, scale_by_freq)?;
    }
    Ok(())
}

/// `one_hot` on a device other than the CPU, from device operators: the checks read the
/// minimum and maximum (two numbers copied to the host, as PyTorch's CUDA `one_hot` does),
/// then `self.unsqueeze(-1) == arange(classes)` as int64, computed on the device.
fn one_hot_on_device(self_: &Tensor, num_classes: i64) -> Result<Tensor> {
    let op = "one_hot";
    if num_classes < -1 {
        return Err(Error::invalid(op, "num_classes should be positive"));
    }
    let (lo, hi) = if self_.numel() > 0 && !self_.device().is_meta() {
        let lo = crate::ops::amin(self_, &[], false)?.item::<i64>()?;
        (Some(lo), Some(crate::ops::amax(self_, &[], false)?.item::<i64>()?))
    } else {
        (None, None)
    };
    if lo.is_some_and(|lo| lo < 0) {
        return Err(Error::invalid(op, "Class values must be non-negative."));
    }
    let classes = if num_classes == -1 {
        match hi {
            Some(m) => m.checked_add(1).ok_or_else(|| Error::shape(op, "numel: integer multiplication overflow"))?,
            None if self_.numel() == 0 => {
                return Err(Error::invalid(op, "Can not infer total number of classes from empty tensor."))
            }
            None => {
                return Err(Error::NotImplemented {
                    op: op.into(),
                    msg: "inferring num_classes needs the values".into(),
                })
            }
        }
    } else {
        if hi.is_some_and(|hi| hi >= num_classes) {
            return Err(Error::invalid(op, "Class values must be smaller than num_classes."));
        }
        num_classes
    };
    let range = crate::ops::arange(Scalar::Int(classes), Some(ScalarType::I64), None, Some(self_.device()), None)?;
    let hits = crate::ops::eq(&crate::ops::unsqueeze(self_, -1)?, &range)?;
    hits.to(ScalarType::I64).call()
}

/// `one_hot(Tensor self, int num_classes=-1) -> Tensor`
pub fn one_hot(self_: &Tensor, num_classes: i64) -> Result<Tensor> {
    if self_.dtype() != ScalarType::I64 {
        return Err(Error::invalid("one_hot", "one_hot is only applicable to index tensor of type LongTensor."));
    }
    if !self_.device().is_cpu() {
        return one_hot_on_device(self_, num_classes);
    }
    let v = self_.to_vec::<i64>()?;
    if v.iter().any(|&x| x < 0) {
        return Err(Error::invalid("one_hot", "Class values must be non-negative."));
    }
    let classes = if num_classes == -1 {
        match v.iter().max() {
            // The class count of the value i64::MAX does not fit an i64.
            Some(&m) => {
                m.checked_add(1).ok_or_else(|| Error::shape("one_hot", "numel: integer multiplication overflow"))?
            }
            None => return Err(Error::invalid("one_hot", "Can not infer total number of classes from empty tensor.")),
        }
    } else if num_classes < -1 {
        return Err(Error::invalid("one_hot", "num_classes should be positive"));
    } else {
        if v.iter().any(|&x| x >= num_classes) {
            return Err(Error::invalid("one_hot", "Class values must be smaller than num_classes."));
        }
        num_classes
    };
    let n = (v.len() as i64)
        .checked_mul(classes)
        .ok_or_else(|| Error::invalid("one_hot", "numel: integer multiplication overflow"))?;
    let mut out = c10::size::try_vec_filled(0i64, n as usize)?;
    for (i, &x) in v.iter().enumerate() {
        out[i * classes as usize + x as usize] = 1;
    }
    let mut shape = self_.sizes().to_vec();
    shape.push(classes);
    Tensor::from_vec(out, &shape)
}

// ---- scatter_reduce, index_reduce ----------------------------------------------------------------

/// The reductions of `scatter_reduce` / `index_reduce`.
#[derive(Clone, Copy, PartialEq)]
enum Reduction {
    Sum,
    Prod,
    Mean,
    Amax,
    Amin,
}

fn parse_reduction(op: &str, reduce: &str, allowed: &[&str]) -> Result<Reduction> {
    if !allowed.contains(&reduce) {
        return Err(Error::invalid(op, format!("reduce argument must be either {}, got {reduce}", allowed.join(", "))));
    }
    Ok(match reduce {
        "sum" => Reduction::Sum,
        "prod" => Reduction::Prod,
        "mean" => Reduction::Mean,
        "amax" => Reduction::Amax,
        _ => Reduction::Amin,
    })
}

/// Folds `src[sp]` into `self[pos]` for every `(pos, sp)`: each touched position starts from its
/// own value (`include_self`) or from its first source value, and `mean` divides by the count
/// (floor division for integers). Floats compute in f64, integers in i64, then convert back.
fn reduce_into(
    op: &str,
    self_: &Tensor,
    src: &Tensor,
    positions: &[(usize, usize)],
    reduction: Reduction,
    include_self: bool,
) -> Result<Tensor> {
    /// The element operations `run` needs: add, multiply, is-NaN, divide by a count.
    struct ElemOps<T> {
        add: fn(T, T) -> T,
        mul: fn(T, T) -> T,
        is_nan: fn(T) -> bool,
        div: fn(T, i64) -> T,
    }
    fn run<T: Copy + PartialOrd>(
        v: &mut [T],
        s: &[T],
        positions: &[(usize, usize)],
        reduction: Reduction,
        include_self: bool,
        ops: ElemOps<T>,
    ) {
        let ElemOps { add, mul, is_nan, div } = ops;
        let mut count = vec![0i64; v.len()];
        for &(pos, _) in positions {
            count[pos] = i64::from(include_self);
        }
        let mut started = vec![include_self; v.len()];
        for &(pos, sp) in positions {
            let x = s[sp];
            count[pos] += 1;
            if !started[pos] {
                v[pos] = x;
                started[pos] = true;
                continue;
            }
            let y = v[pos];
            v[pos] = match reduction {
                Reduction::Sum | Reduction::Mean => add(y, x),
                Reduction::Prod => mul(y, x),
                Reduction::Amax if is_nan(y) || is_nan(x) => {
                    if is_nan(y) {
                        y
                    } else {
                        x
                    }
                }
                Reduction::Amin if is_nan(y) || is_nan(x) => {
                    if is_nan(y) {
                        y
                    } else {
                        x
                    }
                }
                Reduction::Amax => {
                    if x > y {
                        x
                    } else {
                        y
                    }
                }
                Reduction::Amin => {
                    if x < y {
                        x
                    } else {
                        y
                    }
                }
            };
        }
        if reduction == Reduction::Mean {
            for (p, &c) in count.iter().enumerate() {
                if c > 0 && started[p] {
                    v[p] = div(v[p], c);
                }
            }
        }
    }
    if src.dtype() != self_.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "{op}(): Expected self.dtype to be equal to src.dtype, got {} and {}",
                self_.dtype().cpp_name(),
                src.dtype().cpp_name()
            ),
        ));
    }
    let shape = self_.sizes().to_vec();
    let out = if self_.dtype().is_floating_point() {
        let mut v = self_.to_vec::<f64>()?;
        let s = src.to_vec::<f64>()?;
        run(
            &mut v,
            &s,
            positions,
            reduction,
            include_self,
            ElemOps { add: |a, b| a + b, mul: |a, b| a * b, is_nan: f64::is_nan, div: |a, c| a / c as f64 },
        );
        Tensor::from_vec(v, &shape)?
    } else {
        let mut v = self_.to_vec::<i64>()?;
        let s = src.to_vec::<i64>()?;
        run(
            &mut v,
            &s,
            positions,
            reduction,
            include_self,
            // Counts are positive, so Euclidean division is floor division (PyTorch's integer mean).
            ElemOps { add: i64::wrapping_add, mul: i64::wrapping_mul, is_nan: |_| false, div: i64::div_euclid },
        );
        Tensor::from_vec(v, &shape)?
    };
    crate::ops::to(&out.to_device(self_.device())?, self_.dtype(), false, false, None)
}

/// `scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor`
pub fn scatter_reduce_two(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
) -> Result<Tensor> {
    let op = "scatter_reduce";
    let reduction = parse_reduction(op, reduce, &["sum", "prod", "mean", "amax", "amin"])?;
    let d = wrap_dim(op, dim, self_.dim())?;
    scatter_gather_check(op, self_, d, index, Some(src))?;
    let positions = if index.numel() == 0 {
        Vec::new()
    } else {
        scatter_gather_positions(op, self_, d, index, Some(&nonempty_sizes(src)))?
    };
    reduce_into(op, self_, src, &positions, reduction, include_self)
}

/// `index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) -> Tensor`:
/// element `m` of `source` is folded into `self[..., index[m[dim]], ...]`.
pub fn index_reduce(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    reduce: &str,
    include_self: bool,
) -> Result<Tensor> {
    let op = "index_reduce";
    let reduction = parse_reduction(op, reduce, &["prod", "mean", "amax", "amin"])?;
    let d = wrap_dim(op, dim, self_.dim())?;
    if index.dim() > 1 {
        return Err(Error::invalid(op, "index_reduce_(): Index is supposed to be a vector"));
    }
    let idx = index_values(
        op,
        index,
        &[ScalarType::I64, ScalarType::I32],
        "index_reduce_(): Expected dtype int32/int64 for index",
        true,
    )?;
    let (s, src) = (nonempty_sizes(self_), nonempty_sizes(source));
    let src_ok =
        src.len() == s.len() && (0..s.len()).all(|k| if k == d { src[k] == idx.len() as i64 } else { src[k] == s[k] });
    if !src_ok {
        return Err(Error::shape(
            op,
            format!(
                "index_reduce_(): Source/destination tensor must have the same shape apart from dimension {d}, and source.size({d}) must equal index.numel() ({}); got self {:?} and source {:?}",
                idx.len(),
                self_.sizes(),
                source.sizes()
            ),
        ));
    }
    let cs = contiguous_strides(&s);
    let mut positions = c10::size::try_vec(source.numel() as usize)?;
    let mut k = 0usize;
    let mut err = None;
    for_each_index(&src, |m| {
        if err.is_some() {
            return;
        }
        match check_index(op, idx[m[d] as usize], d, s[d], true) {
            Ok(i) => {
                let pos: i64 = m.iter().enumerate().map(|(j, &c)| if j == d { i } else { c } * cs[j]).sum();
                positions.push((pos as usize, k));
            }
            Err(e) => err = Some(e),
        }
        k += 1;
    });
    if let Some(e) = err {
        return Err(e);
    }
    reduce_into(op, self_, source, &positions, reduction, include_self)
}
