//! Loss functions: the pointwise ones (`mse_loss`, `l1_loss`, `smooth_l1_loss`, `huber_loss`,
//! `binary_cross_entropy`, `binary_cross_entropy_with_logits`, `kl_div`,
//! `margin_ranking_loss`), the row-wise ones (`cosine_embedding_loss`, `triplet_margin_loss`)
//! and the classification ones (`nll_loss`, `nll_loss2d`, `nll_loss_nd`, `cross_entropy_loss`).
//!
//! Reductions are PyTorch's ints: 0 none, 1 mean, 2 sum. Pointwise losses run on the
//! TensorIterator (broadcasting and promotion as in PyTorch) and compute in f64 (Note
//! [Pointwise computation type]); the classification losses fuse log-softmax, the target gather,
//! weighting, label smoothing and the reduction into one pass over `[N, C, spatial]`.

use c10::{Element, Error, Result, Scalar, ScalarType};

use crate::native::cpu::loops::{binary_loop, ternary_loop};
use crate::native::normalization::tensor_from_f64;
use crate::native::tensor_iterator::{TensorIterator, TensorIteratorConfig};
use crate::Tensor;

/// PyTorch's `at::Reduction`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Reduction {
    None,
    Mean,
    Sum,
}

fn reduction(op: &str, r: i64) -> Result<Reduction> {
    match r {
        0 => Ok(Reduction::None),
        1 => Ok(Reduction::Mean),
        2 => Ok(Reduction::Sum),
        _ => Err(Error::invalid(op, format!("{r} is not a valid value for reduction"))),
    }
}

/// `apply_loss_reduction`: the unreduced loss, its mean or its sum.
fn apply_reduction(loss: Tensor, r: Reduction) -> Result<Tensor> {
    match r {
        Reduction::None => Ok(loss),
        Reduction::Mean => crate::ops::mean(&loss, None),
        Reduction::Sum => crate::ops::sum(&loss, None),
    }
}

/// `apply_loss_reduction` with the reduction given as PyTorch's integer (`int reduction=Mean`):
/// for losses written as compositions of operators.
pub(crate) fn apply_loss_reduction(op: &str, loss: Tensor, r: i64) -> Result<Tensor> {
    apply_reduction(loss, reduction(op, r)?)
}

fn float_dtype(op: &str, dtype: ScalarType) -> Result<()> {
    if dtype.is_floating_point() {
        Ok(())
    } else {
        Err(Error::UnsupportedDtype { op: op.into(), dtype })
    }
}

/// `f(input, target)` elementwise in f64 on the broadcast, promoted operands (floating only).
fn pointwise2(op: &'static str, a: &Tensor, b: &Tensor, f: impl Fn(f64, f64) -> f64 + Sync) -> Result<Tensor> {
    let iter = TensorIteratorConfig::binary_op(op, None, a, b).build()?;
    float_dtype(op, iter.common_dtype())?;
    match_float!(iter.common_dtype(), T, A => {
        binary_loop::<T, T, T>(&iter, |x, y| <T as Element>::from_f64(f(x.to_f64(), y.to_f64())));
    }, d => return Err(Error::UnsupportedDtype { op: op.into(), dtype: d }));
    iter.output(0)
}

/// `f(a, b, c)` elementwise in f64 on the broadcast, promoted operands (floating only).
fn pointwise3(
    op: &'static str,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    int_to_float: bool,
    f: impl Fn(f64, f64, f64) -> f64 + Sync,
) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new(op)
        .add_output(None)
        .add_input(a)
        .add_input(b)
        .add_input(c)
        .promote_all()
        .promote_integer_inputs_to_float(int_to_float)
        .build()?;
    run3(op, &iter, f)?;
    iter.output(0)
}

fn run3(op: &str, iter: &TensorIterator, f: impl Fn(f64, f64, f64) -> f64 + Sync) -> Result<()> {
    match_float!(iter.common_dtype(), T, A => {
        ternary_loop::<T, T, T, T>(iter, |x, y, z| <T as Element>::from_f64(f(x.to_f64(), y.to_f64(), z.to_f64())));
        Ok(())
    }, d => Err(Error::UnsupportedDtype { op: op.into(), dtype: d }))
}

// Note [Pointwise losses on a device]: on a device the pointwise losses are compositions of the
// device's elementwise kernels, computed in float32 (float64 for float64) and rounded once to
// the promoted dtype at the end, so every temporary stays on the device. The CPU computes the
// same formulas in float64.

/// `f(input, target)` of device operands, in the work dtype, converted back to the promoted
/// floating dtype; `None` for CPU (and meta) operands, which the CPU loops compute.
fn on_device2(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    f: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor>,
) -> Option<Result<Tensor>> {
    if !crate::native::on_device(a) {
        return None;
    }
    let dtype = crate::native::tensor_iterator::binary_result_dtype(a, b);
    Some(float_dtype(op, dtype).and_then(|()| {
        let work = crate::native::device_work_dtype(dtype);
        let to = |t: &Tensor| crate::native::copy::to_dtype(t, work);
        crate::native::copy::to_dtype(&f(&to(a)?, &to(b)?)?, dtype)
    }))
}

fn sub1(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    crate::ops::sub(a, b, Scalar::Int(1))
}
fn times(a: &Tensor, v: f64) -> Result<Tensor> {
    crate::ops::mul_scalar(a, Scalar::Float(v))
}
fn plus(a: &Tensor, v: f64) -> Result<Tensor> {
    crate::ops::add_scalar(a, Scalar::Float(v), Scalar::Int(1))
}

