//! Vector norms over dimensions: the `norm` overloads (`p` = 2 by default, any real `p`
//! including 0 and ±inf). Computed in f64 per reduced row (See Note [Reference reductions]).

use c10::{Error, Result, Scalar, ScalarType};

use crate::{wrap_dim, Tensor};

/// The norm of one row.
fn row_norm(row: &[f64], p: f64) -> f64 {
    if p == f64::INFINITY {
        row.iter().fold(0.0, |m: f64, x| if x.is_nan() || m.is_nan() { f64::NAN } else { m.max(x.abs()) })
    } else if p == f64::NEG_INFINITY {
        row.iter().fold(f64::INFINITY, |m: f64, x| if x.is_nan() || m.is_nan() { f64::NAN } else { m.min(x.abs()) })
    } else if p == 0.0 {
        row.iter().filter(|&&x| x != 0.0).count() as f64
    } else if p == 1.0 {
        row.iter().map(|x| x.abs()).sum()
    } else if p == 2.0 {
        row.iter().map(|x| x * x).sum::<f64>().sqrt()
    } else {
        row.iter().map(|x| x.abs().powf(p)).sum::<f64>().powf(1.0 / p)
    }
}

fn norm_impl(t: &Tensor, p: Option<Scalar>, dim: &[i64], keepdim: bool, dtype: Option<ScalarType>) -> Result<Tensor> {
    if !t.dtype().is_floating_point() {
        return Err(Error::invalid(
            "norm",
            format!(
                "norm(): input dtype should be either floating point or complex. Got {} instead.",
                t.dtype().cpp_name()
            ),
        ));
    }
    let out_dtype = dtype.unwrap_or(t.dtype());
    if !out_dtype.is_floating_point() {
        return Err(Error::invalid(
            "norm",
            format!("norm(): the output dtype should be floating point, got {}", out_dtype.cpp_name()),
        ));
    }
    let p = p.map_or(2.0, |s| s.to_f64());
    if !t.device().is_cpu() && !t.device().is_meta() {
        return norm_on_device(t, p, dim, keepdim, out_dtype);
    }
    let n = t.dim();
    let mut red = vec![dim.is_empty(); n];
    for &d in dim {
        let w = wrap_dim("norm", d, n)?;
        if n > 0 {
            if red[w] {
                return Err(Error::invalid("norm", format!("dim {w} appears multiple times in the list of dims")));
            }
            red[w] = true;
        }
    }
    let kept: Vec<i64> = (0..n).filter(|&d| !red[d]).map(|d| d as i64).collect();
    let reduced: Vec<i64> = (0..n).filter(|&d| red[d]).map(|d| d as i64).collect();
    // Saturating: with an empty kept dim the reduced product may pass int64, and no row reads it.
    let len = c10::size::sub_numel(&reduced.iter().map(|&d| t.sizes()[d as usize]).collect::<Vec<_>>());
    if len == 0 && p < 0.0 {
        return Err(Error::invalid(
            "norm",
            "linalg.vector_norm cannot compute the -inf norm on an empty tensor because the operation does not have an identity",
        ));
    }
    let perm: Vec<i64> = kept.iter().chain(&reduced).copied().collect();
    let moved = if n == 0 { t.clone() } else { crate::ops::permute(t, &perm)? };
    let v = moved.to_vec::<f64>()?;
    // The rows of an empty reduction are not in `v`: `[2^50, 0]` has 2^50 of them.
    let rows = c10::size::numel("norm", &kept.iter().map(|&d| t.sizes()[d as usize]).collect::<Vec<_>>())? as usize;
    let out = c10::size::try_collect(
        rows,
        (0..rows).map(|r| row_norm(if len == 0 { &[] } else { &v[r * len..(r + 1) * len] }, p)),
    )?;
    let shape: Vec<i64> =
        (0..n).filter_map(|d| if red[d] { keepdim.then_some(1) } else { Some(t.sizes()[d]) }).collect();
    crate::native::copy::to_dtype(&Tensor::from_vec(out, &shape)?, out_dtype)
}

