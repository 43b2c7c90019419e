//! Fused optimizer updates.
//!
//! Note [Fused updates]: an optimizer step written with tensor operators reads and writes every
//! state tensor once per operator: SGD with momentum is three passes over the parameter, its
//! gradient and its buffer (`buf *= m`, `buf += (1 - d) * g`, `p -= lr * buf`), Adam about ten. For
//! parameters that are dense f32 or f64 CPU tensors of one shape whose memory does not overlap, the
//! update instead runs as one loop per parameter that keeps every intermediate in registers
//! (PyTorch's `_fused_sgd_` / `_fused_adam_`; RMSprop and Adagrad have loops of their own), split
//! into chunks over the thread pool for large parameters. Anything else (half precision,
//! non-contiguous or overlapping tensors) takes the operator path. The arithmetic is the same, in
//! the parameter's dtype; the rounding can differ from the operator path in the last bit (operators
//! round after each step, the loop may keep a value the compiler computes the same way), which is
//! within what PyTorch's own fused and for-loop implementations differ by.
//!
//! The loops run on `aten::parallel::Dense`, which checks that the tensors qualify, hands out
//! chunks as slices and bumps the version counters of the tensors written (as in-place
//! operators do).
//!
//! On a device, SGD with momentum and Adam/AdamW run the device's fused kernel instead (one
//! launch per parameter instead of three or ten, Note [Fused optimizer kernels] in
//! kernels-cuda), through `aten::native::stub::run_fused_sgd`/`run_fused_adam`, with the same
//! constants and the same element arithmetic; tensors the kernel does not take (half
//! precision, non-contiguous) take the operator path there too.

use aten::parallel::Dense;
use aten::Tensor;
use c10::{Result, ScalarType};

use crate::optim::{AdagradOptions, RMSpropOptions, SGDOptions};

/// The float types a fused loop runs on.
pub(crate) trait FusedFloat:
    c10::Element
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
{
    /// `v` rounded to this type (how a `Scalar` argument reaches a kernel).
    fn of(v: f64) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
}

macro_rules! fused_float {
    ($($t:ty),*) => {$(
        impl FusedFloat for $t {
            #[inline(always)]
            fn of(v: f64) -> $t {
                v as $t
            }
            #[inline(always)]
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    )*};
}
fused_float!(f32, f64);

/// One SGD step with an existing momentum buffer, fused (Note [Fused updates]). Returns
/// whether it ran; `false` leaves everything untouched for the operator path.
pub(crate) fn sgd_momentum(o: &SGDOptions, param: &Tensor, grad: &Tensor, buf: &Tensor) -> Result<bool> {
    if !param.device().is_cpu() {
        let step = aten::native::stub::FusedSgd {
            weight_decay: o.weight_decay,
            momentum: o.momentum,
            keep: 1.0 - o.dampening,
            neg_lr: -o.lr,
            nesterov: o.nesterov,
            maximize: o.maximize,
        };
        return aten::native::stub::run_fused_sgd(param, grad, buf, &step);
    }
    match param.dtype() {
        ScalarType::F32 => sgd_momentum_typed::<f32>(o, param, grad, buf),
        ScalarType::F64 => sgd_momentum_typed::<f64>(o, param, grad, buf),
        _ => Ok(false),
    }
}

fn sgd_momentum_typed<T: FusedFloat>(o: &SGDOptions, param: &Tensor, grad: &Tensor, buf: &Tensor) -> Result<bool> {
    let Some(d) = Dense::<T, 3>::new([param, grad, buf])? else { return Ok(false) };
    let (wd, m, keep, neg_lr) = (T::of(o.weight_decay), T::of(o.momentum), T::of(1.0 - o.dampening), T::of(-o.lr));
    let (decay, nesterov, maximize) = (o.weight_decay != 0.0, o.nesterov, o.maximize);
    d.run([true, false, true], move |[p, g, b]| {
        for ((p, &g), b) in p.iter_mut().zip(g.iter()).zip(b.iter_mut()) {
            let mut g = if maximize { -g } else { g };
            if decay {
                g = g + wd * *p;
            }
            *b = *b * m + keep * g;
            let step = if nesterov { g + m * *b } else { *b };
            *p = *p + neg_lr * step;
        }
    });
    Ok(true)
}

/// Options of one Adam/AdamW step, as the element loop sees them (bias corrections included).
#[derive(Clone, Copy)]
pub(crate) struct AdamStep {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub decoupled_weight_decay: bool,
    pub maximize: bool,
    /// `lr / (1 - beta1^step)`.
    pub step_size: f64,
    /// `sqrt(1 - beta2^step)`.
    pub bias_correction2_sqrt: f64,
}

/// The tensors of one Adam step: the parameter, its gradient and its state.
pub(crate) struct AdamTensors<'a> {
    pub param: &'a Tensor,
    pub grad: &'a Tensor,
    pub exp_avg: &'a Tensor,
    pub exp_avg_sq: &'a Tensor,
    /// The running maximum of `exp_avg_sq` (amsgrad), or `None`.
    pub max_exp_avg_sq: Option<&'a Tensor>,
}

