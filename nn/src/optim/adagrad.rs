//! `torch.optim.Adagrad`: divides the gradient by the root of the sum of all squared gradients
//! seen so far, with an optionally decaying learning rate.

use aten::{ops, Tensor};
use c10::{Error, Result, Scalar};

use crate::module::{Parameter, StateDict};
use crate::optim::{
    addcdiv_, addcmul_, check_non_negative, deep_copy, float, forward_to_param_groups, param_group_methods, set_bool,
    set_f64, signed_grad, step_tensor, with_values, GroupOptions, Optimizer, OptionValue, ParamGroups, ParamState,
    StateLoader,
};

/// The options of [`Adagrad`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdagradOptions {
    /// `lr` (default 1e-2).
    pub lr: f64,
    /// `lr_decay`: the step size is `lr / (1 + (step - 1) * lr_decay)` (default 0).
    pub lr_decay: f64,
    /// `weight_decay`: L2 penalty added to the gradient (default 0).
    pub weight_decay: f64,
    /// `initial_accumulator_value`: the starting sum of squares (default 0).
    pub initial_accumulator_value: f64,
    /// `eps`, added to the denominator (default 1e-10).
    pub eps: f64,
    /// `maximize` (default false).
    pub maximize: bool,
}

/// A learning rate alone: `Adagrad::new(params, 0.01)` is PyTorch's `Adagrad(params, lr=0.01)`, the other
/// options at their defaults (as the C++ frontend's `AdagradOptions(lr)`).
impl From<f64> for AdagradOptions {
    fn from(lr: f64) -> AdagradOptions {
        AdagradOptions { lr, ..Default::default() }
    }
}

impl Default for AdagradOptions {
    fn default() -> AdagradOptions {
        AdagradOptions {
            lr: 1e-2,
            lr_decay: 0.0,
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
            eps: 1e-10,
            maximize: false,
        }
    }
}

impl AdagradOptions {
    /// Sets `lr`.
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = lr;
        self
    }
    /// Sets `lr_decay`.
    pub fn lr_decay(mut self, lr_decay: f64) -> Self {
        self.lr_decay = lr_decay;
        self
    }
    /// Sets `weight_decay`.
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }
    /// Sets `initial_accumulator_value`.
    pub fn initial_accumulator_value(mut self, value: f64) -> Self {
        self.initial_accumulator_value = value;
        self
    }
    /// Sets `eps`.
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }
    /// Sets `maximize`.
    pub fn maximize(mut self, maximize: bool) -> Self {
        self.maximize = maximize;
        self
    }
}

impl GroupOptions for AdagradOptions {
    const OPTIMIZER: &'static str = "Adagrad";

    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr
    }

    fn validate(&self) -> Result<()> {
        check_non_negative("Adagrad", "learning rate", self.lr)?;
        check_non_negative("Adagrad", "lr_decay value", self.lr_decay)?;
        check_non_negative("Adagrad", "weight_decay value", self.weight_decay)?;
        check_non_negative("Adagrad", "initial_accumulator_value value", self.initial_accumulator_value)?;
        check_non_negative("Adagrad", "epsilon value", self.eps)
    }

    fn to_values(&self) -> Vec<(&'static str, OptionValue)> {
        vec![
            ("lr", OptionValue::Float(self.lr)),
            ("lr_decay", OptionValue::Float(self.lr_decay)),
            ("eps", OptionValue::Float(self.eps)),
            ("weight_decay", OptionValue::Float(self.weight_decay)),
            ("initial_accumulator_value", OptionValue::Float(self.initial_accumulator_value)),
            ("maximize", OptionValue::Bool(self.maximize)),
        ]
    }

    fn set_value(&mut self, name: &str, value: OptionValue) -> Result<bool> {
        match name {
            "lr" => set_f64(&mut self.lr, name, value),
            "lr_decay" => set_f64(&mut self.lr_decay, name, value),
            "eps" => set_f64(&mut self.eps, name, value),
            "weight_decay" => set_f64(&mut self.weight_decay, name, value),
            "initial_accumulator_value" => set_f64(&mut self.initial_accumulator_value, name, value),
            "maximize" => set_bool(&mut self.maximize, name, value),
            _ => Ok(false),
        }
    }
}

/// Adagrad's per-parameter state, created for every parameter when the optimizer is built
/// (PyTorch initialises it in the constructor, so a fresh `state_dict` already has it).
pub(crate) struct AdagradState {
    step: f64,
    sum: Tensor,
}

