//! Sorting and order statistics: `sort`, `argsort`, `topk`, `kthvalue`, `median`,
//! `cummax`/`cummin` and `unique` (`_unique2`).
//!
//! Every kernel works on the lines along one dimension: the dimension is swapped last, the data
//! read into a row-major `Vec` and each line handled on its own (See Note [Reference data
//! movement]). NaN orders above every number, as in PyTorch, and sorts are stable.

use std::cmp::Ordering;

use c10::{Element, Error, MemoryFormat, Result, ScalarType};

use crate::native::cpu::gather::cmp_nan_last;
use crate::native::stub;
use crate::{wrap_dim, Tensor};

/// The lines of `t` along `dim`: `t` with `dim` swapped last (as a row-major `Vec`), the line
/// length, and the swapped shape. A zero-dim tensor is one line of one element.
struct Lines<T> {
    v: Vec<T>,
    len: usize,
    moved: Vec<i64>,
    dim: usize,
    ndim: usize,
}

fn lines<T: Element>(op: &str, t: &Tensor, dim: i64) -> Result<Lines<T>> {
    let ndim = t.dim();
    let d = wrap_dim(op, dim, ndim)?;
    if ndim == 0 {
        return Ok(Lines { v: t.to_vec()?, len: 1, moved: vec![], dim: 0, ndim });
    }
    let m = crate::ops::transpose(t, d as i64, ndim as i64 - 1)?;
    Ok(Lines { v: m.to_vec()?, len: t.sizes()[d] as usize, moved: m.sizes().to_vec(), dim: d, ndim })
}

impl<T> Lines<T> {
    /// Number of lines (checked: the lines of an empty dim can be too many to count).
    fn count(&self) -> Result<usize> {
        match self.v.len().checked_div(self.len) {
            Some(c) => Ok(c),
            None => Ok(c10::size::numel("sort", &self.moved[..self.moved.len().saturating_sub(1)])? as usize),
        }
    }

    /// A buffer for `per_line` results of every line, reserved fallibly (Note [Fallible
    /// scratch buffers]).
    fn out_buffer<U>(&self, per_line: usize) -> Result<Vec<U>> {
        let n = self
            .count()?
            .checked_mul(per_line)
            .ok_or_else(|| Error::invalid("sort", "numel: integer multiplication overflow"))?;
        c10::size::try_vec(n)
    }

    /// A tensor from per-line results of length `out_len` each, in the original dim order (or
    /// with the dim removed, for `out_len == None`, or kept as size 1 with `keepdim`).
    fn assemble<U: Element>(&self, data: Vec<U>, out_len: Option<usize>, keepdim: bool) -> Result<Tensor> {
        if self.ndim == 0 {
            return Tensor::from_vec(data, &[]);
        }
        let mut shape = self.moved.clone();
        let last = shape.len() - 1;
        shape[last] = out_len.unwrap_or(1) as i64;
        let t = Tensor::from_vec(data, &shape)?;
        let t = crate::ops::transpose(&t, self.dim as i64, last as i64)?;
        let t = crate::ops::contiguous(&t, c10::MemoryFormat::Contiguous)?;
        if out_len.is_none() && !keepdim {
            crate::native::shape::squeeze_dim(&t, self.dim as i64)
        } else {
            Ok(t)
        }
    }
}

/// The order of a line's elements: ascending or descending, NaN largest, stable on ties.
fn line_order<T: PartialOrd>(line: &[T], descending: bool) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..line.len()).collect();
    if descending {
        perm.sort_by(|&a, &b| cmp_nan_last(&line[b], &line[a]));
    } else {
        perm.sort_by(|&a, &b| cmp_nan_last(&line[a], &line[b]));
    }
    perm
}

