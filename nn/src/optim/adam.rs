//! `torch.optim.Adam` and `torch.optim.AdamW`: one update (AdamW is Adam with decoupled
//! weight decay, as in PyTorch, where `AdamW` subclasses `Adam`), two option types because the
//! defaults differ (`weight_decay` 0 and 0.01).

use aten::Tensor;
use c10::{Error, Result};

use crate::module::{Parameter, StateDict};
use crate::optim::{
    addcdiv_, addcmul_, check_non_negative, deep_copy, float, forward_to_param_groups, fused, lerp_, maximum_,
    param_group_methods, py_float, set_bool, set_f64, signed_grad, step_tensor, zeros_like, GroupOptions, Optimizer,
    OptionValue, ParamGroups, ParamState, StateLoader,
};

/// The options of [`Adam`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamOptions {
    /// `lr` (default 1e-3).
    pub lr: f64,
    /// `betas`: decay rates of the first and second moment estimates (default (0.9, 0.999)).
    pub betas: (f64, f64),
    /// `eps`, added to the denominator (default 1e-8).
    pub eps: f64,
    /// `weight_decay` (default 0): an L2 penalty added to the gradient, or with
    /// `decoupled_weight_decay` a decay of the parameter itself.
    pub weight_decay: f64,
    /// `amsgrad`: normalise by the maximum of the second moments seen so far (default false).
    pub amsgrad: bool,
    /// `maximize` (default false).
    pub maximize: bool,
    /// `decoupled_weight_decay`: AdamW's weight decay (default false).
    pub decoupled_weight_decay: bool,
}

/// A learning rate alone: `Adam::new(params, 0.01)` is PyTorch's `Adam(params, lr=0.01)`, the other
/// options at their defaults (as the C++ frontend's `AdamOptions(lr)`).
impl From<f64> for AdamOptions {
    fn from(lr: f64) -> AdamOptions {
        AdamOptions { lr, ..Default::default() }
    }
}

impl Default for AdamOptions {
    fn default() -> AdamOptions {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
            decoupled_weight_decay: false,
        }
    }
}

/// The options of [`AdamW`], with PyTorch's defaults (`weight_decay` 0.01; the decay is always
/// decoupled).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamWOptions {
    /// `lr` (default 1e-3).
    pub lr: f64,
    /// `betas` (default (0.9, 0.999)).
    pub betas: (f64, f64),
    /// `eps` (default 1e-8).
    pub eps: f64,
    /// `weight_decay`: each step multiplies the parameter by `1 - lr * weight_decay` (default
    /// 0.01).
    pub weight_decay: f64,
    /// `amsgrad` (default false).
    pub amsgrad: bool,
    /// `maximize` (default false).
    pub maximize: bool,
}

/// A learning rate alone: `AdamW::new(params, 0.01)` is PyTorch's `AdamW(params, lr=0.01)`, the other
/// options at their defaults (as the C++ frontend's `AdamWOptions(lr)`).
impl From<f64> for AdamWOptions {
    fn from(lr: f64) -> AdamWOptions {
        AdamWOptions { lr, ..Default::default() }
    }
}

impl Default for AdamWOptions {
    fn default() -> AdamWOptions {
        AdamWOptions { lr: 1e-3, betas: (0.9, 0.999), eps: 1e-8, weight_decay: 1e-2, amsgrad: false, maximize: false }
    }
}

impl From<AdamWOptions> for AdamOptions {
    fn from(o: AdamWOptions) -> AdamOptions {
        AdamOptions {
            lr: o.lr,
            betas: o.betas,
            eps: o.eps,
            weight_decay: o.weight_decay,
            amsgrad: o.amsgrad,
            maximize: o.maximize,
            decoupled_weight_decay: true,
        }
    }
}