/// `z < cut ? small(z) : large(z)` of `z = |x - y|` (smooth L1 and Huber).
fn piecewise_on_device(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    cut: f64,
    small: impl FnOnce(&Tensor) -> Result<Tensor>,
    large: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Option<Result<Tensor>> {
    on_device2(op, a, b, |x, y| {
        let z = crate::ops::abs(&sub1(x, y)?)?;
        let below = crate::ops::lt_scalar(&z, Scalar::Float(cut))?;
        crate::ops::where_self(&below, &small(&z)?, &large(&z)?)
    })
}

fn times_weight(loss: Tensor, weight: Option<&Tensor>) -> Result<Tensor> {
    match weight {
        Some(w) => crate::ops::mul(&loss, w),
        None => Ok(loss),
    }
}

// ---- pointwise losses ----------------------------------------------------------------------------

/// `mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor`
pub fn mse_loss(self_: &Tensor, target: &Tensor, reduction_: i64) -> Result<Tensor> {
    let r = reduction("mse_loss", reduction_)?;
    let square = |x: &Tensor, y: &Tensor| {
        let d = sub1(x, y)?;
        crate::ops::mul(&d, &d)
    };
    if let Some(loss) = on_device2("mse_loss", self_, target, square) {
        return apply_reduction(loss?, r);
    }
    apply_reduction(pointwise2("mse_loss", self_, target, |x, y| (x - y) * (x - y))?, r)
}

/// `l1_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor`
pub fn l1_loss(self_: &Tensor, target: &Tensor, reduction_: i64) -> Result<Tensor> {
    let r = reduction("l1_loss", reduction_)?;
    apply_reduction(crate::ops::abs(&crate::ops::sub(self_, target, Scalar::Int(1))?)?, r)
}

/// `smooth_l1_loss(Tensor self, Tensor target, int reduction=Mean, float beta=1.0) -> Tensor`
pub fn smooth_l1_loss(self_: &Tensor, target: &Tensor, reduction_: i64, beta: f64) -> Result<Tensor> {
    const OP: &str = "smooth_l1_loss";
    let r = reduction(OP, reduction_)?;
    if beta < 0.0 {
        return Err(Error::invalid(OP, "smooth_l1_loss does not support negative values for beta."));
    }
    if beta == 0.0 {
        return l1_loss(self_, target, reduction_);
    }
    let small = |z: &Tensor| times(&crate::ops::mul(z, z)?, 0.5 / beta);
    if let Some(loss) = piecewise_on_device(OP, self_, target, beta, small, |z| plus(z, -0.5 * beta)) {
        return apply_reduction(loss?, r);
    }
    let loss = pointwise2(OP, self_, target, move |x, y| {
        let z = (x - y).abs();
        if z < beta {
            0.5 * z * z / beta
        } else {
            z - 0.5 * beta
        }
    })?;
    apply_reduction(loss, r)
}

/// `huber_loss(Tensor self, Tensor target, int reduction=Mean, float delta=1.0) -> Tensor`
pub fn huber_loss(self_: &Tensor, target: &Tensor, reduction_: i64, delta: f64) -> Result<Tensor> {
    const OP: &str = "huber_loss";
    let r = reduction(OP, reduction_)?;
    if delta <= 0.0 {
        return Err(Error::invalid(OP, "huber_loss does not support non-positive values for delta."));
    }
    let small = |z: &Tensor| times(&crate::ops::mul(z, z)?, 0.5);
    let large = |z: &Tensor| times(&plus(z, -0.5 * delta)?, delta);
    if let Some(loss) = piecewise_on_device(OP, self_, target, delta, small, large) {
        return apply_reduction(loss?, r);
    }
    let loss = pointwise2(OP, self_, target, move |x, y| {
        let z = (x - y).abs();
        if z < delta {
            0.5 * z * z
        } else {
            delta * (z - 0.5 * delta)
        }
    })?;
    apply_reduction(loss, r)
}

/// `binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean) -> Tensor`
///
/// Logarithms are clamped at -100, as in PyTorch, so that a 0 or 1 input gives a finite loss.
pub fn binary_cross_entropy(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction_: i64,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy";
    check_binary_cross_entropy(self_, target, weight, reduction_)?;
    let r = reduction(OP, reduction_)?;
    let loss = pointwise2(OP, self_, target, |x, t| (t - 1.0) * (1.0 - x).ln().max(-100.0) - t * x.ln().max(-100.0))?;
    apply_reduction(times_weight(loss, weight)?, r)
}

/// The checks of `binary_cross_entropy` (also run by autograd's decomposition): the reduction,
/// equal sizes, a floating input with every element in [0, 1].
pub fn check_binary_cross_entropy(
    self_: &Tensor,
    target: &Tensor,
    _weight: Option<&Tensor>,
    reduction_: i64,
) -> Result<()> {
    const OP: &str = "binary_cross_entropy";
    reduction(OP, reduction_)?;
    if self_.sizes() != target.sizes() {
        return Err(Error::shape(
            OP,
            format!(
                "Using a target size ({:?}) that is different to the input size ({:?}) is deprecated. Please ensure they have the same size.",
                target.sizes(),
                self_.sizes()
            ),
        ));
    }
    float_dtype(OP, self_.dtype())?;
    if self_.to_vec::<f64>()?.iter().any(|x| !(0.0..=1.0).contains(x)) {
        return Err(Error::invalid(OP, "all elements of input should be between 0 and 1"));
    }
    Ok(())
}

/// `binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=Mean) -> Tensor`
///
/// `(1 - t) x + (1 + (pos_weight - 1) t) (log1p(exp(-|x|)) + max(-x, 0))`, the stable form of
/// `-(pos_weight t log σ(x) + (1 - t) log(1 - σ(x)))`.
pub fn binary_cross_entropy_with_logits(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction_: i64,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy_with_logits";
    let r = reduction(OP, reduction_)?;
    let f = |x: f64, t: f64, pw: f64| {
        let softplus_neg = (-x.abs()).exp().ln_1p() + (-x).max(0.0);
        (1.0 - t) * x + (1.0 + (pw - 1.0) * t) * softplus_neg
    };
    let device = on_device2(OP, self_, target, |x, t| {
        // softplus(-x) = log1p(exp(-|x|)) + max(-x, 0)
        let neg = crate::ops::neg(x)?;
        let tail = crate::ops::log1p(&crate::ops::exp(&crate::ops::neg(&crate::ops::abs(x)?)?)?)?;
        let softplus_neg =
            crate::ops::add(&tail, &crate::ops::clamp(&neg, Some(Scalar::Int(0)), None)?, Scalar::Int(1))?;
        let coef = match pos_weight {
            // 1 + (pw - 1) t
            Some(pw) => plus(&crate::ops::mul(&plus(&crate::native::copy::to_dtype(pw, x.dtype())?, -1.0)?, t)?, 1.0)?,
            None => crate::ops::ones_like(t, None, None, None, None, None)?,
        };
        // (1 - t) x + coef softplus(-x)
        let first = crate::ops::mul(&plus(&crate::ops::neg(t)?, 1.0)?, x)?;
        crate::ops::add(&first, &crate::ops::mul(&coef, &softplus_neg)?, Scalar::Int(1))
    });
    if let Some(loss) = device {
        return apply_reduction(times_weight(loss?, weight)?, r);
    }
    let loss = match pos_weight {
        Some(pw) => pointwise3(OP, self_, target, pw, false, f)?,
        None => pointwise2(OP, self_, target, move |x, t| f(x, t, 1.0))?,
    };
    apply_reduction(times_weight(loss, weight)?, r)
}

/// `kl_div(Tensor self, Tensor target, int reduction=Mean, *, bool log_target=False) -> Tensor`
///
/// `target * (log(target) - self)` (0 where `target` is 0), or with `log_target`
/// `exp(target) * (target - self)`.
pub fn kl_div(self_: &Tensor, target: &Tensor, reduction_: i64, log_target: bool) -> Result<Tensor> {
    const OP: &str = "kl_div";
    let r = reduction(OP, reduction_)?;
    let device = on_device2(OP, self_, target, |x, t| {
        if log_target {
            return crate::ops::mul(&crate::ops::exp(t)?, &sub1(t, x)?);
        }
        // xlogy(t, t) - t x, with 0 log 0 = 0 (NaN stays NaN: `t == 0` is false for it).
        let zero = crate::ops::eq_scalar(t, Scalar::Int(0))?;
        let xlogy = crate::ops::masked_fill(&crate::ops::mul(t, &crate::ops::log(t)?)?, &zero, Scalar::Int(0))?;
        sub1(&xlogy, &crate::ops::mul(t, x)?)
    });
    if let Some(loss) = device {
        return apply_reduction(loss?, r);
    }
    let loss = if log_target {
        pointwise2(OP, self_, target, |x, t| t.exp() * (t - x))?
    } else {
        pointwise2(OP, self_, target, |x, t| {
            let xlogy = if t.is_nan() {
                f64::NAN
            } else if t == 0.0 {
                0.0
            } else {
                t * t.ln()
            };
            xlogy - t * x
        })?
    };
    apply_reduction(loss, r)
}

/// `margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, int reduction=Mean) -> Tensor`
pub fn margin_ranking_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction_: i64,
) -> Result<Tensor> {
    // A composite, as in PyTorch: `(-target * (input1 - input2) + margin).clamp_min(0)`.
    let r = reduction("margin_ranking_loss", reduction_)?;
    let diff = crate::ops::sub(input1, input2, Scalar::Int(1))?;
    let v = crate::ops::mul(&crate::ops::neg(target)?, &diff)?;
    let v = crate::ops::add_scalar(&v, Scalar::Float(margin), Scalar::Int(1))?;
    apply_reduction(crate::ops::clamp_min(&v, Scalar::Int(0))?, r)
}

// ---- row-wise losses -----------------------------------------------------------------------------

/// `cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, int reduction=Mean) -> Tensor`
///
/// `1 - cos(x1, x2)` where `target == 1`, `max(0, cos(x1, x2) - margin)` where `target == -1`,
/// 0 elsewhere; the cosine is taken along the last dimension with 1e-12 added to each squared
/// magnitude.
pub fn cosine_embedding_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction_: i64,
) -> Result<Tensor> {
    const OP: &str = "cosine_embedding_loss";
    const EPSILON: f64 = 1e-12;
    let r = reduction(OP, reduction_)?;
    let targ_dim = target.dim();
    if targ_dim > 1 {
        return Err(Error::shape(OP, "0D or 1D target tensor expected, multi-target not supported"));
    }
    if targ_dim == 1 && (input1.dim() != 2 || input2.dim() != 2) {
        return Err(Error::shape(
            OP,
            format!(
                "1D target tensor expects 2D input tensors, but found inputs with sizes {:?} and {:?}.",
                input1.sizes(),
                input2.sizes()
            ),
        ));
    }
    if targ_dim == 0 && (input1.dim() != 1 || input2.dim() != 1) {
        return Err(Error::shape(
            OP,
            format!(
                "0D target tensor expects 1D input tensors, but found inputs with sizes {:?} and {:?}.",
                input1.sizes(),
                input2.sizes()
            ),
        ));
    }
    // A composite, as in PyTorch, over the last dimension (integer inputs become float where
    // the epsilon is added, as in PyTorch).
    use crate::ops;
    let last = [-1i64];
    let sum_last = |t: &Tensor| ops::sum_dim_intlist(t, Some(&last), false, None);
    let prod_sum = sum_last(&ops::mul(input1, input2)?)?;
    let mag1 = ops::add_scalar(&sum_last(&ops::mul(input1, input1)?)?, Scalar::Float(EPSILON), Scalar::Int(1))?;
    let mag2 = ops::add_scalar(&sum_last(&ops::mul(input2, input2)?)?, Scalar::Float(EPSILON), Scalar::Int(1))?;
    let cos = ops::div(&prod_sum, &ops::sqrt(&ops::mul(&mag1, &mag2)?)?)?;
    let zeros = ops::zeros_like(&cos, None, None, None, None, None)?;
    let pos = ops::rsub(&cos, Scalar::Int(1), Scalar::Int(1))?;
    let neg = ops::clamp_min(&ops::sub_scalar(&cos, Scalar::Float(margin), Scalar::Int(1))?, Scalar::Int(0))?;
    let out_pos = ops::where_self(&ops::eq_scalar(target, Scalar::Int(1))?, &pos, &zeros)?;
    let out_neg = ops::where_self(&ops::eq_scalar(target, Scalar::Int(-1))?, &neg, &zeros)?;
    apply_reduction(ops::add(&out_pos, &out_neg, Scalar::Int(1))?, r)
}

