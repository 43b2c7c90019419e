//! `torch.optim.SGD`: stochastic gradient descent with optional momentum, dampening, Nesterov
//! momentum, weight decay and maximisation.

use aten::Tensor;
use c10::{Error, Result};

use crate::module::{Parameter, StateDict};
use crate::optim::{
    check_non_negative, deep_copy, float, forward_to_param_groups, fused, param_group_methods, set_bool, set_f64,
    signed_grad, GroupOptions, Optimizer, OptionValue, ParamGroups, ParamState, StateLoader,
};

/// The options of [`SGD`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SGDOptions {
    /// `lr` (default 1e-3).
    pub lr: f64,
    /// `momentum` (default 0).
    pub momentum: f64,
    /// `dampening` (default 0).
    pub dampening: f64,
    /// `weight_decay`: L2 penalty added to the gradient (default 0).
    pub weight_decay: f64,
    /// `nesterov` (default false); needs a momentum and zero dampening.
    pub nesterov: bool,
    /// `maximize`: ascend instead of descend (default false).
    pub maximize: bool,
}

/// A learning rate alone: `SGD::new(params, 0.01)` is PyTorch's `SGD(params, lr=0.01)`, the other
/// options at their defaults (as the C++ frontend's `SGDOptions(lr)`).
impl From<f64> for SGDOptions {
    fn from(lr: f64) -> SGDOptions {
        SGDOptions { lr, ..Default::default() }
    }
}

impl Default for SGDOptions {
    fn default() -> SGDOptions {
        SGDOptions { lr: 1e-3, momentum: 0.0, dampening: 0.0, weight_decay: 0.0, nesterov: false, maximize: false }
    }
}

impl SGDOptions {
    /// Sets `lr`.
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = lr;
        self
    }
    /// Sets `momentum`.
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.momentum = momentum;
        self
    }
    /// Sets `dampening`.
    pub fn dampening(mut self, dampening: f64) -> Self {
        self.dampening = dampening;
        self
    }
    /// Sets `weight_decay`.
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }
    /// Sets `nesterov`.
    pub fn nesterov(mut self, nesterov: bool) -> Self {
        self.nesterov = nesterov;
        self
    }
    /// Sets `maximize`.
    pub fn maximize(mut self, maximize: bool) -> Self {
        self.maximize = maximize;
        self
    }
}

impl GroupOptions for SGDOptions {
    const OPTIMIZER: &'static str = "SGD";

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
        check_non_negative("SGD", "learning rate", self.lr)?;
        check_non_negative("SGD", "momentum value", self.momentum)?;
        check_non_negative("SGD", "weight_decay value", self.weight_decay)?;
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::invalid("SGD", "Nesterov momentum requires a momentum and zero dampening"));
        }
        Ok(())
    }

    fn to_values(&self) -> Vec<(&'static str, OptionValue)> {
        vec![
            ("lr", OptionValue::Float(self.lr)),
            ("momentum", OptionValue::Float(self.momentum)),
            ("dampening", OptionValue::Float(self.dampening)),
            ("weight_decay", OptionValue::Float(self.weight_decay)),
            ("nesterov", OptionValue::Bool(self.nesterov)),
            ("maximize", OptionValue::Bool(self.maximize)),
        ]
    }

    fn set_value(&mut self, name: &str, value: OptionValue) -> Result<bool> {
        match name {
            "lr" => set_f64(&mut self.lr, name, value),
            "momentum" => set_f64(&mut self.momentum, name, value),
            "dampening" => set_f64(&mut self.dampening, name, value),
            "weight_decay" => set_f64(&mut self.weight_decay, name, value),
            "nesterov" => set_bool(&mut self.nesterov, name, value),
            "maximize" => set_bool(&mut self.maximize, name, value),
            _ => Ok(false),
        }
    }
}

/// SGD's per-parameter state: the momentum buffer, created at the parameter's first step when
/// `momentum != 0`.
pub(crate) struct SgdState {
    momentum_buffer: Tensor,
}

impl ParamState for SgdState {
    fn save(&self, out: &mut StateDict) -> Result<()> {
        out.insert("momentum_buffer", deep_copy(&self.momentum_buffer)?);
        Ok(())
    }
    fn load(loader: &StateLoader<'_>) -> Result<SgdState> {
        Ok(SgdState { momentum_buffer: loader.tensor("momentum_buffer")? })
    }
}

/// `torch.optim.SGD`.
///
/// Per parameter with a gradient `g` (PyTorch's single-tensor loop):
/// `g = maximize ? -g : g`; `g += weight_decay * p`; with momentum, `buf = g` at the first step
/// and `buf = momentum * buf + (1 - dampening) * g` after, then `g = nesterov ? g + momentum *
/// buf : buf`; finally `p -= lr * g`.
pub struct SGD {
    groups: ParamGroups<SGDOptions, SgdState>,
}

impl SGD {
    /// `SGD(params, **options)`: one group. Errors as PyTorch's constructor
    /// (`Invalid learning rate: -0.1`, an empty parameter list, ...).
    pub fn new(params: impl IntoIterator<Item = Parameter>, options: impl Into<SGDOptions>) -> Result<SGD> {
        SGD::from_param_groups(ParamGroups::single(params, options.into())?)
    }

    param_group_methods!(SGDOptions);

    fn from_param_groups(groups: ParamGroups<SGDOptions, SgdState>) -> Result<SGD> {
        Ok(SGD { groups })
    }

    fn after_add_param_group(&mut self) -> Result<()> {
        Ok(())
    }
}

fn sgd_update(o: &SGDOptions, param: &Tensor, grad: &Tensor, state: &mut Option<SgdState>) -> Result<()> {
    if let (Some(s), true) = (state.as_ref(), o.momentum != 0.0) {
        if fused::sgd_momentum(o, param, grad, &s.momentum_buffer)? {
            return Ok(());
        }
    }
    let mut grad = signed_grad(grad, o.maximize)?;
    if o.weight_decay != 0.0 {
        grad = grad.add_with(param, float(o.weight_decay))?;
    }
    if o.momentum != 0.0 {
        let buf = match state {
            Some(s) => {
                s.momentum_buffer.mul_(float(o.momentum))?;
                s.momentum_buffer.add_with_(&grad, float(1.0 - o.dampening))?;
                s.momentum_buffer.clone()
            }
            None => {
                let buf = deep_copy(&grad)?;
                *state = Some(SgdState { momentum_buffer: buf.clone() });
                buf
            }
        };
        grad = if o.nesterov { grad.add_with(&buf, float(o.momentum))? } else { buf };
    }
    param.add_with_(&grad, float(-o.lr))?;
    Ok(())
}

impl Optimizer for SGD {
    fn name(&self) -> &'static str {
        "SGD"
    }

    fn step(&mut self) -> Result<()> {
        let _range = super::step_range(self.name());
        self.groups.update(sgd_update)
    }

    forward_to_param_groups!();
}