macro_rules! adam_setters {
    ($ty:ty) => {
        impl $ty {
            /// Sets `lr`.
            pub fn lr(mut self, lr: f64) -> Self {
                self.lr = lr;
                self
            }
            /// Sets `betas`.
            pub fn betas(mut self, beta1: f64, beta2: f64) -> Self {
                self.betas = (beta1, beta2);
                self
            }
            /// Sets `eps`.
            pub fn eps(mut self, eps: f64) -> Self {
                self.eps = eps;
                self
            }
            /// Sets `weight_decay`.
            pub fn weight_decay(mut self, weight_decay: f64) -> Self {
                self.weight_decay = weight_decay;
                self
            }
            /// Sets `amsgrad`.
            pub fn amsgrad(mut self, amsgrad: bool) -> Self {
                self.amsgrad = amsgrad;
                self
            }
            /// Sets `maximize`.
            pub fn maximize(mut self, maximize: bool) -> Self {
                self.maximize = maximize;
                self
            }
        }
    };
}
adam_setters!(AdamOptions);
adam_setters!(AdamWOptions);

impl AdamOptions {
    /// Sets `decoupled_weight_decay`.
    pub fn decoupled_weight_decay(mut self, decoupled: bool) -> Self {
        self.decoupled_weight_decay = decoupled;
        self
    }
}

/// PyTorch's checks in `Adam.__init__`, in its order.
fn validate(op: &str, lr: f64, betas: (f64, f64), eps: f64, weight_decay: f64) -> Result<()> {
    check_non_negative(op, "learning rate", lr)?;
    check_non_negative(op, "epsilon value", eps)?;
    for (i, b) in [betas.0, betas.1].into_iter().enumerate() {
        if !(0.0..1.0).contains(&b) {
            return Err(Error::invalid(op, format!("Invalid beta parameter at index {i}: {}", py_float(b))));
        }
    }
    check_non_negative(op, "weight_decay value", weight_decay)
}

/// The options both types share, under PyTorch's names.
fn shared_values(o: &AdamOptions) -> Vec<(&'static str, OptionValue)> {
    vec![
        ("lr", OptionValue::Float(o.lr)),
        ("betas", OptionValue::Pair(o.betas.0, o.betas.1)),
        ("eps", OptionValue::Float(o.eps)),
        ("weight_decay", OptionValue::Float(o.weight_decay)),
        ("amsgrad", OptionValue::Bool(o.amsgrad)),
        ("maximize", OptionValue::Bool(o.maximize)),
        ("decoupled_weight_decay", OptionValue::Bool(o.decoupled_weight_decay)),
    ]
}

impl GroupOptions for AdamOptions {
    const OPTIMIZER: &'static str = "Adam";

    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.betas.0)
    }
    fn set_momentum(&mut self, beta1: f64) -> bool {
        self.betas.0 = beta1;
        true
    }
    fn validate(&self) -> Result<()> {
        validate("Adam", self.lr, self.betas, self.eps, self.weight_decay)
    }
    fn to_values(&self) -> Vec<(&'static str, OptionValue)> {
        shared_values(self)
    }
    fn set_value(&mut self, name: &str, value: OptionValue) -> Result<bool> {
        match name {
            "lr" => set_f64(&mut self.lr, name, value),
            "betas" => {
                self.betas = value.as_pair(name)?;
                Ok(true)
            }
            "eps" => set_f64(&mut self.eps, name, value),
            "weight_decay" => set_f64(&mut self.weight_decay, name, value),
            "amsgrad" => set_bool(&mut self.amsgrad, name, value),
            "maximize" => set_bool(&mut self.maximize, name, value),
            "decoupled_weight_decay" => set_bool(&mut self.decoupled_weight_decay, name, value),
            _ => Ok(false),
        }
    }
}