/// `triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1.0, float p=2, float eps=1e-06, bool swap=False, int reduction=Mean) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn triplet_margin_loss(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    margin: f64,
    p: f64,
    eps: f64,
    swap: bool,
    reduction_: i64,
) -> Result<Tensor> {
    const OP: &str = "triplet_margin_loss";
    let r = reduction(OP, reduction_)?;
    let (ad, pd, nd) = (anchor.dim(), positive.dim(), negative.dim());
    if ad != pd || pd != nd {
        return Err(Error::shape(
            OP,
            format!("The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: anchor {ad}D, positive {pd}D, and negative {nd}D inputs"),
        ));
    }
    if ad == 0 {
        return Err(Error::shape(OP, "triplet_margin_loss expects at least 1D inputs, got 0D inputs"));
    }
    // A composite, as in PyTorch: distances are `norm(x - y + eps, p)` over the last dimension
    // (integer inputs become float where the epsilon is added).
    use crate::ops;
    let distance = |x: &Tensor, y: &Tensor| -> Result<Tensor> {
        let d = ops::add_scalar(&ops::sub(x, y, Scalar::Int(1))?, Scalar::Float(eps), Scalar::Int(1))?;
        ops::norm_scalaropt_dim(&d, Some(Scalar::Float(p)), &[-1], false)
    };
    let dpos = distance(anchor, positive)?;
    let mut dneg = distance(anchor, negative)?;
    if swap {
        dneg = ops::minimum(&dneg, &distance(positive, negative)?)?;
    }
    let v = ops::add_scalar(&ops::sub(&dpos, &dneg, Scalar::Int(1))?, Scalar::Float(margin), Scalar::Int(1))?;
    apply_reduction(ops::clamp_min(&v, Scalar::Int(0))?, r)
}

// ---- classification losses ----------------------------------------------------------------------

/// A classification input viewed as `[n, c, s]` (row-major), its target and the output shape
/// of the unreduced loss (the target's shape).
struct ClassProblem {
    n: usize,
    c: usize,
    s: usize,
    x: Vec<f64>,
    target: Vec<i64>,
    out_shape: Vec<i64>,
    dtype: ScalarType,
}

impl ClassProblem {
    fn new(op: &str, input: &Tensor, target: &Tensor) -> Result<ClassProblem> {
        float_dtype(op, input.dtype())?;
        if !matches!(target.dtype(), ScalarType::I64 | ScalarType::U8) {
            return Err(Error::UnsupportedDtype { op: format!("{op}_out_frame"), dtype: target.dtype() });
        }
        let sz = input.sizes();
        let (n, c) = if input.dim() == 1 { (1, sz[0]) } else { (sz[0], sz[1]) };
        let s: i64 = if input.dim() > 2 { sz[2..].iter().product() } else { 1 };
        Ok(ClassProblem {
            n: n as usize,
            c: c as usize,
            s: s as usize,
            x: input.to_vec::<f64>()?,
            target: target.to_vec::<i64>()?,
            out_shape: target.sizes().to_vec(),
            dtype: input.dtype(),
        })
    }

    /// Index of element `(i, class, j)`.
    #[inline]
    fn at(&self, i: usize, class: usize, j: usize) -> usize {
        (i * self.c + class) * self.s + j
    }

    /// Replaces the values by their log-softmax over the class dimension.
    fn log_softmax(&mut self) {
        for i in 0..self.n {
            for j in 0..self.s {
                let mut m = f64::NEG_INFINITY;
                for k in 0..self.c {
                    m = m.max(self.x[self.at(i, k, j)]);
                }
                let mut sum = 0.0;
                for k in 0..self.c {
                    sum += (self.x[self.at(i, k, j)] - m).exp();
                }
                let lse = m + sum.ln();
                for k in 0..self.c {
                    let at = self.at(i, k, j);
                    self.x[at] -= lse;
                }
            }
        }
    }
}

/// A class weight is a vector of `c` elements.
fn check_class_weight_shape(op: &str, w: &Tensor, c: i64) -> Result<()> {
    if w.dim() != 1 || w.numel() != c {
        return Err(Error::shape(
            op,
            format!(
                "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {:?}",
                w.sizes()
            ),
        ));
    }
    Ok(())
}

fn check_class_weight(op: &str, weight: Option<&Tensor>, c: usize) -> Result<Option<Vec<f64>>> {
    match weight {
        None => Ok(None),
        Some(w) => {
            check_class_weight_shape(op, w, c as i64)?;
            Ok(Some(w.to_vec::<f64>()?))
        }
    }
}

/// The negative log-likelihood core over `p.x` (log-probabilities), with optional label
/// smoothing: per position `(1 - ls) w[t] (-x[t]) + ls / C * sum_k w[k] (-x[k])`, 0 where the
/// target is `ignore_index`; the mean divides by the summed `w[t]` of the positions kept.
fn nll_reduce(
    op: &str,
    p: &ClassProblem,
    weight: Option<&[f64]>,
    r: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let mut losses = c10::size::try_vec(p.n.saturating_mul(p.s))?;
    let mut total_weight = 0.0;
    for i in 0..p.n {
        for j in 0..p.s {
            let t = p.target[i * p.s + j];
            if t == ignore_index {
                losses.push(0.0);
                continue;
            }
            if t < 0 || t as usize >= p.c {
                return Err(Error::Index { op: op.into(), msg: format!("Target {t} is out of bounds.") });
            }
            let wt = weight.map_or(1.0, |w| w[t as usize]);
            let mut l = -wt * p.x[p.at(i, t as usize, j)];
            if label_smoothing > 0.0 {
                let smooth: f64 = (0..p.c).map(|k| -weight.map_or(1.0, |w| w[k]) * p.x[p.at(i, k, j)]).sum();
                l = (1.0 - label_smoothing) * l + label_smoothing / p.c as f64 * smooth;
            }
            losses.push(l);
            total_weight += wt;
        }
    }
    match r {
        Reduction::None => tensor_from_f64(&losses, &p.out_shape, p.dtype),
        Reduction::Sum => tensor_from_f64(&[losses.iter().sum()], &[], p.dtype),
        Reduction::Mean => tensor_from_f64(&[losses.iter().sum::<f64>() / total_weight], &[], p.dtype),
    }
}

/// Shape rules of `nll_loss` (1-D or 2-D input).
fn check_nll_1d_2d(op: &str, input: &Tensor, target: &Tensor) -> Result<()> {
    if input.dim() == 0 || input.dim() > 2 {
        return Err(Error::shape(op, "input tensor should be 1D or 2D"));
    }
    if target.dim() > 1 {
        return Err(Error::shape(op, "0D or 1D target tensor expected, multi-target not supported"));
    }
    let no_batch_dim = input.dim() == 1 && target.dim() == 0;
    if !(no_batch_dim || (target.dim() == 1 && input.sizes()[0] == target.sizes()[0])) {
        return Err(Error::shape(
            op,
            format!("size mismatch (got input: {:?}, target: {:?})", input.sizes(), target.sizes()),
        ));
    }
    Ok(())
}

/// Shape rules of `nll_loss2d` (4-D input, 3-D target).
fn check_nll_2d(op: &str, input: &Tensor, target: &Tensor) -> Result<()> {
    if target.dim() != 3 {
        return Err(Error::shape(
            op,
            format!(
                "only batches of spatial targets supported (3D tensors) but got targets of dimension: {}",
                target.dim()
            ),
        ));
    }
    if input.dim() != 4 {
        return Err(Error::shape(
            op,
            format!(
                "only batches of spatial inputs supported (4D tensors), but got input of dimension: {}",
                input.dim()
            ),
        ));
    }
    let (i, t) = (input.sizes(), target.sizes());
    if i[0] != t[0] || i[2] != t[1] || i[3] != t[2] {
        return Err(Error::shape(
            op,
            format!("input and target batch or spatial sizes don't match: target {t:?}, input {i:?}"),
        ));
    }
    Ok(())
}

/// Shape rules of `nll_loss_nd` (any input rank, target of the input's shape without `C`).
fn check_nll_nd(op: &str, input: &Tensor, target: &Tensor) -> Result<()> {
    if input.dim() < 1 {
        return Err(Error::shape(op, format!("Expected 1 or more dimensions (got {})", input.dim())));
    }
    if input.dim() != 1 && target.dim() >= 1 && input.sizes()[0] != target.sizes()[0] {
        return Err(Error::Value {
            op: op.into(),
            msg: format!(
                "Expected input batch_size ({}) to match target batch_size ({}).",
                input.sizes()[0],
                target.sizes()[0]
            ),
        });
    }
    match input.dim() {
        1 | 2 => check_nll_1d_2d(op, input, target),
        4 => check_nll_2d(op, input, target),
        _ => {
            let mut expected = vec![input.sizes()[0]];
            expected.extend_from_slice(&input.sizes()[2..]);
            if target.sizes() != expected.as_slice() {
                return Err(Error::shape(op, format!("Expected target size {expected:?}, got {:?}", target.sizes())));
            }
            Ok(())
        }
    }
}

