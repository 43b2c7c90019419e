//! Dropout: `dropout`, `feature_dropout`, `alpha_dropout`, `feature_alpha_dropout` (and their
//! in-place forms), and `native_dropout` (output and keep-mask). Written with other operators
//! (PyTorch's CompositeImplicitAutograd `_dropout_impl`); the noise comes from `bernoulli_` on
//! the default generator of the input's device, so `manual_seed` makes it reproducible.

use c10::{Error, Result, Scalar, ScalarType};

use crate::Tensor;

/// SELU's `alpha * scale`: the negative saturation value of alpha dropout.
const ALPHA_DROPOUT_ALPHA: f64 = 1.7580993408473766;

#[derive(Copy, Clone, PartialEq, Eq)]
enum Kind {
    Plain,
    Feature,
    Alpha,
    FeatureAlpha,
}

impl Kind {
    fn feature(self) -> bool {
        matches!(self, Kind::Feature | Kind::FeatureAlpha)
    }
    fn alpha(self) -> bool {
        matches!(self, Kind::Alpha | Kind::FeatureAlpha)
    }
}

fn check_p(op: &str, p: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::invalid(op, format!("dropout probability has to be between 0 and 1, but got {p}")));
    }
    Ok(())
}

/// An uninitialised noise tensor: the input's shape, or `[N, C, 1, ...]` for feature dropout.
fn noise_like(op: &str, input: &Tensor, kind: Kind) -> Result<Tensor> {
    if kind.feature() {
        if input.dim() < 2 {
            return Err(Error::shape(op, "Feature dropout requires at least 2 dimensions in the input"));
        }
        let mut shape = vec![1i64; input.dim()];
        shape[0] = input.sizes()[0];
        shape[1] = input.sizes()[1];
        crate::ops::empty(&shape, Some(input.dtype()), None, Some(input.device()), None, None)
    } else {
        crate::ops::empty(input.sizes(), Some(input.dtype()), None, Some(input.device()), None, None)
    }
}

fn dropout_impl(op: &str, input: &Tensor, p: f64, train: bool, kind: Kind, inplace: bool) -> Result<Tensor> {
    check_p(op, p)?;
    if p == 0.0 || !train || input.numel() == 0 {
        return Ok(input.clone());
    }
    if !input.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: input.dtype() });
    }
    if p == 1.0 {
        let zero = crate::ops::zeros(&[], Some(input.dtype()), None, None, None)?;
        return if inplace { crate::ops::mul_(input, &zero) } else { crate::ops::mul(input, &zero) };
    }
    let noise = noise_like(op, input, kind)?;
    crate::ops::bernoulli_(&noise, 1.0 - p, None)?;
    if kind.alpha() {
        let a = 1.0 / ((ALPHA_DROPOUT_ALPHA * ALPHA_DROPOUT_ALPHA * p + 1.0) * (1.0 - p)).sqrt();
        // b = (noise - 1) * alpha * a + alpha * a * p; out = input * noise * a + b
        let b = crate::ops::add_scalar(
            &crate::ops::mul_scalar(
                &crate::ops::sub_scalar(&noise, Scalar::Int(1), Scalar::Int(1))?,
                Scalar::Float(ALPHA_DROPOUT_ALPHA * a),
            )?,
            Scalar::Float(ALPHA_DROPOUT_ALPHA * a * p),
            Scalar::Int(1),
        )?;
        crate::ops::mul_scalar_(&noise, Scalar::Float(a))?;
        if inplace {
            crate::ops::mul_(input, &noise)?;
            crate::ops::add_(input, &b, Scalar::Int(1))
        } else {
            crate::ops::add(&crate::ops::mul(input, &noise)?, &b, Scalar::Int(1))
        }
    } else {
        crate::ops::div_scalar_(&noise, Scalar::Float(1.0 - p))?;
        if inplace {
            crate::ops::mul_(input, &noise)
        } else {
            crate::ops::mul(input, &noise)
        }
    }
}

/// `dropout(Tensor input, float p, bool train) -> Tensor`
pub fn dropout(input: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    dropout_impl("dropout", input, p, train, Kind::Plain, false)
}
/// `dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)`
pub fn dropout_(self_: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    dropout_impl("dropout_", self_, p, train, Kind::Plain, true)
}
/// `feature_dropout(Tensor input, float p, bool train) -> Tensor`
pub fn feature_dropout(input: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    dropout_impl("feature_dropout", input, p, train, Kind::Feature, false)
}
/// `feature_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)`
pub fn feature_dropout_(self_: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    dropout_impl("feature_dropout_", self_, p, train, Kind::Feature, true)
}
/// `alpha_dropout(Tensor input, float p, bool train) -> Tensor`
pub fn alpha_dropout(input: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    dropout_impl("alpha_dropout", input, p, train, Kind::Alpha, false)
}
/// `alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)`
pub fn alpha_dropout_(self_: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    dropout_impl("alpha_dropout_", self_, p, train, Kind::Alpha, true)
}
/// `feature_alpha_dropout(Tensor input, float p, bool train) -> Tensor`
pub fn feature_alpha_dropout(input: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    dropout_impl("feature_alpha_dropout", input, p, train, Kind::FeatureAlpha, false)
}
/// `feature_alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)`
pub fn feature_alpha_dropout_(self_: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    dropout_impl("feature_alpha_dropout_", self_, p, train, Kind::FeatureAlpha, true)
}

/// `native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)`: the output and the
/// boolean keep-mask; kept elements are scaled by `1 / (1 - p)`.
pub fn native_dropout(input: &Tensor, p: f64, train: Option<bool>) -> Result<(Tensor, Tensor)> {
    const OP: &str = "native_dropout";
    check_p(OP, p)?;
    let mask = crate::ops::empty(input.sizes(), Some(ScalarType::Bool), None, Some(input.device()), None, None)?;
    if input.numel() == 0 {
        return Ok((input.clone_tensor()?, mask));
    }
    if train.unwrap_or(true) {
        if !input.dtype().is_floating_point() {
            return Err(Error::UnsupportedDtype { op: OP.into(), dtype: input.dtype() });
        }
        let keep = 1.0 - p;
        let scale = if keep == 0.0 { 0.0 } else { 1.0 / keep };
        crate::ops::bernoulli_(&mask, keep, None)?;
        let out = crate::ops::mul_scalar(&crate::ops::mul(input, &mask)?, Scalar::Float(scale))?;
        Ok((out, mask))
    } else {
        crate::ops::fill_(&mask, Scalar::Bool(true))?;
        Ok((input.clone_tensor()?, mask))
    }
}
