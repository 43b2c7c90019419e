//! Views and shape operators. Views share storage and version counter with their base
//! (See Note [Version counter sharing]); `reshape` is a view when the strides allow it and a copy
//! otherwise.

use c10::tensor_impl::{contiguous_strides, DimVec};
use c10::{Error, MemoryFormat, Result, ScalarType};

use crate::{wrap_dim, Tensor};

/// A view of `t` with new geometry over the same storage and version counter.
pub fn make_view(t: &Tensor, sizes: &[i64], strides: &[i64], offset: i64) -> Tensor {
    Tensor::from_impl(t.imp().view_of(DimVec::from_slice(sizes), DimVec::from_slice(strides), offset))
}

/// Resolves one `-1` in a requested shape against `numel` (`infer_size`).
pub fn infer_size(op: &str, shape: &[i64], numel: i64) -> Result<DimVec> {
    let mut out = DimVec::from_slice(shape);
    let mut infer = None;
    let mut prod = 1i64;
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            if infer.is_some() {
                return Err(Error::shape(op, "only one dimension can be inferred"));
            }
            infer = Some(i);
        } else if s < 0 {
            return Err(Error::shape(op, format!("invalid shape dimension {s}")));
        } else {
            // A product past i64 matches no tensor (See Note [Checked sizes]); wrapping could make
            // it match an empty one.
            prod = prod
                .checked_mul(s)
                .ok_or_else(|| Error::shape(op, format!("shape '{shape:?}' is invalid for input of size {numel}")))?;
        }
    }
    let bad = || Error::shape(op, format!("shape '{shape:?}' is invalid for input of size {numel}"));
    match infer {
        Some(i) => {
            if prod == 0 || numel % prod != 0 {
                return Err(bad());
            }
            out[i] = numel / prod;
        }
        None if prod != numel => return Err(bad()),
        None => {}
    }
    Ok(out)
}

