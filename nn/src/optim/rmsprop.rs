//! `torch.optim.RMSprop`: divides the gradient by a running root mean square, optionally
//! centered (subtracting the squared running mean) and with momentum.

use aten::Tensor;
use c10::Result;

use crate::module::{Parameter, StateDict};
use crate::optim::{
    addcdiv_, addcmul_, check_non_negative, deep_copy, float, forward_to_param_groups, lerp_, param_group_methods,
    set_bool, set_f64, signed_grad, step_tensor, zeros_like, GroupOptions, Optimizer, OptionValue, ParamGroups,
    ParamState, StateLoader,
};

/// The options of [`RMSprop`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RMSpropOptions {
    /// `lr` (default 1e-2).
    pub lr: f64,
    /// `alpha`: smoothing constant of the running mean square (default 0.99).
    pub alpha: f64,
    /// `eps`, added to the denominator (default 1e-8).
    pub eps: f64,
    /// `weight_decay`: L2 penalty added to the gradient (default 0).
    pub weight_decay: f64,
    /// `momentum` (default 0).
    pub momentum: f64,
    /// `centered`: normalise by the estimated variance instead of the mean square (default
    /// false).
    pub centered: bool,
    /// `maximize` (default false).
    pub maximize: bool,
}

/// A learning rate alone: `RMSprop::new(params, 0.01)` is PyTorch's `RMSprop(params, lr=0.01)`, the other
/// options at their defaults (as the C++ frontend's `RMSpropOptions(lr)`).
impl From<f64> for RMSpropOptions {
    fn from(lr: f64) -> RMSpropOptions {
        RMSpropOptions { lr, ..Default::default() }
    }
}

impl Default for RMSpropOptions {
    fn default() -> RMSpropOptions {
        RMSpropOptions {
            lr: 1e-2,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
            maximize: false,
        }
    }
}

impl RMSpropOptions {
    /// Sets `lr`.
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = lr;
        self
    }
    /// Sets `alpha`.
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.alpha = alpha;
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
    /// Sets `momentum`.
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.momentum = momentum;
        self
    }
    /// Sets `centered`.
    pub fn centered(mut self, centered: bool) -> Self {
        self.centered = centered;
        self
    }
    /// Sets `maximize`.
    pub fn maximize(mut self, maximize: bool) -> Self {
        self.maximize = maximize;
        self
    }
}

impl GroupOptions for RMSpropOptions {
    const OPTIMIZER: &'static str = "RMSprop";

    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.momentum)
    }
    fn set_momentum(&mut self, momentum: f64) -> bool {
        self.momentum = momentum;
        true
    }

    fn validate(&self) -> Result<()> {
        check_non_negative("RMSprop", "learning rate", self.lr)?;
        check_non_negative("RMSprop", "epsilon value", self.eps)?;
        check_non_negative("RMSprop", "momentum value", self.momentum)?;
        check_non_negative("RMSprop", "weight_decay value", self.weight_decay)?;
        check_non_negative("RMSprop", "alpha value", self.alpha)
    }

    fn to_values(&self) -> Vec<(&'static str, OptionValue)> {
        vec![
            ("lr", OptionValue::Float(self.lr)),
            ("alpha", OptionValue::Float(self.alpha)),
            ("eps", OptionValue::Float(self.eps)),
            ("weight_decay", OptionValue::Float(self.weight_decay)),
            ("momentum", OptionValue::Float(self.momentum)),
            ("centered", OptionValue::Bool(self.centered)),
            ("maximize", OptionValue::Bool(self.maximize)),
        ]
    }

    fn set_value(&mut self, name: &str, value: OptionValue) -> Result<bool> {
        match name {
            "lr" => set_f64(&mut self.lr, name, value),
            "alpha" => set_f64(&mut self.alpha, name, value),
            "eps" => set_f64(&mut self.eps, name, value),
            "weight_decay" => set_f64(&mut self.weight_decay, name, value),
            "momentum" => set_f64(&mut self.momentum, name, value),
            "centered" => set_bool(&mut self.centered, name, value),
            "maximize" => set_bool(&mut self.maximize, name, value),
            _ => Ok(false),
        }
    }
}

/// RMSprop's per-parameter state, created at the parameter's first step.
pub(crate) struct RMSpropState {
    step: f64,
    square_avg: Tensor,
    /// Only with `momentum > 0`.
    momentum_buffer: Option<Tensor>,
    /// Only with `centered`.
    grad_avg: Option<Tensor>,
}