/// A norm on a device, from the device's operators: `|x|` summed (p = 1), squares summed then
/// square-rooted (2), the largest or smallest `|x|` (±inf), the count of non-zeros (0), and
/// otherwise `exp(log(sum(exp(p log|x|))) / p)` (there is no `pow` kernel; `0^p` comes out as 0
/// for p > 0 and inf for p < 0, as it should). The 16-bit floats are computed in float32, as
/// PyTorch's CUDA kernels accumulate them, and the result converted to `out_dtype`.
fn norm_on_device(t: &Tensor, p: f64, dim: &[i64], keepdim: bool, out_dtype: ScalarType) -> Result<Tensor> {
    use crate::ops;
    let n = t.dim();
    let mut dims: Vec<i64> = Vec::with_capacity(dim.len());
    for &d in dim {
        let w = wrap_dim("norm", d, n)? as i64;
        if dims.contains(&w) && n > 0 {
            return Err(Error::invalid("norm", format!("dim {w} appears multiple times in the list of dims")));
        }
        dims.push(w);
    }
    if n == 0 {
        dims.clear(); // dim 0 of a scalar is the whole of it
    }
    let reduced: i64 = if dims.is_empty() { t.numel() } else { dims.iter().map(|&d| t.sizes()[d as usize]).product() };
    if reduced == 0 && p < 0.0 {
        return Err(Error::invalid(
            "norm",
            "linalg.vector_norm cannot compute the -inf norm on an empty tensor because the operation does not have an identity",
        ));
    }
    let acc = match t.dtype() {
        ScalarType::F16 | ScalarType::BF16 => ScalarType::F32,
        d => d,
    };
    let x = ops::abs(&ops::to(t, acc, false, false, None)?)?;
    let sum = |v: &Tensor| ops::sum_dim_intlist(v, Some(&dims), keepdim, None);
    let r = if p == 1.0 {
        sum(&x)?
    } else if p == 2.0 {
        ops::sqrt(&sum(&ops::mul(&x, &x)?)?)?
    } else if p == f64::INFINITY {
        ops::amax(&x, &dims, keepdim)?
    } else if p == f64::NEG_INFINITY {
        ops::amin(&x, &dims, keepdim)?
    } else if p == 0.0 {
        sum(&ops::to(&ops::ne_scalar(&x, Scalar::Int(0))?, acc, false, false, None)?)?
    } else {
        let powered = ops::exp(&ops::mul_scalar(&ops::log(&x)?, Scalar::Float(p))?)?;
        ops::exp(&ops::mul_scalar(&ops::log(&sum(&powered)?)?, Scalar::Float(1.0 / p))?)?
    };
    crate::native::copy::to_dtype(&r, out_dtype)
}

/// `norm.Scalar(Tensor self, Scalar p=2) -> Tensor`
pub fn norm_scalar(self_: &Tensor, p: Scalar) -> Result<Tensor> {
    norm_impl(self_, Some(p), &[], false, None)
}
/// `norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor`
pub fn norm_scalaropt_dim(self_: &Tensor, p: Option<Scalar>, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    norm_impl(self_, p, dim, keepdim, None)
}
/// `norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype) -> Tensor`
pub fn norm_scalaropt_dim_dtype(
    self_: &Tensor,
    p: Option<Scalar>,
    dim: &[i64],
    keepdim: bool,
    dtype: ScalarType,
) -> Result<Tensor> {
    norm_impl(self_, p, dim, keepdim, Some(dtype))
}
/// `norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype) -> Tensor`
pub fn norm_scalaropt_dtype(self_: &Tensor, p: Option<Scalar>, dtype: ScalarType) -> Result<Tensor> {
    norm_impl(self_, p, &[], false, Some(dtype))
}