impl GroupOptions for AdamWOptions {
    const OPTIMIZER: &'static str = "AdamW";

    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.betas.0)
    }
    fn set_momentum(&mut self, beta1: f64) -> bool {
        self.betas.0 = beta1;
        true
    }
    fn validate(&self) -> Result<()> {
        validate("AdamW", self.lr, self.betas, self.eps, self.weight_decay)
    }
    fn to_values(&self) -> Vec<(&'static str, OptionValue)> {
        shared_values(&AdamOptions::from(*self))
    }
    fn set_value(&mut self, name: &str, value: OptionValue) -> Result<bool> {
        // AdamW's decay is always decoupled (PyTorch's `AdamW.__setstate__` forces the flag).
        if name == "decoupled_weight_decay" {
            value.as_bool(name)?;
            return Ok(true);
        }
        let mut o = AdamOptions::from(*self);
        let known = o.set_value(name, value)?;
        *self = AdamWOptions {
            lr: o.lr,
            betas: o.betas,
            eps: o.eps,
            weight_decay: o.weight_decay,
            amsgrad: o.amsgrad,
            maximize: o.maximize,
        };
        Ok(known)
    }
}

/// Adam's per-parameter state, created at the parameter's first step.
pub(crate) struct AdamState {
    step: f64,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    /// Only with `amsgrad`.
    max_exp_avg_sq: Option<Tensor>,
}

impl ParamState for AdamState {
    fn save(&self, out: &mut StateDict) -> Result<()> {
        out.insert("step", step_tensor(self.step));
        out.insert("exp_avg", deep_copy(&self.exp_avg)?);
        out.insert("exp_avg_sq", deep_copy(&self.exp_avg_sq)?);
        if let Some(m) = &self.max_exp_avg_sq {
            out.insert("max_exp_avg_sq", deep_copy(m)?);
        }
        Ok(())
    }
    fn load(loader: &StateLoader<'_>) -> Result<AdamState> {
        Ok(AdamState {
            step: loader.step()?,
            exp_avg: loader.tensor("exp_avg")?,
            exp_avg_sq: loader.tensor("exp_avg_sq")?,
            max_exp_avg_sq: loader.optional_tensor("max_exp_avg_sq")?,
        })
    }
}

/// One Adam step for one parameter (PyTorch's `_single_tensor_adam`, not capturable).
fn adam_update(o: &AdamOptions, param: &Tensor, grad: &Tensor, state: &mut Option<AdamState>) -> Result<()> {
    // AdamW is an Adam in PyTorch too, and says the same.
    crate::optim::refuse_sparse("Adam", grad, ", please consider SparseAdam instead")?;
    let s = match state {
        Some(s) => s,
        None => state.insert(AdamState {
            step: 0.0,
            exp_avg: zeros_like(param)?,
            exp_avg_sq: zeros_like(param)?,
            max_exp_avg_sq: None,
        }),
    };
    s.step += 1.0;
    let (beta1, beta2) = o.betas;
    if o.amsgrad && s.max_exp_avg_sq.is_none() {
        // A group may turn amsgrad on after its first steps; start the maximum at zero then.
        s.max_exp_avg_sq = Some(zeros_like(param)?);
    }
    let step = fused::AdamStep {
        lr: o.lr,
        beta1,
        beta2,
        eps: o.eps,
        weight_decay: o.weight_decay,
        decoupled_weight_decay: o.decoupled_weight_decay,
        maximize: o.maximize,
        step_size: o.lr / (1.0 - beta1.powf(s.step)),
        bias_correction2_sqrt: (1.0 - beta2.powf(s.step)).powf(0.5),
    };
    let max = if o.amsgrad { s.max_exp_avg_sq.as_ref() } else { None };
    let tensors =
        fused::AdamTensors { param, grad, exp_avg: &s.exp_avg, exp_avg_sq: &s.exp_avg_sq, max_exp_avg_sq: max };
    if fused::adam(step, tensors)? {
        return Ok(());
    }
    let mut grad = signed_grad(grad, o.maximize)?;
    if o.weight_decay != 0.0 {
        if o.decoupled_weight_decay {
            param.mul_(float(1.0 - o.lr * o.weight_decay))?;
        } else {
            grad = grad.add_with(param, float(o.weight_decay))?;
        }
    }
    lerp_(&s.exp_avg, &grad, 1.0 - beta1)?;
    s.exp_avg_sq.mul_(float(beta2))?;
    addcmul_(&s.exp_avg_sq, &grad, &grad, 1.0 - beta2)?;

    let bias_correction1 = 1.0 - beta1.powf(s.step);
    let bias_correction2 = 1.0 - beta2.powf(s.step);
    let step_size = o.lr / bias_correction1;
    let bias_correction2_sqrt = bias_correction2.powf(0.5);

    let second_moment = match &s.max_exp_avg_sq {
        Some(max) if o.amsgrad => {
            maximum_(max, &s.exp_avg_sq)?;
            max
        }
        _ => &s.exp_avg_sq,
    };
    let denom = second_moment.sqrt()?;
    denom.div_(float(bias_correction2_sqrt)).call()?;
    denom.add_(float(o.eps)).call()?;
    addcdiv_(param, &s.exp_avg, &denom, -step_size)
}