/// The negative log-likelihood of device log-probabilities `input` (`[N, C, *]` or `[C]`) at
/// class-index targets, with label smoothing: [`nll_reduce`]'s formula from the device's
/// operators (the picked log-probabilities by `gather`, the weights by `index_select`); the
/// targets' range is checked from their minimum and maximum (two numbers to the host, where
/// PyTorch's CUDA kernel asserts on the device).
fn class_nll_on_device(
    op: &str,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    r: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let cd: i64 = if input.dim() == 1 { 0 } else { 1 };
    let c = input.sizes()[cd as usize];
    if let Some(w) = weight {
        check_class_weight_shape(op, w, c)?;
    }
    let dtype = input.dtype();
    let t = crate::native::copy::to_dtype(target, ScalarType::I64)?;
    let ignored = crate::ops::eq_scalar(&t, Scalar::Int(ignore_index))?;
    let safe = crate::ops::masked_fill(&t, &ignored, Scalar::Int(0))?;
    if safe.numel() > 0 {
        for extreme in [crate::ops::amin(&safe, &[], false)?, crate::ops::amax(&safe, &[], false)?] {
            let v = extreme.item::<i64>()?;
            if v < 0 || v >= c {
                return Err(Error::Index { op: op.into(), msg: format!("Target {v} is out of bounds.") });
            }
        }
    }
    let kept = crate::native::copy::to_dtype(&crate::ops::logical_not(&ignored)?, dtype)?;
    let picked =
        crate::ops::squeeze_dim(&crate::ops::gather(input, cd, &crate::ops::unsqueeze(&safe, cd)?, false)?, cd)?;
    let weights = match weight {
        Some(w) => {
            let w = crate::native::copy::to_dtype(w, dtype)?;
            let per = crate::ops::index_select(&w, 0, &crate::ops::reshape(&safe, &[-1])?)?;
            crate::ops::mul(&crate::ops::reshape(&per, target.sizes())?, &kept)?
        }
        None => kept.clone(),
    };
    let mut losses = crate::ops::neg(&crate::ops::mul(&picked, &weights)?)?;
    if label_smoothing > 0.0 {
        let weighted = match weight {
            Some(w) => {
                let mut shape = vec![1i64; input.dim()];
                shape[cd as usize] = c;
                crate::ops::mul(input, &crate::ops::reshape(&crate::native::copy::to_dtype(w, dtype)?, &shape)?)?
            }
            None => input.clone(),
        };
        let smooth = crate::ops::neg(&crate::ops::sum_dim_intlist(&weighted, Some(&[cd]), false, None)?)?;
        let smooth = crate::ops::mul(&smooth, &kept)?;
        losses = crate::ops::add(
            &crate::ops::mul_scalar(&losses, Scalar::Float(1.0 - label_smoothing))?,
            &crate::ops::mul_scalar(&smooth, Scalar::Float(label_smoothing / c as f64))?,
            Scalar::Int(1),
        )?;
    }
    match r {
        Reduction::None => Ok(losses),
        Reduction::Sum => crate::ops::sum(&losses, None),
        Reduction::Mean => crate::ops::div(&crate::ops::sum(&losses, None)?, &crate::ops::sum(&weights, None)?),
    }
}

fn nll_common(
    op: &str,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction_: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    let r = reduction(op, reduction_)?;
    if crate::native::on_device(input) {
        float_dtype(op, input.dtype())?;
        return class_nll_on_device(op, input, target, weight, r, ignore_index, 0.0);
    }
    let p = ClassProblem::new(op, input, target)?;
    let w = check_class_weight(op, weight, p.c)?;
    nll_reduce(op, &p, w.as_deref(), r, ignore_index, 0.0)
}

/// `nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor`
pub fn nll_loss(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction_: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    check_nll_1d_2d("nll_loss", self_, target)?;
    nll_common("nll_loss", self_, target, weight, reduction_, ignore_index)
}

/// `nll_loss2d(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor`
pub fn nll_loss2d(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction_: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    check_nll_2d("nll_loss2d", self_, target)?;
    nll_common("nll_loss2d", self_, target, weight, reduction_, ignore_index)
}

/// `nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor`
pub fn nll_loss_nd(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction_: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    check_nll_nd("nll_loss_nd", self_, target)?;
    nll_common("nll_loss_nd", self_, target, weight, reduction_, ignore_index)
}

/// `cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor`
///
/// Class-index targets (the input's shape without the class dimension) or class-probability
/// targets (the input's shape); the class dimension is 1 (0 for an unbatched 1-D input).
pub fn cross_entropy_loss(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction_: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    const OP: &str = "cross_entropy_loss";
    let r = reduction(OP, reduction_)?;
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::invalid(OP, format!("label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")));
    }
    float_dtype(OP, self_.dtype())?;
    let device = crate::native::on_device(self_);
    if self_.sizes() == target.sizes() && self_.dim() >= 1 {
        if device {
            return cross_entropy_probs_on_device(self_, target, weight, r, ignore_index, label_smoothing);
        }
        return cross_entropy_probs(self_, target, weight, r, ignore_index, label_smoothing);
    }
    check_nll_nd(OP, self_, target)?;
    if device {
        let cd = if self_.dim() == 1 { 0 } else { 1 };
        let logp = crate::ops::log_softmax(self_, cd, None)?;
        return class_nll_on_device(OP, &logp, target, weight, r, ignore_index, label_smoothing);
    }
    let mut p = ClassProblem::new(OP, self_, target)?;
    let w = check_class_weight(OP, weight, p.c)?;
    p.log_softmax();
    nll_reduce(OP, &p, w.as_deref(), r, ignore_index, label_smoothing)
}

/// The checks of cross entropy's probability targets: a floating target, no `ignore_index`.
fn check_prob_target(target: &Tensor, ignore_index: i64) -> Result<()> {
    const OP: &str = "cross_entropy_loss";
    if !target.dtype().is_floating_point() {
        return Err(Error::invalid(
            OP,
            format!(
                "Expected floating point type for target with class probabilities, got {}",
                target.dtype().cpp_name()
            ),
        ));
    }
    if ignore_index >= 0 {
        return Err(Error::invalid(OP, "ignore_index is not supported for floating point target"));
    }
    Ok(())
}

/// Cross entropy's class weight with probability targets: a vector of `c` elements.
fn check_prob_weight(w: &Tensor, c: i64) -> Result<()> {
    if w.dim() != 1 || w.numel() != c {
        return Err(Error::shape(
            "cross_entropy_loss",
            format!(
                "cross_entropy: weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {:?}",
                w.sizes()
            ),
        ));
    }
    Ok(())
}

/// [`cross_entropy_probs`] of device tensors, from the device's operators.
fn cross_entropy_probs_on_device(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    r: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let cd: i64 = if input.dim() == 1 { 0 } else { 1 };
    let c = input.sizes()[cd as usize];
    check_prob_target(target, ignore_index)?;
    if let Some(w) = weight {
        check_prob_weight(w, c)?;
    }
    let logp = crate::ops::log_softmax(input, cd, None)?;
    let t = crate::native::copy::to_dtype(target, input.dtype())?;
    let t = if label_smoothing > 0.0 {
        crate::ops::add_scalar(
            &crate::ops::mul_scalar(&t, Scalar::Float(1.0 - label_smoothing))?,
            Scalar::Float(label_smoothing / c as f64),
            Scalar::Int(1),
        )?
    } else {
        t
    };
    let mut prod = crate::ops::mul(&logp, &t)?;
    if let Some(w) = weight {
        let mut shape = vec![1i64; input.dim()];
        shape[cd as usize] = c;
        prod =
            crate::ops::mul(&prod, &crate::ops::reshape(&crate::native::copy::to_dtype(w, input.dtype())?, &shape)?)?;
    }
    let per = crate::ops::neg(&crate::ops::sum_dim_intlist(&prod, Some(&[cd]), false, None)?)?;
    match r {
        Reduction::None => Ok(per),
        Reduction::Sum => crate::ops::sum(&per, None),
        // The mean over positions (the numel without the class dim).
        Reduction::Mean => {
            crate::ops::mul_scalar(&crate::ops::sum(&per, None)?, Scalar::Float(c as f64 / input.numel().max(1) as f64))
        }
    }
}

