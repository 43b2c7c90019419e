//! The two kernels behind `GradScaler`: `_amp_foreach_non_finite_check_and_unscale_` and
//! `_amp_update_scale_`.
//!
//! Both are compositions of elementwise operators and one reduction, so they run on the device
//! of their tensors (CPU or CUDA) without reading a value back to the host: a training step
//! with a scaler synchronises only where PyTorch's does, in `GradScaler::step`'s check of
//! `found_inf`.

use c10::{Error, Result, Scalar, ScalarType};

use crate::ops;
use crate::Tensor;

/// A 1-element tensor of a floating dtype (`what` names it in PyTorch's words).
fn check_one_element(op: &str, t: &Tensor, what: &str) -> Result<()> {
    if t.numel() != 1 {
        return Err(Error::invalid(op, format!("{what} must be a 1-element tensor.")));
    }
    Ok(())
}

/// `_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf,
/// Tensor inv_scale) -> ()`: multiplies every gradient by `inv_scale` in place and sets
/// `found_inf` to 1.0 when any of them holds an inf or NaN (it is left alone otherwise, so one
/// `found_inf` can collect several calls).
pub fn amp_foreach_non_finite_check_and_unscale_(
    grads: &[Tensor],
    found_inf: &Tensor,
    inv_scale: &Tensor,
) -> Result<()> {
    const OP: &str = "_amp_foreach_non_finite_check_and_unscale_";
    check_one_element(OP, inv_scale, "inv_scale")?;
    check_one_element(OP, found_inf, "found_inf")?;
    if inv_scale.dtype() != ScalarType::F32 {
        return Err(Error::invalid(OP, "inv_scale must be a float tensor."));
    }
    if found_inf.dtype() != ScalarType::F32 {
        return Err(Error::invalid(OP, "found_inf must be a float tensor."));
    }
    if inv_scale.device() != found_inf.device() {
        return Err(Error::invalid(OP, "inv_scale and found_inf must be on the same device."));
    }
    for g in grads {
        if g.device() != found_inf.device() {
            return Err(Error::invalid(OP, "scaled_grads must be on the same device as found_inf."));
        }
        if !g.is_floating_point() {
            return Err(Error::invalid(OP, format!("scaled_grads must be floating point tensors, got {}.", g.dtype())));
        }
    }
    // Every gradient's flag (1.0 for an inf or NaN) is folded into one 0-dim maximum, merged
    // into `found_inf` once; `inv_scale` is converted once per gradient dtype (a float16 gradient
    // stays float16).
    let mut found: Option<Tensor> = None;
    let mut inv: Option<Tensor> = None;
    for g in grads {
        if g.numel() == 0 {
            continue;
        }
        let bad = ops::any(&ops::logical_not(&ops::isfinite(g)?)?)?;
        let bad = ops::_to_copy(&bad, Some(ScalarType::F32), None, None, None, false, None)?;
        found = Some(match found {
            None => bad,
            Some(f) => ops::maximum(&f, &bad)?,
        });
        if inv.as_ref().is_none_or(|t| t.dtype() != g.dtype()) {
            inv = Some(ops::_to_copy(&ops::reshape(inv_scale, &[])?, Some(g.dtype()), None, None, None, false, None)?);
        }
        ops::mul_(g, inv.as_ref().expect("set above"))?;
    }
    if let Some(f) = found {
        let merged = ops::maximum(&ops::reshape(found_inf, &[])?, &f)?;
        ops::copy_(found_inf, &ops::reshape(&merged, found_inf.sizes())?, false)?;
    }
    Ok(())
}

/// `_amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf,
/// float scale_growth_factor, float scale_backoff_factor, int growth_interval) -> Tensor(a!)`:
/// after a step with an inf or NaN (`found_inf > 0`) the scale shrinks by the backoff factor
/// and the tracker restarts; otherwise the tracker counts the step, and after
/// `growth_interval` clean steps in a row the scale grows by the growth factor (unless that
/// would make it infinite) and the tracker restarts.
pub fn amp_update_scale_(
    scale: &Tensor,
    growth_tracker: &Tensor,
    found_inf: &Tensor,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: i64,
) -> Result<Tensor> {
    const OP: &str = "_amp_update_scale_";
    check_one_element(OP, growth_tracker, "growth_tracker")?;
    check_one_element(OP, scale, "current_scale")?;
    check_one_element(OP, found_inf, "found_inf")?;
    if growth_tracker.dtype() != ScalarType::I32 {
        return Err(Error::invalid(OP, "growth_tracker must be an int tensor."));
    }
    if scale.dtype() != ScalarType::F32 {
        return Err(Error::invalid(OP, "current_scale must be a float tensor."));
    }
    if found_inf.dtype() != ScalarType::F32 {
        return Err(Error::invalid(OP, "found_inf must be a float tensor."));
    }
    if growth_tracker.device() != scale.device() || found_inf.device() != scale.device() {
        return Err(Error::invalid(OP, "current_scale, growth_tracker and found_inf must be on the same device."));
    }
    let inf = ops::gt_scalar(found_inf, Scalar::Float(0.0))?;
    let successful = ops::add_scalar(growth_tracker, Scalar::Int(1), Scalar::Int(1))?;
    let grow = ops::eq_scalar(&successful, Scalar::Int(growth_interval))?;
    let grown = ops::mul_scalar(scale, Scalar::Float(growth_factor))?;
    let grow_scale = ops::logical_and(&grow, &ops::isfinite(&grown)?)?;
    let backed_off = ops::mul_scalar(scale, Scalar::Float(backoff_factor))?;
    let new_scale = ops::where_self(&inf, &backed_off, &ops::where_self(&grow_scale, &grown, scale)?)?;
    let zero = ops::zeros_like(growth_tracker, None, None, None, None, None)?;
    let new_tracker = ops::where_self(&ops::logical_or(&inf, &grow)?, &zero, &successful)?;
    ops::copy_(growth_tracker, &new_tracker, false)?;
    ops::copy_(scale, &new_scale, false)?;
    Ok(scale.clone())
}
