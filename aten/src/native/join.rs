//! Joining and splitting tensors: `cat`, `stack`, `split`, `split_with_sizes`, `chunk`, `unbind`,
//! `meshgrid`. Splits return views; joins copy into one new tensor (converting dtypes with
//! PyTorch's promotion rules).

use c10::{promote_types, Error, Result};

use crate::native::copy::copy_into;
use crate::{wrap_dim, Tensor};

/// Checks an `out=` tensor against a result's shape and dtype, then copies the result into it.
pub(crate) fn write_out(op: &str, out: &Tensor, result: &Tensor) -> Result<Tensor> {
    if out.dtype() != result.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "Expected out tensor to have dtype {}, but got {} instead",
                result.dtype().cpp_name(),
                out.dtype().cpp_name()
            ),
        ));
    }
    if out.sizes() != result.sizes() {
        return Err(Error::shape(
            op,
            format!(
                "out= tensor has shape {:?} but the result has shape {:?} (out tensors are not resized)",
                out.sizes(),
                result.sizes()
            ),
        ));
    }
    copy_into(out, result)?;
    Ok(out.clone())
}

/// The shape and dtype of `cat(tensors, dim)`, with the tensors that take part (PyTorch skips
/// legacy empty 1-d tensors of shape `[0]`) and the wrapped dim.
fn cat_plan(tensors: &[Tensor], dim: i64) -> Result<(Vec<i64>, c10::ScalarType, Vec<&Tensor>, usize)> {
    let Some(first) = tensors.first() else {
        return Err(Error::Value { op: "cat".into(), msg: "torch.cat(): expected a non-empty list of Tensors".into() });
    };
    let dtype = tensors.iter().skip(1).fold(first.dtype(), |d, t| promote_types(d, t.dtype()));
    for (i, t) in tensors.iter().enumerate() {
        if t.dim() == 0 {
            return Err(Error::invalid(
                "cat",
                format!("zero-dimensional tensor (at position {i}) cannot be concatenated"),
            ));
        }
        if t.device() != first.device() {
            return Err(Error::DeviceMismatch {
                op: "cat".into(),
                a: first.device().to_string(),
                b: t.device().to_string(),
            });
        }
    }
    let parts: Vec<&Tensor> = tensors.iter().filter(|t| !(t.dim() == 1 && t.numel() == 0)).collect();
    let Some(reference) = parts.first() else {
        return Ok((vec![0], dtype, parts, 0));
    };
    let n = reference.dim();
    let d = wrap_dim("cat", dim, n)?;
    let mut shape = reference.sizes().to_vec();
    shape[d] = 0;
    for (i, t) in tensors.iter().enumerate() {
        if t.dim() == 1 && t.numel() == 0 {
            continue;
        }
        if t.dim() != n {
            return Err(Error::shape(
                "cat",
                format!(
                    "Tensors must have same number of dimensions: got {n} and {} (tensor number {i} in the list)",
                    t.dim()
                ),
            ));
        }
        for k in 0..n {
            if k != d && t.sizes()[k] != reference.sizes()[k] {
                return Err(Error::shape(
                    "cat",
                    format!(
                        "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                        reference.sizes()[k],
                        t.sizes()[k]
                    ),
                ));
            }
        }
        shape[d] += t.sizes()[d];
    }
    Ok((shape, dtype, parts, d))
}

/// Copies the parts of a `cat` into consecutive slices of `out` along `d`.
fn cat_into(out: &Tensor, parts: &[&Tensor], d: usize) -> Result<()> {
    let mut start = 0;
    for t in parts {
        let len = t.sizes()[d];
        if len > 0 {
            let dst = crate::native::shape::slice(out, d as i64, Some(start), Some(start + len), 1)?;
            copy_into(&dst, t)?;
        }
        start += len;
    }
    Ok(())
}