impl ParamState for RMSpropState {
    fn save(&self, out: &mut StateDict) -> Result<()> {
        out.insert("step", step_tensor(self.step));
        out.insert("square_avg", deep_copy(&self.square_avg)?);
        if let Some(b) = &self.momentum_buffer {
            out.insert("momentum_buffer", deep_copy(b)?);
        }
        if let Some(g) = &self.grad_avg {
            out.insert("grad_avg", deep_copy(g)?);
        }
        Ok(())
    }
    fn load(loader: &StateLoader<'_>) -> Result<RMSpropState> {
        Ok(RMSpropState {
            step: loader.step()?,
            square_avg: loader.tensor("square_avg")?,
            momentum_buffer: loader.optional_tensor("momentum_buffer")?,
            grad_avg: loader.optional_tensor("grad_avg")?,
        })
    }
}

/// One RMSprop step for one parameter (PyTorch's `_single_tensor_rmsprop`).
fn rmsprop_update(o: &RMSpropOptions, param: &Tensor, grad: &Tensor, state: &mut Option<RMSpropState>) -> Result<()> {
    crate::optim::refuse_sparse("RMSprop", grad, "")?;
    let s = match state {
        Some(s) => s,
        None => state.insert(RMSpropState {
            step: 0.0,
            square_avg: zeros_like(param)?,
            momentum_buffer: None,
            grad_avg: None,
        }),
    };
    // Buffers for options switched on after the first steps start at zero, as at creation.
    if o.momentum > 0.0 && s.momentum_buffer.is_none() {
        s.momentum_buffer = Some(zeros_like(param)?);
    }
    if o.centered && s.grad_avg.is_none() {
        s.grad_avg = Some(zeros_like(param)?);
    }
    s.step += 1.0;
    let grad_avg = s.grad_avg.as_ref().filter(|_| o.centered);
    let buf = s.momentum_buffer.as_ref().filter(|_| o.momentum > 0.0);
    let tensors =
        crate::optim::fused::RMSpropTensors { param, grad, square_avg: &s.square_avg, grad_avg, momentum_buffer: buf };
    if crate::optim::fused::rmsprop(o, tensors)? {
        return Ok(());
    }
    let mut grad = signed_grad(grad, o.maximize)?;
    if o.weight_decay != 0.0 {
        grad = grad.add_with(param, float(o.weight_decay))?;
    }
    s.square_avg.mul_(float(o.alpha))?;
    addcmul_(&s.square_avg, &grad, &grad, 1.0 - o.alpha)?;

    let avg = match &s.grad_avg {
        Some(grad_avg) if o.centered => {
            lerp_(grad_avg, &grad, 1.0 - o.alpha)?;
            let var = s.square_avg.addcmul_with(grad_avg, grad_avg, float(-1.0))?;
            var.sqrt_()?
        }
        _ => s.square_avg.sqrt()?,
    };
    avg.add_(float(o.eps)).call()?;

    match &s.momentum_buffer {
        Some(buf) if o.momentum > 0.0 => {
            buf.mul_(float(o.momentum))?;
            addcdiv_(buf, &grad, &avg, 1.0)?;
            param.add_with_(buf, float(-o.lr))?;
        }
        _ => addcdiv_(param, &grad, &avg, -o.lr)?,
    }
    Ok(())
}

/// `torch.optim.RMSprop`.
///
/// Per parameter with a gradient (PyTorch's single-tensor loop): `g = maximize ? -g : g`;
/// `g += weight_decay * p`; `v = alpha * v + (1 - alpha) * g * g`; centered:
/// `m = lerp(m, g, 1 - alpha)`, `avg = sqrt(v - m * m)`, else `avg = sqrt(v)`; `avg += eps`;
/// with momentum `buf = momentum * buf + g / avg`, `p -= lr * buf`, else `p -= lr * g / avg`.
pub struct RMSprop {
    groups: ParamGroups<RMSpropOptions, RMSpropState>,
}

impl RMSprop {
    /// `RMSprop(params, **options)`: one group. Errors as PyTorch's constructor
    /// (`Invalid alpha value: -0.5`, ...).
    pub fn new(params: impl IntoIterator<Item = Parameter>, options: impl Into<RMSpropOptions>) -> Result<RMSprop> {
        RMSprop::from_param_groups(ParamGroups::single(params, options.into())?)
    }

    param_group_methods!(RMSpropOptions);

    fn from_param_groups(groups: ParamGroups<RMSpropOptions, RMSpropState>) -> Result<RMSprop> {
        Ok(RMSprop { groups })
    }

    fn after_add_param_group(&mut self) -> Result<()> {
        Ok(())
    }
}

impl Optimizer for RMSprop {
    fn name(&self) -> &'static str {
        "RMSprop"
    }

    fn step(&mut self) -> Result<()> {
        let _range = super::step_range(self.name());
        self.groups.update(rmsprop_update)
    }

    forward_to_param_groups!();
}