/// One Adam step (amsgrad when `max_exp_avg_sq` is given), fused (Note [Fused updates]).
/// Returns whether it ran.
pub(crate) fn adam(o: AdamStep, t: AdamTensors<'_>) -> Result<bool> {
    if !t.param.device().is_cpu() {
        let decoupled = o.weight_decay != 0.0 && o.decoupled_weight_decay;
        let step = aten::native::stub::FusedAdam {
            w1: 1.0 - o.beta1,
            lerp_low: (1.0 - o.beta1).abs() < 0.5,
            beta2: o.beta2,
            c2: 1.0 - o.beta2,
            eps: o.eps,
            bias_correction2_sqrt: o.bias_correction2_sqrt,
            neg_step: -o.step_size,
            decay: if o.decoupled_weight_decay { 1.0 - o.lr * o.weight_decay } else { o.weight_decay },
            decoupled,
            coupled: o.weight_decay != 0.0 && !o.decoupled_weight_decay,
            maximize: o.maximize,
        };
        let AdamTensors { param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq } = t;
        return aten::native::stub::run_fused_adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, &step);
    }
    match t.param.dtype() {
        ScalarType::F32 => adam_typed::<f32>(o, t),
        ScalarType::F64 => adam_typed::<f64>(o, t),
        _ => Ok(false),
    }
}

fn adam_typed<T: FusedFloat>(o: AdamStep, t: AdamTensors<'_>) -> Result<bool> {
    let AdamTensors { param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq } = t;
    let w1 = T::of(1.0 - o.beta1);
    let lerp_low = (1.0 - o.beta1).abs() < 0.5;
    let (b2, c2) = (T::of(o.beta2), T::of(1.0 - o.beta2));
    let (eps, bc2, neg_step) = (T::of(o.eps), T::of(o.bias_correction2_sqrt), T::of(-o.step_size));
    let decay = T::of(if o.decoupled_weight_decay { 1.0 - o.lr * o.weight_decay } else { o.weight_decay });
    let (decoupled, coupled) =
        (o.weight_decay != 0.0 && o.decoupled_weight_decay, o.weight_decay != 0.0 && !o.decoupled_weight_decay);
    let maximize = o.maximize;
    let one = T::of(1.0);
    // The shared part of the element update: returns the new `exp_avg` and the gradient used.
    let moments = move |p: &mut T, g: T, m: &mut T, v: &mut T| {
        let mut g = if maximize { -g } else { g };
        if decoupled {
            *p = *p * decay;
        } else if coupled {
            g = g + decay * *p;
        }
        // torch.lerp's two-sided formula, as the operator path computes it.
        *m = if lerp_low { *m + w1 * (g - *m) } else { g - (g - *m) * (one - w1) };
        // addcmul's `self + value * t1 * t2`, evaluated left to right as the operator does.
        *v = *v * b2 + c2 * g * g;
    };
    match max_exp_avg_sq {
        None => {
            let Some(d) = Dense::<T, 4>::new([param, grad, exp_avg, exp_avg_sq])? else { return Ok(false) };
            d.run([true, false, true, true], move |[p, g, m, v]| {
                for (((p, &g), m), v) in p.iter_mut().zip(g.iter()).zip(m.iter_mut()).zip(v.iter_mut()) {
                    moments(p, g, m, v);
                    let denom = v.sqrt() / bc2 + eps;
                    *p = *p + neg_step * *m / denom;
                }
            });
        }
        Some(max) => {
            let Some(d) = Dense::<T, 5>::new([param, grad, exp_avg, exp_avg_sq, max])? else { return Ok(false) };
            d.run([true, false, true, true, true], move |[p, g, m, v, mx]| {
                for ((((p, &g), m), v), mx) in
                    p.iter_mut().zip(g.iter()).zip(m.iter_mut()).zip(v.iter_mut()).zip(mx.iter_mut())
                {
                    moments(p, g, m, v);
                    // torch.maximum: NaN propagates.
                    if v.is_nan() || *v > *mx {
                        *mx = *v;
                    }
                    let denom = mx.sqrt() / bc2 + eps;
                    *p = *p + neg_step * *m / denom;
                }
            });
        }
    }
    Ok(true)
}

/// The tensors of one RMSprop step: the parameter, its gradient and its state.
pub(crate) struct RMSpropTensors<'a> {
    pub param: &'a Tensor,
    pub grad: &'a Tensor,
    pub square_avg: &'a Tensor,
    /// The running mean of the gradient (centered), or `None`.
    pub grad_avg: Option<&'a Tensor>,
    /// The momentum buffer (momentum > 0), or `None`.
    pub momentum_buffer: Option<&'a Tensor>,
}

/// One RMSprop step, fused (Note [Fused updates]). Returns whether it ran.
pub(crate) fn rmsprop(o: &RMSpropOptions, t: RMSpropTensors<'_>) -> Result<bool> {
    match t.param.dtype() {
        ScalarType::F32 => rmsprop_typed::<f32>(o, t),
        ScalarType::F64 => rmsprop_typed::<f64>(o, t),
        _ => Ok(false),
    }
}