/// `cat(Tensor[] tensors, int dim=0) -> Tensor`
pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let (shape, dtype, parts, d) = cat_plan(tensors, dim)?;
    let out = Tensor::empty_uninit(&shape, dtype, tensors[0].device())?;
    cat_into(&out, &parts, d)?;
    Ok(out)
}

/// `cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)`
pub fn cat_out(tensors: &[Tensor], dim: i64, out: &Tensor) -> Result<Tensor> {
    let (shape, dtype, parts, d) = cat_plan(tensors, dim)?;
    crate::native::check_device("cat", out.device(), tensors)?;
    if out.sizes() != shape.as_slice() {
        return Err(Error::shape(
            "cat",
            format!(
                "out= tensor has shape {:?} but the result has shape {shape:?} (out tensors are not resized)",
                out.sizes()
            ),
        ));
    }
    if !c10::scalar_type::can_cast(dtype, out.dtype()) {
        return Err(Error::UnsafeCast { op: "cat".into(), from: dtype, to: out.dtype() });
    }
    // PyTorch's checks: `out` has no internal overlap and shares no memory with any input.
    crate::memory_overlap::assert_no_internal_overlap("cat", out)?;
    for t in tensors {
        crate::memory_overlap::assert_no_overlap("cat", out, t)?;
    }
    cat_into(out, &parts, d)?;
    Ok(out.clone())
}

/// The tensors of a `stack`, each unsqueezed at the wrapped `dim`.
fn stack_inputs(tensors: &[Tensor], dim: i64) -> Result<Vec<Tensor>> {
    let Some(first) = tensors.first() else {
        return Err(Error::invalid("stack", "stack expects a non-empty TensorList"));
    };
    let d = wrap_dim("stack", dim, first.dim() + 1)?;
    for (i, t) in tensors.iter().enumerate() {
        if t.sizes() != first.sizes() {
            return Err(Error::shape(
                "stack",
                format!(
                    "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}",
                    first.sizes(),
                    t.sizes()
                ),
            ));
        }
    }
    tensors.iter().map(|t| crate::ops::unsqueeze(t, d as i64)).collect()
}

/// `stack(Tensor[] tensors, int dim=0) -> Tensor`
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let parts = stack_inputs(tensors, dim)?;
    let d = wrap_dim("stack", dim, tensors[0].dim() + 1)?;
    crate::ops::cat(&parts, d as i64)
}

/// `stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)`
pub fn stack_out(tensors: &[Tensor], dim: i64, out: &Tensor) -> Result<Tensor> {
    let parts = stack_inputs(tensors, dim)?;
    let d = wrap_dim("stack", dim, tensors[0].dim() + 1)?;
    crate::ops::cat_out(&parts, d as i64, out)
}

/// `split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]`
pub fn split(self_: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    if self_.dim() == 0 {
        return Err(Error::invalid("split", "split expects at least a 1-dimensional tensor"));
    }
    if split_size < 0 {
        return Err(Error::invalid(
            "split",
            format!("split expects split_size be non-negative, but got split_size={split_size}"),
        ));
    }
    let d = wrap_dim("split", dim, self_.dim())?;
    let size = self_.sizes()[d];
    if split_size == 0 && size != 0 {
        return Err(Error::invalid(
            "split",
            format!("split_size can only be 0 if dimension size is 0, but got dimension size of {size}"),
        ));
    }
    let num = if split_size == 0 { 1 } else { (size / split_size + i64::from(size % split_size != 0)).max(1) };
    (0..num)
        .map(|i| {
            let start = i * split_size;
            let len = split_size.min(size - start);
            crate::ops::narrow(self_, d as i64, start, len)
        })
        .collect()
}

