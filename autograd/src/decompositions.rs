//! Decompositions used by autograd kernels marked `decompose:` in `derivatives.yaml`: when an
//! input requires grad, the operator is computed from differentiable operators (recording
//! their nodes, so every order of derivative works); otherwise the fused kernel runs.

use aten::{ops, Tensor};
use c10::{Result, Scalar};

use crate::formulas::{one, scale};

/// `cross_entropy_loss` as PyTorch composes it: `log_softmax` then `nll_loss_nd` (index
/// targets) or a weighted sum with the probabilities, plus label smoothing.
pub fn cross_entropy_loss(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let cd: i64 = if self_.dim() == 1 { 0 } else { 1 };
    let c = self_.sizes()[cd as usize];
    let logp = ops::log_softmax(self_, cd, None)?;
    let class_view = |w: &Tensor| -> Result<Tensor> {
        let mut shape = vec![1i64; self_.dim()];
        shape[cd as usize] = c;
        ops::reshape(w, &shape)
    };
    if self_.sizes() == target.sizes() && target.dtype().is_floating_point() {
        let t = if label_smoothing > 0.0 {
            crate::formulas::add_s(&scale(target, 1.0 - label_smoothing)?, label_smoothing / c as f64)?
        } else {
            target.clone()
        };
        let mut prod = ops::mul(&logp, &t)?;
        if let Some(w) = weight {
            prod = ops::mul(&prod, &class_view(w)?)?;
        }
        let per = ops::neg(&ops::sum_dim_intlist(&prod, Some(&[cd]), false, None)?)?;
        return match reduction {
            0 => Ok(per),
            2 => ops::sum(&per, None),
            _ => scale(&ops::sum(&per, None)?, c as f64 / self_.numel().max(1) as f64),
        };
    }
    let nll = ops::nll_loss_nd(&logp, target, weight, reduction, ignore_index)?;
    if label_smoothing <= 0.0 {
        return Ok(nll);
    }
    let weighted = match weight {
        Some(w) => ops::mul(&logp, &class_view(w)?)?,
        None => logp.clone(),
    };
    let ignored = ops::eq_scalar(target, Scalar::Int(ignore_index))?;
    let smooth = ops::neg(&ops::sum_dim_intlist(&weighted, Some(&[cd]), false, None)?)?;
    let smooth = ops::masked_fill(&smooth, &ignored, Scalar::Int(0))?;
    let smooth = match reduction {
        0 => smooth,
        2 => ops::sum(&smooth, None)?,
        _ => {
            let kept = ops::logical_not(&ignored)?;
            let denom = match weight {
                Some(w) => {
                    let t = ops::masked_select(target, &kept)?;
                    ops::sum(&ops::index_select(w, 0, &t)?, None)?
                }
                None => ops::sum(&kept.to(self_.dtype())?, None)?,
            };
            ops::div(&ops::sum(&smooth, None)?, &denom)?
        }
    };
    ops::add(&scale(&nll, 1.0 - label_smoothing)?, &scale(&smooth, label_smoothing / c as f64)?, one())
}

/// `native_layer_norm` from means and variances: `(out, mean, rstd)` with `mean` and `rstd`
/// kept over the normalised dims, as the fused kernel returns them.
pub fn native_layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let nd = input.dim() as i64;
    let dims: Vec<i64> = (nd - normalized_shape.len() as i64..nd).collect();
    let mean = ops::mean_dim(input, Some(&dims), true, None)?;
    let xc = ops::sub(input, &mean, one())?;
    let var = ops::mean_dim(&ops::mul(&xc, &xc)?, Some(&dims), true, None)?;
    let rstd = ops::rsqrt(&crate::formulas::add_s(&var, eps)?)?;
    let mut out = ops::mul(&xc, &rstd)?;
    if let Some(w) = weight {
        out = ops::mul(&out, w)?;
    }
    if let Some(b) = bias {
        out = ops::add(&out, b, one())?;
    }
    Ok((out, mean, rstd))
}

/// `max_pool2d` through `max_pool2d_with_indices` (whose formula scatters to the argmax).
pub fn max_pool2d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(ops::max_pool2d_with_indices(self_, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}

/// `max_pool1d` through `max_pool1d_with_indices`.
pub fn max_pool1d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(ops::max_pool1d_with_indices(self_, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}