fn rmsprop_typed<T: FusedFloat>(o: &RMSpropOptions, t: RMSpropTensors<'_>) -> Result<bool> {
    let RMSpropTensors { param, grad, square_avg, grad_avg, momentum_buffer } = t;
    let (wd, alpha, c, eps) = (T::of(o.weight_decay), T::of(o.alpha), T::of(1.0 - o.alpha), T::of(o.eps));
    let (mom, neg_lr, one) = (T::of(o.momentum), T::of(-o.lr), T::of(1.0));
    let (decay, maximize) = (o.weight_decay != 0.0, o.maximize);
    let lerp_low = (1.0 - o.alpha).abs() < 0.5;
    // The gradient used and the new square average (the same for every variant).
    let square = move |p: T, g: T, sq: &mut T| {
        let mut g = if maximize { -g } else { g };
        if decay {
            g = g + wd * p;
        }
        *sq = *sq * alpha + c * g * g;
        g
    };
    // The centered variant's denominator: sqrt(sq - ga^2) + eps after ga = lerp(ga, g, 1 - alpha).
    let centered = move |g: T, sq: T, ga: &mut T| {
        *ga = if lerp_low { *ga + c * (g - *ga) } else { g - (g - *ga) * (one - c) };
        (sq + T::of(-1.0) * *ga * *ga).sqrt() + eps
    };
    match (grad_avg, momentum_buffer) {
        (None, None) => {
            let Some(d) = Dense::<T, 3>::new([param, grad, square_avg])? else { return Ok(false) };
            d.run([true, false, true], move |[p, g, sq]| {
                for ((p, &g), sq) in p.iter_mut().zip(g.iter()).zip(sq.iter_mut()) {
                    let g = square(*p, g, sq);
                    *p = *p + neg_lr * g / (sq.sqrt() + eps);
                }
            });
        }
        (Some(ga), None) => {
            let Some(d) = Dense::<T, 4>::new([param, grad, square_avg, ga])? else { return Ok(false) };
            d.run([true, false, true, true], move |[p, g, sq, ga]| {
                for (((p, &g), sq), ga) in p.iter_mut().zip(g.iter()).zip(sq.iter_mut()).zip(ga.iter_mut()) {
                    let g = square(*p, g, sq);
                    let avg = centered(g, *sq, ga);
                    *p = *p + neg_lr * g / avg;
                }
            });
        }
        (None, Some(buf)) => {
            let Some(d) = Dense::<T, 4>::new([param, grad, square_avg, buf])? else { return Ok(false) };
            d.run([true, false, true, true], move |[p, g, sq, b]| {
                for (((p, &g), sq), b) in p.iter_mut().zip(g.iter()).zip(sq.iter_mut()).zip(b.iter_mut()) {
                    let g = square(*p, g, sq);
                    *b = *b * mom + one * g / (sq.sqrt() + eps);
                    *p = *p + neg_lr * *b;
                }
            });
        }
        (Some(ga), Some(buf)) => {
            let Some(d) = Dense::<T, 5>::new([param, grad, square_avg, ga, buf])? else { return Ok(false) };
            d.run([true, false, true, true, true], move |[p, g, sq, ga, b]| {
                for ((((p, &g), sq), ga), b) in
                    p.iter_mut().zip(g.iter()).zip(sq.iter_mut()).zip(ga.iter_mut()).zip(b.iter_mut())
                {
                    let g = square(*p, g, sq);
                    let avg = centered(g, *sq, ga);
                    *b = *b * mom + one * g / avg;
                    *p = *p + neg_lr * *b;
                }
            });
        }
    }
    Ok(true)
}

/// One Adagrad step, fused (Note [Fused updates]), with this step's decayed learning rate
/// `clr = lr / (1 + (step - 1) * lr_decay)`. Returns whether it ran.
pub(crate) fn adagrad(o: &AdagradOptions, clr: f64, param: &Tensor, grad: &Tensor, sum: &Tensor) -> Result<bool> {
    match param.dtype() {
        ScalarType::F32 => adagrad_typed::<f32>(o, clr, param, grad, sum),
        ScalarType::F64 => adagrad_typed::<f64>(o, clr, param, grad, sum),
        _ => Ok(false),
    }
}

fn adagrad_typed<T: FusedFloat>(
    o: &AdagradOptions,
    clr: f64,
    param: &Tensor,
    grad: &Tensor,
    sum: &Tensor,
) -> Result<bool> {
    let Some(d) = Dense::<T, 3>::new([param, grad, sum])? else { return Ok(false) };
    let (wd, eps, neg_clr, one) = (T::of(o.weight_decay), T::of(o.eps), T::of(-clr), T::of(1.0));
    let (decay, maximize) = (o.weight_decay != 0.0, o.maximize);
    d.run([true, false, true], move |[p, g, s]| {
        for ((p, &g), s) in p.iter_mut().zip(g.iter()).zip(s.iter_mut()) {
            let mut g = if maximize { -g } else { g };
            if decay {
                g = g + wd * *p;
            }
            *s = *s + one * g * g;
            *p = *p + neg_clr * g / (s.sqrt() + eps);
        }
    });
    Ok(true)
}