/// `split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]`
pub fn split_with_sizes(self_: &Tensor, split_sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    if self_.dim() == 0 {
        return Err(Error::invalid("split_with_sizes", "split expects at least a 1-dimensional tensor"));
    }
    let d = wrap_dim("split_with_sizes", dim, self_.dim())?;
    let size = self_.sizes()[d];
    if let Some(&bad) = split_sizes.iter().find(|&&s| s < 0) {
        return Err(Error::invalid(
            "split_with_sizes",
            format!("split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={split_sizes:?} (entry {bad})"),
        ));
    }
    // Entries are non-negative, so a sum past i64::MAX cannot equal the size either.
    let total = split_sizes.iter().try_fold(0i64, |acc, &s| acc.checked_add(s));
    if total != Some(size) {
        return Err(Error::invalid(
            "split_with_sizes",
            format!("split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension {dim}), but got split_sizes={split_sizes:?}"),
        ));
    }
    let mut start = 0;
    split_sizes
        .iter()
        .map(|&len| {
            let v = crate::ops::narrow(self_, d as i64, start, len);
            start += len;
            v
        })
        .collect()
}

/// `chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]`
pub fn chunk(self_: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    if self_.dim() == 0 {
        return Err(Error::invalid("chunk", "chunk expects at least a 1-dimensional tensor"));
    }
    if chunks <= 0 {
        return Err(Error::invalid("chunk", format!("chunk expects `chunks` to be greater than 0, got: {chunks}")));
    }
    let d = wrap_dim("chunk", dim, self_.dim())?;
    let size = self_.sizes()[d];
    // ceil(size / chunks) without overflowing for chunks near i64::MAX.
    let split_size = size / chunks + i64::from(size % chunks != 0);
    if split_size == 0 && size == 0 {
        // `chunks` empty tensors, as in PyTorch; a count no memory can hold is an error value.
        let sizes = c10::size::try_vec_filled(0i64, usize::try_from(chunks).unwrap_or(usize::MAX))?;
        return crate::ops::split_with_sizes(self_, &sizes, dim);
    }
    crate::ops::split(self_, split_size, dim)
}

/// `unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]`
pub fn unbind(self_: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    if self_.dim() == 0 {
        return Err(Error::invalid("unbind", "Dimension specified as 0 but tensor has no dimensions"));
    }
    let d = wrap_dim("unbind", dim, self_.dim())?;
    (0..self_.sizes()[d]).map(|i| crate::ops::select(self_, d as i64, i)).collect()
}

/// `meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]`
pub fn meshgrid_indexing(tensors: &[Tensor], indexing: &str) -> Result<Vec<Tensor>> {
    if tensors.is_empty() {
        return Err(Error::invalid("meshgrid", "torch.meshgrid expects a non-empty TensorList"));
    }
    let xy = match indexing {
        "xy" => true,
        "ij" => false,
        other => {
            return Err(Error::invalid(
                "meshgrid",
                format!("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {other}"),
            ))
        }
    };
    for (i, t) in tensors.iter().enumerate() {
        if t.dim() > 1 {
            return Err(Error::invalid(
                "meshgrid",
                format!("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {:?} at {i}", t.sizes()),
            ));
        }
        if t.dtype() != tensors[0].dtype() {
            return Err(Error::invalid(
                "meshgrid",
                "torch.meshgrid: Expected all tensors in the tensor list to have the same dtype",
            ));
        }
    }
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    if xy && tensors.len() >= 2 {
        order.swap(0, 1);
    }
    let shape: Vec<i64> = order.iter().map(|&i| tensors[i].numel()).collect();
    let n = shape.len();
    let mut out = vec![None; tensors.len()];
    for (pos, &i) in order.iter().enumerate() {
        let mut view_shape = vec![1i64; n];
        view_shape[pos] = -1;
        let v = crate::ops::reshape(&tensors[i], &view_shape)?;
        out[i] = Some(crate::ops::expand(&v, &shape, false)?);
    }
    Ok(out.into_iter().flatten().collect())
}

/// `meshgrid(Tensor[] tensors) -> Tensor[]` (`"ij"` indexing).
pub fn meshgrid(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    crate::ops::meshgrid_indexing(tensors, "ij")
}