/// Values and indices of the first `k` elements of each line in sorted order.
fn sorted_prefix(op: &str, t: &Tensor, dim: i64, descending: bool, k: Option<usize>) -> Result<(Tensor, Tensor)> {
    if !t.device().is_cpu() {
        return sorted_prefix_on_device(op, t, dim, descending, k);
    }
    c10::dispatch_all_types!(t.dtype(), T => {
        let l = lines::<T>(op, t, dim)?;
        let k = k.unwrap_or(l.len);
        let mut vals = l.out_buffer(k)?;
        let mut idx = l.out_buffer(k)?;
        if l.len > 0 {
            for line in l.v.chunks(l.len) {
                for &p in line_order(line, descending).iter().take(k) {
                    vals.push(line[p]);
                    idx.push(p as i64);
                }
            }
        }
        Ok((l.assemble(vals, Some(k), false)?, l.assemble(idx, Some(k), false)?))
    })
}

/// [`sorted_prefix`] on a device other than the CPU: the lines are made the contiguous last
/// dim, the device's sort loop ([`stub::run_sort`]) sorts every line there, and the results go
/// back to the input's dim order (contiguous, as the CPU's), narrowed to `k`.
fn sorted_prefix_on_device(
    op: &str,
    t: &Tensor,
    dim: i64,
    descending: bool,
    k: Option<usize>,
) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(op, dim, t.dim())? as i64;
    let src = if t.dim() == 0 { crate::ops::reshape(t, &[1])? } else { t.clone() };
    let last = src.dim() as i64 - 1;
    let lines = crate::ops::contiguous(&crate::ops::transpose(&src, d, last)?, MemoryFormat::Contiguous)?;
    let values = Tensor::empty_uninit(lines.sizes(), lines.dtype(), lines.device())?;
    let indices = Tensor::empty_uninit(lines.sizes(), ScalarType::I64, lines.device())?;
    if lines.numel() > 0 {
        stub::run_sort(op, &values, &indices, &lines, descending)?;
    }
    let back = |x: &Tensor| -> Result<Tensor> {
        let mut x = crate::ops::transpose(x, d, last)?;
        if let Some(k) = k {
            x = crate::ops::narrow(&x, d, 0, k as i64)?;
        }
        let x = crate::ops::contiguous(&x, MemoryFormat::Contiguous)?;
        if t.dim() == 0 {
            crate::ops::reshape(&x, &[])
        } else {
            Ok(x)
        }
    };
    Ok((back(&values)?, back(&indices)?))
}

/// `sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)`
pub fn sort(self_: &Tensor, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
    sorted_prefix("sort", self_, dim, descending, None)
}
/// `sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)`
pub fn sort_stable(self_: &Tensor, _stable: Option<bool>, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
    sorted_prefix("sort", self_, dim, descending, None)
}
/// `argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor`
pub fn argsort(self_: &Tensor, dim: i64, descending: bool) -> Result<Tensor> {
    Ok(sorted_prefix("argsort", self_, dim, descending, None)?.1)
}
/// `argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor`
pub fn argsort_stable(self_: &Tensor, _stable: bool, dim: i64, descending: bool) -> Result<Tensor> {
    Ok(sorted_prefix("argsort", self_, dim, descending, None)?.1)
}

/// `topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)`
pub fn topk(self_: &Tensor, k: i64, dim: i64, largest: bool, _sorted: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim("topk", dim, self_.dim())?;
    let size = if self_.dim() == 0 { 1 } else { self_.sizes()[d] };
    if k < 0 || k > size {
        return Err(Error::invalid("topk", "selected index k out of range"));
    }
    sorted_prefix("topk", self_, dim, largest, Some(k as usize))
}

/// Value and index of the element at sorted position `pick(len)` of each line (NaN largest);
/// `nan_wins` returns the first NaN of a line instead (`median`).
fn order_stat(
    op: &str,
    t: &Tensor,
    dim: i64,
    keepdim: bool,
    pick: impl Fn(usize) -> usize,
    nan_wins: bool,
) -> Result<(Tensor, Tensor)> {
    c10::dispatch_all_types!(t.dtype(), T => {
        let l = lines::<T>(op, t, dim)?;
        let mut vals = l.out_buffer(1)?;
        let mut idx = l.out_buffer(1)?;
        if l.len > 0 {
            for line in l.v.chunks(l.len) {
                #[allow(clippy::eq_op)]
                let nan = if nan_wins { line.iter().position(|x| x != x) } else { None };
                let p = match nan {
                    Some(p) => p,
                    None => line_order(line, false)[pick(l.len)],
                };
                vals.push(line[p]);
                idx.push(p as i64);
            }
        }
        Ok((l.assemble(vals, None, keepdim)?, l.assemble(idx, None, keepdim)?))
    })
}