/// `torch.optim.Adam`.
///
/// Per parameter with a gradient (PyTorch's single-tensor loop): `step += 1`;
/// `g = maximize ? -g : g`; weight decay (`g += wd * p`, or with `decoupled_weight_decay`
/// `p *= 1 - lr * wd`); `m = lerp(m, g, 1 - beta1)`; `v = beta2 * v + (1 - beta2) * g * g`;
/// `denom = sqrt(amsgrad ? max(v_max, v) : v) / sqrt(1 - beta2^step) + eps`;
/// `p -= lr / (1 - beta1^step) * m / denom`.
pub struct Adam {
    groups: ParamGroups<AdamOptions, AdamState>,
}

impl Adam {
    /// `Adam(params, **options)`: one group. Errors as PyTorch's constructor
    /// (`Invalid beta parameter at index 0: 1.0`, ...).
    pub fn new(params: impl IntoIterator<Item = Parameter>, options: impl Into<AdamOptions>) -> Result<Adam> {
        Adam::from_param_groups(ParamGroups::single(params, options.into())?)
    }

    param_group_methods!(AdamOptions);

    fn from_param_groups(groups: ParamGroups<AdamOptions, AdamState>) -> Result<Adam> {
        Ok(Adam { groups })
    }

    fn after_add_param_group(&mut self) -> Result<()> {
        Ok(())
    }
}

impl Optimizer for Adam {
    fn name(&self) -> &'static str {
        "Adam"
    }

    fn step(&mut self) -> Result<()> {
        let _range = super::step_range(self.name());
        self.groups.update(adam_update)
    }

    forward_to_param_groups!();
}

/// `torch.optim.AdamW`: [`Adam`] with decoupled weight decay (`p *= 1 - lr * weight_decay`
/// before the moment updates) and `weight_decay` 0.01 by default.
pub struct AdamW {
    groups: ParamGroups<AdamWOptions, AdamState>,
}

impl AdamW {
    /// `AdamW(params, **options)`: one group.
    pub fn new(params: impl IntoIterator<Item = Parameter>, options: impl Into<AdamWOptions>) -> Result<AdamW> {
        AdamW::from_param_groups(ParamGroups::single(params, options.into())?)
    }

    param_group_methods!(AdamWOptions);

    fn from_param_groups(groups: ParamGroups<AdamWOptions, AdamState>) -> Result<AdamW> {
        Ok(AdamW { groups })
    }

    fn after_add_param_group(&mut self) -> Result<()> {
        Ok(())
    }
}

impl Optimizer for AdamW {
    fn name(&self) -> &'static str {
        "AdamW"
    }

    fn step(&mut self) -> Result<()> {
        let _range = super::step_range(self.name());
        self.groups.update(|o, p, g, s| adam_update(&AdamOptions::from(*o), p, g, s))
    }

    forward_to_param_groups!();
}
