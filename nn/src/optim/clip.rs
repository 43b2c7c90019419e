//! Gradient clipping: `torch.nn.utils.clip_grad_norm_`, `clip_grad_value_`, and the two halves
//! of the former, `get_total_norm` and `clip_grads_with_norm_`.

use aten::{ops, Tensor};
use autograd::TensorAutograd;
use c10::{promote_types, Error, Result};

use crate::module::Parameter;
use crate::optim::{float, py_float};

/// `torch.nn.utils.get_total_norm(tensors, norm_type, error_if_nonfinite)`: the `norm_type`
/// norm of all `tensors` taken together (the norm of their norms), `f64::INFINITY` for the max
/// norm. A float32 zero for no tensors; otherwise a zero-dim tensor of the tensors' promoted
/// dtype.
pub fn get_total_norm(tensors: &[Tensor], norm_type: f64, error_if_nonfinite: bool) -> Result<Tensor> {
    let _no_grad = autograd::no_grad();
    let Some(first) = tensors.first() else { return Ok(Tensor::scalar_tensor(0.0f32)) };
    let dtype = tensors.iter().fold(first.dtype(), |d, t| promote_types(d, t.dtype()));
    let norms = tensors.iter().map(|t| t.norm_with(float(norm_type))?.to(dtype).call()).collect::<Result<Vec<_>>>()?;
    let total = ops::stack(&norms, 0)?.norm_with(float(norm_type))?;
    if error_if_nonfinite && !total.item::<f64>()?.is_finite() {
        return Err(Error::invalid(
            "clip_grad_norm_",
            format!(
                "The total norm of order {} for gradients from `parameters` is non-finite, so it cannot be clipped. \
                 To disable this error and scale the gradients by the non-finite norm anyway, set \
                 `error_if_nonfinite=False`",
                py_float(norm_type)
            ),
        ));
    }
    Ok(total)
}

/// `torch.nn.utils.clip_grads_with_norm_(parameters, max_norm, total_norm)`: multiplies every
/// gradient in place by `min(max_norm / (total_norm + 1e-6), 1)`.
pub fn clip_grads_with_norm_(parameters: &[Parameter], max_norm: f64, total_norm: &Tensor) -> Result<()> {
    let _no_grad = autograd::no_grad();
    let grads: Vec<Tensor> = parameters.iter().filter_map(|p| p.grad()).collect();
    if grads.is_empty() {
        return Ok(());
    }
    let denom = total_norm.add(float(1e-6)).call()?;
    let coef = ops::full_like(&denom, float(max_norm), None, None, None, None, None)?.div(&denom).call()?;
    let coef = coef.clamp_max(float(1.0))?;
    for g in &grads {
        g.mul_(&coef)?;
    }
    Ok(())
}

/// `torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)`:
/// rescales the gradients in place so that their total `norm_type` norm (PyTorch's defaults
/// are 2.0 and `false`) is at most `max_norm`, and returns the total norm before clipping.
/// Parameters without a gradient are ignored.
///
/// ```
/// use autograd::TensorAutograd;
/// let p = nn::Parameter::new(aten::Tensor::from_slice(&[0.0f32, 0.0])).unwrap();
/// p.set_grad(Some(aten::Tensor::from_slice(&[3.0f32, 4.0]))).unwrap();
/// let total = nn::optim::clip_grad_norm_(&[p.clone()], 1.0, 2.0, false).unwrap();
/// assert_eq!(total.item::<f32>().unwrap(), 5.0);
/// let g = p.grad().unwrap().to_vec::<f32>().unwrap();
/// assert!((g[0] - 0.6).abs() < 1e-6 && (g[1] - 0.8).abs() < 1e-6);
/// ```
pub fn clip_grad_norm_(
    parameters: &[Parameter],
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<Tensor> {
    let grads: Vec<Tensor> = parameters.iter().filter_map(|p| p.grad()).collect();
    let total = get_total_norm(&grads, norm_type, error_if_nonfinite)?;
    clip_grads_with_norm_(parameters, max_norm, &total)?;
    Ok(total)
}

/// `torch.nn.utils.clip_grad_value_(parameters, clip_value)`: clamps every gradient in place to
/// `[-clip_value, clip_value]`.
pub fn clip_grad_value_(parameters: &[Parameter], clip_value: f64) -> Result<()> {
    let _no_grad = autograd::no_grad();
    for g in parameters.iter().filter_map(|p| p.grad()) {
        g.clamp_with_(Some(float(-clip_value)), Some(float(clip_value)))?;
    }
    Ok(())
}