/// Cross entropy with class-probability targets:
/// `-sum_k w[k] t'[k] log_softmax(x)[k]` with `t' = t (1 - ls) + ls / C`; the mean divides by
/// the number of positions (not by the weights).
fn cross_entropy_probs(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    r: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    check_prob_target(target, ignore_index)?;
    let sz = input.sizes();
    let (n, c) = if input.dim() == 1 { (1, sz[0]) } else { (sz[0], sz[1]) };
    let s: i64 = if input.dim() > 2 { sz[2..].iter().product() } else { 1 };
    let mut p = ClassProblem {
        n: n as usize,
        c: c as usize,
        s: s as usize,
        x: input.to_vec::<f64>()?,
        target: Vec::new(),
        out_shape: Vec::new(),
        dtype: input.dtype(),
    };
    let w = match weight {
        None => None,
        Some(w) => {
            check_prob_weight(w, c)?;
            Some(w.to_vec::<f64>()?)
        }
    };
    p.log_softmax();
    let t = target.to_vec::<f64>()?;
    let mut losses = c10::size::try_vec(p.n.saturating_mul(p.s))?;
    for i in 0..p.n {
        for j in 0..p.s {
            let mut l = 0.0;
            for k in 0..p.c {
                let at = p.at(i, k, j);
                let tk = t[at] * (1.0 - label_smoothing) + label_smoothing / p.c as f64;
                l -= w.as_deref().map_or(1.0, |w| w[k]) * tk * p.x[at];
            }
            losses.push(l);
        }
    }
    match r {
        Reduction::None => {
            let mut shape = sz.to_vec();
            shape.remove(if input.dim() == 1 { 0 } else { 1 });
            tensor_from_f64(&losses, &shape, p.dtype)
        }
        Reduction::Sum => tensor_from_f64(&[losses.iter().sum()], &[], p.dtype),
        Reduction::Mean => {
            let count = (p.n * p.s) as f64;
            tensor_from_f64(&[losses.iter().sum::<f64>() / count], &[], p.dtype)
        }
    }
}

// ---- margin losses over classes -------------------------------------------------------------

/// The input as `[N, C]` (a 1-d input is one sample) and the target as `[N]`, or PyTorch's
/// shape errors.
fn margin_problem(op: &str, input: &Tensor, target: &Tensor, target_2d: bool) -> Result<(Tensor, Tensor, bool)> {
    use crate::ops;
    let single = input.dim() <= 1;
    if input.dim() > 2 || (input.dim() == 2 && input.sizes()[1] == 0) || input.numel() == 0 && single {
        return Err(Error::shape(
            op,
            format!("Expected non-empty vector or matrix with optional 0-dim batch size, but got: {:?}", input.sizes()),
        ));
    }
    let x = if single { ops::reshape(input, &[1, -1])? } else { input.clone() };
    let (n, c) = (x.sizes()[0], x.sizes()[1]);
    let want: Vec<i64> = if target_2d { vec![n, c] } else { vec![n] };
    let t = if single && target.numel() as usize == want.iter().product::<i64>() as usize {
        ops::reshape(target, &want)?
    } else {
        target.clone()
    };
    if t.sizes() != want.as_slice() {
        return Err(Error::shape(
            op,
            format!("inconsistent target size: {:?} for input of size: {:?}", target.sizes(), input.sizes()),
        ));
    }
    if t.dtype().is_floating_point() || t.dtype() == ScalarType::Bool {
        return Err(Error::invalid(op, format!("expected target of an integer dtype, got {}", t.dtype().cpp_name())));
    }
    Ok((x, t, single))
}

/// The unreduced per-sample loss back in the input's batch shape, then reduced.
fn finish_margin(loss: Tensor, single: bool, r: Reduction) -> Result<Tensor> {
    let loss = if single && r == Reduction::None { crate::ops::squeeze_dim(&loss, 0)? } else { loss };
    apply_reduction(loss, r)
}

/// `multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, Tensor? weight=None, int reduction=Mean) -> Tensor`:
/// per sample, `sum_{j != y} w[y] * max(0, margin - x[y] + x[j])^p / C`, as a composite.
pub fn multi_margin_loss(
    input: &Tensor,
    target: &Tensor,
    p: Scalar,
    margin: Scalar,
    weight: Option<&Tensor>,
    reduction_: i64,
) -> Result<Tensor> {
    use crate::ops;
    const OP: &str = "multi_margin_loss";
    let r = reduction(OP, reduction_)?;
    let p = p.to_f64();
    if p != 1.0 && p != 2.0 {
        return Err(Error::invalid(OP, "only p == 1 and p == 2 supported"));
    }
    let (x, t, single) = margin_problem(OP, input, target, false)?;
    let c = x.sizes()[1];
    if let Some(w) = weight {
        if w.dim() > 1 || w.numel() != c {
            return Err(Error::shape(OP, format!("inconsistent weight size, expected {c} but got {:?}", w.sizes())));
        }
    }
    let (lo, hi) = t.to_vec::<i64>()?.iter().fold((0, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    if lo < 0 || hi >= c {
        return Err(Error::invalid(OP, "target out of range"));
    }
    let t1 = ops::unsqueeze(&t, 1)?;
    let x_y = ops::gather(&x, 1, &t1, false)?;
    let z = ops::clamp_min(
        &ops::add_scalar(&ops::sub(&x, &x_y, Scalar::Int(1))?, margin, Scalar::Int(1))?,
        Scalar::Int(0),
    )?;
    let z = if p == 2.0 { ops::mul(&z, &z)? } else { z };
    let z = match weight {
        Some(w) => ops::mul(&z, &ops::unsqueeze(&ops::index_select(&ops::reshape(w, &[-1])?, 0, &t)?, 1)?)?,
        None => z,
    };
    // The target's own class does not count.
    let own = ops::one_hot(&t, c)?;
    let z = ops::masked_fill(&z, &ops::ne_scalar(&own, Scalar::Int(0))?, Scalar::Int(0))?;
    let loss = ops::div_scalar(&ops::sum_dim_intlist(&z, Some(&[1]), false, None)?, Scalar::Int(c))?;
    finish_margin(loss, single, r)
}

/// `multilabel_margin_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor`: the
/// target lists each sample's classes, ended by the first -1; per sample,
/// `sum_{j listed} sum_{k not listed} max(0, 1 - (x[j] - x[k])) / C`.
pub fn multilabel_margin_loss(input: &Tensor, target: &Tensor, reduction_: i64) -> Result<Tensor> {
    use crate::ops;
    const OP: &str = "multilabel_margin_loss";
    let r = reduction(OP, reduction_)?;
    let (x, t, single) = margin_problem(OP, input, target, true)?;
    let (n, c) = (x.sizes()[0] as usize, x.sizes()[1]);
    let cu = c as usize;
    // How many times each class is listed, and which classes are targets.
    let tv = t.to_vec::<i64>()?;
    let mut listed = vec![0f64; n * cu];
    let mut is_target = vec![0f64; n * cu];
    for i in 0..n {
        for &label in tv[i * cu..(i + 1) * cu].iter().take_while(|&&v| v >= 0) {
            if label >= c {
                return Err(Error::invalid(OP, format!("target index {label} is out of range for {c} classes")));
            }
            listed[i * cu + label as usize] += 1.0;
            is_target[i * cu + label as usize] = 1.0;
        }
    }
    // Built on the host, used on the input's device.
    let to = |v: Vec<f64>| -> Result<Tensor> {
        crate::native::copy::to_dtype(&Tensor::from_vec(v, &[n as i64, c])?, x.dtype())?.to_device(x.device())
    };
    let (listed, others) = (to(listed)?, ops::rsub(&to(is_target)?, Scalar::Int(1), Scalar::Int(1))?);
    // [N, C(j), C(k)]: max(0, 1 - x_j + x_k), weighted by listed_j * others_k.
    let d = ops::sub(&ops::unsqueeze(&x, 1)?, &ops::unsqueeze(&x, 2)?, Scalar::Int(1))?;
    let hinge = ops::clamp_min(&ops::add_scalar(&d, Scalar::Int(1), Scalar::Int(1))?, Scalar::Int(0))?;
    let wts = ops::mul(&ops::unsqueeze(&listed, 2)?, &ops::unsqueeze(&others, 1)?)?;
    let loss =
        ops::div_scalar(&ops::sum_dim_intlist(&ops::mul(&hinge, &wts)?, Some(&[1, 2]), false, None)?, Scalar::Int(c))?;
    finish_margin(loss, single, r)
}

// Note [CTC loss]: `_ctc_loss` runs the connectionist temporal classification forward (alpha)
// recursion of Graves et al. in log space over the extended target (a blank before, between and
// after the labels), per batch element, in f64 whatever the input's float type; it returns the
// negative log-likelihood per element and the log-alphas, `(B, T, 2 * S_max + 1)`, which the
// backward reuses. `_ctc_loss_backward` runs the beta recursion and gives, as PyTorch's kernel
// does, `exp(log_probs) - exp(log(alpha beta / y) + nll)` times the incoming gradient: the
// gradient through a `log_softmax` in front of the loss (the `exp(log_probs)` term cancels in
// its backward), not the plain derivative with respect to `log_probs`; steps past an element's
// input length get zero. `targets` is `(B, S_max)` padded or 1-D, the targets concatenated.

/// The checked shape of a CTC problem: `(T, B, C)`, and where each element's targets start.
struct CtcProblem {
    t: usize,
    b: usize,
    c: usize,
    input_lengths: Vec<usize>,
    target_lengths: Vec<usize>,
    target_starts: Vec<usize>,
    max_target: usize,
    targets: Vec<i64>,
    blank: usize,
}

fn ctc_problem(
    op: &str,
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    blank: i64,
) -> Result<CtcProblem> {
    let bad = |m: String| Error::invalid(op, m);
    if log_probs.dim() != 3 {
        return Err(bad(format!("expected log_probs of shape (T, N, C), got {:?}", log_probs.sizes())));
    }
    if !matches!(log_probs.dtype(), ScalarType::F32 | ScalarType::F64) {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: log_probs.dtype() });
    }
    let (t, b, c) = (log_probs.sizes()[0] as usize, log_probs.sizes()[1] as usize, log_probs.sizes()[2] as usize);
    if blank < 0 || blank as usize >= c {
        return Err(bad(format!("blank must be in label range, got blank {blank} for {c} classes")));
    }
    if input_lengths.len() != b || target_lengths.len() != b {
        return Err(bad(format!(
            "input_lengths and target_lengths must have one entry per batch element ({b}), got {} and {}",
            input_lengths.len(),
            target_lengths.len()
        )));
    }
    if !matches!(targets.dtype(), ScalarType::I64 | ScalarType::I32) {
        return Err(bad(format!("expected targets of type Long or Int, got {:?}", targets.dtype())));
    }
    let mut lengths = Vec::with_capacity(b);
    for &il in input_lengths {
        if il < 0 || il as usize > t {
            return Err(bad(format!("Expected input_lengths to have value at most {t}, but got value {il}")));
        }
        lengths.push(il as usize);
    }
    let mut tl = Vec::with_capacity(b);
    for &l in target_lengths {
        if l < 0 {
            return Err(bad(format!("target_lengths must be non-negative, got {l}")));
        }
        tl.push(l as usize);
    }
    let flat = crate::ops::to(targets, ScalarType::I64, false, false, None)?.to_vec::<i64>()?;
    let (starts, max_target) = match targets.dim() {
        1 => {
            let total: usize = tl.iter().sum();
            if total > flat.len() {
                return Err(bad(format!(
                    "the target lengths sum to {total}, but targets has only {} elements",
                    flat.len()
                )));
            }
            let starts: Vec<usize> = tl.iter().scan(0, |acc, &l| Some(std::mem::replace(acc, *acc + l))).collect();
            (starts, tl.iter().copied().max().unwrap_or(0))
        }
        2 => {
            let (rows, width) = (targets.sizes()[0] as usize, targets.sizes()[1] as usize);
            if rows != b {
                return Err(bad(format!("expected {b} rows of targets, got {rows}")));
            }
            if let Some(&l) = tl.iter().find(|&&l| l > width) {
                return Err(bad(format!(
                    "Expected tensor to have size at least {l} at dimension 1, but got size {width} for argument #2 'targets'"
                )));
            }
            ((0..b).map(|i| i * width).collect(), width)
        }
        d => return Err(bad(format!("targets must be 1-D or 2-D, got {d} dimensions"))),
    };
    for i in 0..b {
        for &label in &flat[starts[i]..starts[i] + tl[i]] {
            if label < 0 || label as usize >= c {
                return Err(bad(format!("target label {label} is out of range for {c} classes")));
            }
        }
    }
    Ok(CtcProblem {
        t,
        b,
        c,
        input_lengths: lengths,
        target_lengths: tl,
        target_starts: starts,
        max_target,
        targets: flat,
        blank: blank as usize,
    })
}