impl AdagradState {
    fn new(o: &AdagradOptions, param: &Tensor) -> Result<AdagradState> {
        Ok(AdagradState {
            step: 0.0,
            sum: ops::full_like(param, float(o.initial_accumulator_value), None, None, None, None, None)?,
        })
    }
}

impl ParamState for AdagradState {
    fn save(&self, out: &mut StateDict) -> Result<()> {
        out.insert("step", step_tensor(self.step));
        out.insert("sum", deep_copy(&self.sum)?);
        Ok(())
    }
    fn load(loader: &StateLoader<'_>) -> Result<AdagradState> {
        Ok(AdagradState { step: loader.step()?, sum: loader.tensor("sum")? })
    }
}

/// One Adagrad step for one parameter (PyTorch's `_single_tensor_adagrad`, dense gradients).
fn adagrad_update(o: &AdagradOptions, param: &Tensor, grad: &Tensor, state: &mut Option<AdagradState>) -> Result<()> {
    let s = match state {
        Some(s) => s,
        None => state.insert(AdagradState::new(o, param)?),
    };
    s.step += 1.0;
    let clr = o.lr / (1.0 + (s.step - 1.0) * o.lr_decay);
    if grad.layout() != c10::Layout::Strided {
        return adagrad_sparse(o, clr, param, grad, &s.sum);
    }
    if crate::optim::fused::adagrad(o, clr, param, grad, &s.sum)? {
        return Ok(());
    }
    let mut grad = signed_grad(grad, o.maximize)?;
    if o.weight_decay != 0.0 {
        grad = grad.add_with(param, float(o.weight_decay))?;
    }
    addcmul_(&s.sum, &grad, &grad, 1.0)?;
    let std = s.sum.sqrt()?;
    std.add_(float(o.eps)).call()?;
    addcdiv_(param, &grad, &std, -clr)
}

/// Adagrad's update for a sparse gradient (PyTorch's sparse branch): the gradient coalesced,
/// the squares added into `sum` at its positions, and the parameter moved at those positions
/// only, by `clr * g / (sqrt(sum) + eps)`.
fn adagrad_sparse(o: &AdagradOptions, clr: f64, param: &Tensor, grad: &Tensor, sum: &Tensor) -> Result<()> {
    if o.weight_decay != 0.0 {
        return Err(Error::invalid("Adagrad", "weight_decay option is not compatible with sparse gradients"));
    }
    let grad = ops::coalesce(&signed_grad(grad, o.maximize)?)?;
    let values = ops::_values(&grad)?;
    ops::add_(sum, &with_values(&grad, &ops::pow_tensor_scalar(&values, float(2.0))?)?, Scalar::Int(1))?;
    let std =
        ops::add_scalar(&ops::sqrt(&ops::_values(&ops::sparse_mask(sum, &grad)?)?)?, float(o.eps), Scalar::Int(1))?;
    ops::add_(param, &with_values(&grad, &ops::div(&values, &std)?)?, float(-clr))?;
    Ok(())
}

/// `torch.optim.Adagrad`.
///
/// Per parameter with a gradient (PyTorch's single-tensor loop): `step += 1`;
/// `g = maximize ? -g : g`; `g += weight_decay * p`; `clr = lr / (1 + (step - 1) * lr_decay)`;
/// `sum += g * g`; `p -= clr * g / (sqrt(sum) + eps)`.
pub struct Adagrad {
    groups: ParamGroups<AdagradOptions, AdagradState>,
}

impl Adagrad {
    /// `Adagrad(params, **options)`: one group. Errors as PyTorch's constructor
    /// (`Invalid lr_decay value: -1.0`, ...).
    pub fn new(params: impl IntoIterator<Item = Parameter>, options: impl Into<AdagradOptions>) -> Result<Adagrad> {
        Adagrad::from_param_groups(ParamGroups::single(params, options.into())?)
    }

    param_group_methods!(AdagradOptions);

    fn from_param_groups(groups: ParamGroups<AdagradOptions, AdagradState>) -> Result<Adagrad> {
        let mut opt = Adagrad { groups };
        opt.after_add_param_group()?;
        Ok(opt)
    }

    /// Creates the state of parameters that have none (PyTorch only does so in the
    /// constructor, so a group added later would fail at its first step there).
    fn after_add_param_group(&mut self) -> Result<()> {
        self.groups.init_state(AdagradState::new)
    }
}

impl Optimizer for Adagrad {
    fn name(&self) -> &'static str {
        "Adagrad"
    }

    fn step(&mut self) -> Result<()> {
        let _range = super::step_range(self.name());
        self.groups.update(adagrad_update)
    }

    forward_to_param_groups!();
}