/// Strides for viewing (`sizes`, `strides`) as `new_sizes` without copying, if possible
/// (PyTorch's `computeStride`).
pub fn compute_view_strides(sizes: &[i64], strides: &[i64], new_sizes: &[i64]) -> Option<DimVec> {
    if sizes.contains(&0) {
        return Some(contiguous_strides(new_sizes));
    }
    let mut new_strides = DimVec::from_elem(0, new_sizes.len());
    if sizes.is_empty() {
        return Some(DimVec::from_elem(1, new_sizes.len()));
    }
    let mut view_d = new_sizes.len() as isize - 1;
    let mut chunk_base_stride = *strides.last()?;
    let mut tensor_numel = 1i64;
    let mut view_numel = 1i64;
    for tensor_d in (0..sizes.len()).rev() {
        tensor_numel *= sizes[tensor_d];
        if tensor_d == 0 || (sizes[tensor_d - 1] != 1 && strides[tensor_d - 1] != tensor_numel * chunk_base_stride) {
            while view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel * chunk_base_stride;
                view_numel *= new_sizes[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(new_strides)
}

/// `view(Tensor(a) self, SymInt[] size) -> Tensor(a)`
pub fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    let new_sizes = infer_size("view", size, self_.numel())?;
    let strides = compute_view_strides(self_.sizes(), self_.strides(), &new_sizes)
        .ok_or_else(|| Error::ViewStride { op: "view".into() })?;
    Ok(make_view(self_, &new_sizes, &strides, self_.storage_offset()))
}

/// `view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)`: the same memory read as another
/// dtype. With a different element size the last dimension (stride 1) is rescaled, as in
/// PyTorch, with its conditions and messages.
pub fn view_dtype(self_: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    const OP: &str = "view";
    let (from, to) = (self_.dtype(), dtype);
    // Our kernels read Bool storage as Rust `bool`, for which a byte other than 0 or 1 is
    // undefined behaviour; PyTorch allows the view (its bools are bytes). Refused here.
    if to == ScalarType::Bool && from != ScalarType::Bool {
        return Err(Error::invalid(
            OP,
            format!("viewing a {} tensor as Bool is not supported: its bytes need not be 0 or 1", from.cpp_name()),
        ));
    }
    let (old, new) = (from.size() as i64, to.size() as i64);
    let mut sizes = DimVec::from_slice(self_.sizes());
    let mut strides = DimVec::from_slice(self_.strides());
    let mut offset = self_.storage_offset();
    if old != new {
        let what = format!("to view {} as {} (different element sizes)", from.cpp_name(), to.cpp_name());
        let n = self_.dim();
        if n == 0 {
            return Err(Error::invalid(OP, format!("self.dim() cannot be 0 {what}")));
        }
        if strides[n - 1] != 1 {
            return Err(Error::invalid(OP, format!("self.stride(-1) must be 1 {what}, but got {}", strides[n - 1])));
        }
        if old > new {
            let ratio = old / new;
            sizes[n - 1] *= ratio;
            for s in &mut strides[..n - 1] {
                *s *= ratio;
            }
            offset *= ratio;
        } else {
            let ratio = new / old;
            if sizes[n - 1] % ratio != 0 {
                return Err(Error::invalid(
                    OP,
                    format!("self.size(-1) must be divisible by {ratio} {what}, but got {}", sizes[n - 1]),
                ));
            }
            if offset % ratio != 0 {
                return Err(Error::invalid(
                    OP,
                    format!("self.storage_offset() must be divisible by {ratio} {what}, but got {offset}"),
                ));
            }
            for (i, s) in strides[..n - 1].iter_mut().enumerate() {
                if *s % ratio != 0 {
                    return Err(Error::invalid(
                        OP,
                        format!("self.stride({i}) must be divisible by {ratio} {what}, but got {}", *s),
                    ));
                }
                *s /= ratio;
            }
            sizes[n - 1] /= ratio;
            offset /= ratio;
        }
    }
    Ok(Tensor::from_impl(self_.imp().view_of_dtype(sizes, strides, offset, to)))
}

/// `reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)`: a view when possible, else a copy.
pub fn reshape(self_: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let new_sizes = infer_size("reshape", shape, self_.numel())?;
    match compute_view_strides(self_.sizes(), self_.strides(), &new_sizes) {
        Some(strides) => crate::ops::_reshape_alias(self_, &new_sizes, &strides),
        None => {
            let c = crate::ops::clone(self_, Some(MemoryFormat::Contiguous))?;
            crate::ops::view(&c, &new_sizes)
        }
    }
}

/// `_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)`
pub fn reshape_alias(self_: &Tensor, size: &[i64], stride: &[i64]) -> Result<Tensor> {
    as_strided(self_, size, stride, None)
}

/// `as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)`
pub fn as_strided(self_: &Tensor, size: &[i64], stride: &[i64], storage_offset: Option<i64>) -> Result<Tensor> {
    if size.len() != stride.len() {
        return Err(Error::shape(
            "as_strided",
            format!("mismatch in length of strides and shape ({} vs {})", stride.len(), size.len()),
        ));
    }
    let offset = storage_offset.unwrap_or(self_.storage_offset());
    if let Some(&s) = size.iter().find(|&&s| s < 0) {
        return Err(Error::shape(
            "as_strided",
            format!("Trying to create tensor with negative dimension {s}: {size:?}"),
        ));
    }
    if stride.iter().any(|&s| s < 0) {
        return Err(Error::shape(
            "as_strided",
            format!("as_strided: Negative strides are not supported at the moment, got strides: {stride:?}"),
        ));
    }
    if offset < 0 {
        return Err(Error::shape("as_strided", format!("Tensor: invalid storage offset {offset}")));
    }
    // See Note [Checked sizes]: the span and its bytes are computed without wrapping.
    let needed = c10::size::strided_nbytes("as_strided", size, stride, offset, self_.dtype().size())?;
    if needed > 0 && needed > self_.storage().nbytes() {
        return Err(Error::shape(
            "as_strided",
            format!(
                "setStorage: sizes {size:?}, strides {stride:?}, storage offset {offset}, and itemsize {} requiring a storage size of {needed} are out of bounds for storage of size {}",
                self_.dtype().size(),
                self_.storage().nbytes()
            ),
        ));
    }
    Ok(make_view(self_, size, stride, offset))
}

/// `transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)`
pub fn transpose(self_: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    let n = self_.dim();
    let (d0, d1) = (wrap_dim("transpose", dim0, n)?, wrap_dim("transpose", dim1, n)?);
    if n == 0 {
        return Ok(make_view(self_, &[], &[], self_.storage_offset()));
    }
    let mut sizes = DimVec::from_slice(self_.sizes());
    let mut strides = DimVec::from_slice(self_.strides());
    sizes.swap(d0, d1);
    strides.swap(d0, d1);
    Ok(make_view(self_, &sizes, &strides, self_.storage_offset()))
}

/// `t(Tensor(a) self) -> Tensor(a)`: transpose of a tensor of at most 2 dimensions.
pub fn t(self_: &Tensor) -> Result<Tensor> {
    if self_.dim() > 2 {
        return Err(Error::shape(
            "t",
            format!("t() expects a tensor with <= 2 dimensions, but self is {}D", self_.dim()),
        ));
    }
    if self_.dim() < 2 {
        return Ok(make_view(self_, self_.sizes(), self_.strides(), self_.storage_offset()));
    }
    transpose(self_, 0, 1)
}

/// `permute(Tensor(a) self, int[] dims) -> Tensor(a)`
pub fn permute(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = self_.dim();
    if dims.len() != n {
        return Err(Error::shape(
            "permute",
            format!("permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = {}", dims.len()),
        ));
    }
    let mut seen = vec![false; n];
    let mut sizes = DimVec::new();
    let mut strides = DimVec::new();
    for &d in dims {
        let w = wrap_dim("permute", d, n)?;
        if seen[w] {
            return Err(Error::shape("permute", "permute(): duplicate dims are not allowed."));
        }
        seen[w] = true;
        sizes.push(self_.sizes()[w]);
        strides.push(self_.strides()[w]);
    }
    Ok(make_view(self_, &sizes, &strides, self_.storage_offset()))
}

/// `expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)`
pub fn expand(self_: &Tensor, size: &[i64], _implicit: bool) -> Result<Tensor> {
    let n = self_.dim();
    if size.len() < n {
        return Err(Error::shape(
            "expand",
            format!("the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({n})", size.len()),
        ));
    }
    let off = size.len() - n;
    let mut sizes = DimVec::new();
    let mut strides = DimVec::new();
    for (i, &s) in size.iter().enumerate() {
        if i < off {
            if s < 0 {
                return Err(Error::shape(
                    "expand",
                    format!(
                        "the expanded size of the tensor ({s}) isn't allowed in a leading, non-existing dimension {i}"
                    ),
                ));
            }
            sizes.push(s);
            strides.push(0);
            continue;
        }
        let (cur, st) = (self_.sizes()[i - off], self_.strides()[i - off]);
        let want = if s == -1 { cur } else { s };
        if want == cur {
            sizes.push(cur);
            strides.push(st);
        } else if cur == 1 && want >= 0 {
            sizes.push(want);
            strides.push(0);
        } else {
            return Err(Error::shape(
                "expand",
                format!("The expanded size of the tensor ({want}) must match the existing size ({cur}) at non-singleton dimension {i}.  Target sizes: {size:?}.  Tensor sizes: {:?}", self_.sizes()),
            ));
        }
    }
    // Expanded dims have stride 0, so only the count can overflow (See Note [Checked sizes]).
    c10::size::numel("expand", &sizes)?;
    Ok(make_view(self_, &sizes, &strides, self_.storage_offset()))
}

/// `squeeze(Tensor(a) self) -> Tensor(a)`: removes every size-1 dimension.
pub fn squeeze(self_: &Tensor) -> Result<Tensor> {
    let (sizes, strides): (DimVec, DimVec) =
        self_.sizes().iter().zip(self_.strides()).filter(|(&s, _)| s != 1).map(|(&a, &b)| (a, b)).unzip();
    Ok(make_view(self_, &sizes, &strides, self_.storage_offset()))
}

/// `squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)`: removes the listed size-1 dimensions.
pub fn squeeze_dims(self_: &Tensor, dim: &[i64]) -> Result<Tensor> {
    let n = self_.dim();
    let mut drop = vec![false; n.max(1)];
    for &d in dim {
        let w = wrap_dim("squeeze", d, n)?;
        if n > 0 && self_.sizes()[w] == 1 {
            drop[w] = true;
        }
    }
    let mut sizes = DimVec::new();
    let mut strides = DimVec::new();
    for (i, &dropped) in drop.iter().enumerate().take(n) {
        if !dropped {
            sizes.push(self_.sizes()[i]);
            strides.push(self_.strides()[i]);
        }
    }
    Ok(make_view(self_, &sizes, &strides, self_.storage_offset()))
}

/// `squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)`
pub fn squeeze_dim(self_: &Tensor, dim: i64) -> Result<Tensor> {
    squeeze_dims(self_, &[dim])
}

/// `unsqueeze(Tensor(a) self, int dim) -> Tensor(a)`
pub fn unsqueeze(self_: &Tensor, dim: i64) -> Result<Tensor> {
    let n = self_.dim();
    let d = wrap_dim("unsqueeze", dim, n + 1)?;
    let mut sizes = DimVec::from_slice(self_.sizes());
    let mut strides = DimVec::from_slice(self_.strides());
    let st = if d >= n { 1 } else { sizes[d] * strides[d] };
    sizes.insert(d, 1);
    strides.insert(d, st);
    Ok(make_view(self_, &sizes, &strides, self_.storage_offset()))
}

/// `flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)`
pub fn flatten(self_: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    let n = self_.dim();
    let s = wrap_dim("flatten", start_dim, n)?;
    let e = wrap_dim("flatten", end_dim, n)?;
    if s > e {
        return Err(Error::invalid("flatten", "flatten() has invalid args: start_dim cannot come after end_dim"));
    }
    if n == 0 {
        return crate::ops::reshape(self_, &[1]);
    }
    if s == e {
        return Ok(self_.clone());
    }
    let mut shape: DimVec = self_.sizes()[..s].iter().copied().collect();
    shape.push(self_.sizes()[s..=e].iter().product());
    shape.extend_from_slice(&self_.sizes()[e + 1..]);
    crate::ops::reshape(self_, &shape)
}

/// `narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)`
pub fn narrow(self_: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    if self_.dim() == 0 {
        return Err(Error::invalid("narrow", "narrow() cannot be applied to a 0-dim tensor."));
    }
    let d = wrap_dim("narrow", dim, self_.dim())?;
    let size = self_.sizes()[d];
    if length < 0 {
        return Err(Error::invalid("narrow", "narrow(): length must be non-negative."));
    }
    if start < -size || start > size {
        return Err(Error::IndexOutOfRange { op: "narrow".into(), index: start, dim: d as i64, size });
    }
    let start = if start < 0 { start + size } else { start };
    if start + length > size {
        return Err(Error::invalid(
            "narrow",
            format!("start ({start}) + length ({length}) exceeds dimension size ({size})."),
        ));
    }
    crate::ops::slice(self_, d as i64, Some(start), Some(start + length), 1)
}

/// `slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)`
pub fn slice(self_: &Tensor, dim: i64, start: Option<i64>, end: Option<i64>, step: i64) -> Result<Tensor> {
    if self_.dim() == 0 {
        return Err(Error::invalid("slice", "slice() cannot be applied to a 0-dim tensor."));
    }
    if step <= 0 {
        return Err(Error::invalid("slice", "slice step must be positive"));
    }
    let d = wrap_dim("slice", dim, self_.dim())?;
    let size = self_.sizes()[d];
    let clamp = |v: i64| -> i64 {
        let v = if v < 0 { v + size } else { v };
        v.clamp(0, size)
    };
    let s = clamp(start.unwrap_or(0));
    let e = clamp(end.unwrap_or(i64::MAX));
    // ceil((e - s) / step) without `e - s + step - 1`, which overflows for a huge step.
    let len = if e > s { (e - s - 1) / step + 1 } else { 0 };
    let mut sizes = DimVec::from_slice(self_.sizes());
    let mut strides = DimVec::from_slice(self_.strides());
    let overflow = || Error::invalid("slice", format!("the view's strides or offset overflow int64 (step {step})"));
    let offset = s.checked_mul(strides[d]).and_then(|o| o.checked_add(self_.storage_offset())).ok_or_else(overflow)?;
    sizes[d] = len;
    // A dim of at most one element never steps, so it keeps its stride: `stride * step` may not
    // fit (`x[::2**62]`), and loops that advance past the last element must not overflow.
    // (PyTorch reports `stride * step` there; the values are the same.)
    if len > 1 {
        strides[d] = strides[d].checked_mul(step).ok_or_else(overflow)?;
    }
    Ok(make_view(self_, &sizes, &strides, offset))
}

/// `select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)`
pub fn select(self_: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    if self_.dim() == 0 {
        return Err(Error::invalid("select", "select() cannot be applied to a 0-dim tensor."));
    }
    let d = wrap_dim("select", dim, self_.dim())?;
    let size = self_.sizes()[d];
    if index < -size || index >= size {
        return Err(Error::Index {
            op: "select".into(),
            msg: format!(
                "select(): index {index} out of range for tensor of size {:?} at dimension {d}",
                self_.sizes()
            ),
        });
    }
    let i = if index < 0 { index + size } else { index };
    let mut sizes = DimVec::from_slice(self_.sizes());
    let mut strides = DimVec::from_slice(self_.strides());
    let offset = self_.storage_offset() + i * strides[d];
    sizes.remove(d);
    strides.remove(d);
    Ok(make_view(self_, &sizes, &strides, offset))
}

/// `diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)`
pub fn diagonal(self_: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let n = self_.dim();
    let d1 = wrap_dim("diagonal", dim1, n)?;
    let d2 = wrap_dim("diagonal", dim2, n)?;
    if d1 == d2 {
        return Err(Error::invalid("diagonal", format!("diagonal dimensions cannot be identical {dim1}, {dim2}")));
    }
    let (s1, s2) = (self_.sizes()[d1], self_.sizes()[d2]);
    let (st1, st2) = (self_.strides()[d1], self_.strides()[d2]);
    // Saturating: `offset` may be anything down to `i64::MIN`; when the diagonal is not empty,
    // |offset| is below a dimension's size and the offset product fits.
    let len = if offset >= 0 { s1.min(s2.saturating_sub(offset)) } else { s1.saturating_add(offset).min(s2) }.max(0);
    // An empty tensor's strides address nothing and may be anything: its view starts at 0.
    let off = match (len, offset >= 0) {
        _ if len == 0 || self_.numel() == 0 => Some(0),
        (_, true) => offset.checked_mul(st2),
        (_, false) => offset.checked_neg().and_then(|o| o.checked_mul(st1)),
    }
    .ok_or_else(|| Error::invalid("diagonal", format!("offset {offset} with strides ({st1}, {st2}) overflows")))?;
    let mut sizes = DimVec::new();
    let mut strides = DimVec::new();
    for i in 0..n {
        if i != d1 && i != d2 {
            sizes.push(self_.sizes()[i]);
            strides.push(self_.strides()[i]);
        }
    }
    sizes.push(len);
    strides.push(st1 + st2);
    Ok(make_view(self_, &sizes, &strides, self_.storage_offset() + off))
}

/// `unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)`
pub fn unfold(self_: &Tensor, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    let n = self_.dim();
    let d = wrap_dim("unfold", dimension, n)?;
    let max = if n == 0 { 1 } else { self_.sizes()[d] };
    if size > max {
        return Err(Error::invalid(
            "unfold",
            format!("maximum size for tensor at dimension {d} is {max} but size is {size}"),
        ));
    }
    if step <= 0 {
        return Err(Error::invalid("unfold", format!("step is {step} but must be > 0")));
    }
    if size < 0 {
        return Err(Error::invalid("unfold", format!("size is {size} but must be >= 0")));
    }
    let mut sizes = DimVec::from_slice(self_.sizes());
    let mut strides = DimVec::from_slice(self_.strides());
    if n > 0 {
        sizes[d] = (max - size) / step + 1;
        // Two or more windows need `step < max`, which keeps the product within the storage's
        // span; with one window the stride is never used and only must not wrap.
        strides[d] = strides[d].saturating_mul(step);
    }
    sizes.push(size);
    strides.push(if n == 0 { 1 } else { self_.strides()[d] });
    // Windows overlap, so the count can exceed the input's (See Note [Checked sizes]).
    c10::size::numel("unfold", &sizes)?;
    Ok(make_view(self_, &sizes, &strides, self_.storage_offset()))
}

/// `alias(Tensor(a) self) -> Tensor(a)`: a new handle viewing the same data.
pub fn alias(self_: &Tensor) -> Result<Tensor> {
    Ok(make_view(self_, self_.sizes(), self_.strides(), self_.storage_offset()))
}

/// `expand_as(Tensor(a) self, Tensor other) -> Tensor(a)`
pub fn expand_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::ops::expand(self_, other.sizes(), false)
}

/// `view_as(Tensor(a) self, Tensor other) -> Tensor(a)`
pub fn view_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::ops::view(self_, other.sizes())
}

/// `reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)`
pub fn reshape_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::ops::reshape(self_, other.sizes())
}