impl CtcProblem {
    /// Label `s` of element `i`'s extended target (blanks at even places).
    fn label(&self, i: usize, s: usize) -> usize {
        if s.is_multiple_of(2) {
            self.blank
        } else {
            self.targets[self.target_starts[i] + s / 2] as usize
        }
    }
    /// Whether the recursion may skip from place `s - 2` to `s` (a label differing from the one
    /// two places before).
    fn can_skip(&self, i: usize, s: usize) -> bool {
        s >= 2 && s % 2 == 1 && self.label(i, s) != self.label(i, s - 2)
    }
}

fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// `_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths,
/// int blank=0, bool zero_infinity=False) -> (Tensor, Tensor)` (Note [CTC loss]).
pub fn ctc_loss_forward(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    blank: i64,
    _zero_infinity: bool,
) -> Result<(Tensor, Tensor)> {
    let op = "ctc_loss";
    let p = ctc_problem(op, log_probs, targets, input_lengths, target_lengths, blank)?;
    let lp = crate::ops::to(log_probs, ScalarType::F64, false, false, None)?.to_vec::<f64>()?;
    let width = 2 * p.max_target + 1;
    let mut alpha = c10::size::try_vec_filled(f64::NEG_INFINITY, p.b * p.t * width)?;
    let mut nll = vec![0f64; p.b];
    let at = |t: usize, i: usize, c: usize| lp[(t * p.b + i) * p.c + c];
    for i in 0..p.b {
        let (tn, len) = (p.input_lengths[i], 2 * p.target_lengths[i] + 1);
        let a = &mut alpha[i * p.t * width..(i + 1) * p.t * width];
        if tn == 0 {
            // No steps: only an empty target has probability one.
            nll[i] = if p.target_lengths[i] == 0 { 0.0 } else { f64::INFINITY };
            continue;
        }
        a[0] = at(0, i, p.blank);
        if len > 1 {
            a[1] = at(0, i, p.label(i, 1));
        }
        for t in 1..tn {
            for s in 0..len {
                let mut v = a[(t - 1) * width + s];
                if s >= 1 {
                    v = log_add(v, a[(t - 1) * width + s - 1]);
                }
                if p.can_skip(i, s) {
                    v = log_add(v, a[(t - 1) * width + s - 2]);
                }
                a[t * width + s] = if v == f64::NEG_INFINITY { v } else { v + at(t, i, p.label(i, s)) };
            }
        }
        let last = (tn - 1) * width;
        let ll = if len > 1 { log_add(a[last + len - 1], a[last + len - 2]) } else { a[last] };
        nll[i] = -ll;
    }
    let dtype = log_probs.dtype();
    let nll = tensor_from_f64(&nll, &[p.b as i64], dtype)?;
    let alpha = tensor_from_f64(&alpha, &[p.b as i64, p.t as i64, width as i64], dtype)?;
    Ok((nll, alpha))
}

/// `_ctc_loss_backward(Tensor grad, Tensor log_probs, Tensor targets, int[] input_lengths,
/// int[] target_lengths, Tensor neg_log_likelihood, Tensor log_alpha, int blank,
/// bool zero_infinity=False) -> Tensor` (Note [CTC loss]).
#[allow(clippy::too_many_arguments)]
pub fn ctc_loss_backward(
    grad: &Tensor,
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    neg_log_likelihood: &Tensor,
    log_alpha: &Tensor,
    blank: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    let op = "ctc_loss_backward";
    let p = ctc_problem(op, log_probs, targets, input_lengths, target_lengths, blank)?;
    let width = 2 * p.max_target + 1;
    if log_alpha.sizes() != [p.b as i64, p.t as i64, width as i64] || neg_log_likelihood.numel() != p.b as i64 {
        return Err(Error::invalid(
            op,
            "log_alpha and neg_log_likelihood must be _ctc_loss's outputs for these inputs",
        ));
    }
    let f64s = |t: &Tensor| crate::ops::to(t, ScalarType::F64, false, false, None)?.to_vec::<f64>();
    let (lp, alpha, nll) = (f64s(log_probs)?, f64s(log_alpha)?, f64s(neg_log_likelihood)?);
    let g = f64s(&crate::ops::expand(grad, &[p.b as i64], false)?)?;
    let at = |t: usize, i: usize, c: usize| lp[(t * p.b + i) * p.c + c];
    let mut out = c10::size::try_vec_filled(0f64, p.t * p.b * p.c)?;
    let mut beta = vec![f64::NEG_INFINITY; p.t * width];
    let mut lcab = vec![f64::NEG_INFINITY; p.c];
    for i in 0..p.b {
        let (tn, len) = (p.input_lengths[i], 2 * p.target_lengths[i] + 1);
        if tn == 0 || (zero_infinity && nll[i] == f64::INFINITY) {
            continue;
        }
        beta.fill(f64::NEG_INFINITY);
        let last = (tn - 1) * width;
        beta[last + len - 1] = at(tn - 1, i, p.blank);
        if len > 1 {
            beta[last + len - 2] = at(tn - 1, i, p.label(i, len - 2));
        }
        for t in (0..tn - 1).rev() {
            for s in 0..len {
                let mut v = beta[(t + 1) * width + s];
                if s + 1 < len {
                    v = log_add(v, beta[(t + 1) * width + s + 1]);
                }
                if s + 2 < len && p.can_skip(i, s + 2) {
                    v = log_add(v, beta[(t + 1) * width + s + 2]);
                }
                beta[t * width + s] = if v == f64::NEG_INFINITY { v } else { v + at(t, i, p.label(i, s)) };
            }
        }
        let a = &alpha[i * p.t * width..(i + 1) * p.t * width];
        for t in 0..tn {
            lcab.fill(f64::NEG_INFINITY);
            for s in 0..len {
                let l = p.label(i, s);
                lcab[l] = log_add(lcab[l], a[t * width + s] + beta[t * width + s]);
            }
            for (c, &ab) in lcab.iter().enumerate() {
                let x = at(t, i, c);
                out[(t * p.b + i) * p.c + c] = (x.exp() - (ab + nll[i] - x).exp()) * g[i];
            }
        }
    }
    tensor_from_f64(&out, log_probs.sizes(), log_probs.dtype())
}