fn check_reduction_size(op: &str, t: &Tensor, dim: i64) -> Result<usize> {
    let d = wrap_dim(op, dim, t.dim())?;
    let size = if t.dim() == 0 { 1 } else { t.sizes()[d] };
    if size == 0 {
        return Err(Error::invalid(op, format!("{op}(): Expected reduction dim {d} to have non-zero size.")));
    }
    Ok(size as usize)
}

/// `kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)`
pub fn kthvalue(self_: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    check_kth(self_, k, dim)?;
    order_stat("kthvalue", self_, dim, keepdim, |_| (k - 1) as usize, false)
}

/// `kthvalue`'s checks: `dim` wrapped, and `1 <= k <= size(dim)` (a 0-dim tensor is one value).
fn check_kth(self_: &Tensor, k: i64, dim: i64) -> Result<usize> {
    let d = wrap_dim("kthvalue", dim, self_.dim())?;
    let size = if self_.dim() == 0 { 1 } else { self_.sizes()[d] };
    if k < 1 || k > size {
        return Err(Error::invalid(
            "kthvalue",
            format!("kthvalue(): selected number k out of range for dimension {d}"),
        ));
    }
    Ok(d)
}

/// `kthvalue` on a device: a stable sort of each line (NaN last, as the k-th order statistic
/// counts it) and its `k`-th entry, values and indices.
pub fn kthvalue_device(self_: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = check_kth(self_, k, dim)?;
    if self_.dim() == 0 {
        let indices = crate::ops::zeros_like(self_, Some(ScalarType::I64), None, None, None, None)?;
        return Ok((crate::ops::clone(self_, None)?, indices));
    }
    let (values, indices) = crate::ops::sort_stable(self_, Some(true), d as i64, false)?;
    let pick = |t: &Tensor| -> Result<Tensor> {
        let one = crate::ops::narrow(t, d as i64, k - 1, 1)?;
        if keepdim {
            crate::ops::contiguous(&one, c10::MemoryFormat::Contiguous)
        } else {
            crate::ops::squeeze_dim(&one, d as i64)
        }
    };
    Ok((pick(&values)?, pick(&indices)?))
}

/// `median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`:
/// the lower median of each line, or its first NaN.
pub fn median_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    check_reduction_size("median", self_, dim)?;
    order_stat("median", self_, dim, keepdim, |n| (n - 1) / 2, true)
}

/// `median(Tensor self) -> Tensor`: the lower median of all elements (NaN for an empty or
/// NaN-containing floating tensor).
pub fn median(self_: &Tensor) -> Result<Tensor> {
    if self_.numel() == 0 {
        if !self_.dtype().is_floating_point() {
            return Err(Error::invalid("median", "median() input tensor cannot be empty"));
        }
        return crate::native::copy::to_dtype(&Tensor::scalar_tensor(f64::NAN), self_.dtype());
    }
    let flat = crate::ops::reshape(self_, &[-1])?;
    Ok(median_dim(&flat, 0, false)?.0)
}

/// Running max (or min) with the index where it was attained: the latest of equal values, and
/// NaN once seen.
fn cumulative(op: &str, t: &Tensor, dim: i64, max: bool) -> Result<(Tensor, Tensor)> {
    c10::dispatch_all_types!(t.dtype(), T => {
        let l = lines::<T>(op, t, dim)?;
        let mut vals = c10::size::try_vec(l.v.len())?;
        let mut idx = c10::size::try_vec(l.v.len())?;
        if l.len > 0 {
            for line in l.v.chunks(l.len) {
                let (mut best, mut at) = (line[0], 0usize);
                for (i, &x) in line.iter().enumerate() {
                    #[allow(clippy::eq_op)]
                    let take = x != x
                        || (best == best
                            && if max { x.partial_cmp(&best) != Some(Ordering::Less) } else { x.partial_cmp(&best) != Some(Ordering::Greater) });
                    if take {
                        best = x;
                        at = i;
                    }
                    vals.push(best);
                    idx.push(at as i64);
                }
            }
        }
        Ok((l.assemble(vals, Some(l.len), false)?, l.assemble(idx, Some(l.len), false)?))
    })
}