// Note [CTC loss on devices]: the CUDA kernels of `_ctc_loss` and `_ctc_loss_backward` are the
// same recursions written as tensor operations on the device, batched over the elements and the
// places of the extended targets (`(B, S)`, `S = 2 * S_max + 1`), one step of the recursion per
// time step: a place's new log-alpha is the log-sum-exp of the place, the one before and (where
// the label differs from the one two before) the one two before, plus the log-probability of its
// label, gathered once for all steps. Places past an element's extended target and steps past
// its input length stay at -inf, as in the CPU kernel's arrays; the masks, labels and lengths
// are built on the host from the checked problem and moved to the device once. The backward's
// per-class sums over the places of a label are a `scatter_add` of `exp(alpha + beta - max)`.
// Everything is in f64, as on the CPU; the results match the CPU kernel's to rounding.

/// The host-built tensors of a CTC problem on `device` (Note [CTC loss on devices]).
struct CtcDevice {
    /// `(B, S)` int64: the label of each place (the blank past an element's extended target).
    labels: Tensor,
    /// `(B, S)` bool: places inside the element's extended target.
    valid: Tensor,
    /// `(B, S)` bool: places the recursion may reach from two places before.
    skip: Tensor,
    /// `(B, S)` bool: places the backward may reach from two places after.
    skip_next: Tensor,
    /// `(B, S)` bool: the first two places (where alpha starts), for elements with steps.
    first: Tensor,
    /// `(B, S)` bool: the last two places (where beta starts).
    last: Tensor,
    /// `(B, 1)` int64: the input lengths.
    steps: Tensor,
    width: usize,
}

impl CtcDevice {
    fn new(p: &CtcProblem, device: c10::Device) -> Result<CtcDevice> {
        let width = 2 * p.max_target + 1;
        let n = p.b * width;
        let (mut labels, mut valid, mut skip, mut skip_next, mut first, mut last) =
            (vec![p.blank as i64; n], vec![false; n], vec![false; n], vec![false; n], vec![false; n], vec![false; n]);
        for i in 0..p.b {
            let len = 2 * p.target_lengths[i] + 1;
            for s in 0..len {
                let k = i * width + s;
                labels[k] = p.label(i, s) as i64;
                valid[k] = true;
                skip[k] = p.can_skip(i, s);
                skip_next[k] = s + 2 < len && p.can_skip(i, s + 2);
                first[k] = s < 2 && p.input_lengths[i] > 0;
                last[k] = s + 2 >= len;
            }
        }
        let on = |t: Tensor| crate::ops::to_device(&t, device, t.dtype(), false, false, None);
        let shape = [p.b as i64, width as i64];
        let steps: Vec<i64> = p.input_lengths.iter().map(|&l| l as i64).collect();
        Ok(CtcDevice {
            labels: on(Tensor::from_vec(labels, &shape)?)?,
            valid: on(Tensor::from_vec(valid, &shape)?)?,
            skip: on(Tensor::from_vec(skip, &shape)?)?,
            skip_next: on(Tensor::from_vec(skip_next, &shape)?)?,
            first: on(Tensor::from_vec(first, &shape)?)?,
            last: on(Tensor::from_vec(last, &shape)?)?,
            steps: on(Tensor::from_vec(steps, &[p.b as i64, 1])?)?,
            width,
        })
    }

    /// `(T, B, S)`: the log-probability of each place's label at each step, in f64.
    fn label_log_probs(&self, log_probs: &Tensor, p: &CtcProblem) -> Result<Tensor> {
        let lp = crate::ops::to(log_probs, ScalarType::F64, false, false, None)?;
        let idx = crate::ops::expand(
            &crate::ops::unsqueeze(&self.labels, 0)?,
            &[p.t as i64, p.b as i64, self.width as i64],
            false,
        )?;
        crate::ops::gather(&lp, 2, &idx, false)
    }
}

/// `-inf` of `like`'s shape, dtype and device.
fn neg_inf_like(like: &Tensor) -> Result<Tensor> {
    crate::ops::full_like(like, Scalar::Float(f64::NEG_INFINITY), None, None, None, None, None)
}

/// `log(exp(a) + exp(b) + exp(c))` elementwise, -inf where all three are.
fn log_sum_exp3(a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
    let m = crate::ops::maximum(&crate::ops::maximum(a, b)?, c)?;
    let m = crate::ops::masked_fill(&m, &crate::ops::isneginf(&m)?, Scalar::Int(0))?;
    let e = |x: &Tensor| crate::ops::exp(&crate::ops::sub(x, &m, Scalar::Int(1))?);
    let sum = crate::ops::add(&crate::ops::add(&e(a)?, &e(b)?, Scalar::Int(1))?, &e(c)?, Scalar::Int(1))?;
    crate::ops::add(&crate::ops::log(&sum)?, &m, Scalar::Int(1))
}

/// `x` moved `by` places along dim 1 (right for positive `by`), -inf filling the places left.
fn shift_places(x: &Tensor, by: i64) -> Result<Tensor> {
    let width = x.sizes()[1];
    let fill = neg_inf_like(&crate::ops::narrow(x, 1, 0, by.abs().min(width))?)?;
    if by.abs() >= width {
        return neg_inf_like(x);
    }
    if by > 0 {
        crate::ops::cat(&[fill, crate::ops::narrow(x, 1, 0, width - by)?], 1)
    } else {
        crate::ops::cat(&[crate::ops::narrow(x, 1, -by, width + by)?, fill], 1)
    }
}

/// `_ctc_loss` on a device, in tensor operations (Note [CTC loss on devices]).
pub fn ctc_loss_forward_tensors(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    blank: i64,
    zero_infinity: bool,
) -> Result<(Tensor, Tensor)> {
    let p = ctc_problem("ctc_loss", log_probs, targets, input_lengths, target_lengths, blank)?;
    let d = CtcDevice::new(&p, log_probs.device())?;
    let dtype = log_probs.dtype();
    if p.t == 0 || p.b == 0 {
        // No steps: the CPU kernel's empty alphas, and its losses (0 for empty targets).
        return ctc_loss_forward(
            &crate::ops::to_device(log_probs, c10::Device::CPU, dtype, false, false, None)?,
            &crate::ops::to_device(targets, c10::Device::CPU, targets.dtype(), false, false, None)?,
            input_lengths,
            target_lengths,
            blank,
            zero_infinity,
        )
        .and_then(|(nll, alpha)| {
            let on = |t: &Tensor| crate::ops::to_device(t, log_probs.device(), dtype, false, false, None);
            Ok((on(&nll)?, on(&alpha)?))
        });
    }
    let lpe = d.label_log_probs(log_probs, &p)?;
    let ninf = neg_inf_like(&crate::ops::select(&lpe, 0, 0)?)?;
    let mut alpha = crate::ops::where_self(&d.first, &crate::ops::select(&lpe, 0, 0)?, &ninf)?;
    let mut alphas = vec![alpha.clone()];
    for t in 1..p.t {
        let one = shift_places(&alpha, 1)?;
        let two = crate::ops::where_self(&d.skip, &shift_places(&alpha, 2)?, &ninf)?;
        let next = crate::ops::add(
            &log_sum_exp3(&alpha, &one, &two)?,
            &crate::ops::select(&lpe, 0, t as i64)?,
            Scalar::Int(1),
        )?;
        let live = crate::ops::logical_and(&d.valid, &crate::ops::gt_scalar(&d.steps, Scalar::Int(t as i64))?)?;
        alpha = crate::ops::where_self(&live, &next, &ninf)?;
        alphas.push(alpha.clone());
    }
    let log_alpha = crate::ops::stack(&alphas, 1)?;
    // The log-likelihood: the last two places of each element's extended target at its last step.
    let width = d.width as i64;
    let (mut end, mut before, mut two_ends, mut fixed, mut fixed_value) =
        (vec![0i64; p.b], vec![0i64; p.b], vec![false; p.b], vec![false; p.b], vec![0f64; p.b]);
    for i in 0..p.b {
        let (tn, len) = (p.input_lengths[i] as i64, 2 * p.target_lengths[i] as i64 + 1);
        if tn == 0 {
            fixed[i] = true;
            fixed_value[i] = if p.target_lengths[i] == 0 { 0.0 } else { f64::INFINITY };
            continue;
        }
        end[i] = (tn - 1) * width + len - 1;
        before[i] = (tn - 1) * width + (len - 2).max(0);
        two_ends[i] = len > 1;
    }
    let dev = log_probs.device();
    let on = |t: Tensor| crate::ops::to_device(&t, dev, t.dtype(), false, false, None);
    let b = p.b as i64;
    let flat = crate::ops::reshape(&log_alpha, &[b, -1])?;
    let at =
        |v: Vec<i64>| -> Result<Tensor> { crate::ops::gather(&flat, 1, &on(Tensor::from_vec(v, &[b, 1])?)?, false) };
    let last = at(end)?;
    let second =
        crate::ops::where_self(&on(Tensor::from_vec(two_ends, &[b, 1])?)?, &at(before)?, &neg_inf_like(&last)?)?;
    let ll = crate::ops::logaddexp(&last, &second)?;
    let nll = crate::ops::reshape(&crate::ops::neg(&ll)?, &[b])?;
    let nll =
        crate::ops::where_self(&on(Tensor::from_vec(fixed, &[b])?)?, &on(Tensor::from_vec(fixed_value, &[b])?)?, &nll)?;
    Ok((crate::ops::to(&nll, dtype, false, false, None)?, crate::ops::to(&log_alpha, dtype, false, false, None)?))
}

/// `_ctc_loss_backward` on a device, in tensor operations (Note [CTC loss on devices]).
#[allow(clippy::too_many_arguments)]
pub fn ctc_loss_backward_tensors(
    grad: &Tensor,
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    neg_log_likelihood: &Tensor,
    log_alpha: &Tensor,
    blank: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    let op = "ctc_loss_backward";
    let p = ctc_problem(op, log_probs, targets, input_lengths, target_lengths, blank)?;
    let d = CtcDevice::new(&p, log_probs.device())?;
    let (b, t_len, width) = (p.b as i64, p.t as i64, d.width as i64);
    if log_alpha.sizes() != [b, t_len, width] || neg_log_likelihood.numel() != b {
        return Err(Error::invalid(
            op,
            "log_alpha and neg_log_likelihood must be _ctc_loss's outputs for these inputs",
        ));
    }
    if p.t == 0 || p.b == 0 {
        return crate::ops::zeros_like(log_probs, None, None, None, None, None);
    }
    let f64s = |t: &Tensor| crate::ops::to(t, ScalarType::F64, false, false, None);
    let lpe = d.label_log_probs(log_probs, &p)?;
    let ninf = neg_inf_like(&crate::ops::select(&lpe, 0, 0)?)?;
    let mut betas = vec![ninf.clone(); p.t];
    let mut beta = ninf.clone();
    for t in (0..p.t).rev() {
        let here = crate::ops::select(&lpe, 0, t as i64)?;
        let start = crate::ops::logical_and(&d.last, &crate::ops::eq_scalar(&d.steps, Scalar::Int(t as i64 + 1))?)?;
        let started = crate::ops::where_self(&d.valid, &crate::ops::where_self(&start, &here, &ninf)?, &ninf)?;
        beta = if t + 1 < p.t {
            let one = shift_places(&beta, -1)?;
            let two = crate::ops::where_self(&d.skip_next, &shift_places(&beta, -2)?, &ninf)?;
            let next = crate::ops::add(&log_sum_exp3(&beta, &one, &two)?, &here, Scalar::Int(1))?;
            let live = crate::ops::logical_and(&d.valid, &crate::ops::gt_scalar(&d.steps, Scalar::Int(t as i64 + 1))?)?;
            crate::ops::where_self(&live, &next, &started)?
        } else {
            started
        };
        betas[t] = beta.clone();
    }
    let beta = crate::ops::stack(&betas, 1)?;
    let ab = crate::ops::add(&f64s(log_alpha)?, &beta, Scalar::Int(1))?;
    let m = crate::ops::amax(&ab, &[2], true)?;
    let m = crate::ops::masked_fill(&m, &crate::ops::isneginf(&m)?, Scalar::Int(0))?;
    let e = crate::ops::exp(&crate::ops::sub(&ab, &m, Scalar::Int(1))?)?;
    let classes =
        crate::ops::zeros(&[b, t_len, p.c as i64], Some(ScalarType::F64), None, Some(log_probs.device()), None)?;
    let idx = crate::ops::expand(&crate::ops::unsqueeze(&d.labels, 1)?, &[b, t_len, width], false)?;
    let lcab =
        crate::ops::add(&crate::ops::log(&crate::ops::scatter_add(&classes, 2, &idx, &e)?)?, &m, Scalar::Int(1))?;
    let x = crate::ops::permute(&f64s(log_probs)?, &[1, 0, 2])?;
    let nll = crate::ops::reshape(&f64s(neg_log_likelihood)?, &[b, 1, 1])?;
    let term = crate::ops::exp(&crate::ops::sub(&crate::ops::add(&lcab, &nll, Scalar::Int(1))?, &x, Scalar::Int(1))?)?;
    let g = crate::ops::reshape(&f64s(&crate::ops::expand(grad, &[b], false)?)?, &[b, 1, 1])?;
    let out = crate::ops::mul(&crate::ops::sub(&crate::ops::exp(&x)?, &term, Scalar::Int(1))?, &g)?;
    // Steps past an element's input length, and (with zero_infinity) impossible elements: 0.
    let dev = log_probs.device();
    let steps = crate::ops::arange(Scalar::Int(t_len), Some(ScalarType::I64), None, Some(dev), None)?;
    let mut live = crate::ops::lt(&crate::ops::reshape(&steps, &[1, t_len, 1])?, &crate::ops::unsqueeze(&d.steps, 2)?)?;
    if zero_infinity {
        let finite = crate::ops::logical_not(&crate::ops::isposinf(&nll)?)?;
        live = crate::ops::logical_and(&live, &finite)?;
    }
    let zero = crate::ops::zeros_like(&out, None, None, None, None, None)?;
    let out = crate::ops::permute(&crate::ops::where_self(&live, &out, &zero)?, &[1, 0, 2])?;
    crate::ops::contiguous(&crate::ops::to(&out, log_probs.dtype(), false, false, None)?, c10::MemoryFormat::Contiguous)
}

/// `ctc_loss.IntList(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths,
/// int blank=0, int reduction=Mean, bool zero_infinity=False) -> Tensor`: `nn.CTCLoss`. An
/// unbatched `(T, C)` input takes 1-D targets; `zero_infinity` gives impossible alignments a
/// loss (and gradient) of zero; `Mean` divides each loss by its target length (at least 1)
/// before averaging over the batch.
pub fn ctc_loss(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    blank: i64,
    reduction_: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    let r = reduction("ctc_loss", reduction_)?;
    let unbatched = log_probs.dim() == 2;
    let (lp, tg) = if unbatched {
        (crate::ops::unsqueeze(log_probs, 1)?, crate::ops::unsqueeze(targets, 0)?)
    } else {
        (log_probs.clone(), targets.clone())
    };
    let (mut nll, _) = crate::ops::_ctc_loss(&lp, &tg, input_lengths, target_lengths, blank, zero_infinity)?;
    if zero_infinity {
        let inf = crate::ops::eq_scalar(&nll, Scalar::Float(f64::INFINITY))?;
        nll = crate::ops::masked_fill(&nll, &inf, Scalar::Float(0.0))?;
    }
    let loss = match r {
        Reduction::Mean => {
            let lengths: Vec<f64> = target_lengths.iter().map(|&l| l.max(1) as f64).collect();
            let lengths = tensor_from_f64(&lengths, &[lengths.len() as i64], nll.dtype())?;
            let lengths = crate::ops::to_device(&lengths, nll.device(), nll.dtype(), false, false, None)?;
            crate::ops::mean(&crate::ops::div(&nll, &lengths)?, None)?
        }
        Reduction::Sum => crate::ops::sum(&nll, None)?,
        Reduction::None => nll,
    };
    if unbatched && r == Reduction::None {
        crate::ops::squeeze_dim(&loss, 0)
    } else {
        Ok(loss)
    }
}

/// `ctc_loss.Tensor(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths,
/// int blank=0, int reduction=Mean, bool zero_infinity=False) -> Tensor`: [`ctc_loss`] with the
/// lengths as integer tensors.
pub fn ctc_loss_tensor(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &Tensor,
    target_lengths: &Tensor,
    blank: i64,
    reduction_: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    let ints = |t: &Tensor, name: &str| {
        if t.dtype().is_floating_point() || t.dtype().is_complex() || t.dim() > 1 {
            return Err(Error::invalid("ctc_loss", format!("{name} must be a 0-D or 1-D integer tensor")));
        }
        crate::ops::to(t, ScalarType::I64, false, false, None)?.reshape(&[-1])?.to_vec::<i64>()
    };
    let (il, tl) = (ints(input_lengths, "input_lengths")?, ints(target_lengths, "target_lengths")?);
    ctc_loss(log_probs, targets, &il, &tl, blank, reduction_, zero_infinity)
}