/// `cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)`
pub fn cummax(self_: &Tensor, dim: i64) -> Result<(Tensor, Tensor)> {
    cumulative("cummax", self_, dim, true)
}
/// `cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)`
pub fn cummin(self_: &Tensor, dim: i64) -> Result<(Tensor, Tensor)> {
    cumulative("cummin", self_, dim, false)
}

/// `_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)`:
/// the sorted distinct values, and on request the position of each input element in them and
/// how often each occurs (empty `int64` tensors otherwise).
pub fn unique2(
    self_: &Tensor,
    _sorted: bool,
    return_inverse: bool,
    return_counts: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    c10::dispatch_all_types!(self_.dtype(), T => {
        let v = self_.to_vec::<T>()?;
        let order = line_order(&v, false);
        let mut values: Vec<T> = Vec::new();
        let mut counts: Vec<i64> = Vec::new();
        let mut inverse = vec![0i64; v.len()];
        for &p in &order {
            let same = values.last().is_some_and(|last| cmp_nan_last(last, &v[p]) == Ordering::Equal);
            if !same {
                values.push(v[p]);
                counts.push(0);
            }
            *counts.last_mut().unwrap_or(&mut 0) += 1;
            inverse[p] = values.len() as i64 - 1;
        }
        let n = values.len() as i64;
        let empty = || Tensor::from_vec(Vec::<i64>::new(), &[0]);
        Ok((
            Tensor::from_vec(values, &[n])?,
            if return_inverse { Tensor::from_vec(inverse, self_.sizes())? } else { empty()? },
            if return_counts { Tensor::from_vec(counts, &[n])? } else { empty()? },
        ))
    })
}

// Note [Grouping on the device]: the positions of an int64 key vector grouped by key without
// the keys leaving the device: a stable sort of the keys (the device's sort loop, Note
// [Merging sorted runs] in kernels-cuda for long vectors), then the runs of equal keys (its
// runs loop, Note [Runs of a sorted vector]). Group `g` holds positions
// `order[starts[g]..starts[g + 1]]` in position order, all with key `keys[g]`; groups come in
// increasing key order. One number, the count of groups, comes back to the host. Used where
// the CPU groups on the host: embedding's gradient (so `index_add`), and sparse coalescing and
// densifying.

/// Positions grouped by key on the device (Note [Grouping on the device]).
pub(crate) struct DeviceGroups {
    /// Every position, grouped by key, each group in position order.
    pub order: Tensor,
    /// `groups + 1` offsets into `order`.
    pub starts: Tensor,
    /// Each group's key, increasing.
    pub keys: Tensor,
}

/// Groups the positions of the int64 `keys` (any shape, read flat) on their device.
pub(crate) fn device_groups(op: &str, keys: &Tensor) -> Result<DeviceGroups> {
    let n = keys.numel();
    let device = keys.device();
    let flat = crate::ops::reshape(keys, &[n])?;
    let (sorted, order) = crate::ops::sort_stable(&flat, Some(true), 0, false)?;
    let long = |len: i64| crate::ops::empty(&[len], Some(ScalarType::I64), None, Some(device), None, None);
    let (starts, uniq) = (long(n + 1)?, long(n)?);
    let u =
        crate::native::stub::run_runs(op, &crate::ops::contiguous(&sorted, MemoryFormat::Contiguous)?, &starts, &uniq)?;
    Ok(DeviceGroups {
        order: crate::ops::contiguous(&order, MemoryFormat::Contiguous)?,
        starts: crate::ops::narrow(&starts, 0, 0, u + 1)?,
        keys: crate::ops::narrow(&uniq, 0, 0, u)?,
    })
}
